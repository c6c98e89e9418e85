//! Schedules: which clients see which resources stale, how, and when.
//!
//! The JSON format is docs/schedule.md's; the same window objects are accepted by the
//! control API. Unknown fields are rejected so a typo never silently disables a window,
//! and every error names its field path, line and column (`parse.rs`).

mod book;
mod clients;
pub mod engine;
mod parse;
mod window_metrics;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use self::clients::{ClientMatcher, OTHER, defines};
pub use crate::fault::Fault;
pub use crate::k8s::duration::{GoDuration, MAX_DURATION};
pub use crate::k8s::request::Verb;

/// A schedule error: where, and what (`FILE:LINE:COL: PATH: message`).
pub type ScheduleError = crate::spans::Located;

/// A subresource a trigger may name: those kube-apiserver serves. An enum, so a typo is
/// an error naming the field instead of a trigger that never fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Subresource {
    Status,
    Scale,
    Finalize,
    Binding,
    Eviction,
    Token,
    Approval,
    Ephemeralcontainers,
    Resize,
    Log,
    Exec,
    Attach,
    Portforward,
    Proxy,
}

impl Subresource {
    pub fn as_str(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Finalize => "finalize",
            Subresource::Binding => "binding",
            Subresource::Eviction => "eviction",
            Subresource::Token => "token",
            Subresource::Approval => "approval",
            Subresource::Ephemeralcontainers => "ephemeralcontainers",
            Subresource::Resize => "resize",
            Subresource::Log => "log",
            Subresource::Exec => "exec",
            Subresource::Attach => "attach",
            Subresource::Portforward => "portforward",
            Subresource::Proxy => "proxy",
        }
    }
}

/// The watch event types a trigger may count (bookmarks and errors never count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
}

impl EventKind {
    /// The kind of a watch event, if a trigger can count it.
    pub fn of(t: crate::watch::EventType) -> Option<EventKind> {
        match t {
            crate::watch::EventType::Added => Some(EventKind::Added),
            crate::watch::EventType::Modified => Some(EventKind::Modified),
            crate::watch::EventType::Deleted => Some(EventKind::Deleted),
            _ => None,
        }
    }
}

/// Which requests an `afterRequests` trigger counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestMatch {
    /// Whose requests count: a client of `clients`, or `*` (default: the window's
    /// client). A window on a controller can open on what another client — a workload —
    /// does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verb: Option<Verb>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<Subresource>,
    #[serde(default = "one")]
    pub count: u64,
}

/// Which upstream watch events an `afterEvents` trigger counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventMatch {
    /// ADDED, MODIFIED, DELETED (any when absent).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<EventKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(default = "one")]
    pub count: u64,
}

fn one() -> u64 {
    1
}

/// When a window opens (exactly one of `at`, `every`, `afterRequests`, `afterEvents`,
/// `manual`; no trigger: at once).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(extend("oneOf" = [{"required": ["at"]}, {"required": ["every"]}, {"required": ["afterRequests"]}, {"required": ["afterEvents"]}, {"required": ["manual"]}]))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Trigger {
    /// Offset from the start of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<GoDuration>,
    /// Period of a repeating window (with optional `jitter` and `count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<GoDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<GoDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// The window's client's Nth matching request: opens when it arrives, before it is
    /// forwarded, so the window covers the events the request causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_requests: Option<RequestMatch>,
    /// The Nth matching upstream watch event on the window's client's streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_events: Option<EventMatch>,
    /// Opened only through the control API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual: Option<serde_json::Value>,
    /// With `afterRequests` or `afterEvents`: open this long after the trigger fires
    /// rather than at once (a `touch` some minutes after a write, while a window opened
    /// by the same write still holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<GoDuration>,
}

