//! The oracles' state: plain data the `on_*` calls update and verdicts are judged from.

use std::collections::{BTreeMap, VecDeque};
use std::time::SystemTime;

use super::expected;
use super::object_ref::ObjectRef;
use super::rates;
use super::staleness;
use super::tracked::Obj;
use super::verdicts::{ExitMark, Mark, Recovery, RestartMark, Violation, WindowSpan};

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) objects: BTreeMap<ObjectRef, Obj>,
    pub(super) rates: rates::Rates,
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
    pub(super) recoveries: VecDeque<(Recovery, Option<SystemTime>)>,
    pub(super) marks: VecDeque<Mark>,
    /// Violations of objects since deleted: judged when they went, their state pruned.
    pub(super) settled: Vec<Violation>,
    /// What was true and what clients saw, per object (bounded by itself).
    pub(super) lanes: staleness::Record,
    /// Entries dropped at a cap.
    pub(super) dropped: u64,
    /// An object the convergence oracle judges has been seen (it may be deleted since).
    pub(super) convergence_seen: bool,
    /// Creates and deletes of the resources the `expected` oracle counts, by its client.
    pub(super) writes: expected::WriteCounts,
    /// When the controllers' metrics said they had settled (`Oracles::controller_settled`).
    pub(super) settled_at: Option<SystemTime>,
    /// When the workload's last step ended (`Oracles::workload_done`).
    pub(super) workload_done_at: Option<SystemTime>,
}
