//! One simulator instance: its settings, its state (behind one lock), its authenticator,
//! and the switches that make it misbehave (pause, close watches, restart) — what the
//! router, the verbs and the accept loop share.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch as tokio_watch};

use super::store::{HistoryLimits, State};
use super::{auth, bootstrap, builtins};
use stalemate_wire::k8s::certs::CertBundle;

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
    pub(super) kill_connections: tokio_watch::Sender<u64>,
    pub(super) restart: Notify,
    pub(super) restart_down: Mutex<Duration>,
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
        let mut state = State::new(cfg.history, cfg.watch_backlog);
        bootstrap::cluster(&mut state, &certs.ca_cert_pem);
        Arc::new(Sim {
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
        })
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
