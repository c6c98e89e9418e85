//! A cluster of a kubeconfig (`--upstream-kubeconfig`, else `$KUBECONFIG`, then
//! `~/.kube/config`): nothing is started; every run shares the one cluster, so runs go one
//! at a time, and for explore the cluster is put back between them — the user's `--reset`
//! command first, then what the previous run created deleted (in the resources and
//! namespaces it touched) and waited for, so the next run's setup starts from the same
//! state. Objects that were there before explore started are never deleted: only those
//! created since.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use futures_util::future::BoxFuture;
use kube::api::DeleteParams;

use super::{Kind, Started};
use crate::oracle::ObjectRef;
use crate::session::Outcome;
use crate::session::snapshot::Resolver;

pub struct Cluster {
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    /// Explore's: the cluster is put back between runs (`run` has none).
    explore: Option<PutBack>,
}

/// What putting the cluster back needs.
struct PutBack {
    client: kube::Client,
    reset: Option<String>,
    /// Objects created at or after this are explore's.
    since: SystemTime,
    /// What the last run created, to delete before the next.
    created: Mutex<Vec<ObjectRef>>,
}

impl Cluster {
    /// For one run: the cluster as it is.
    pub fn for_run(kubeconfig: Option<PathBuf>, context: Option<String>) -> Cluster {
        Cluster {
            kubeconfig,
            context,
            explore: None,
        }
    }

    /// For explore: connected, and put back before every run.
    pub async fn for_explore(
        kubeconfig: Option<PathBuf>,
        context: Option<String>,
        reset: Option<String>,
    ) -> Result<Cluster> {
        let client = match &kubeconfig {
            Some(p) => crate::kubeconfig::client(p, context.as_deref()).await?,
            None => {
                let options = kube::config::KubeConfigOptions {
                    context: context.clone(),
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
            kubeconfig,
            context,
            explore: Some(PutBack {
                client,
                reset,
                since: UNIX_EPOCH + next,
                created: Mutex::new(Vec::new()),
            }),
        })
    }
}

impl Kind for Cluster {
    fn name(&self) -> &'static str {
        "cluster"
    }

    fn side_by_side(&self) -> bool {
        false
    }

    fn start<'a>(&'a self, _dir: &'a Path) -> BoxFuture<'a, Result<Box<dyn Started>>> {
        Box::pin(async move {
            if let Some(p) = &self.explore {
                p.reset(self.kubeconfig.as_deref(), self.context.as_deref())
                    .await?;
            }
            Ok(Box::new(Shared {
                kubeconfig: self.kubeconfig.clone(),
                context: self.context.clone(),
            }) as Box<dyn Started>)
        })
    }

    fn ran(&self, outcome: &Outcome) {
        if let Some(p) = &self.explore {
            p.forget(outcome);
        }
    }

    fn finish(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            match &self.explore {
                Some(p) => p.clean().await,
                None => Ok(()),
            }
        })
    }

    fn run_flags(&self) -> Vec<String> {
        let mut f = Vec::new();
        if let Some(p) = &self.kubeconfig {
            let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            f.extend(["--upstream-kubeconfig".into(), abs.display().to_string()]);
        }
        if let Some(c) = &self.context {
            f.extend(["--context".into(), c.clone()]);
        }
        f
    }
}

/// The cluster, for one run.
struct Shared {
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
}

impl Started for Shared {
    fn source(&self) -> crate::upstream::Source {
        crate::upstream::Source::Kubeconfig {
            path: self.kubeconfig.clone(),
            context: self.context.clone(),
        }
    }

    fn describe(&self) -> String {
        match &self.kubeconfig {
            Some(p) => format!("the cluster of {}", p.display()),
            None => "the cluster of $KUBECONFIG (or ~/.kube/config)".into(),
        }
    }

    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

impl PutBack {
    /// Note what a run created (from its end state).
    fn forget(&self, o: &Outcome) {
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
    async fn reset(&self, kubeconfig: Option<&Path>, context: Option<&str>) -> Result<()> {
        if let Some(cmd) = &self.reset {
            let mut c = tokio::process::Command::new("sh");
            c.args(["-c", cmd]);
            if let Some(k) = kubeconfig {
                c.env("KUBECONFIG", k);
            }
            if let Some(ctx) = context {
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
    async fn clean(&self) -> Result<()> {
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