impl Trigger {
    fn check(&self) -> Vec<(String, String)> {
        let kinds = [
            self.at.is_some(),
            self.every.is_some(),
            self.after_requests.is_some(),
            self.after_events.is_some(),
            self.manual.is_some(),
        ];
        let mut errs = Vec::new();
        if kinds.iter().filter(|k| **k).count() != 1 {
            errs.push((
                "trigger".into(),
                "give exactly one of at, every, afterRequests, afterEvents, manual".into(),
            ));
        }
        if (self.jitter.is_some() || self.count.is_some()) && self.every.is_none() {
            errs.push(("trigger".into(), "jitter and count go with every".into()));
        }
        if self.delay.is_some() && self.after_requests.is_none() && self.after_events.is_none() {
            errs.push((
                "trigger.delay".into(),
                "goes with afterRequests or afterEvents".into(),
            ));
        }
        if self.every.is_some_and(|e| e.0.is_zero()) {
            errs.push(("trigger.every".into(), "must be greater than zero".into()));
        }
        errs
    }
}

/// One window: a fault applied to a target for a duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Window {
    pub name: String,
    /// A client name from the schedule's `clients`, or `*` for everyone.
    #[serde(default = "star")]
    pub client: String,
    /// Resources as kubectl names them (`plural.group`, core: `plural`), or `*`.
    #[serde(default = "stars")]
    pub resources: Vec<String>,
    /// Namespaces; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    pub fault: Fault,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    /// How long the window stays open; absent: until closed over the control API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<GoDuration>,
    /// Answer consistent reads (resourceVersion unset, NotOlderThan, Exact) from the
    /// client's view too. Breaks the API contract; labelled so in metrics and the trace.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale_consistent_reads: bool,
}

fn star() -> String {
    "*".into()
}
fn stars() -> Vec<String> {
    vec!["*".into()]
}

/// A whole schedule file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Schedule {
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub clients: BTreeMap<String, ClientMatcher>,
    #[serde(default)]
    pub windows: Vec<Window>,
    /// What the oracles judge, and their limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracles: Option<crate::oracle::OracleConfig>,
}

impl Window {
    /// Problems as (field, message).
    pub fn check(&self, clients: &BTreeMap<String, ClientMatcher>) -> Vec<(String, String)> {
        self.check_with(|c| clients.contains_key(c))
    }

    /// [`Window::check`], with `defines` telling which client names exist.
    pub fn check_with(&self, defines: impl Fn(&str) -> bool) -> Vec<(String, String)> {
        let mut errs = Vec::new();
        if self.name.is_empty() || self.name.contains('/') {
            errs.push(("name".into(), "must be non-empty and contain no '/'".into()));
        }
        if self.client != "*" && !defines(&self.client) {
            errs.push((
                "client".into(),
                format!(
                    "{:?} is not a client defined in `clients` (or \"*\")",
                    self.client
                ),
            ));
        }
        if self.resources.is_empty() {
            errs.push((
                "resources".into(),
                "list at least one resource, or \"*\"".into(),
            ));
        }
        errs.extend(self.fault.check());
        if let Some(t) = &self.trigger {
            errs.extend(t.check());
            if let Some(c) = t.after_requests.as_ref().and_then(|m| m.client.as_deref())
                && c != "*"
                && !defines(c)
            {
                errs.push((
                    "trigger.afterRequests.client".into(),
                    format!("{c:?} is not a client defined in `clients` (or \"*\")"),
                ));
            }
        }
        errs
    }

