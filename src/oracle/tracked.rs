//! What the oracles keep of one object ground truth reported.

use std::collections::{BTreeSet, VecDeque};
use std::time::SystemTime;

use serde_json::Value;

use super::kstatus;

#[derive(Debug)]
pub(super) struct Obj {
    /// When ground truth last saw it (for the cap).
    pub(super) seen: SystemTime,
    pub(super) verdict: Option<kstatus::Verdict>,
    pub(super) not_current_since: Option<SystemTime>,
    pub(super) deleted: bool,
    pub(super) last: Option<Value>,
    /// (when, changed paths) for each successive state.
    pub(super) diffs: VecDeque<(SystemTime, BTreeSet<String>)>,
    /// When kstatus first called it Current unobserved (the readiness race), and when
    /// that ended (the controller wrote its status), if it has.
    pub(super) readiness: Option<(SystemTime, Option<SystemTime>)>,
    /// No status at all yet (kstatus calls that Current): its controller has not
    /// written to it, so it is no sign the controller is done.
    pub(super) statusless: bool,
}
