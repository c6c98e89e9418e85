//! A real control plane on loopback, the way controller-runtime's envtest makes one:
//! etcd and kube-apiserver from a directory of binaries (`$KUBEBUILDER_ASSETS`), on free
//! ports, with certificates made here, waited for until `/readyz` — and, with `--with`,
//! kube-controller-manager, kube-scheduler and kwok's fake node. What `run --envtest`
//! runs a controller against, and what every `explore --envtest` trial gets of its own.
//!
//! ```text
//!  ControlPlane::start(spec, dir)
//!    pki (rcgen: CA, serving, admin, service-account keys) ─► etcd (own, or a shared one
//!    under a prefix of its own) ─► kube-apiserver ─► /readyz ─► --with: controller
//!    manager, scheduler, kwok + fake node, each waited for by what it does
//!  ControlPlane::stop() ─► add-ons, apiserver, etcd: killed (the data goes with them)
//! ```
//!
//! Everything a start leaves is in its directory (see `pki.rs` for the files, and one
//! `<process>.log` each); a controller run against it is told where
//! ([`ControlPlane::env`]: `STALEMATE_CONTROL_PLANE`). A start that fails stops what it
//! had started before it returns the error.

pub mod addons;
pub mod apiserver;
pub mod assets;
mod component;
pub mod daemon;
pub mod etcd;
pub mod leftovers;
pub mod pki;
mod port;
pub mod reset;
pub mod setup_envtest;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

pub use assets::Assets;
pub use component::{Component, With};
use daemon::Daemon;
pub use etcd::Etcd;
pub use port::{free_port, port_clash};

/// The environment variable naming a control plane's directory, for the controller.
pub const DIR_ENV: &str = "STALEMATE_CONTROL_PLANE";

/// What to start.
#[derive(Debug, Clone)]
pub struct Spec {
    pub assets: Assets,
    pub with: Vec<Component>,
    /// How long each process may take to get ready (a busy 2-core machine: seconds).
    pub ready_timeout: Duration,
    /// More kube-apiserver flags, after stalemate's own (a later flag wins):
    /// `--feature-gates=WatchList=true`, say.
    pub apiserver_args: Vec<String>,
}

impl Spec {
    pub fn new(assets: Assets, with: Vec<Component>) -> Spec {
        Spec {
            assets,
            with,
            ready_timeout: Duration::from_secs(60),
            apiserver_args: Vec::new(),
        }
    }

    /// The binaries this spec starts.
    pub fn binaries(&self) -> Vec<&'static str> {
        let mut b = vec!["etcd", "kube-apiserver"];
        b.extend(self.with.iter().map(|c| c.binary()));
        b
    }

    /// Check every binary it needs, once, before the first start; returns what each
    /// says it is.
    pub async fn check(&self) -> Result<Vec<(String, String)>> {
        self.assets.check(&self.binaries()).await
    }
}

/// Where a control plane keeps its objects: an etcd of its own, or a prefix of a shared
/// one.
pub enum Storage {
    Own,
    Shared(Arc<tokio::sync::Mutex<Etcd>>),
}

/// A running control plane.
pub struct ControlPlane {
    pub dir: PathBuf,
    /// The apiserver's URL.
    pub url: String,
    /// `system:masters`, straight to the apiserver (not through any proxy).
    pub admin_kubeconfig: PathBuf,
    assets: Assets,
    /// Add-ons, then the apiserver: stopped in reverse order of start.
    daemons: Vec<Daemon>,
    etcd: Option<Etcd>,
    /// How long it took to start.
    pub started_in: Duration,
}

