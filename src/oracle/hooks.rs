//! An oracle: the one interface every oracle implements (`kinds/`, one file each), what
//! it is told and what it answers. Every hook has a default that does nothing, so an
//! oracle implements only what it listens to — requests, objects, windows — and `judge`.
//!
//! ```text
//!  proxy ── a request answered ──► Oracles (feed.rs) ─► Shared: timeline, answers
//!  truth ── an object, a delete ──►      │             ─► each oracle's on_request,
//!  engine ─ a window opened/closed ─►    │                on_object, on_gone, on_window
//!                                        ▼
//!  report, gauge, explore ◄── evaluate.rs: each oracle's judge (+ report), in order
//! ```
//!
//! An oracle keeps its own state; what several read (ground truth's objects, the window
//! spans, the timeline: `state.rs`) is handed to every hook as `&Shared`, never owned.

use std::any::Any;
use std::collections::BTreeMap;
use std::time::SystemTime;

use serde_json::Value;

use super::end_state;
use super::kstatus;
use super::name::OracleName;
use super::object_ref::ObjectRef;
use super::rates::Peak;
use super::state::Shared;
use super::verdicts::{Verdicts, Violation};
use crate::k8s::request::Verb;

/// A request the proxy answered.
#[derive(Debug, Clone, Copy)]
pub(super) struct Answered<'a> {
    pub client: &'a str,
    pub verb: Verb,
    /// As the request named it (`gitrepositories.source.toolkit.fluxcd.io/status`).
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
    pub code: u16,
    pub at: SystemTime,
}

/// An object as ground truth reported it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen<'a> {
    pub key: &'a ObjectRef,
    pub obj: &'a Value,
    pub at: SystemTime,
    /// kstatus's own answer (not held to expected conditions).
    pub kstatus: &'a kstatus::Verdict,
    /// Where it should be: Current, or Failed where that is the answer.
    pub done: bool,
}

/// What an oracle judges from, as of `now`.
pub(super) struct Judging<'a> {
    pub shared: &'a Shared,
    /// When the run started.
    pub started: SystemTime,
    pub now: SystemTime,
    /// Why an oracle judged before this one cannot judge yet (`None`: all can).
    pub pending: Option<&'a str>,
}

/// An oracle's answer as of now.
#[derive(Debug, Default)]
pub(super) struct Judged {
    /// Why it cannot judge yet (for the report and the session's end line).
    pub pending: Option<String>,
    pub violations: Vec<Violation>,
}

/// An oracle. Hooks that keep bounded records return how many entries their caps
/// dropped (`stalemate_oracle_dropped_total`).
pub(super) trait Oracle: Send + AsAny {
    /// Its name, as its violations and the metrics carry it.
    fn name(&self) -> OracleName;

    /// A request the proxy answered.
    fn on_request(&mut self, _r: &Answered<'_>, _shared: &Shared) -> u64 {
        0
    }

    /// An object ground truth reported (after `Shared` took it in).
    fn on_object(&mut self, _o: &Seen<'_>, _shared: &Shared) {}

    /// A deleted object: what is left to judge about it, judged now; then its state is
    /// forgotten (`shared` still holds the object until every oracle was told).
    fn on_gone(&mut self, _key: &ObjectRef, _shared: &Shared) -> Vec<Violation> {
        Vec::new()
    }

    /// Whether it judges deleted objects (`on_gone`): theirs are reported, in the order
    /// they went, before the first such oracle's own.
    fn judges_deleted(&self) -> bool {
        false
    }

    /// An object the shared store dropped at its cap: forget it, unjudged.
    fn forget(&mut self, _key: &ObjectRef) {}

    /// A window opened or closed (after `Shared` recorded it).
    fn on_window(&mut self, _name: &str, _open: bool, _at: SystemTime, _shared: &Shared) -> u64 {
        0
    }

    /// What it finds as of `j.now`.
    fn judge(&self, _j: &Judging<'_>) -> Judged {
        Judged::default()
    }

    /// What the report gets of it besides its violations (notes, measurements, the why
    /// of another oracle's finding).
    fn report(&self, _verdicts: &mut Verdicts, _j: &Judging<'_>) {}

    /// What it finds in the run's end state (judged once, after the run).
    fn judge_end(&self, _end: &end_state::State, _at: SystemTime) -> Vec<Violation> {
        Vec::new()
    }

    /// Whether it is over a limit outside the windows after `last_close` — a run that
    /// cannot go quiet may end early.
    fn over_limit_after(&self, _last_close: Option<SystemTime>) -> bool {
        false
    }

    /// Its share of each client's highest rates per object.
    fn peaks(&self, _into: &mut BTreeMap<(String, ObjectRef), Peak>) {}
}

/// Lets a test look at one oracle's own state behind `dyn Oracle`.
pub(super) trait AsAny {
    #[cfg_attr(not(test), allow(dead_code))]
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}
