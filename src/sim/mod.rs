//! `stalemate sim`: an in-memory Kubernetes API server.
//!
//! The embedded upstream for `stalemate demo`, the end-to-end tests and the benchmarks.
//! Real clients — `kubectl`, kube-rs, client-go — talk to it over HTTPS (HTTP/1.1 and
//! HTTP/2) and should not be able to tell it from a small real cluster for everything
//! stalemate exercises: discovery, CRUD with optimistic concurrency, the status
//! subresource, generation, finalizers, selectors, paging, and every watch form with
//! bookmarks, WatchList and `410 Expired`. `fixtures/kube-apiserver-1.28/` holds the real
//! exchanges it is checked against (`e2e/sim_conformance.rs`).
//!
//! It serves every built-in resource of the pinned Kubernetes version (`builtins.rs`:
//! the real apiserver's discovery, generated), with what the real apiserver fills in
//! (`defaults.rs`; `pods.rs`: pod admission, binding, eviction; `services.rs`: cluster
//! IPs), the validation a controller runs into (`validate.rs`), the `scale` subresource
//! (`scale.rs`), the built-in printers (`printers.rs`) and protobuf request bodies of
//! every built-in kind (`proto_body/`); `e2e/sim_differential.rs`
//! keeps all of it honest against a real kube-apiserver. What it cannot answer — logs,
//! exec, proxies, protobuf bodies of kinds it does not serve — is answered 501/415/406
//! and recorded ([`Sim::unanswered`]): `run` and `explore` stop on it.
//!
//! Authentication is real (`auth.rs`: client certificates, then tokens it signed; 401
//! for anything else). Not simulated: authorization (every identity, anonymous
//! included, may do everything), validation beyond `validate.rs`, schema
//! validation/pruning/defaulting of custom resources, protobuf and CBOR serving,
//! controllers other than the namespace lifecycle and the service-account/root-CA
//! publishers, field-ownership conflicts of server-side apply.
//!
//! ```text
//!  client ─TLS─► listen::serve ─► http::handle ─┬─ /_sim/...      misbehave on request
//!                                               ├─ discovery, /version
//!                                               ├─ read  (get, list, Table)
//!                                               ├─ write (create, update, patch), delete
//!                                               └─ watch (history + broadcast)
//!                                                         ▲
//!                           store::State (one mutex: objects, RV, history, broadcast)
//! ```

pub mod auth;
pub mod builtins;
pub mod crds;
pub mod defaults;
pub mod delete;
pub mod discovery;
pub mod http;
pub mod local;
pub mod meta;
pub mod namespaces;
pub mod negotiate;
pub mod openapi;
pub mod patch;
pub mod pods;
pub mod printers;
pub mod proto_body;
pub mod read;
pub mod registry;
#[cfg(test)]
mod robustness_tests;
pub mod scale;
pub mod selector;
pub mod services;
pub mod store;
pub mod table;
pub mod validate;
pub mod watch;
pub mod write;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch as tokio_watch};

use crate::certs::CertBundle;
use store::{HistoryLimits, State};

/// Settings of one simulator instance.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The Kubernetes minor version `/version` reports (1.<minor>). kubectl's dispatcher on
    /// these machines picks its bundled kubectl by it, so it must be a real one.
    pub kube_minor: u32,
    pub history: HistoryLimits,
    /// Interval of periodic BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Largest request body accepted (the apiserver's limit is 3 MiB).
    pub max_body_bytes: usize,
    /// Events a watcher may fall behind before its watch is closed, as the watch cache
    /// closes unresponsive watchers.
    pub watch_backlog: usize,
    /// Misbehaviour: encode every watch response this way, whatever the client accepts
    /// (an upstream that ignores `Accept-Encoding`, or a compressing gateway).
    pub encode_watches: Option<WatchEncoding>,
}

/// A `Content-Encoding` for [`SimConfig::encode_watches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WatchEncoding {
    Gzip,
    Deflate,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            kube_minor: builtins::kubernetes_minor(),
            history: HistoryLimits {
                max_events: 100_000,
                max_age: Duration::from_secs(300),
            },
            bookmark_interval: Duration::from_secs(60),
            max_body_bytes: 3 * 1024 * 1024,
            watch_backlog: 65_536,
            encode_watches: None,
        }
    }
}