impl ControlPlane {
    /// Start one in `dir` (created if missing).
    pub async fn start(spec: &Spec, dir: &Path, storage: &Storage) -> Result<ControlPlane> {
        let clock = Instant::now();
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
        let pki = pki::Pki::generate(dir)?;
        let (mut etcd, shared, etcd_url, prefix) = match storage {
            Storage::Own => {
                let e = Etcd::start(&spec.assets, dir, spec.ready_timeout).await?;
                let url = e.url.clone();
                (Some(e), None, url, "/registry".to_string())
            }
            Storage::Shared(e) => {
                let url = e.lock().await.url.clone();
                let prefix = format!("/stalemate-{}", uuid::Uuid::new_v4().simple());
                (None, Some(e.clone()), url, prefix)
            }
        };
        let mut alive = alive_check(&mut etcd, shared);
        let api = apiserver::ApiServer::start(
            &spec.assets,
            &pki,
            apiserver::Storage {
                etcd_url: &etcd_url,
                prefix: &prefix,
            },
            &spec.apiserver_args,
            dir,
            spec.ready_timeout,
            &mut alive,
        )
        .await;
        drop(alive);
        let api = match api {
            Ok(a) => a,
            Err(e) => {
                if let Some(etcd) = etcd {
                    etcd.stop().await;
                }
                return Err(e);
            }
        };
        let mut cp = ControlPlane {
            dir: dir.to_path_buf(),
            url: api.url,
            admin_kubeconfig: api.admin_kubeconfig,
            assets: spec.assets.clone(),
            daemons: vec![api.daemon],
            etcd,
            started_in: Duration::ZERO,
        };
        if let Err(e) = cp.add(spec, &pki).await {
            cp.stop().await;
            return Err(e);
        }
        cp.started_in = clock.elapsed();
        tracing::debug!(url = %cp.url, seconds = cp.started_in.as_secs_f64(), dir = %dir.display(), "control plane ready");
        Ok(cp)
    }

    /// Start `--with`'s components, one at a time, each waited for.
    async fn add(&mut self, spec: &Spec, pki: &pki::Pki) -> Result<()> {
        if spec.with.is_empty() {
            return Ok(());
        }
        let client = crate::k8s::kubeconfig::client(&self.admin_kubeconfig, None).await?;
        for c in &spec.with {
            let d = addons::spawn(*c, &spec.assets, pki, &self.url, &self.dir)?;
            self.daemons.push(d);
            let mut alive = || self.check();
            addons::wait_working(*c, &client, spec.ready_timeout, &mut alive).await?;
        }
        Ok(())
    }

    /// An error if any of its processes has exited.
    pub fn check(&mut self) -> Result<()> {
        for d in &mut self.daemons {
            if let Some(status) = d.exited() {
                return Err(d.exit_error(status));
            }
        }
        if let Some(e) = &mut self.etcd {
            e.check()?;
        }
        Ok(())
    }

    /// What a controller run against it is told: `STALEMATE_CONTROL_PLANE` (this
    /// directory: `ca.crt`, `ca.key`, `sa.key`, `sa.pub`, `admin.kubeconfig`) and
    /// `KUBEBUILDER_ASSETS` (the binaries, for a controller that is itself one of them).
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        vec![
            (DIR_ENV.into(), self.dir.clone().into_os_string()),
            (assets::ENV.into(), self.assets.dir.clone().into_os_string()),
        ]
    }

    /// Stop everything it started, the apiserver's clients first (killed: its data goes
    /// with it, see `daemon.rs`).
    pub async fn stop(mut self) {
        while let Some(d) = self.daemons.pop() {
            d.kill().await;
        }
        if let Some(e) = self.etcd.take() {
            e.kill().await;
        }
    }
}

/// What the apiserver's wait asks of etcd: still running?
fn alive_check<'a>(
    own: &'a mut Option<Etcd>,
    shared: Option<Arc<tokio::sync::Mutex<Etcd>>>,
) -> impl FnMut() -> Result<()> + Send + 'a {
    move || {
        if let Some(e) = own.as_mut() {
            e.check()?;
        }
        if let Some(s) = &shared
            && let Ok(mut e) = s.try_lock()
        {
            e.check()?;
        }
        Ok(())
    }
}
