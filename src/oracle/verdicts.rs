//! What the oracles conclude, as reports and the control API show it: the violations,
//! the windows and restarts as they ran, recoveries, each judged object's last status,
//! the timeline of writes and the staleness lanes.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::kstatus;
use super::staleness;
use super::time_format::{millis as rfc3339, optional as rfc3339_opt};
use crate::k8s::request::Verb;

/// Something an oracle found. `rule` says what failed: the kstatus rule, the churning
/// field paths, the conflict count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    pub oracle: super::name::OracleName,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub rule: String,
    #[serde(with = "rfc3339")]
    pub since: SystemTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// Rate oracles: when the rate was last over the limit.
    #[serde(default, with = "rfc3339_opt", skip_serializing_if = "Option::is_none")]
    pub until: Option<SystemTime>,
    /// Rate oracles: the most writes (or 409s) in one minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<u64>,
    /// Why it is so, where an oracle can tell (the recovery oracle: the controller
    /// backing off, a crash loop, no reconcile). Kept out of `rule`, which explore's
    /// signatures are made of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A window as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowSpan {
    pub name: String,
    pub fault: String,
    #[serde(with = "rfc3339")]
    pub opened_at: SystemTime,
    #[serde(default, with = "rfc3339_opt", skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<SystemTime>,
}

/// A restart of the controller (a `restart` window).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartMark {
    pub window: String,
    /// Which controller (`controller`: the one after `--`; others by their name).
    #[serde(default = "the_controller")]
    pub controller: String,
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    /// How long it stayed down.
    pub down_seconds: f64,
}

/// Records from before restarts named a controller were all the controller's after
/// `--` (`session::CONTROLLER`; spelled out: the oracles sit below the session).
fn the_controller() -> String {
    "controller".to_string()
}

/// An exit of the controller on its own, restarted (or not) after a back-off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitMark {
    /// Which controller (`controller`: the one after `--`; others by their name).
    pub controller: String,
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    /// `exit status: 1`, `signal: 6 (SIGABRT)`.
    pub status: String,
    /// How long that process had run.
    pub ran_seconds: f64,
    /// The back-off before it was started again (`None`: it was not — a crash loop
    /// given up on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_seconds: Option<f64>,
}

impl ExitMark {
    /// When it was (to be) started again.
    pub fn back_at(&self) -> Option<SystemTime> {
        self.backoff_seconds
            .map(|b| self.at + std::time::Duration::from_secs_f64(b))
    }
}

/// A point in time, written as RFC 3339.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TimeStamp(#[serde(with = "rfc3339")] pub SystemTime);

/// After the last window closed: when the controller was answered again and when its
/// objects were all Current again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comeback {
    #[serde(with = "rfc3339")]
    pub window_closed_at: SystemTime,
    /// Each client's first request answered (2xx) after the close and after the
    /// controller's last start.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub answered: std::collections::BTreeMap<String, TimeStamp>,
    /// The last of the judged objects Current again (`None`: not all are).
    #[serde(default, with = "rfc3339_opt", skip_serializing_if = "Option::is_none")]
    pub current_at: Option<SystemTime>,
}

/// How long an object took to become Current after a window closed (`None`: not yet).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recovery {
    pub window: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    #[serde(with = "rfc3339")]
    pub closed_at: SystemTime,
    pub seconds: Option<f64>,
}

/// A request on the timeline: a write or a conflict on a named object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mark {
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    pub client: String,
    pub verb: Verb,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub code: u16,
}

/// An object's last kstatus, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub status: kstatus::Status,
    pub rule: String,
}

/// Everything the oracles concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdicts {
    /// False while the convergence oracle cannot judge yet: a window is open, or `settle`
    /// has not passed since the last one closed and an object is not Current yet (or has
    /// no status yet, or none has been seen).
    pub judged: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
    pub violations: Vec<Violation>,
    /// Rates over a limit only inside windows (or their grace): what the windows did,
    /// reported, not violations (`rates.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inside_windows: Vec<Violation>,
    pub windows: Vec<WindowSpan>,
    /// Controller restarts (`restart` windows), in order.
    #[serde(default)]
    pub restarts: Vec<RestartMark>,
    pub recoveries: Vec<Recovery>,
    /// The controller's exits on its own, and the back-off it was restarted with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exits: Vec<ExitMark>,
    /// How exits were restarted (`10s doubling to 5m, …`), when they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<String>,
    /// After the last window: the controller back, its objects Current again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comeback: Option<Comeback>,
    pub objects: Vec<ObjectStatus>,
    pub timeline: Vec<Mark>,
    /// Ground truth of each watched object as it changed (the report's truth lanes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truth: Vec<staleness::TruthMark>,
    /// What each client was given of those objects (the report's delivery lanes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deliveries: Vec<staleness::DeliveryMark>,
}
