//! What the oracles share: the run as it was observed — ground truth's objects, the
//! windows, the requests on the timeline, the controller's restarts and exits. Plain
//! data the fan-out (`feed.rs`) updates and every oracle reads; what one oracle alone
//! keeps lives in its own file under `kinds/`.
//!
//! Why shared rather than each oracle's own: the same object store serves convergence
//! (its verdict), the hot loop (its successive diffs), the report (each object's last
//! status) and the staleness lanes, and it is capped as one (one dropped count per
//! object); the window spans decide convergence's wait, recovery's start and whether a
//! rate counts. Kept once, they cannot disagree.

use std::collections::{BTreeMap, VecDeque};
use std::time::SystemTime;

use super::object_ref::ObjectRef;
use super::staleness;
use super::tracked::Obj;
use super::verdicts::{ExitMark, Mark, RestartMark, Violation, WindowSpan};

#[derive(Debug, Default)]
pub(super) struct Shared {
    pub(super) objects: BTreeMap<ObjectRef, Obj>,
    pub(super) windows: VecDeque<WindowSpan>,
    pub(super) restarts: VecDeque<RestartMark>,
    pub(super) exits: VecDeque<ExitMark>,
    /// How exits are restarted (the supervisor's crash policy, described).
    pub(super) backoff: Option<String>,
    /// Each client's first answered request since the last window closed or the
    /// controller last started (`Comeback`).
    pub(super) answered: BTreeMap<String, SystemTime>,
    /// When `answered` was last cleared.
    pub(super) answered_since: Option<SystemTime>,
    pub(super) marks: VecDeque<Mark>,
    /// Violations of objects since deleted: judged when they went (`Oracle::on_gone`),
    /// their state pruned.
    pub(super) settled: Vec<Violation>,
    /// What was true and what clients saw, per object (bounded by itself).
    pub(super) lanes: staleness::Record,
    /// Entries dropped at a cap.
    pub(super) dropped: u64,
    /// When the controllers' metrics said they had settled (`Oracles::controller_settled`).
    pub(super) settled_at: Option<SystemTime>,
    /// When the workload's last step ended (`Oracles::workload_done`).
    pub(super) workload_done_at: Option<SystemTime>,
}

impl Shared {
    /// When the last window closed, if one has and none is open.
    pub(super) fn last_close(&self) -> Option<SystemTime> {
        if self.windows.iter().any(|w| w.closed_at.is_none()) {
            return None;
        }
        self.windows.iter().filter_map(|w| w.closed_at).max()
    }

    /// What `settle` counts from: the later of the last window's close and the end of
    /// the workload's last step. A user's change is as much a disturbance as a fault: a
    /// run without windows whose workload acted 40 s in has not given its controller
    /// `settle` to answer it by judging it 5 s later — and explore's fault-free
    /// references must be judged as its trials are, whose windows open after the action
    /// (else the references end with the controller still on its way, and every trial
    /// that waited longer "differs" from them).
    pub(super) fn last_disturbance(&self) -> Option<SystemTime> {
        self.windows
            .iter()
            .filter_map(|w| w.closed_at)
            .chain(self.workload_done_at)
            .max()
    }
}
