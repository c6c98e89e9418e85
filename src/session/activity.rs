//! What tells a quiet run: the controller's writes, windows opening and closing,
//! restarts, the workload's end.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::oracle::Oracles;

use super::WORKLOAD;

pub(super) struct Activity {
    oracles: Arc<Oracles>,
    engine: Arc<crate::schedule::engine::Engine>,
    changes: tokio::sync::watch::Receiver<u64>,
    last_change: SystemTime,
    started: SystemTime,
    last_restart: Arc<Mutex<Option<SystemTime>>>,
}

impl Activity {
    pub fn new(
        running: &crate::server::Running,
        started: SystemTime,
        last_restart: Arc<Mutex<Option<SystemTime>>>,
    ) -> Activity {
        Activity {
            oracles: running.oracles.clone(),
            engine: running.engine.clone(),
            changes: running.engine.changes(),
            last_change: started,
            started,
            last_restart,
        }
    }

    /// How long nothing has happened.
    pub fn idle_for(&mut self, now: SystemTime, workload_done: Option<SystemTime>) -> Duration {
        if self.changes.has_changed().unwrap_or(false) {
            self.changes.borrow_and_update();
            self.last_change = now;
        }
        let last = [
            Some(self.started),
            Some(self.last_change),
            self.oracles.last_write_except(&[WORKLOAD]),
            *self.last_restart.lock().unwrap_or_else(|p| p.into_inner()),
            workload_done,
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(now);
        now.duration_since(last).unwrap_or_default()
    }

    pub fn no_window_open(&self) -> bool {
        self.engine.active_names().is_empty()
    }
}
