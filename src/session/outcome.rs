//! What a session gives back: [`Outcome`], how it ended and where its time went.

use std::time::SystemTime;

use super::leases;
use super::snapshot::{Extent, Snapshot};
use crate::trace::Stamped;

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ended {
    ControllerExited,
    Quiet,
    /// Idle for less than `quiet`, but the controller's metrics said it had settled (its
    /// workqueues empty, no retry pending) and its end state was what it should be.
    Settled,
    MaxRun,
    Duration,
    Interrupted,
    /// `stop_early` said so.
    Early,
}

/// Where a run's time went, in seconds: `start` (the upstream started, the proxy in front
/// of it, the setup applied, the controllers started), `ready` (until every controller
/// was ready: its first request made, its informers' lists answered), `work` (until the
/// last thing that was not idleness: its last write, a window, the workload),
/// `quiet` (the idle stretch that ended it, the wait for its end state included),
/// `end_state` (reading it) and `stop` (the controllers, the proxy and the upstream
/// stopped).
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Phases {
    pub start: f64,
    pub ready: f64,
    pub work: f64,
    pub quiet: f64,
    pub end_state: f64,
    pub stop: f64,
}

/// What a run left.
#[derive(Clone)]
pub struct Outcome {
    pub report: crate::report::Report,
    /// The trace, if kept in memory.
    pub trace: Vec<Stamped>,
    /// The end state, if asked for.
    pub snapshot: Snapshot,
    /// Where the snapshot looked.
    pub extent: Extent,
    pub peaks: std::collections::BTreeMap<(String, crate::oracle::ObjectRef), crate::oracle::Peak>,
    /// The controller ended on its own with a failure (or could not be started again;
    /// or, restarted after each exit, it kept exiting: a crash loop).
    pub controller_failed: Option<String>,
    /// Its exits on its own that were followed by a restart (`restart_crashed`).
    pub crashes: Vec<crate::process::Crash>,
    /// The workload's exit code (None: no workload, or it never ran or finished).
    pub workload_exit: Option<i32>,
    pub ended: Ended,
    /// When the controller was started.
    pub started: SystemTime,
    pub seconds: f64,
    /// The resources and namespaces the setup put objects in.
    pub setup: Vec<crate::setup::Applied>,
    /// The Leases the controllers under test wrote, read with the end state.
    pub leases: Vec<leases::Held>,
    /// Where its time went.
    pub phases: Phases,
}
