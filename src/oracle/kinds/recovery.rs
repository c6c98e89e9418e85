//! The recovery oracle: once the last window has closed, every object the convergence
//! oracle judges is to be Current again within `recoverWithin` (default: its `settle`).
//! One that got there later is a finding of its own (`recovery`, saying how long it
//! took); one that never did is the convergence oracle's finding, and this oracle says
//! why: the controller still backing off after an exit, a crash loop, or nothing written
//! to the object since the window closed (no reconcile).
//!
//! Why it needs the controller's exits: a partition that outlives a leader-election lease
//! ends with the controller exiting and kubelet backing it off (10 s, doubling). When it
//! is Current again then depends on where in that back-off the partition ended, which is
//! the controller's supervisor's doing, not its own; the report says which it was.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use super::convergence::{ConvergenceConfig, judged_objects};
use crate::oracle::caps::MAX_ENTRIES;
use crate::oracle::hooks::{Judged, Judging, Oracle, Seen};
use crate::oracle::name::OracleName;
use crate::oracle::object_ref::ObjectRef;
use crate::oracle::state::Shared;
use crate::oracle::verdicts::{ExitMark, Recovery as Measured, Verdicts, Violation};

pub(super) struct Recovery {
    config: ConvergenceConfig,
    /// How long each object the convergence oracle judges took to be Current again after
    /// each window closed (`None`: not yet).
    recoveries: VecDeque<(Measured, Option<SystemTime>)>,
}

impl Recovery {
    pub(super) fn new(config: ConvergenceConfig) -> Recovery {
        Recovery {
            config,
            recoveries: VecDeque::new(),
        }
    }

    /// The late recoveries from the last window's close, as of `now`.
    fn late(&self, s: &Shared, started: SystemTime, now: SystemTime) -> Vec<Violation> {
        let Some(last_close) = s.last_close() else {
            return Vec::new();
        };
        let allowed = self.config.recover_within();
        self.recoveries
            .iter()
            .filter(|(r, _)| r.closed_at == last_close)
            .filter_map(|(r, done)| {
                let done = (*done)?;
                let took = done.duration_since(r.closed_at).unwrap_or_default();
                if took <= allowed || done > now {
                    return None;
                }
                let k = ObjectRef {
                    resource: r.resource.clone(),
                    namespace: r.namespace.clone(),
                    name: r.name.clone(),
                };
                Some(Violation {
                    oracle: OracleName::Recovery,
                    resource: k.resource.clone(),
                    namespace: k.namespace.clone(),
                    name: k.name.clone(),
                    rule: format!(
                        "Current again only {:.1}s after the last window ({:?}) closed; allowed {}",
                        took.as_secs_f64(),
                        r.window,
                        humantime::format_duration(allowed),
                    ),
                    since: last_close + allowed,
                    client: None,
                    until: Some(done),
                    peak: None,
                    why: Some(why(s, &k, last_close, done, started)),
                })
            })
            .collect()
    }

