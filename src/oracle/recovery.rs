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

use std::time::{Duration, SystemTime};

use super::caps::push_capped;
use super::config::ConvergenceConfig;
use super::object_ref::ObjectRef;
use super::oracles::Oracles;
use super::state::State;
use super::verdicts::{Comeback, ExitMark, TimeStamp, Violation};

/// The late recoveries from the last window's close, as of `now`.
pub(super) fn judge(
    c: &ConvergenceConfig,
    s: &State,
    started: SystemTime,
    now: SystemTime,
) -> Vec<Violation> {
    let Some(last_close) = last_close(s) else {
        return Vec::new();
    };
    let allowed = c.recover_within();
    s.recoveries
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
                oracle: "recovery".into(),
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

/// Each convergence violation (an object not Current) once a window has closed: why it
/// did not recover (`Violation::why`).
pub(super) fn explain(
    violations: &mut [Violation],
    s: &State,
    now: SystemTime,
    started: SystemTime,
) {
    let Some(close) = last_close(s) else { return };
    for v in violations.iter_mut().filter(|v| v.oracle == "convergence") {
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

/// When the last window closed, if one has and none is open.
pub(super) fn last_close(s: &State) -> Option<SystemTime> {
    if s.windows.iter().any(|w| w.closed_at.is_none()) {
        return None;
    }
    s.windows.iter().filter_map(|w| w.closed_at).max()
}

/// What kept `k` from being Current between `from` (the last window's close) and `until`:
/// the controller's exits and back-off, or the writes to it (none: no reconcile).
pub(super) fn why(
    s: &State,
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
    s: &State,
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

impl Oracles {
    /// The controller exited on its own at `at` after running `ran`; it starts again
    /// after `backoff` (`None`: it does not).
    pub fn on_exit(
        &self,
        controller: &str,
        at: SystemTime,
        status: &str,
        ran: std::time::Duration,
        backoff: Option<std::time::Duration>,
    ) {
        self.exits_counter.inc();
        self.backoff_gauge
            .set(backoff.map_or(0.0, |b| b.as_secs_f64()));
        let mut s = self.lock();
        let mark = ExitMark {
            controller: controller.to_string(),
            at,
            status: status.to_string(),
            ran_seconds: ran.as_secs_f64(),
            backoff_seconds: backoff.map(|b| b.as_secs_f64()),
        };
        let dropped = push_capped(&mut s.exits, mark);
        self.count_dropped(&mut s, dropped);
        let back = backoff.map_or(at, |b| at + b);
        self.answers_from(&mut s, back);
    }

    /// The controller runs again (its back-off over).
    pub fn on_started_again(&self) {
        self.backoff_gauge.set(0.0);
    }

    /// How the supervisor restarts exits (for the report).
    pub fn set_backoff(&self, described: String) {
        self.lock().backoff = Some(described);
    }

    /// Look at answered requests from `since` on, afresh.
    pub(super) fn answers_from(&self, s: &mut State, since: SystemTime) {
        s.answered.clear();
        s.answered_since = Some(s.answered_since.map_or(since, |t| t.max(since)));
        self.watching_answers
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// After the last window: when each client was first answered again (the controller's
/// informers relisting, once its back-off is over) and when the judged objects were all
/// Current again.
pub(super) fn comeback(s: &State, c: Option<&ConvergenceConfig>) -> Option<Comeback> {
    let close = last_close(s)?;
    let answered = s
        .answered
        .iter()
        .map(|(c, t)| (c.clone(), TimeStamp(*t)))
        .collect();
    // The last recovery from that close; none if one has not come yet.
    let current_at = c.and_then(|_| {
        s.recoveries
            .iter()
            .filter(|(r, _)| r.closed_at == close)
            .try_fold(close, |last, (_, done)| Some(last.max((*done)?)))
    });
    Some(Comeback {
        window_closed_at: close,
        answered,
        current_at,
    })
}
