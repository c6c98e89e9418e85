//! What a trial's faults did to the controller: when each window opened and closed, the
//! watch events they held back, the requests they answered, the conflicts the
//! controller met.
//!
//! A pass means something only if the faults reached the controller. A plan is anchored
//! on a request the controller made in the fault-free runs; in a trial it may take
//! another path (a faster cache, a different order) and never make it, so the window
//! never opens and nothing was exercised. Explore says so — in the progress line, in
//! `summary.json` and in the end line — rather than counting that trial as clean.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::schedule::Schedule;
use crate::session::Outcome;
use crate::trace::Record;

/// One trial's faults, as they happened.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Effect {
    /// Every window of the trial's schedule, in its order.
    pub windows: Vec<Span>,
    /// Watch events to the controller that a window held back (each is traced `held`
    /// once, then `released` or `dropped`) instead of delivering them as they came.
    pub held: usize,
    /// The controller's requests a window answered itself (an `errors` fault, or a read
    /// answered from the controller's stale view).
    pub answered: usize,
    /// 409 Conflicts the controller got, from the apiserver or from a fault: what a stale
    /// cache costs an optimistic-lock write.
    pub conflicts: usize,
}

/// A window: seconds after the controller started that it opened and closed (`None`:
/// it never opened, or was still open when the trial ended).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    pub name: String,
    pub opened: Option<f64>,
    pub closed: Option<f64>,
    /// An open window that did nothing, and why (a `rewind` no read or watch was sent
    /// back in time by).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<String>,
}

impl Effect {
    /// Read from a trial's outcome (its report and in-memory trace).
    pub fn of(schedule: &Schedule, o: &Outcome) -> Effect {
        let secs = |t: SystemTime| {
            t.duration_since(o.started)
                .map_or(0.0, |d| (d.as_secs_f64() * 10.0).round() / 10.0)
        };
        let v = &o.report.verdicts;
        let windows = schedule
            .windows
            .iter()
            .map(|w| {
                let span = v.windows.iter().find(|s| s.name == w.name);
                let restart = v.restarts.iter().find(|r| r.window == w.name);
                let opened = span.map(|s| s.opened_at).or(restart.map(|r| r.at));
                Span {
                    name: w.name.clone(),
                    opened: opened.map(secs),
                    closed: span.and_then(|s| s.closed_at).map(secs),
                    idle: opened
                        .filter(|_| w.fault.name() == "rewind")
                        .and_then(|_| rewound_nothing(&w.name, o)),
                }
            })
            .collect();
        let mut e = Effect {
            windows,
            ..Effect::default()
        };
        for s in &o.trace {
            match &s.record {
                Record::Event { client, fate, .. }
                    if super::judge::under_test(client) && *fate == "held" =>
                {
                    e.held += 1
                }
                Record::Request {
                    client,
                    answer,
                    code,
                    ..
                } if super::judge::under_test(client) => {
                    if matches!(*answer, "injected" | "view" | "view-violation") {
                        e.answered += 1;
                    }
                    if *code == 409 {
                        e.conflicts += 1;
                    }
                }
                _ => {}
            }
        }
        e
    }

    /// Whether every window of the trial opened and did what it is for.
    pub fn exercised(&self) -> bool {
        !self.windows.is_empty()
            && self
                .windows
                .iter()
                .all(|w| w.opened.is_some() && w.idle.is_none())
    }

    /// For the progress line: `window 3.1s–4.6s, 12 events held, 10 conflicts`.
    pub fn describe(&self) -> String {
        if self.windows.iter().all(|w| w.opened.is_none()) {
            return "not exercised: its window never opened".to_string();
        }
        if let Some(w) = self.windows.iter().find(|w| w.opened.is_none()) {
            return format!("not exercised: its window {:?} never opened", w.name);
        }
        if let Some((w, why)) = self
            .windows
            .iter()
            .find_map(|w| w.idle.as_ref().map(|i| (w, i)))
        {
            return format!("not exercised: its window {:?} {why}", w.name);
        }
        let mut parts: Vec<String> = self
            .windows
            .iter()
            .filter_map(|w| {
                let opened = w.opened?;
                Some(match w.closed {
                    Some(c) if c > opened => format!("window {opened:.1}s–{c:.1}s"),
                    Some(_) => format!("window at {opened:.1}s"),
                    None => format!("window from {opened:.1}s"),
                })
            })
            .collect();
        for (n, one, many) in [
            (self.held, "event held", "events held"),
            (
                self.answered,
                "request answered by the fault",
                "requests answered by the fault",
            ),
            (self.conflicts, "conflict", "conflicts"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        }
        parts.join(", ")
    }
}

/// Why a `rewind` window sent nothing back in time, if it did not: the proxy's note on
/// a request it could not rewind (`rewind: …`), or that none came.
fn rewound_nothing(window: &str, o: &Outcome) -> Option<String> {
    let mut why = None;
    for s in &o.trace {
        if let Record::Request {
            window: Some(w),
            note,
            ..
        } = &s.record
            && w == window
        {
            match note.as_deref().and_then(|n| n.strip_prefix("rewind: ")) {
                Some(n) => {
                    why.get_or_insert_with(|| {
                        n.trim_start_matches("rewound nothing: ").to_string()
                    });
                }
                None => return None,
            }
        }
    }
    Some(format!(
        "rewound nothing: {}",
        why.as_deref()
            .unwrap_or("no read or watch of its resources came while it was open")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str, opened: Option<f64>, closed: Option<f64>) -> Span {
        Span {
            name: name.into(),
            opened,
            closed,
            idle: None,
        }
    }

    #[test]
    fn a_window_that_never_opened_is_not_exercised() {
        let e = Effect {
            windows: vec![span("w", None, None)],
            ..Effect::default()
        };
        assert!(!e.exercised());
        assert_eq!(e.describe(), "not exercised: its window never opened");
    }

    #[test]
    fn describes_spans_and_what_the_faults_did() {
        let e = Effect {
            windows: vec![
                span("w", Some(3.1), Some(4.6)),
                span("r", Some(5.0), Some(5.0)),
            ],
            held: 1,
            answered: 0,
            conflicts: 10,
        };
        assert!(e.exercised());
        assert_eq!(
            e.describe(),
            "window 3.1s–4.6s, window at 5.0s, 1 event held, 10 conflicts"
        );
    }

    /// A rewind that sent nothing back in time exercised nothing, even though it opened
    /// (a restarted client-go ≥ 1.35 controller re-lists with a consistent WatchList).
    #[test]
    fn a_rewind_that_rewound_nothing_is_not_exercised() {
        let mut rewind = span("rewind", Some(2.0), Some(7.0));
        rewind.idle = Some(
            "rewound nothing: a WatchList without a resourceVersion is a consistent read".into(),
        );
        let e = Effect {
            windows: vec![span("restart", Some(2.0), Some(2.0)), rewind],
            ..Effect::default()
        };
        assert!(!e.exercised());
        assert_eq!(
            e.describe(),
            "not exercised: its window \"rewind\" rewound nothing: a WatchList without a resourceVersion is a consistent read"
        );
    }
}
