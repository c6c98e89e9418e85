//! A real control plane per run (`src/envtest/`): kube-apiserver on a free loopback port,
//! its objects under a prefix of its own in one etcd every run of this process shares,
//! and `--with`'s components — torn down when the run ends. Runs go side by side, and
//! nothing needs putting back: each starts from a fresh cluster.
//!
//! What it costs, measured on 2 cores:
//! - **One shared etcd** (`cargo run --release --example control-plane`): a control plane
//!   with its own etcd is ready in 2.36 s (median of 5), one on a shared etcd under its
//!   own `--etcd-prefix` in 1.81 s — the apiserver's own start (its post-start hooks:
//!   RBAC bootstrap, priority levels) is the rest, and is the same either way.
//! - **Spares** (explore): a trial waited for its apiserver, then spent most of its time
//!   waiting for the controller to go quiet, with the CPU idle. Explore keeps as many
//!   control planes started ahead as it runs trials side by side, so a trial takes a
//!   ready one and the next is started while it runs (`bash bench/explore.sh`).
//! - **Definitions ahead** (explore): a setup's CustomResourceDefinitions took a trial
//!   ~2 s on 2 cores before they were served (the apiserver establishes a CRD, then
//!   serves its discovery). A spare gets them while it waits: the trial's own apply finds
//!   them there (a create answered 409, a merge patch that changes nothing) and served,
//!   and their storage started (`setup::warm`: a controller's first watches of a custom
//!   resource on a fresh apiserver were answered 429 "storage is (re)initializing", and
//!   source-controller waited 2 s for its five kinds).
//!   Nothing else of the setup is applied ahead: the objects a controller reconciles are
//!   created by the trial, as a user would, in front of it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use futures_util::future::BoxFuture;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use super::{Kind, Started};
use crate::envtest::{Assets, ControlPlane, Etcd, Spec, Storage, With};

type SharedEtcd = Arc<Mutex<Etcd>>;

pub struct Envtest {
    spec: Spec,
    with: With,
    /// What each binary said it is (for the first line of `run`).
    versions: Vec<(String, String)>,
    /// Started with the first run, stopped by `finish` (or when the process exits: it is
    /// in stalemate's process group).
    etcd: Mutex<Option<SharedEtcd>>,
    /// Control planes being started, or ready, for the next runs; each with the etcd it
    /// stores in (one started on an etcd since replaced is of no use).
    spares: Mutex<VecDeque<(SharedEtcd, JoinHandle<Result<ControlPlane>>)>>,
    /// How many to keep started ahead (0 for `run`: one run, nothing ahead).
    ahead: usize,
    /// The setup's CustomResourceDefinitions, applied on each spare while it waits.
    definitions: Arc<Vec<crate::setup::Manifest>>,
    /// Where the shared etcd and the control planes keep their files.
    dir: PathBuf,
    /// A start failed: its error names logs in `dir`, which are kept when the rest goes.
    /// Not one that failed after SIGINT or SIGTERM: the signal (the terminal's Ctrl-C
    /// reaches etcd and the apiservers too) is why, and nobody asked for its logs.
    failed: AtomicBool,
}

impl Envtest {
    /// Find the binaries (`assets`, else `$KUBEBUILDER_ASSETS`) and check each answers
    /// as itself, before any run starts. `ahead`: control planes to keep started for the
    /// runs to come.
    pub async fn prepare(
        assets: Option<PathBuf>,
        with: With,
        ahead: usize,
        definitions: Vec<crate::setup::Manifest>,
    ) -> Result<Envtest> {
        let spec = Spec::new(Assets::locate(assets.as_deref())?, with.0.clone());
        let versions = spec.check().await?;
        let dir = std::env::temp_dir().join(format!("stalemate-envtest-{}", uuid::Uuid::new_v4()));
        Ok(Envtest {
            spec,
            with,
            versions,
            etcd: Mutex::new(None),
            spares: Mutex::new(VecDeque::new()),
            ahead,
            definitions: Arc::new(definitions.into_iter().filter(|m| m.is_crd()).collect()),
            dir,
            failed: AtomicBool::new(false),
        })
    }

