//! The convergence oracle: once no window is open and either `settle` has passed since
//! the last one closed or everything is Current, every object of the listed resources
//! must be Current (kstatus, `kstatus.rs`); stuck ones are reported with the rule that
//! failed and since when. `settle` is what a controller is given to get there, not a
//! wait: it is judged as soon as nothing is left to wait for.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::k8s::duration::GoDuration;
use crate::oracle::hooks::{Judged, Judging, Oracle, Seen};
use crate::oracle::kstatus;
use crate::oracle::name::OracleName;
use crate::oracle::object_ref::ObjectRef;
use crate::oracle::state::Shared;
use crate::oracle::tracked::Obj;
use crate::oracle::verdicts::Violation;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConvergenceConfig {
    /// Resources as kubectl names them (`plural.group`).
    pub resources: Vec<String>,
    /// How long after the last window closes the objects have to become Current.
    #[serde(default = "thirty_seconds")]
    pub settle: GoDuration,
    /// Objects whose right answer is kstatus Failed — a spec their controller must
    /// reject (`Stalled=True`): done when Failed, as the others are when Current.
    /// explore fills it with what ended Failed in both of its fault-free runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<ObjectRef>,
    /// Condition types an object's controller writes when it is done: while one is
    /// absent (or describes an older generation) the object is not Current, whatever
    /// kstatus's fallback rule says. explore fills it with the types both of its
    /// fault-free runs ended with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ExpectedConditions>,
    /// How soon after the last window closes every object is to be Current again (the
    /// recovery oracle, `recovery.rs`; default: `settle`). Longer than `settle`, it is
    /// what the run waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recover_within: Option<GoDuration>,
}

/// The condition types one object ends with when its controller is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedConditions {
    /// As kubectl names it (`plural.group`).
    pub resource: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    pub types: Vec<String>,
}

impl ConvergenceConfig {
    /// What the recovery oracle allows after the last window closes.
    pub fn recover_within(&self) -> Duration {
        self.recover_within.map_or(self.settle.0, |d| d.0)
    }

    /// How long after the last window closes the objects are waited for.
    pub fn allowance(&self) -> Duration {
        self.settle.0.max(self.recover_within())
    }

    /// Whether `status` is where the object is meant to end.
    pub fn done(&self, k: &ObjectRef, status: kstatus::Status) -> bool {
        use kstatus::Status;
        status == Status::Current || (status == Status::Failed && self.failed.contains(k))
    }

    /// The object's kstatus, held to the condition types it is expected to end with.
    pub fn verdict(&self, k: &ObjectRef, obj: &serde_json::Value) -> kstatus::Verdict {
        match self
            .conditions
            .iter()
            .find(|c| c.resource == k.resource && c.namespace == k.namespace && c.name == k.name)
        {
            Some(c) => kstatus::compute_expecting(obj, &c.types),
            None => kstatus::compute(obj),
        }
    }
}

fn thirty_seconds() -> GoDuration {
    GoDuration(Duration::from_secs(30))
}

pub(super) struct Convergence {
    config: ConvergenceConfig,
    /// An object it judges has been seen (it may be deleted since).
    seen: bool,
}

impl Convergence {
    pub(super) fn new(config: ConvergenceConfig) -> Convergence {
        Convergence {
            config,
            seen: false,
        }
    }
}

impl Oracle for Convergence {
    fn name(&self) -> OracleName {
        OracleName::Convergence
    }

    fn on_object(&mut self, o: &Seen<'_>, _shared: &Shared) {
        self.seen |= self.config.resources.contains(&o.key.resource);
    }

    fn judge(&self, j: &Judging<'_>) -> Judged {
        judge(&self.config, self.seen, j.shared, j.started, j.now)
    }
}

fn not_yet(why: String) -> Judged {
    Judged {
        pending: Some(why),
        violations: Vec::new(),
    }
}

/// The judgement as of `now`, of a run started at `started`: not while a window is open;
/// then once `settle` has passed since the last one closed (or the workload's last step
/// ended, if later), or earlier once every object it judges is Current with a status its
/// controller wrote.
fn judge(
    c: &ConvergenceConfig,
    seen: bool,
    s: &Shared,
    started: SystemTime,
    now: SystemTime,
) -> Judged {
    if let Some(w) = s.windows.iter().find(|w| w.closed_at.is_none()) {
        return not_yet(format!("window {:?} is still open", w.name));
    }
    let last_close = s.last_disturbance();
    let due = last_close.unwrap_or(started) + c.allowance();
    // Settled by its own metrics since the last window closed: nothing more is coming.
    let due = match s.settled_at {
        Some(t) if last_close.is_none_or(|c| t >= c) => due.min(t),
        _ => due,
    };
    let not_current: Vec<Violation> = judged_objects(c, s)
        .filter_map(|(k, o)| {
            let (v, since) = (o.verdict.as_ref()?, o.not_current_since?);
            Some(Violation {
                oracle: OracleName::Convergence,
                resource: k.resource.clone(),
                namespace: k.namespace.clone(),
                name: k.name.clone(),
                rule: format!("{:?}: {}", v.status, v.rule),
                since,
                client: None,
                until: None,
                peak: None,
                why: None,
            })
        })
        .collect();
    if now >= due {
        return Judged {
            pending: None,
            violations: not_current,
        };
    }
    // `settle` is what a controller is given to recover: one that backs off
    // after errors (controller-runtime's rate limiter; Flux's starts at 750 ms
    // and doubles) may still be on its way. Once everything is Current — with a
    // status its controller wrote: kstatus calls an object without one Current —
    // there is nothing left to wait for; with nothing seen yet, there is (the
    // objects may still come). Objects all deleted since: nothing to wait for.
    let statusless: Vec<String> = judged_objects(c, s)
        .filter(|(_, o)| o.statusless)
        .map(|(k, _)| format!("{}/{}", k.namespace, k.name))
        .collect();
    let waiting = if !seen {
        Some("none of its objects exists yet".to_string())
    } else if !not_current.is_empty() {
        Some(format!(
            "{} is not Current yet",
            not_current
                .iter()
                .map(|v| format!("{}/{}", v.namespace, v.name))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else if !statusless.is_empty() {
        Some(format!("{} has no status yet", statusless.join(", ")))
    } else {
        None
    };
    match waiting {
        Some(waiting) => not_yet(format!(
            "settle ({}) has not passed since the last window closed, and {waiting}",
            humantime::format_duration(c.allowance()),
        )),
        None => Judged {
            pending: None,
            violations: not_current,
        },
    }
}

/// The objects the oracle judges: those of its resources that exist.
pub(super) fn judged_objects<'a>(
    c: &'a ConvergenceConfig,
    s: &'a Shared,
) -> impl Iterator<Item = (&'a ObjectRef, &'a Obj)> {
    s.objects
        .iter()
        .filter(|(k, o)| !o.deleted && c.resources.contains(&k.resource))
}
