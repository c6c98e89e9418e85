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

use serde::Serialize;

use crate::schedule::Schedule;
use crate::session::{CONTROLLER, Outcome};
use crate::trace::Record;

/// One trial's faults, as they happened.
#[derive(Debug, Clone, Default, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    pub name: String,
    pub opened: Option<f64>,
    pub closed: Option<f64>,
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
                Span {
                    name: w.name.clone(),
                    opened: span
                        .map(|s| s.opened_at)
                        .or(restart.map(|r| r.at))
                        .map(secs),
                    closed: span.and_then(|s| s.closed_at).map(secs),
                }
            })
            .collect();
        let mut e = Effect {
            windows,
            ..Effect::default()
        };
        for s in &o.trace {
            match &s.record {
                Record::Event { client, fate, .. } if client == CONTROLLER && *fate == "held" => {
                    e.held += 1
                }
                Record::Request {
                    client,
                    answer,
                    code,
                    ..
                } if client == CONTROLLER => {
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

    /// Whether any of the trial's windows opened.
    pub fn exercised(&self) -> bool {
        self.windows.iter().any(|w| w.opened.is_some())
    }

    /// For the progress line: `window 3.1s–4.6s, 12 events held, 10 conflicts`.
    pub fn describe(&self) -> String {
        if !self.exercised() {
            return "not exercised: its window never opened".to_string();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str, opened: Option<f64>, closed: Option<f64>) -> Span {
        Span {
            name: name.into(),
            opened,
            closed,
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
}