    /// Remove the directory — but for the logs, if a start failed: its error names them.
    fn clean_up(&self) {
        if self.failed.load(Ordering::Relaxed) {
            crate::envtest::leftovers::keep_only_logs(&self.dir);
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    async fn etcd(&self) -> Result<SharedEtcd> {
        let mut slot = self.etcd.lock().await;
        if let Some(e) = slot.as_ref() {
            let mut etcd = e.lock().await;
            match etcd.check() {
                Ok(()) => return Ok(e.clone()),
                // Ctrl-C or `timeout` signalled stalemate's process group, etcd with it:
                // stalemate is stopping too, and a new etcd would only be killed again.
                // (A signal to etcd alone, from someone else, is an exit like any other.)
                Err(err) if etcd.told_to_stop() && crate::process::stop_signalled() => {
                    return Err(err.context("the shared etcd was stopped by a signal"));
                }
                Err(err) => {
                    tracing::warn!(error = %format!("{err:#}"), "the shared etcd exited; starting another");
                }
            }
        }
        let e = Arc::new(Mutex::new(
            Etcd::start(
                &self.spec.assets,
                &self.dir.join("etcd"),
                self.spec.ready_timeout,
            )
            .await?,
        ));
        *slot = Some(e.clone());
        Ok(e)
    }

    /// Start a control plane in a directory of its own, in the background.
    fn launch(&self, etcd: SharedEtcd) -> JoinHandle<Result<ControlPlane>> {
        self.launch_with(etcd, Arc::default())
    }

    /// Start a spare: a control plane, then the setup's definitions on it.
    fn launch_spare(&self, etcd: SharedEtcd) -> JoinHandle<Result<ControlPlane>> {
        self.launch_with(etcd, self.definitions.clone())
    }

    fn launch_with(
        &self,
        etcd: SharedEtcd,
        definitions: Arc<Vec<crate::setup::Manifest>>,
    ) -> JoinHandle<Result<ControlPlane>> {
        let spec = self.spec.clone();
        let dir = self
            .dir
            .join(format!("cp-{}", uuid::Uuid::new_v4().simple()));
        tokio::spawn(async move {
            let cp = ControlPlane::start(&spec, &dir, &Storage::Shared(etcd)).await?;
            if !definitions.is_empty() {
                // Ahead of the trial, for its time only: if it fails, the trial's own
                // apply fails with a clear error, or does it itself.
                let applied = async {
                    let client = crate::kubeconfig::client(&cp.admin_kubeconfig, None).await?;
                    crate::setup::apply(&client, &definitions).await?;
                    crate::setup::warm(&client, &definitions).await
                };
                if let Err(e) = applied.await {
                    tracing::debug!(error = %format!("{e:#}"), "definitions ahead");
                }
            }
            Ok(cp)
        })
    }

    /// A ready control plane: a spare if one is (being) started, else a new one; then
    /// spares started up to `ahead`.
    async fn take(&self) -> Result<ControlPlane> {
        let etcd = self.etcd().await?;
        let spare = self.spares.lock().await.pop_front();
        let spare = match spare {
            Some((on, h)) if !Arc::ptr_eq(&on, &etcd) => {
                // Started on an etcd that has exited since: its apiserver has no storage.
                stop_spare(h).await;
                None
            }
            Some((_, h)) => Some(h),
            None => None,
        };
        let cp = match spare {
            Some(h) => match h.await {
                Ok(Ok(mut cp)) => match cp.check() {
                    Ok(()) => Ok(cp),
                    // It died while it waited: start another.
                    Err(_) => {
                        cp.stop().await;
                        self.launch(etcd.clone()).await?
                    }
                },
                Ok(Err(e)) => Err(e),
                Err(e) => Err(anyhow::anyhow!("starting a control plane: {e}")),
            },
            None => self.launch(etcd.clone()).await?,
        };
        let mut spares = self.spares.lock().await;
        while spares.len() < self.ahead {
            spares.push_back((etcd.clone(), self.launch_spare(etcd.clone())));
        }
        cp
    }
}

/// Stop a spare control plane: one still starting is dropped mid-start (its processes
/// are killed), a ready one stopped.
async fn stop_spare(h: JoinHandle<Result<ControlPlane>>) {
    h.abort();
    if let Ok(Ok(cp)) = h.await {
        cp.stop().await;
    }
}

impl Kind for Envtest {
    fn name(&self) -> &'static str {
        "envtest"
    }

    fn side_by_side(&self) -> bool {
        true
    }

    fn outlives_an_interrupt(&self) -> bool {
        false
    }

    fn start<'a>(&'a self, _dir: &'a Path) -> BoxFuture<'a, Result<Box<dyn Started>>> {
        Box::pin(async move {
            let cp = self.take().await.inspect_err(|e| {
                if !crate::envtest::daemon::cut_short_by_signal(e) {
                    self.failed.store(true, Ordering::Relaxed);
                }
            })?;
            let version = self
                .versions
                .iter()
                .find(|(n, _)| n == "kube-apiserver")
                .map_or_else(String::new, |(_, v)| v.clone());
            Ok(Box::new(Running { cp, version }) as Box<dyn Started>)
        })
    }

    fn finish(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            for (_, h) in self.spares.lock().await.drain(..) {
                stop_spare(h).await;
            }
            if let Some(e) = self.etcd.lock().await.take() {
                match Arc::try_unwrap(e) {
                    Ok(e) => e.into_inner().kill().await,
                    // A run still holds it (cancelled mid-start): it dies with stalemate.
                    Err(_) => tracing::debug!("the shared etcd is still in use"),
                }
            }
            self.clean_up();
            Ok(())
        })
    }

    fn run_flags(&self) -> Vec<String> {
        let mut f = vec![
            "--envtest".into(),
            std::fs::canonicalize(&self.spec.assets.dir)
                .unwrap_or_else(|_| self.spec.assets.dir.clone())
                .display()
                .to_string(),
        ];
        if !self.with.0.is_empty() {
            f.extend(["--with".into(), self.with.flag_value()]);
        }
        f
    }
}

impl Drop for Envtest {
    fn drop(&mut self) {
        self.clean_up();
    }
}

struct Running {
    cp: ControlPlane,
    version: String,
}

impl Started for Running {
    fn source(&self) -> crate::upstream::Source {
        crate::upstream::Source::Kubeconfig {
            path: Some(self.cp.admin_kubeconfig.clone()),
            context: None,
        }
    }

    fn env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        self.cp.env()
    }

    fn describe(&self) -> String {
        format!(
            "a real kube-apiserver ({}, {}; control plane in {}, ready in {:.1}s)",
            self.version,
            self.cp.url,
            self.cp.dir.display(),
            self.cp.started_in.as_secs_f64()
        )
    }

    /// Stopped, and its directory (certificates, logs) removed.
    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let dir = self.cp.dir.clone();
            self.cp.stop().await;
            let _ = std::fs::remove_dir_all(dir);
        })
    }
}
