//! Faults: what a window does to its target. One file per fault, each holding its
//! settings (the schedule's JSON), their validation, its behaviour and its tests —
//! toxiproxy's model, where a toxic is one small file behind one interface.
//!
//! ```text
//!  schedule file / POST /v1/windows ──► Window { fault } ──► Engine: which windows are
//!                                                             open, for whom, when
//!   a request   ──► Behaviour::on_request ──► pass │ delay │ answer │ until closed
//!                                                          (errors, latency, partition)
//!   a connection ─► the listener's link (partition: blackhole, refuse; listen/network.rs)
//!   an RV=0 read ─► Behaviour::reads ──────► upstream │ view │ rewound view
//!   a watch     ──► Opening::hold (drawn at open) ──► Gate: the only place that holds
//!                   Behaviour::ends_streams ───────► end open streams (relist, rewind)
//!   open/close  ──► Behaviour::on_open ────────────► the controller process (restart),
//!                                                     the user's side (touch)
//! ```
//!
//! Why an enum of faults *and* a trait: the schedule format is a closed, externally
//! tagged union (`{"freeze": {}}`) that serde reads into an enum, with unknown fields and
//! variants refused; the behaviour lives in each variant's own type behind [`Behaviour`],
//! so a fault's decisions sit in its file and the proxy, the engine and the gated stream
//! only ever call the trait. Adding a fault is adding a file and a variant.

pub mod coalesce;
pub mod errors;
pub mod freeze;
pub mod lag;
pub mod latency;
pub mod partition;
pub mod relist;
pub mod restart;
pub mod rewind;
pub mod touch;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::request::Verb;
use crate::status::ApiError;
pub use crate::watch::gate::HoldMode;

/// The faults (docs/DESIGN.md "Faults"). Each window has exactly one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Fault {
    Freeze(freeze::Freeze),
    Lag(lag::Lag),
    Coalesce(coalesce::Coalesce),
    Relist(relist::Relist),
    Errors(errors::Errors),
    Latency(latency::Latency),
    Partition(partition::Partition),
    Rewind(rewind::Rewind),
    Restart(restart::Restart),
    Touch(touch::Touch),
}

impl Fault {
    /// The fault's behaviour.
    pub fn behaviour(&self) -> &dyn Behaviour {
        match self {
            Fault::Freeze(f) => f,
            Fault::Lag(f) => f,
            Fault::Coalesce(f) => f,
            Fault::Relist(f) => f,
            Fault::Errors(f) => f,
            Fault::Latency(f) => f,
            Fault::Partition(f) => f,
            Fault::Rewind(f) => f,
            Fault::Restart(f) => f,
            Fault::Touch(f) => f,
        }
    }

    /// The fault's name as the schedule file spells it.
    pub fn name(&self) -> &'static str {
        self.behaviour().name()
    }

    /// Problems with its settings, as (field path from the window, message).
    pub fn check(&self) -> Vec<(String, String)> {
        let name = self.name();
        self.behaviour()
            .check()
            .into_iter()
            .map(|(f, m)| (format!("fault.{name}.{f}"), m))
            .collect()
    }

    /// Faults whose windows answer `resourceVersion=0` reads from client views, so those
    /// views must be kept.
    pub fn uses_views(&self) -> bool {
        !matches!(self.behaviour().reads(), Reads::Upstream)
    }
}

/// The random choices a fault may make (seeded by the schedule; the engine draws).
pub trait Random {
    /// A draw from `lo..=hi`.
    fn uniform(&self, lo: f64, hi: f64) -> f64;
    /// A coin with probability `p`.
    fn chance(&self, p: f64) -> bool;
}

/// What a fault sees of a request of its target.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub verb: Verb,
    pub group: &'a str,
    pub resource: &'a str,
    pub name: Option<&'a str>,
    /// A write carrying a resourceVersion or uid precondition (`proxy/precondition.rs`).
    pub precondition: bool,
    /// The window the fault belongs to (named in synthetic answers).
    pub window: &'a str,
}

/// What a fault does to a request before it is forwarded.
#[derive(Debug, Clone)]
pub enum RequestAction {
    Pass,
    /// Forward it after this long.
    Delay(Duration),
    /// Answer it with this `Status`, never forwarding it.
    Answer(ApiError),
    /// Hold it until the window closes, then forward it (a blackhole: what the client
    /// still awaits then gets through).
    UntilClosed,
}

/// How `resourceVersion=0` reads of the target are answered while the window is open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reads {
    /// From the upstream.
    Upstream,
    /// From the client's view as it is (what the client has been shown).
    View,
    /// From the client's view as it was at a point in the past.
    Rewound(rewind::To),
}

/// How a fault ends the target's watch streams that are open when its window opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// ERROR 410 `Expired`: the client relists.
    Expired,
    /// A reset, as a failed apiserver's: client-go relists, kube-rs resumes.
    Reset,
}

