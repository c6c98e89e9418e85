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
//! - **Put back, not started again** (explore, unless `--fresh-control-planes`, and only
//!   for a bare apiserver: no `--with`): a trial's control plane is put back as it was
//!   ready ([`crate::envtest::reset`]: what is not in its baseline deleted, checked
//!   gone, and nothing of the baseline written since but by the apiserver itself) and
//!   handed to the next trial; one that cannot be put back is stopped, and the next
//!   trial has a new one. Starting one cost ~2.4 s of the 2 cores the trials run on;
//!   putting one back, two listings and the deletes (~0.3 s). That is done in the
//!   background, the run's end not waiting for it: `jobs + 1` control planes are kept,
//!   so that a run starting has one ready while the last run's is being put back.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::Result;
use futures_util::future::BoxFuture;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use super::kind::{Kind, Started};
use crate::envtest::reset::{self, Baseline};
use crate::envtest::{Assets, ControlPlane, Etcd, Spec, Storage, With};

type SharedEtcd = Arc<Mutex<Etcd>>;

/// Control planes put back after a run, for the next; those being put back; and how many
/// are alive, so that no more than `jobs + 1` are kept (one being put back while the
/// runs have theirs).
#[derive(Default)]
struct Pool {
    kept: std::sync::Mutex<Vec<Kept>>,
    /// Put backs under way: their control planes come back, or are stopped.
    putting_back: AtomicUsize,
    /// Control planes started, and stopped, so far. Only to cap the spares: a count off
    /// by one starts one too many or waits for a start, nothing worse.
    started: AtomicUsize,
    stopped: AtomicUsize,
    /// Put backs done, and those refused with the first refusal's reason: said at the
    /// end, so that one suspecting a leak between runs sees how often each happened.
    put_back: AtomicUsize,
    refused: std::sync::Mutex<(usize, Option<String>)>,
}

impl Pool {
    fn push(&self, k: Kept) {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).push(k);
    }

    fn pop(&self) -> Option<Kept> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn alive(&self) -> usize {
        let started = self.started.load(Ordering::Relaxed);
        started.saturating_sub(self.stopped.load(Ordering::Relaxed))
    }

    fn stopped_one(&self) {
        self.stopped.fetch_add(1, Ordering::Relaxed);
    }

    fn putting_back(&self) -> bool {
        self.putting_back.load(Ordering::Relaxed) > 0
    }

    fn refuse(&self, why: String) {
        let mut r = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        r.0 += 1;
        r.1.get_or_insert(why);
    }

    /// What happened to the control planes, for explore's last words.
    fn account(&self) -> String {
        let (refused, first) = self
            .refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut s = format!(
            "explore: control planes: {} started, put back {} time(s) between runs",
            self.started.load(Ordering::Relaxed),
            self.put_back.load(Ordering::Relaxed)
        );
        if let Some(why) = first {
            s.push_str(&format!(
                "; {refused} could not be put back, each replaced (the first: {why})"
            ));
        }
        s
    }
}

/// How long putting a control plane back may take before it is stopped instead.
const PUT_BACK_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// A control plane as it was when ready, and where it stores.
struct Kept {
    etcd: SharedEtcd,
    cp: ControlPlane,
    baseline: Baseline,
    /// Runs it has had.
    runs: u32,
}

