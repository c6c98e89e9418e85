//! Explore on a real cluster: runs one at a time, and the cluster put back between them —
//! the user's `--reset` command first, then what the previous run created deleted (in
//! the resources and namespaces it touched) and waited for, so the next run's setup
//! starts from the same state. Objects that were there before explore started are never
//! deleted: only those created since.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use kube::api::DeleteParams;

use crate::oracle::ObjectRef;
use crate::session::Outcome;
use crate::session::snapshot::Resolver;

pub struct Cluster {
    client: kube::Client,
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    reset: Option<String>,
    /// Objects created at or after this are explore's.
    since: SystemTime,
    /// What the last run created, to delete before the next.
    created: Mutex<Vec<ObjectRef>>,
}

impl Cluster {
    pub async fn connect(
        kubeconfig: Option<&Path>,
        context: Option<&str>,
        reset: Option<String>,
    ) -> Result<Cluster> {
        let client = match kubeconfig {
            Some(p) => crate::kubeconfig::client(p, context).await?,
            None => {
                let options = kube::config::KubeConfigOptions {
                    context: context.map(str::to_string),
                    ..Default::default()
                };
                let cfg = kube::Config::from_kubeconfig(&options)
                    .await
                    .context("loading the kubeconfig ($KUBECONFIG or ~/.kube/config)")?;
                kube::Client::try_from(cfg).context("building a kube client")?
            }
        };
        // creationTimestamp has whole seconds: start on the next one, so everything made
        // before has an earlier stamp and everything explore makes a later or equal one.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let next = Duration::from_secs(now.as_secs() + 1);
        tokio::time::sleep(next.saturating_sub(now)).await;
        Ok(Cluster {
            client,
            kubeconfig: kubeconfig.map(Path::to_path_buf),
            context: context.map(str::to_string),
            reset,
            since: UNIX_EPOCH + next,
            created: Mutex::new(Vec::new()),
        })
    }

    /// Note what a run created (from its end state).
    pub fn forget(&self, o: &Outcome) {
        let mine: Vec<ObjectRef> = o
            .snapshot
            .iter()
            .filter(|(k, _)| {
                k.resource != "namespaces"
                    && k.resource != "customresourcedefinitions.apiextensions.k8s.io"
            })
            .filter(|(_, v)| {
                v["metadata"]["creationTimestamp"]
                    .as_str()
                    .and_then(|t| humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).ok())
                    .is_some_and(|t| t >= self.since)
            })
            .map(|(k, _)| k.clone())
            .collect();
        self.created
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(mine);
    }

    /// Before a run: the user's reset, then the last run's objects gone.
    pub async fn reset(&self) -> Result<()> {
        if let Some(cmd) = &self.reset {
            let mut c = tokio::process::Command::new("sh");
            c.args(["-c", cmd]);
            if let Some(k) = &self.kubeconfig {
                c.env("KUBECONFIG", k);
            }
            if let Some(ctx) = &self.context {
                c.env("STALEMATE_CONTEXT", ctx);
            }
            let status = c
                .status()
                .await
                .with_context(|| format!("--reset {cmd:?}: cannot run it"))?;
            if !status.success() {
                bail!("--reset {cmd:?} failed ({status})");
            }
        }
        self.clean().await
    }

    /// Delete what the runs created, and wait until it is gone.
    pub async fn clean(&self) -> Result<()> {
        let objects: Vec<ObjectRef> =
            std::mem::take(&mut *self.created.lock().unwrap_or_else(|p| p.into_inner()));
        if objects.is_empty() {
            return Ok(());
        }
        let resolver = Resolver::discover(&self.client).await?;
        let mut waiting = Vec::new();
        for o in &objects {
            let namespaces = std::collections::BTreeSet::from([o.namespace.clone()]);
            for api in resolver.apis(&self.client, &o.resource, &namespaces) {
                match api.delete(&o.name, &DeleteParams::background()).await {
                    Ok(_) => waiting.push((api, o)),
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => {
                        return Err(e).with_context(|| {
                            format!("deleting {} {}/{}", o.resource, o.namespace, o.name)
                        });
                    }
                }
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        for (api, o) in waiting {
            loop {
                match api.get_opt(&o.name).await {
                    Ok(None) => break,
                    Ok(Some(_)) if tokio::time::Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Ok(Some(_)) => bail!(
                        "{} {}/{} is still there 60s after explore deleted it (a finalizer?); put the cluster back with --reset",
                        o.resource,
                        o.namespace,
                        o.name
                    ),
                    Err(e) => {
                        return Err(e).with_context(|| {
                            format!(
                                "waiting for {} {}/{} to go",
                                o.resource, o.namespace, o.name
                            )
                        });
                    }
                }
            }
        }
        Ok(())
    }
}