/// Effects outside the proxy, for faults that have them. `stalemate run` and `explore`
/// own the controller process and act as the user; `serve` does neither.
pub trait Process: Send + Sync {
    /// Kill a controller (SIGKILL) now and start it again after `down`: the one the
    /// window's `client` names when it names a controller under test, every one for `*`,
    /// else the controller after `--`.
    fn restart(&self, window: &str, client: &str, down: Duration);

    /// Touch these objects as their user would (`touch.rs`).
    fn touch(&self, window: &str, objects: &[touch::Object]) {
        let _ = objects;
        tracing::warn!(window, "nothing here can touch objects");
    }
}

/// A fault's behaviour: every hook has a default that does nothing, so a fault
/// implements only the ones it uses.
pub trait Behaviour {
    /// The fault's name as the schedule file spells it.
    fn name(&self) -> &'static str;

    /// Problems with its settings, as (field under the fault, message).
    fn check(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// A request of the target, before it is forwarded.
    fn on_request(&self, _r: &Request<'_>, _random: &dyn Random) -> RequestAction {
        RequestAction::Pass
    }

    /// How the target's watch streams are held while the window is open. Drawn once
    /// when the window opens (a lag's jitter), so every stream and every later look at
    /// the window agree.
    fn hold(&self, _random: &dyn Random) -> Option<HoldMode> {
        None
    }

    /// What happens to the target's streams that are open when the window opens.
    fn ends_streams(&self) -> Option<StreamEnd> {
        None
    }

    /// How the target's `resourceVersion=0` reads are answered while it is open.
    fn reads(&self) -> Reads {
        Reads::Upstream
    }

    /// How long the window stays open when it gives no `duration` (`None`: until closed
    /// over the control API).
    fn default_duration(&self) -> Option<Duration> {
        None
    }

    /// Whether the window needs a process stalemate owns ([`Process`]).
    fn needs_process(&self) -> bool {
        false
    }

    /// The window opened (after its holds took effect); `client` is the window's.
    fn on_open(&self, _window: &str, _client: &str, _process: Option<&dyn Process>) {}
}

/// The hold a set of open windows puts on a stream: freeze wins over coalesce, which wins
/// over lag (the stronger staleness); among lags, the newest.
pub fn combined_hold(holds: impl IntoIterator<Item = HoldMode>) -> Option<HoldMode> {
    let mut mode = None;
    for h in holds {
        match h {
            HoldMode::Freeze => return Some(HoldMode::Freeze),
            HoldMode::Coalesce => mode = Some(HoldMode::Coalesce),
            HoldMode::Lag(_) if mode != Some(HoldMode::Coalesce) => mode = Some(h),
            HoldMode::Lag(_) => {}
        }
    }
    mode
}

/// Tests' randomness that never draws: the low end, never by chance.
#[cfg(test)]
pub(crate) struct NoDraw;

#[cfg(test)]
impl Random for NoDraw {
    fn uniform(&self, lo: f64, _hi: f64) -> f64 {
        lo
    }
    fn chance(&self, _p: f64) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stronger_holds_win() {
        let lag = |ms| HoldMode::Lag(Duration::from_millis(ms));
        assert_eq!(
            combined_hold([lag(5), HoldMode::Freeze, HoldMode::Coalesce]),
            Some(HoldMode::Freeze)
        );
        assert_eq!(
            combined_hold([lag(5), HoldMode::Coalesce, lag(9)]),
            Some(HoldMode::Coalesce)
        );
        assert_eq!(
            combined_hold([lag(5), lag(9)]),
            Some(lag(9)),
            "the newest lag"
        );
        assert_eq!(combined_hold([]), None);
    }

    #[test]
    fn every_fault_reads_and_writes_its_schedule_form() {
        for text in [
            r#"{"freeze":{}}"#,
            r#"{"lag":{"delay":"2s","jitter":"500ms"}}"#,
            r#"{"coalesce":{}}"#,
            r#"{"relist":{"how":"close"}}"#,
            r#"{"errors":{"verbs":["patch"],"status":409,"rate":0.5}}"#,
            r#"{"latency":{"delay":"1s"}}"#,
            r#"{"partition":{"mode":"refuse"}}"#,
            r#"{"partition":{"verbs":["watch"]}}"#,
            r#"{"rewind":{"by":"5s"}}"#,
            r#"{"restart":{"down":"1s"}}"#,
            r#"{"touch":{"objects":[{"resource":"pods","namespace":"d","name":"p"}]}}"#,
        ] {
            let f: Fault = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(f.check().is_empty(), "{text}: {:?}", f.check());
            let back: Fault = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
            assert_eq!(back, f, "{text}");
        }
        assert!(serde_json::from_str::<Fault>(r#"{"frieze":{}}"#).is_err());
        assert!(serde_json::from_str::<Fault>(r#"{"freeze":{"x":1}}"#).is_err());
    }
}