/// A started control plane, with its baseline when it will be put back after its run.
struct Ready {
    cp: ControlPlane,
    baseline: Option<Baseline>,
    runs: u32,
}

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
    spares: Mutex<VecDeque<(SharedEtcd, JoinHandle<Result<Ready>>)>>,
    /// How many to keep started ahead (0 for `run`: one run, nothing ahead).
    ahead: usize,
    /// The setup's CustomResourceDefinitions, applied on each spare while it waits.
    definitions: Arc<Vec<crate::setup::Manifest>>,
    /// Put control planes back between runs rather than start one per run (explore,
    /// no `--with`).
    reuse: bool,
    /// Those put back, for the next runs.
    pool: Arc<Pool>,
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
    /// runs to come; `reuse`: put them back between runs (ignored with `--with`).
    pub async fn prepare(
        assets: Option<PathBuf>,
        with: With,
        ahead: usize,
        definitions: Vec<crate::setup::Manifest>,
        reuse: bool,
    ) -> Result<Envtest> {
        let spec = Spec::new(Assets::locate(assets.as_deref())?, with.0.clone());
        let versions = spec.check().await?;
        let dir = std::env::temp_dir().join(format!("stalemate-envtest-{}", uuid::Uuid::new_v4()));
        let reuse = reuse && with.0.is_empty();
        Ok(Envtest {
            spec,
            with,
            versions,
            etcd: Mutex::new(None),
            spares: Mutex::new(VecDeque::new()),
            ahead,
            definitions: Arc::new(definitions.into_iter().filter(|m| m.is_crd()).collect()),
            reuse,
            pool: Arc::default(),
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

    /// Start a control plane in a directory of its own, in the background (with the
    /// setup's definitions when it will be put back: they are part of its baseline).
    fn launch(&self, etcd: SharedEtcd) -> JoinHandle<Result<Ready>> {
        let definitions = if self.reuse {
            self.definitions.clone()
        } else {
            Arc::default()
        };
        self.launch_with(etcd, definitions)
    }

    /// Start a spare: a control plane, then the setup's definitions on it.
    fn launch_spare(&self, etcd: SharedEtcd) -> JoinHandle<Result<Ready>> {
        self.launch_with(etcd, self.definitions.clone())
    }

    fn launch_with(
        &self,
        etcd: SharedEtcd,
        definitions: Arc<Vec<crate::setup::Manifest>>,
    ) -> JoinHandle<Result<Ready>> {
        let spec = self.spec.clone();
        let reuse = self.reuse;
        self.pool.started.fetch_add(1, Ordering::Relaxed);
        let dir = self
            .dir
            .join(format!("cp-{}", uuid::Uuid::new_v4().simple()));
        tokio::spawn(async move {
            let cp = ControlPlane::start(&spec, &dir, &Storage::Shared(etcd)).await?;
            if definitions.is_empty() && !reuse {
                return Ok(Ready::fresh(cp, None));
            }
            let client = match crate::k8s::kubeconfig::client(&cp.admin_kubeconfig, None).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!(error = %format!("{e:#}"), "a client for the control plane");
                    return Ok(Ready::fresh(cp, None));
                }
            };
            if !definitions.is_empty() {
                // Ahead of the trial, for its time only: if it fails, the trial's own
                // apply fails with a clear error, or does it itself.
                let applied = async {
                    crate::setup::apply(&client, &definitions).await?;
                    crate::setup::warm(&client, &definitions).await
                };
                if let Err(e) = applied.await {
                    tracing::debug!(error = %format!("{e:#}"), "definitions ahead");
                }
            }
            // Without a baseline it is simply not put back.
            let baseline = match reuse {
                true => Baseline::take(&client)
                    .await
                    .inspect_err(|e| tracing::debug!(error = %format!("{e:#}"), "baseline"))
                    .ok(),
                false => None,
            };
            Ok(Ready::fresh(cp, baseline))
        })
    }

    /// A control plane put back after an earlier run, if one is (still) fine.
    async fn kept(&self, etcd: &SharedEtcd) -> Option<Ready> {
        loop {
            let kept = self.pool.pop()?;
            let Kept {
                etcd: on,
                mut cp,
                baseline,
                runs,
            } = kept;
            if Arc::ptr_eq(&on, etcd) && cp.check().is_ok() {
                return Some(Ready {
                    cp,
                    baseline: Some(baseline),
                    runs,
                });
            }
            cp.stop().await;
            self.pool.stopped_one();
        }
    }

    /// One put back, waiting for those being put back (a fraction of a second) rather
    /// than starting another (seconds of the CPU the runs need).
    async fn put_back_one(&self, etcd: &SharedEtcd) -> Option<Ready> {
        loop {
            if let Some(kept) = self.kept(etcd).await {
                return Some(kept);
            }
            if !self.pool.putting_back() {
                return None;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// A ready control plane: one put back (or being put back), else a spare if one is
    /// (being) started, else a new one; then spares started up to `ahead` — when putting
    /// back, only while fewer than `ahead + 1` are alive.
    async fn take(&self) -> Result<Ready> {
        let etcd = self.etcd().await?;
        if let Some(kept) = self.put_back_one(&etcd).await {
            return Ok(kept);
        }
        let spare = self.spares.lock().await.pop_front();
        let spare = match spare {
            Some((on, h)) if !Arc::ptr_eq(&on, &etcd) => {
                // Started on an etcd that has exited since: its apiserver has no storage.
                stop_spare(h).await;
                self.pool.stopped_one();
                None
            }
            Some((_, h)) => Some(h),
            None => None,
        };
        let cp = match spare {
            Some(h) => match h.await {
                Ok(Ok(mut ready)) => match ready.cp.check() {
                    Ok(()) => Ok(ready),
                    // It died while it waited: start another.
                    Err(_) => {
                        ready.cp.stop().await;
                        self.pool.stopped_one();
                        self.launch(etcd.clone()).await?
                    }
                },
                Ok(Err(e)) => Err(e),
                Err(e) => Err(anyhow::anyhow!("starting a control plane: {e}")),
            },
            None => self.launch(etcd.clone()).await?,
        };
        if cp.is_err() {
            self.pool.stopped_one();
        }
        let mut spares = self.spares.lock().await;
        while spares.len() < self.ahead && (!self.reuse || self.pool.alive() <= self.ahead) {
            spares.push_back((etcd.clone(), self.launch_spare(etcd.clone())));
        }
        cp
    }
}

/// Stop a spare control plane: one still starting is dropped mid-start (its processes
/// are killed), a ready one stopped.
async fn stop_spare(h: JoinHandle<Result<Ready>>) {
    h.abort();
    if let Ok(Ok(ready)) = h.await {
        ready.cp.stop().await;
    }
}

impl Ready {
    fn fresh(cp: ControlPlane, baseline: Option<Baseline>) -> Ready {
        Ready {
            cp,
            baseline,
            runs: 0,
        }
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
            let ready = self.take().await.inspect_err(|e| {
                if !crate::envtest::daemon::cut_short_by_signal(e) {
                    self.failed.store(true, Ordering::Relaxed);
                }
            })?;
            let version = self
                .versions
                .iter()
                .find(|(n, _)| n == "kube-apiserver")
                .map_or_else(String::new, |(_, v)| v.clone());
            let back = match ready.baseline {
                Some(baseline) => Some(PutBack {
                    pool: self.pool.clone(),
                    etcd: self.etcd().await?,
                    baseline,
                }),
                None => None,
            };
            Ok(Box::new(Running {
                cp: ready.cp,
                version,
                runs: ready.runs,
                back,
                pool: self.pool.clone(),
            }) as Box<dyn Started>)
        })
    }

    fn finish(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            for (_, h) in self.spares.lock().await.drain(..) {
                stop_spare(h).await;
            }
            // Each put back under way ends with its control plane kept or stopped.
            while self.pool.putting_back() {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            while let Some(k) = self.pool.pop() {
                k.cp.stop().await;
            }
            if self.reuse && self.pool.started.load(Ordering::Relaxed) > 0 {
                eprintln!("{}", self.pool.account());
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
    /// Runs it had before this one.
    runs: u32,
    /// Where it goes back to after the run, and as what.
    back: Option<PutBack>,
    pool: Arc<Pool>,
}

struct PutBack {
    pool: Arc<Pool>,
    etcd: SharedEtcd,
    baseline: Baseline,
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
        let history = match self.runs {
            0 => String::new(),
            n => format!(", put back after {n} run(s) before this one"),
        };
        format!(
            "a real kube-apiserver ({}, {}; control plane in {}, ready in {:.1}s{history})",
            self.version,
            self.cp.url,
            self.cp.dir.display(),
            self.cp.started_in.as_secs_f64()
        )
    }

    /// Put back for the next run, in the background (the run's end does not wait for
    /// it), or stopped and its directory (certificates, logs) removed.
    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let Running {
                mut cp,
                runs,
                back,
                pool,
                ..
            } = *self;
            // One whose apiserver or etcd has exited (a signal, someone else) is not
            // asked: its lists would wait out the apiserver's own timeout.
            let alive = match &back {
                Some(b) => cp.check().is_ok() && b.etcd.lock().await.check().is_ok(),
                None => false,
            };
            match back.filter(|_| alive) {
                Some(back) => {
                    back.pool.putting_back.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(back.put(cp, runs));
                }
                None => {
                    stop(cp).await;
                    pool.stopped_one();
                }
            }
        })
    }
}