    /// Window `window` closed at `at`: measure how long each object the convergence
    /// oracle judges takes to be Current again (done at once for those that are).
    /// Returns how many old measurements were dropped at the cap.
    fn start(&mut self, s: &Shared, window: &str, at: SystemTime) -> u64 {
        let objs: Vec<(ObjectRef, bool)> = judged_objects(&self.config, s)
            .map(|(k, o)| (k.clone(), o.not_current_since.is_none()))
            .collect();
        let mut dropped = 0;
        for (k, current) in objs {
            if self.recoveries.len() >= MAX_ENTRIES {
                self.recoveries.pop_front();
                dropped += 1;
            }
            self.recoveries.push_back((
                Measured {
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
}

impl Oracle for Recovery {
    fn name(&self) -> OracleName {
        OracleName::Recovery
    }

    fn on_object(&mut self, o: &Seen<'_>, _shared: &Shared) {
        if !o.done {
            return;
        }
        for (r, recovered) in self.recoveries.iter_mut() {
            if recovered.is_none()
                && r.resource == o.key.resource
                && r.namespace == o.key.namespace
                && r.name == o.key.name
            {
                *recovered = Some(o.at);
            }
        }
    }

    fn on_window(&mut self, name: &str, open: bool, at: SystemTime, shared: &Shared) -> u64 {
        if open {
            0
        } else {
            self.start(shared, name, at)
        }
    }

    /// Only once the convergence oracle (judged before it) can judge.
    fn judge(&self, j: &Judging<'_>) -> Judged {
        if j.pending.is_some() {
            return Judged::default();
        }
        Judged {
            pending: None,
            violations: self.late(j.shared, j.started, j.now),
        }
    }

    /// Why each convergence finding did not recover, each object's recovery time, and
    /// when the judged objects were all Current again.
    fn report(&self, verdicts: &mut Verdicts, j: &Judging<'_>) {
        explain(&mut verdicts.violations, j.shared, j.now, j.started);
        verdicts.recoveries = (self.recoveries.iter())
            .map(|(r, done)| Measured {
                seconds: done.map(|d| {
                    d.duration_since(r.closed_at)
                        .unwrap_or_default()
                        .as_secs_f64()
                }),
                ..r.clone()
            })
            .collect();
        if let Some(c) = verdicts.comeback.as_mut() {
            // The last recovery from that close; none if one has not come yet.
            let close = c.window_closed_at;
            c.current_at = (self.recoveries.iter())
                .filter(|(r, _)| r.closed_at == close)
                .try_fold(close, |last, (_, done)| Some(last.max((*done)?)));
        }
    }
}

/// Each convergence violation (an object not Current) once a window has closed: why it
/// did not recover (`Violation::why`).
fn explain(violations: &mut [Violation], s: &Shared, now: SystemTime, started: SystemTime) {
    let Some(close) = s.last_close() else { return };
    for v in (violations.iter_mut()).filter(|v| v.oracle == OracleName::Convergence) {
        let k = ObjectRef {
            resource: v.resource.clone(),
            namespace: v.namespace.clone(),
            name: v.name.clone(),
        };
        let why = why(s, &k, close, now, started);
        v.why = Some(format!(
            "not Current again {:.1}s after the last window closed: {why}",
            now.duration_since(close).unwrap_or_default().as_secs_f64()
        ));
    }
}

/// What kept `k` from being Current between `from` (the last window's close) and `until`:
/// the controller's exits and back-off, or the writes to it (none: no reconcile).
fn why(
    s: &Shared,
    k: &ObjectRef,
    from: SystemTime,
    until: SystemTime,
    started: SystemTime,
) -> String {
    let at = |t: SystemTime| {
        format!(
            "+{:.1}s",
            t.duration_since(started).unwrap_or_default().as_secs_f64()
        )
    };
    if let Some(exited) = exits_why(s, from, until, &at) {
        return exited;
    }
    let writes: Vec<SystemTime> = s
        .marks
        .iter()
        .filter(|m| {
            m.at >= from
                && m.at <= until
                && m.resource == k.resource
                && m.namespace == k.namespace
                && m.name == k.name
        })
        .map(|m| m.at)
        .collect();
    let settled = match s.settled_at {
        Some(t) if t >= from && t <= until => format!(
            "; judged at {} when the controller's metrics said it had settled (workqueues empty, no retry pending)",
            at(t)
        ),
        _ => String::new(),
    };
    match writes.last() {
        None => format!("no reconcile: nothing wrote to it after the window closed{settled}"),
        Some(last) => format!(
            "{} write{} to it after the window closed (the last at {}), none making it Current{settled}",
            writes.len(),
            if writes.len() == 1 { "" } else { "s" },
            at(*last)
        ),
    }
}

/// Why exits kept the object from being Current, if they did: the exits since the close,
/// and one before it whose back-off reached past it.
fn exits_why(
    s: &Shared,
    from: SystemTime,
    until: SystemTime,
    at: &dyn Fn(SystemTime) -> String,
) -> Option<String> {
    let exits: Vec<&ExitMark> = s
        .exits
        .iter()
        .filter(|e| {
            e.at <= until
                && (e.at >= from
                    || e.back_at().is_some_and(|b| b > from)
                    || e.backoff_seconds.is_none())
        })
        .collect();
    let last = exits.last()?;
    let n = exits.len();
    Some(match last.back_at() {
        Some(back) if back > until => format!(
            "{} was still backing off: it exited ({}) at {} and its back-off of {} starts it again at {}",
            last.controller,
            last.status,
            at(last.at),
            humantime::format_duration(Duration::from_secs_f64(
                last.backoff_seconds.unwrap_or(0.0)
            )),
            at(back)
        ),
        None => format!(
            "{} exited ({}) at {} and was not started again: a crash loop ({n} exit{} in a row)",
            last.controller,
            last.status,
            at(last.at),
            if n == 1 { "" } else { "s" }
        ),
        Some(_) if n >= 3 => format!(
            "a crash loop: {} exited {n} times since the window closed (last: {} at {})",
            last.controller,
            last.status,
            at(last.at)
        ),
        Some(back) => format!(
            "{} exited ({}) at {}, was started again at {}, and did not make it Current since",
            last.controller,
            last.status,
            at(last.at),
            at(back)
        ),
    })
}
