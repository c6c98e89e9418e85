//! A [`Plan`]: one candidate for a trial, the windows it runs with — and the helpers
//! every family builds them with (`window`, `secs`).

use std::time::Duration;

use serde_json::json;

use crate::schedule::Window;

/// One candidate: windows to run a trial with.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What it does, for people.
    pub label: String,
    /// For file names.
    pub slug: String,
    pub round: u8,
    pub windows: Vec<Window>,
    /// The resource its windows open on (the anchor's, or the events').
    pub anchor: String,
    /// The resources its fault acts on (none: the whole controller, a restart).
    pub targets: Vec<String>,
    /// How close it is to what the user cares about (`focus.rs`; 1 is closest).
    pub rank: u8,
    /// The phase of the run it opens in (0: the start-up; N: after the workload's Nth
    /// write): plans in the start-up of a run with actions are those of the run without.
    pub phase: usize,
}

impl Plan {
    /// Whether it coalesces an event stretch (the staleness of a relist, or of a slow
    /// client, at the moment its first event lands).
    pub fn coalesces(&self) -> bool {
        self.windows
            .iter()
            .any(|w| matches!(w.fault, crate::fault::Fault::Coalesce(_)))
    }

    /// How much fault it injects (shorter, fewer windows: simpler).
    pub fn weight(&self) -> (usize, Duration) {
        (
            self.windows.len(),
            self.windows
                .iter()
                .filter_map(|w| w.duration.map(|d| d.0))
                .sum(),
        )
    }
}

/// A schedule window, built the way a user would write it (so a plan is a reproducer
/// as it stands).
pub(super) fn window(
    name: &str,
    client: &str,
    resources: &[String],
    fault: serde_json::Value,
    trigger: serde_json::Value,
    duration: Option<Duration>,
) -> Window {
    let mut w = json!({
        "name": name,
        "client": client,
        "resources": resources,
        "fault": fault,
        "trigger": trigger,
    });
    if let Some(d) = duration {
        w["duration"] = json!(format!("{}ms", d.as_millis()));
    }
    serde_json::from_value(w).expect("plans build valid windows")
}

/// `1.5s`, `5s`: a duration in a label.
pub(super) fn secs(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}