/// How the `close-watches` misbehaviour ends streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseMode {
    /// End of stream, as when the server's watch timeout expires.
    Clean,
    /// Stream reset / connection error, as when an apiserver dies.
    Abrupt,
}

/// A running simulator's shared state.
pub struct Sim {
    pub cfg: SimConfig,
    state: Mutex<State>,
    pub certs: CertBundle,
    /// Requests and watch deliveries wait while `Some(deadline)` is in the future.
    paused_until: tokio_watch::Sender<Option<Instant>>,
    /// Bumped to end every open watch.
    close_watches: tokio_watch::Sender<(u64, CloseMode)>,
    /// Bumped to drop every open connection.
    kill_connections: tokio_watch::Sender<u64>,
    restart: Notify,
    restart_down: Mutex<Duration>,
    pub active_watches: AtomicUsize,
    /// Request bodies decoded from protobuf (`/_sim/state`: which clients wrote it).
    pub protobuf_bodies: AtomicUsize,
    started: Instant,
    /// Signs and checks bearer tokens; reads client certificates.
    pub auth: auth::Authenticator,
    /// What clients asked that the simulator cannot answer as a real apiserver would (a
    /// subresource it does not do, a media type it cannot read or write), with counts:
    /// `run` and `explore` stop on it rather than judge a controller that never got its
    /// answers.
    unanswered: Mutex<std::collections::BTreeMap<String, u64>>,
}

impl Sim {
    pub fn new(cfg: SimConfig, certs: CertBundle) -> Arc<Sim> {
        let state = State::new(cfg.history, cfg.watch_backlog);
        let sim = Arc::new(Sim {
            cfg,
            state: Mutex::new(state),
            certs,
            paused_until: tokio_watch::channel(None).0,
            close_watches: tokio_watch::channel((0, CloseMode::Clean)).0,
            kill_connections: tokio_watch::channel(0).0,
            restart: Notify::new(),
            restart_down: Mutex::new(Duration::ZERO),
            active_watches: AtomicUsize::new(0),
            protobuf_bodies: AtomicUsize::new(0),
            started: Instant::now(),
            auth: auth::Authenticator::new(),
            unanswered: Mutex::new(Default::default()),
        });
        namespaces::bootstrap(&sim);
        sim
    }

    /// The state lock. A panic while holding it is a bug, but the data stays usable, so a
    /// poisoned lock is recovered rather than taking the whole server down.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Wait while the server is paused.
    pub async fn wait_unpaused(&self) {
        let mut rx = self.paused_until.subscribe();
        loop {
            let until = *rx.borrow_and_update();
            match until {
                Some(t) if t > Instant::now() => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(t.into()) => {}
                        _ = rx.changed() => {}
                    }
                }
                _ => return,
            }
        }
    }

    pub fn pause(&self, d: Duration) {
        self.paused_until.send_replace(Some(Instant::now() + d));
    }

    pub fn close_watches(&self, mode: CloseMode) {
        self.close_watches.send_modify(|(n, m)| {
            *n += 1;
            *m = mode;
        });
    }

    pub fn close_signal(&self) -> tokio_watch::Receiver<(u64, CloseMode)> {
        self.close_watches.subscribe()
    }

    /// Drop every connection and stop listening for `down`, keeping all state.
    pub fn restart(&self, down: Duration) {
        *self.restart_down.lock().unwrap_or_else(|p| p.into_inner()) = down;
        self.restart.notify_one();
    }

    /// A bearer token for `sub` that this simulator accepts (no expiry).
    pub fn token_for(&self, sub: &str) -> String {
        self.auth.issue(sub, None)
    }

    /// Note a request the simulator could not answer as a real apiserver would.
    pub fn unanswerable(&self, what: String) {
        tracing::warn!(%what, "the simulator cannot answer this; use a real apiserver (--envtest)");
        *self
            .unanswered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(what)
            .or_default() += 1;
    }

    /// What it could not answer so far, with how many times each was asked.
    pub fn unanswered(&self) -> Vec<(String, u64)> {
        let m = self.unanswered.lock().unwrap_or_else(|p| p.into_inner());
        m.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    pub fn watch_count(&self) -> usize {
        self.active_watches.load(Ordering::Relaxed)
    }
}

