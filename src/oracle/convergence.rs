//! The convergence oracle's judgement: after the last window closes, every object of the
//! listed resources must be Current (kstatus). `settle` is what a controller is given to
//! get there, not a wait: it is judged as soon as nothing is left to wait for.

use std::time::SystemTime;

use super::caps::MAX_ENTRIES;
use super::config::ConvergenceConfig;
use super::object_ref::ObjectRef;
use super::oracles::Oracles;
use super::state::State;
use super::tracked::Obj;
use super::verdicts::{Recovery, Violation};

/// Whether the convergence oracle can judge yet, why not, and what it finds.
pub(super) struct Judgement {
    pub judged: bool,
    /// Why it cannot judge yet (for the report and the session's end line).
    pub pending: Option<String>,
    /// The objects not Current, once it can judge.
    pub violations: Vec<Violation>,
}

impl Judgement {
    fn waiting(why: String) -> Judgement {
        Judgement {
            judged: false,
            pending: Some(why),
            violations: Vec::new(),
        }
    }
}

/// The judgement as of `now`, of a run started at `started`: not while a window is open;
/// then once `settle` has passed since the last one closed (or the workload's last step
/// ended, if later), or earlier once every object it judges is Current with a status its
/// controller wrote.
pub(super) fn judge(
    c: &ConvergenceConfig,
    s: &State,
    started: SystemTime,
    now: SystemTime,
) -> Judgement {
    if let Some(w) = s.windows.iter().find(|w| w.closed_at.is_none()) {
        return Judgement::waiting(format!("window {:?} is still open", w.name));
    }
    let last_close = last_disturbance(s);
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
                oracle: "convergence".into(),
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
        return Judgement {
            judged: true,
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
    let waiting = if !s.convergence_seen {
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
        Some(waiting) => Judgement::waiting(format!(
            "settle ({}) has not passed since the last window closed, and {waiting}",
            humantime::format_duration(c.allowance()),
        )),
        None => Judgement {
            judged: true,
            pending: None,
            violations: not_current,
        },
    }
}

/// What `settle` counts from: the later of the last window's close and the end of the
/// workload's last step. A user's change is as much a disturbance as a fault: a run
/// without windows whose workload acted 40 s in has not given its controller `settle`
/// to answer it by judging it 5 s later — and explore's fault-free references must be
/// judged as its trials are, whose windows open after the action (else the references
/// end with the controller still on its way, and every trial that waited longer
/// "differs" from them).
pub(super) fn last_disturbance(s: &State) -> Option<SystemTime> {
    s.windows
        .iter()
        .filter_map(|w| w.closed_at)
        .chain(s.workload_done_at)
        .max()
}

impl Oracles {
    /// The workload's last step ended (`at`): `settle` counts from then too.
    pub fn workload_done(&self, at: SystemTime) {
        self.lock().workload_done_at = Some(at);
    }

    /// What `settle` counts from ([`last_disturbance`]; None: the run's start).
    pub fn settle_from(&self) -> Option<SystemTime> {
        last_disturbance(&self.lock())
    }

    /// The controllers' metrics say they have settled (`at`): their workqueues empty, no
    /// retry pending (`session/idle.rs`) — or, `None`, they are at work again. Settled
    /// after the last window closed, the convergence oracle judges at once instead of
    /// waiting out `settle` for a back-off that is not there.
    pub fn controller_settled(&self, at: Option<SystemTime>) {
        self.lock().settled_at = at;
    }

    /// When the controllers' metrics said they had settled (`controller_settled`).
    pub fn settled_by_metrics(&self) -> Option<SystemTime> {
        self.lock().settled_at
    }
}

/// The objects the oracle judges: those of its resources that exist.
fn judged_objects<'a>(
    c: &'a ConvergenceConfig,
    s: &'a State,
) -> impl Iterator<Item = (&'a ObjectRef, &'a Obj)> {
    s.objects
        .iter()
        .filter(|(k, o)| !o.deleted && c.resources.contains(&k.resource))
}

/// Window `window` closed at `at`: measure how long each object the oracle judges takes
/// to be Current again (done at once for those that are). Returns how many old
/// measurements were dropped at the cap.
pub(super) fn start_recoveries(
    c: &ConvergenceConfig,
    s: &mut State,
    window: &str,
    at: SystemTime,
) -> u64 {
    let objs: Vec<(ObjectRef, bool)> = judged_objects(c, s)
        .map(|(k, o)| (k.clone(), o.not_current_since.is_none()))
        .collect();
    let mut dropped = 0;
    for (k, current) in objs {
        if s.recoveries.len() >= MAX_ENTRIES {
            s.recoveries.pop_front();
            dropped += 1;
        }
        s.recoveries.push_back((
            Recovery {
                window: window.to_string(),
                resource: k.resource,
                namespace: k.namespace,
                name: k.name,
                closed_at: at,
                seconds: None,
            },
            current.then_some(at),
        ));
    }
    dropped
}
