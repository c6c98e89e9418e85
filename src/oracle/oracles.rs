//! The oracles of one run: their configuration, their state behind one lock, and the
//! metrics they set. What they do with it is in `mod.rs` and the oracles' own files.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::SystemTime;

use super::config::OracleConfig;
use super::state::State;

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

impl Oracles {
    pub fn new(config: OracleConfig, started: SystemTime) -> Oracles {
        Oracles {
            watched: config.watched_resources(),
            config,
            started,
            state: Mutex::new(State::default()),
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
    pub(super) fn count_dropped(&self, s: &mut State, n: u64) {
        if n > 0 {
            s.dropped += n;
            self.dropped_counter.inc_by(n);
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