    /// Does this window target a stream of `resource` (kubectl name) over `namespace`
    /// (`None`: all namespaces)? A stream across all namespaces overlaps any namespace
    /// list and is held whole: holding only some of its events would reorder
    /// resourceVersions, and a client resuming from a later one would lose the held ones.
    /// Leases (leader election) are only touched when named: `*` does not cover them, or
    /// every chaos run would also be a leader-election test (docs/DESIGN.md "Faults").
    pub fn targets(&self, resource: &str, namespace: Option<&str>) -> bool {
        let res = self
            .resources
            .iter()
            .any(|r| r == resource || (r == "*" && resource != "leases.coordination.k8s.io"));
        let ns = self.namespaces.is_empty()
            || namespace.is_none_or(|n| self.namespaces.iter().any(|x| x == n));
        res && ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const DESIGN_EXAMPLE: &str = r#"{
  "seed": 7,
  "clients": {
    "source-controller": { "userAgent": "^source-controller/" },
    "kcm": { "serviceAccount": "kube-system:generic-garbage-collector" }
  },
  "windows": [
    {
      "name": "f1-stale-gitrepository",
      "client": "source-controller",
      "resources": ["gitrepositories.source.toolkit.fluxcd.io"],
      "namespaces": ["flux-system"],
      "fault": { "freeze": {} },
      "trigger": { "afterRequests": { "verb": "patch", "subresource": "status", "count": 1 } },
      "duration": "1500ms"
    },
    {
      "name": "background-lag",
      "client": "*",
      "resources": ["*"],
      "fault": { "lag": { "delay": "2s", "jitter": "500ms" } },
      "trigger": { "every": "60s", "jitter": "15s" },
      "duration": "10s"
    }
  ],
  "oracles": { "convergence": { "resources": ["gitrepositories.source.toolkit.fluxcd.io"], "settle": "30s" } }
}"#;

    #[test]
    fn parses_the_design_example() {
        let s = Schedule::parse(DESIGN_EXAMPLE, "x.json").unwrap();
        assert_eq!(s.windows.len(), 2);
        assert_eq!(
            s.windows[0].duration,
            Some(GoDuration(Duration::from_millis(1500)))
        );
        assert!(
            matches!(&s.windows[1].fault, Fault::Lag(l) if l.delay.0 == Duration::from_secs(2))
        );
        assert!(s.windows[0].targets(
            "gitrepositories.source.toolkit.fluxcd.io",
            Some("flux-system")
        ));
        assert!(!s.windows[0].targets("gitrepositories.source.toolkit.fluxcd.io", Some("default")));
        assert!(s.windows[1].targets("configmaps", None));
        assert!(
            !s.windows[1].targets("leases.coordination.k8s.io", None),
            "leases only when named"
        );
        assert!(
            s.windows[0].targets("gitrepositories.source.toolkit.fluxcd.io", None),
            "a cluster-wide stream overlaps"
        );
    }

    #[test]
    fn errors_name_line_column_and_field() {
        let bad = DESIGN_EXAMPLE.replace(
            "\"fault\": { \"freeze\": {} }",
            "\"fault\": { \"frieze\": {} }",
        );
        let e = Schedule::parse(&bad, "f.json").unwrap_err();
        assert_eq!(e.len(), 1);
        assert!(e[0].path.contains("windows[0].fault"), "{}", e[0]);
        assert!(e[0].to_string().starts_with("f.json:13:"), "{}", e[0]);
        assert!(e[0].message.contains("frieze"), "{}", e[0]);
        let bad = DESIGN_EXAMPLE.replace("\"1500ms\"", "\"soon\"");
        let e = Schedule::parse(&bad, "f.json").unwrap_err();
        assert!(
            e[0].path.ends_with("windows[0].duration") && e[0].message.contains("not a duration"),
            "{}",
            e[0]
        );
        let bad = DESIGN_EXAMPLE.replace("\"seed\": 7", "\"sead\": 7");
        assert!(
            Schedule::parse(&bad, "f.json").unwrap_err()[0]
                .message
                .contains("sead")
        );
        let bad = DESIGN_EXAMPLE.replace(
            "\"client\": \"source-controller\"",
            "\"client\": \"nobody\"",
        );
        let e = Schedule::parse(&bad, "f.json").unwrap_err();
        assert_eq!(e[0].path, "windows[0].client");
        let bad =
            DESIGN_EXAMPLE.replace("\"jitter\": \"15s\"", "\"jitter\": \"15s\", \"at\": \"1s\"");
        assert_eq!(
            Schedule::parse(&bad, "f.json").unwrap_err()[0].path,
            "windows[1].trigger"
        );
    }

