//! A cluster of a kubeconfig (`--upstream-kubeconfig`, else `$KUBECONFIG`, then
//! `~/.kube/config`): nothing is started; every run shares the one cluster, so runs go one
//! at a time, and for explore the cluster is put back between them — the user's `--reset`
//! command first, then what the previous run created deleted and waited for, so the next
//! run's setup starts from the same state.
//!
//! **Only what explore's own clients made.** "Created since explore started" is not
//! "explore's": on a shared cluster it is also what others made meanwhile, and on a
//! control plane it is what kube-controller-manager makes in every namespace
//! (`kube-root-ca.crt`). So explore deletes only objects the proxy saw the controller or
//! the workload create (their uids, read from the apiserver's answers: `proxy/created.rs`)
//! and the setup's objects it created itself — each deleted with a uid precondition, so
//! an object of the same name made by someone else since is left alone — and says what
//! else appeared and was left.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use futures_util::future::BoxFuture;
use kube::api::DeleteParams;

use super::kind::{Kind, Started};
use crate::oracle::ObjectRef;
use crate::session::names::{CONTROLLER, WORKLOAD};
use crate::session::outcome::Outcome;
use crate::session::snapshot::Resolver;
use crate::trace::Record;

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
    /// What the last run created (with its uid), to delete before the next.
    created: Mutex<Vec<(ObjectRef, String)>>,
    /// What appeared since explore started that it did not make: left alone, said at
    /// the end.
    left: Mutex<std::collections::BTreeSet<ObjectRef>>,
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
            Some(p) => crate::k8s::kubeconfig::client(p, context.as_deref()).await?,
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
                left: Mutex::new(Default::default()),
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
            let Some(p) = &self.explore else {
                return Ok(());
            };
            let cleaned = p.clean().await;
            let left = p.left_behind();
            if !left.is_empty() {
                let names: Vec<String> = left
                    .iter()
                    .take(20)
                    .map(|o| format!("{} {}/{}", o.resource, o.namespace, o.name))
                    .collect();
                eprintln!(
                    "explore: left in the cluster {} object(s) that appeared while it ran but that neither the controller, the workload nor the setup created: {}{}",
                    left.len(),
                    names.join(", "),
                    if left.len() > 20 { ", …" } else { "" }
                );
            }
            cleaned
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
    /// Note what a run's clients created (from its trace), and what else appeared.
    fn forget(&self, o: &Outcome) {
        let scaffolding =
            |r: &str| r == "namespaces" || r == "customresourcedefinitions.apiextensions.k8s.io";
        let mut mine: Vec<(ObjectRef, String)> = o
            .trace
            .iter()
            .filter_map(|s| match &s.record {
                Record::Created {
                    client,
                    resource,
                    namespace,
                    name,
                    uid,
                } if (client == CONTROLLER || client == WORKLOAD) && !scaffolding(resource) => {
                    Some((
                        ObjectRef {
                            resource: resource.split('/').next().unwrap_or("").to_string(),
                            namespace: namespace.clone(),
                            name: name.clone(),
                        },
                        uid.clone(),
                    ))
                }
                _ => None,
            })
            .collect();
        let new_since_start = |v: &serde_json::Value| {
            v["metadata"]["creationTimestamp"]
                .as_str()
                .and_then(|t| humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).ok())
                .is_some_and(|t| t >= self.since)
        };
        // The setup's objects, if this explore created them (not there before it).
        for a in o.setup.iter().filter(|a| !scaffolding(&a.resource)) {
            let key = ObjectRef {
                resource: a.resource.clone(),
                namespace: a.namespace.clone().unwrap_or_default(),
                name: a.name.clone(),
            };
            if let Some(v) = o.snapshot.get(&key).filter(|v| new_since_start(v))
                && let Some(uid) = v["metadata"]["uid"].as_str()
            {
                mine.push((key, uid.to_string()));
            }
        }
        let others: Vec<ObjectRef> = o
            .snapshot
            .iter()
            .filter(|(k, v)| {
                !scaffolding(&k.resource)
                    && new_since_start(v)
                    && !mine.iter().any(|(m, _)| m == *k)
            })
            .map(|(k, _)| k.clone())
            .collect();
        self.left
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(others);
        self.created
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(mine);
    }

    /// What explore left in the cluster (appeared since it started, not made by its
    /// clients or setup), for the last words.
    fn left_behind(&self) -> Vec<ObjectRef> {
        let left = self.left.lock().unwrap_or_else(|p| p.into_inner());
        left.iter().cloned().collect()
    }

    /// Before a run: the user's reset, then the last run's objects gone.
    async fn reset(&self, kubeconfig: Option<&Path>, context: Option<&str>) -> Result<()> {
        if let Some(cmd) = &self.reset {
            let mut c = tokio::process::Command::new("sh");
            c.args(["-c", cmd]);
            crate::listen::sched::as_started(&mut c);
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
        let objects: Vec<(ObjectRef, String)> =
            std::mem::take(&mut *self.created.lock().unwrap_or_else(|p| p.into_inner()));
        if objects.is_empty() {
            return Ok(());
        }
        let resolver = Resolver::discover(&self.client).await?;
        let mut waiting = Vec::new();
        for (o, uid) in &objects {
            let namespaces = std::collections::BTreeSet::from([o.namespace.clone()]);
            for api in resolver.apis(&self.client, &o.resource, &namespaces) {
                // Only that object: one of the same name made since by someone else is
                // not ours (409 on the uid precondition).
                let params = DeleteParams {
                    preconditions: Some(kube::api::Preconditions {
                        uid: Some(uid.clone()),
                        resource_version: None,
                    }),
                    ..DeleteParams::background()
                };
                match api.delete(&o.name, &params).await {
                    Ok(_) => waiting.push((api, o)),
                    Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
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