impl PutBack {
    /// Put `cp` back in the pool, or stop it if it cannot be.
    async fn put(self, cp: ControlPlane, runs: u32) {
        match put_back(&cp, &self.baseline).await {
            Ok(()) => {
                self.pool.put_back.fetch_add(1, Ordering::Relaxed);
                self.pool.push(Kept {
                    etcd: self.etcd,
                    cp,
                    baseline: self.baseline,
                    runs: runs + 1,
                })
            }
            Err(e) => {
                tracing::debug!(
                    error = %format!("{e:#}"),
                    "a control plane not put back: the next run has a new one"
                );
                self.pool.refuse(format!("{e:#}"));
                stop(cp).await;
                self.pool.stopped_one();
            }
        }
        self.pool.putting_back.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Stop a control plane, and remove its directory.
async fn stop(cp: ControlPlane) {
    let dir = cp.dir.clone();
    cp.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Put a control plane back to its baseline, within [`PUT_BACK_WITHIN`].
async fn put_back(cp: &ControlPlane, baseline: &Baseline) -> Result<()> {
    let work = async {
        let client = crate::k8s::kubeconfig::client(&cp.admin_kubeconfig, None).await?;
        reset::put_back(&client, baseline).await
    };
    tokio::time::timeout(PUT_BACK_WITHIN, work)
        .await
        .map_err(|_| anyhow::anyhow!("not put back within {}s", PUT_BACK_WITHIN.as_secs()))?
}
