//! When a run's controller is ready, and how long it has then been idle.
//!
//! **Ready**: it has made its first request, and nothing it asked for is on its way to
//! it — no request in flight, every WatchList stream's initial state delivered
//! (`proxy/activity.rs`). Until then it is starting (importing its client library,
//! syncing informers, electing a leader) and no quiet is counted: a controller is never
//! judged before it acted. A restart starts readiness over.
//!
//! **Idle**, once ready: no work-like write by it (Lease renewals and Events are
//! heartbeats and records, not work), no window opened or closed, no restart, the
//! workload done — for how long. With `--idle-url` the controller's own workqueue
//! metrics must say idle too (`idle.rs`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::proxy::activity::{ClientActivity, Snapshot};

/// What the controller's requests count under (its listener's name).
pub const KEY: &str = "listener:controller";

pub(super) struct Activity {
    activity: Arc<ClientActivity>,
    engine: Arc<crate::schedule::engine::Engine>,
    changes: tokio::sync::watch::Receiver<u64>,
    last_change: Option<SystemTime>,
    last_restart: Arc<Mutex<Option<SystemTime>>>,
    /// The restart readiness was last reset for.
    restart_seen: Option<SystemTime>,
    /// When the current process became ready.
    pub ready_at: Option<SystemTime>,
    /// The other controllers' activity keys: their work keeps the run from quiet.
    others: Vec<Arc<str>>,
}

impl Activity {
    pub fn new<'a>(
        running: &crate::server::Running,
        last_restart: Arc<Mutex<Option<SystemTime>>>,
        others: impl IntoIterator<Item = &'a str>,
    ) -> Activity {
        Activity {
            activity: running.activity.clone(),
            engine: running.engine.clone(),
            changes: running.engine.changes(),
            last_change: None,
            last_restart,
            restart_seen: None,
            ready_at: None,
            others: others
                .into_iter()
                .map(crate::identity::listener_key)
                .collect(),
        }
    }

    fn controller(&self) -> Snapshot {
        self.activity.of(KEY)
    }

    /// Whether the controller has written anything yet (work: not a lease renewal or an
    /// Event).
    pub fn controller_wrote(&self) -> bool {
        self.controller().last_write.is_some()
    }

    /// Whether the controller has made a request yet.
    pub fn started(&self) -> bool {
        self.controller().first_request.is_some()
    }

    /// How long the controller has been idle (zero while it is not ready).
    pub fn idle_for(&mut self, now: SystemTime, workload_done: Option<SystemTime>) -> Duration {
        if self.changes.has_changed().unwrap_or(false) {
            self.changes.borrow_and_update();
            self.last_change = Some(now);
        }
        let restart = *self.last_restart.lock().unwrap_or_else(|p| p.into_inner());
        if restart != self.restart_seen {
            // A new process: it has to start again before anything is judged.
            self.restart_seen = restart;
            self.ready_at = None;
        }
        let c = self.controller();
        let since_restart = |t: SystemTime| restart.is_none_or(|r| t >= r);
        if self.ready_at.is_none() && c.settled() && c.last_request.is_some_and(since_restart) {
            self.ready_at = Some(now);
        }
        let Some(ready) = self.ready_at else {
            return Duration::ZERO;
        };
        let others = self
            .others
            .iter()
            .filter_map(|k| self.activity.of(k).last_write)
            .max();
        let last = [
            Some(ready),
            self.last_change,
            c.last_write,
            others,
            restart,
            workload_done,
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(now);
        now.duration_since(last).unwrap_or_default()
    }

    /// No window open, and none triggered that is still to open (a `delay`).
    pub fn no_window_open(&self) -> bool {
        self.engine.idle()
    }
}
