//! What the oracles keep of one object ground truth reported (shared: `state.rs`).

use std::collections::{BTreeSet, VecDeque};
use std::time::SystemTime;

use serde_json::Value;

use super::kstatus;
use super::paths::changed_paths;

/// Successive-state diffs kept per object for the hot-loop oracle.
const MAX_DIFFS: usize = 256;

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
    /// No status at all yet (kstatus calls that Current): its controller has not
    /// written to it, so it is no sign the controller is done.
    pub(super) statusless: bool,
}

impl Obj {
    /// An object ground truth has just seen for the first time.
    pub(super) fn new(at: SystemTime) -> Obj {
        Obj {
            seen: at,
            verdict: None,
            not_current_since: None,
            deleted: false,
            last: None,
            diffs: VecDeque::new(),
            statusless: false,
        }
    }

    /// Ground truth's next state of it: `done` whether it is where it should be.
    pub(super) fn observe(
        &mut self,
        obj: &Value,
        at: SystemTime,
        done: bool,
        verdict: kstatus::Verdict,
    ) {
        self.statusless = kstatus::has_no_status(obj);
        self.seen = at;
        self.deleted = false;
        if done {
            self.not_current_since = None;
        } else if self.not_current_since.is_none() {
            self.not_current_since = Some(at);
        }
        if let Some(prev) = &self.last {
            let d = changed_paths(prev, obj);
            if !d.is_empty() {
                self.diffs.push_back((at, d));
                if self.diffs.len() > MAX_DIFFS {
                    self.diffs.pop_front();
                }
            }
        }
        self.last = Some(obj.clone());
        self.verdict = Some(verdict);
    }
}