/// Serve `sim` on `listener` until `shutdown` resolves. Restarts requested over the admin
/// endpoint rebind the same address.
pub async fn serve(
    sim: Arc<Sim>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<()> {
    // Client certificates signed by the simulator's CA authenticate, as with
    // kube-apiserver's --client-ca-file (one CA for serving and clients, as kind has).
    let tls = crate::listen::tls::server_config_with_client_ca(
        sim.certs.cert_pem.as_bytes(),
        sim.certs.key_pem.as_bytes(),
        Some(sim.certs.ca_cert_pem.as_bytes()),
        "the simulator's certificate",
    )?;
    let addr = listener.local_addr().context("listener address")?;
    let mut listener = Some(listener);
    tokio::pin!(shutdown);
    loop {
        let l = match listener.take() {
            Some(l) => l,
            None => bind_retry(addr).await?,
        };
        let s = sim.clone();
        let handler = move |req, peer| http::handle(s.clone(), req, peer);
        let restart = sim.restart.notified();
        let stop = async {
            tokio::select! {
                _ = &mut shutdown => true,
                _ = restart => false,
            }
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<bool>();
        let kill_rx = sim.kill_connections.subscribe();
        let serving = crate::listen::serve(
            l,
            tls.clone(),
            handler,
            async {
                let _ = stop_rx.await;
            },
            Duration::from_secs(5),
            kill_rx,
        );
        tokio::pin!(serving);
        let shutting_down = tokio::select! {
            stop = stop => { let _ = stop_tx.send(stop); stop }
            _ = &mut serving => true,
        };
        if shutting_down {
            sim.close_watches(CloseMode::Clean);
            serving.await;
            return Ok(());
        }
        // Restart: everything open vanishes at once, like a killed process — the
        // connections drop (their watches end with them), no stream is reset first
        // (a dying process sends no RST_STREAM).
        sim.kill_connections.send_modify(|n| *n += 1);
        serving.await;
        let down = *sim.restart_down.lock().unwrap_or_else(|p| p.into_inner());
        tracing::info!(?down, "simulator restarting");
        tokio::time::sleep(down).await;
    }
}

async fn bind_retry(addr: SocketAddr) -> Result<TcpListener> {
    let mut last = None;
    for _ in 0..50 {
        match TcpListener::bind(addr).await {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(last.map_or_else(|| anyhow::anyhow!("bind failed"), Into::into))
        .with_context(|| format!("rebinding {addr} after a restart"))
}

/// The identity in the simulator's own kubeconfig (`kubectl auth whoami` shows it).
pub const ADMIN_USER: &str = "stalemate-sim:admin";
/// The group of the admin client certificate (`--kubeconfig-auth cert`).
pub const ADMIN_GROUP: &str = "system:masters";

/// The credentials of the kubeconfig `stalemate sim` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KubeconfigAuth {
    Token,
    Cert,
}

/// Write a kubeconfig for `sim` at `url`, authenticating as the admin by `how`.
pub fn write_kubeconfig(
    path: &std::path::Path,
    sim: &Sim,
    url: &str,
    how: KubeconfigAuth,
) -> Result<()> {
    let token = sim.token_for(ADMIN_USER);
    let cert = match how {
        KubeconfigAuth::Token => None,
        KubeconfigAuth::Cert => Some(crate::certs::client_cert(
            &sim.certs,
            ADMIN_USER,
            Some(ADMIN_GROUP),
        )?),
    };
    crate::kubeconfig::write(
        path,
        &crate::kubeconfig::KubeconfigSpec {
            name: "stalemate-sim",
            server: url,
            ca_pem: &sim.certs.ca_cert_pem,
            token: cert.is_none().then_some(token.as_str()),
            client_cert: cert.as_ref().map(|(c, k)| (c.as_str(), k.as_str())),
            namespace: Some("default"),
        },
    )
}
