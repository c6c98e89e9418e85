//! The oracles of one run: their configuration, their state behind one lock (what they
//! share and each oracle's own), the metrics they set, and what the rest of stalemate
//! asks of them. What they are told is in `feed.rs`, how they are judged in
//! `evaluate.rs`, each oracle's rules in its own file under `kinds/`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::SystemTime;

use super::hooks::Oracle;
use super::kinds::OracleConfig;
use super::object_ref::ObjectRef;
use super::rates::Peak;
use super::state::Shared;

/// The oracles of one run.
pub struct Oracles {
    pub config: OracleConfig,
    pub started: SystemTime,
    pub(super) state: Mutex<State>,
    pub violations_gauge: prometheus::IntGaugeVec,
    /// Entries dropped at a cap (`stalemate_oracle_dropped_total`).
    pub dropped_counter: prometheus::IntCounter,
    /// The controller's exits on its own (`stalemate_controller_exits_total`).
    pub exits_counter: prometheus::IntCounter,
    /// The back-off being waited before the controller starts again (0 while it runs).
    pub backoff_gauge: prometheus::Gauge,
    /// Set once a window has closed or the controller exited: answered requests are then
    /// looked at (the comeback); before that, not at all.
    pub(super) watching_answers: std::sync::atomic::AtomicBool,
    /// When each client last wrote (successfully or not): how `explore` tells a quiet
    /// controller.
    pub(super) last_writes: Mutex<std::collections::HashMap<String, SystemTime>>,
    /// `config.watched_resources()`, asked at every watch stream's start.
    pub(super) watched: BTreeSet<String>,
}

/// Behind the lock: what the oracles share, and each configured oracle (in the order
/// their violations are reported).
pub(super) struct State {
    pub(super) shared: Shared,
    pub(super) oracles: Vec<Box<dyn Oracle>>,
}

impl Oracles {
    pub fn new(config: OracleConfig, started: SystemTime) -> Oracles {
        Oracles {
            watched: config.watched_resources(),
            state: Mutex::new(State {
                shared: Shared::default(),
                oracles: config.build(),
            }),
            config,
            started,
            violations_gauge: prometheus::IntGaugeVec::new(
                prometheus::Opts::new(
                    "oracle_violations",
                    "Violations the oracles have found so far, by oracle.",
                ),
                &["oracle"],
            )
            .expect("static metric definition"),
            last_writes: Mutex::new(std::collections::HashMap::new()),
            dropped_counter: prometheus::IntCounter::new(
                "oracle_dropped_total",
                "Objects, rate counters, window spans or recoveries the oracles stopped tracking at their cap (10,000 each).",
            )
            .expect("static metric definition"),
            exits_counter: prometheus::IntCounter::new(
                "controller_exits_total",
                "Exits of the controller on its own (not by a restart window), each restarted after a back-off as kubelet would.",
            )
            .expect("static metric definition"),
            backoff_gauge: prometheus::Gauge::new(
                "controller_backoff_seconds",
                "The back-off the controller is waiting out before it is started again (0 while it runs).",
            )
            .expect("static metric definition"),
            watching_answers: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Count entries a cap dropped.
    pub(super) fn count_dropped(&self, s: &mut Shared, n: u64) {
        if n > 0 {
            s.dropped += n;
            self.dropped_counter.inc_by(n);
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Each client's highest write and 409 rates per object (with the hot-loop and
    /// conflicts oracles configured), whether or not they passed a limit.
    pub fn peaks(&self) -> BTreeMap<(String, ObjectRef), Peak> {
        let mut peaks = BTreeMap::new();
        for o in &self.lock().oracles {
            o.peaks(&mut peaks);
        }
        peaks
    }

    /// Whether a rate oracle (hot loop, conflicts) is over its limit with every window
    /// closed, and was after the last one closed — a run that cannot go quiet can end
    /// early. (A storm inside a window is what the window does; whether it outlives the
    /// window is the question.)
    pub fn rate_violated(&self) -> bool {
        let s = self.lock();
        if s.shared.windows.iter().any(|w| w.closed_at.is_none()) {
            return false;
        }
        let last_close = s.shared.windows.iter().filter_map(|w| w.closed_at).max();
        s.oracles.iter().any(|o| o.over_limit_after(last_close))
    }

    /// Whether ground truth has reported this object yet.
    pub fn has_seen(&self, resource: &str, namespace: &str, name: &str) -> bool {
        self.lock().shared.objects.contains_key(&ObjectRef {
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
    }

    /// Whether the delivery lanes record `resource`'s events (the resources the oracles
    /// watch in ground truth: the others have no truth lane to compare with).
    pub fn keeps_lanes_for(&self, resource: &str) -> bool {
        self.watched.contains(resource)
    }

    /// When `client` last sent a write through the proxy.
    pub fn last_write(&self, client: &str) -> Option<SystemTime> {
        self.last_writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(client)
            .copied()
    }

    /// When any client but those in `except` last sent a write (a run's controller,
    /// whatever a schedule calls it, is every client but the workload).
    pub fn last_write_except(&self, except: &[&str]) -> Option<SystemTime> {
        self.last_writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(c, _)| !except.contains(&c.as_str()))
            .map(|(_, t)| *t)
            .max()
    }

    /// How many windows have closed so far.
    pub fn windows_closed(&self) -> usize {
        (self.lock().shared.windows.iter())
            .filter(|w| w.closed_at.is_some())
            .count()
    }

    /// What `settle` counts from (`Shared::last_disturbance`; None: the run's start).
    pub fn settle_from(&self) -> Option<SystemTime> {
        self.lock().shared.last_disturbance()
    }

    /// When the controllers' metrics said they had settled (`controller_settled`).
    pub fn settled_by_metrics(&self) -> Option<SystemTime> {
        self.lock().shared.settled_at
    }
}