    #[test]
    fn unknown_names_are_errors_naming_the_field() {
        // Strings that select things are checked against what exists: a typo is an
        // error naming the field, never a window that silently never applies.
        for (from, to, path) in [
            (
                "\"verb\": \"patch\"",
                "\"verb\": \"patc\"",
                "windows[0].trigger.afterRequests.verb",
            ),
            (
                "\"subresource\": \"status\"",
                "\"subresource\": \"stauts\"",
                "windows[0].trigger.afterRequests.subresource",
            ),
            (
                "\"freeze\": {}",
                "\"errors\": {\"status\": 500, \"verbs\": [\"get\", \"creat\"]}",
                "windows[0].fault.errors.verbs[1]",
            ),
            (
                "{ \"every\": \"60s\", \"jitter\": \"15s\" }",
                "{ \"afterEvents\": { \"type\": \"ADDDED\" } }",
                "windows[1].trigger.afterEvents.type",
            ),
        ] {
            let bad = DESIGN_EXAMPLE.replacen(from, to, 1);
            assert_ne!(bad, DESIGN_EXAMPLE, "{from}");
            let e = Schedule::parse(&bad, "f.json").unwrap_err();
            assert_eq!(e[0].path, path, "{}", e[0]);
            assert!(e[0].at.is_some() && e[0].file == "f.json", "{}", e[0]);
            assert!(e[0].message.contains("unknown variant"), "{}", e[0]);
        }
    }

    #[test]
    fn fault_settings_are_checked() {
        // The new faults are checked like the others.
        for (fault, path) in [
            (r#"{ "rewind": {} }"#, "windows[0].fault.rewind.by"),
            (
                r#"{ "rewind": { "by": "1s", "at": "x" } }"#,
                "windows[0].fault.rewind.by",
            ),
            (
                r#"{ "rewind": { "at": "nowhere" } }"#,
                "windows[0].fault.rewind.at",
            ),
        ] {
            let bad = DESIGN_EXAMPLE.replacen("{ \"freeze\": {} }", fault, 1);
            let e = Schedule::parse(&bad, "f.json").unwrap_err();
            assert!(e.iter().any(|x| x.path == path), "{fault}: {e:?}");
        }
        let ok = DESIGN_EXAMPLE.replacen(
            "{ \"freeze\": {} }",
            r#"{ "rewind": { "at": "background-lag" } }"#,
            1,
        );
        assert!(Schedule::parse(&ok, "f.json").is_ok());
        let bad = DESIGN_EXAMPLE.replacen(
            "{ \"freeze\": {} }",
            r#"{ "restart": { "down": "1s", "signal": "TERM" } }"#,
            1,
        );
        assert!(
            Schedule::parse(&bad, "f.json").unwrap_err()[0]
                .message
                .contains("signal")
        );
    }

    #[test]
    fn durations_past_a_day_and_bad_patterns_are_refused() {
        for huge in ["500000000000y", "25h", "1000000000000000000000s"] {
            let bad =
                DESIGN_EXAMPLE.replace("\"delay\": \"2s\"", &format!("\"delay\": \"{huge}\""));
            let e = Schedule::parse(&bad, "f.json").unwrap_err();
            assert_eq!(e[0].path, "windows[1].fault.lag.delay", "{}", e[0]);
        }
        assert!(
            Schedule::parse(
                &DESIGN_EXAMPLE.replace("\"delay\": \"2s\"", "\"delay\": \"24h\""),
                "f.json"
            )
            .is_ok()
        );
        let bad = DESIGN_EXAMPLE.replace("^source-controller/", "(unclosed");
        assert_eq!(
            Schedule::parse(&bad, "f.json").unwrap_err()[0].path,
            "clients.source-controller.userAgent"
        );
    }
}
