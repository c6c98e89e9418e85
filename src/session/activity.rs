//! When a run's controller is ready, and how long it has then been idle.
//!
//! **Ready**: it has made its first request, and nothing it asked for is on its way to
//! it — no request in flight, every WatchList stream's initial state delivered
//! (`proxy/activity.rs`). Until then it is starting (importing its client library,
//! syncing informers, electing a leader) and no quiet is counted: a controller is never
//! judged before it acted. Each controller under test has its own readiness, and a
//! restart of one starts its own over: the run waits for every one.
//!
//! **Idle**, once ready: no work-like write by it (Lease renewals and Events are
//! heartbeats and records, not work), no window opened or closed, no restart, the
//! workload done — for how long. With `--idle-url` the controller's own workqueue
//! metrics must say idle too (`idle.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::proxy::activity::{ClientActivity, Snapshot};

/// What the controller's requests count under (its listener's name).
pub const KEY: &str = "listener:controller";

/// When each controller under test (by name: `controller`, or an other's) was last
/// started again after a `restart` window or an exit — or will be, at the end of a
/// back-off.
pub type Restarts = Arc<Mutex<BTreeMap<String, SystemTime>>>;

/// One controller under test, as readiness sees it: each has its own start-up, so a
/// restart of one starts only its own readiness over.
struct Member {
    name: String,
    key: Arc<str>,
    /// The restart readiness was last reset for.
    restart_seen: Option<SystemTime>,
    /// When its current process became ready.
    ready_at: Option<SystemTime>,
}

pub(super) struct Activity {
    activity: Arc<ClientActivity>,
    engine: Arc<crate::schedule::engine::Engine>,
    changes: tokio::sync::watch::Receiver<u64>,
    last_change: Option<SystemTime>,
    restarts: Restarts,
    /// The controller after `--` first, then the others (`--controller NAME=CMD`).
    members: Vec<Member>,
}

impl Activity {
    pub fn new<'a>(
        running: &crate::server::Running,
        restarts: Restarts,
        others: impl IntoIterator<Item = &'a str>,
    ) -> Activity {
        let member = |name: &str, key: Arc<str>| Member {
            name: name.to_string(),
            key,
            restart_seen: None,
            ready_at: None,
        };
        let mut members = vec![member(super::names::CONTROLLER, Arc::from(KEY))];
        members.extend(
            others
                .into_iter()
                .map(|n| member(n, crate::proxy::identity::listener_key(n))),
        );
        Activity {
            activity: running.activity.clone(),
            engine: running.engine.clone(),
            changes: running.engine.changes(),
            last_change: None,
            restarts,
            members,
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

    /// How long the controllers have been idle (zero while any is not ready).
    pub fn idle_for(&mut self, now: SystemTime, workload_done: Option<SystemTime>) -> Duration {
        if self.changes.has_changed().unwrap_or(false) {
            self.changes.borrow_and_update();
            self.last_change = Some(now);
        }
        let restarts = self
            .restarts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // The latest of anything that is not idleness (Option's order: None first).
        let mut latest = self.last_change.max(workload_done);
        let mut all_ready = true;
        for m in &mut self.members {
            let restart = restarts.get(&m.name).copied();
            if restart != m.restart_seen {
                // A new process: it has to start again before anything is judged.
                m.restart_seen = restart;
                m.ready_at = None;
            }
            let c = self.activity.of(&m.key);
            let since_restart = |t: SystemTime| restart.is_none_or(|r| t >= r);
            if m.ready_at.is_none() && c.settled() && c.last_request.is_some_and(since_restart) {
                m.ready_at = Some(now);
            }
            all_ready &= m.ready_at.is_some();
            latest = latest.max(m.ready_at).max(c.last_write).max(restart);
        }
        if !all_ready {
            return Duration::ZERO;
        }
        now.duration_since(latest.unwrap_or(now))
            .unwrap_or_default()
    }

    /// Whether every controller is ready (as of the last `idle_for`).
    pub fn ready(&self) -> bool {
        self.members.iter().all(|m| m.ready_at.is_some())
    }

    /// No window open, and none triggered that is still to open (a `delay`).
    pub fn no_window_open(&self) -> bool {
        self.engine.idle()
    }
}
