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

mod behaviour;
pub mod coalesce;
pub mod errors;
pub mod freeze;
pub mod lag;
pub mod latency;
mod object;
pub mod partition;
mod process;
mod random;
mod reads;
pub mod relist;
pub mod restart;
pub mod rewind;
pub mod touch;

use serde::{Deserialize, Serialize};

pub use crate::watch::gate::HoldMode;
pub use behaviour::{Behaviour, Request, RequestAction, StreamEnd};
pub use process::Process;
#[cfg(test)]
pub(crate) use random::NoDraw;
pub use random::Random;
pub use reads::Reads;

/// The faults (docs/DESIGN.md "Faults"). Each window has exactly one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

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

    #[test]
    fn freeze_holds_everything_and_reads_from_the_view() {
        let f: Fault = serde_json::from_str(r#"{"freeze": {}}"#).unwrap();
        assert_eq!(f.behaviour().hold(&NoDraw), Some(HoldMode::Freeze));
        assert_eq!(f.behaviour().reads(), Reads::View);
        assert!(f.uses_views() && f.behaviour().ends_streams().is_none());
        assert!(serde_json::from_str::<freeze::Freeze>(r#"{"for": "1s"}"#).is_err());
    }
}
