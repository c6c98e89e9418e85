//! Oracles: did the controller recover? Judged from ground truth — the upstream watched
//! directly (`truth.rs`), never through a window — and from the requests the proxy saw.
//!
//! One file per oracle under `kinds/`, each behind the `Oracle` trait (`hooks.rs`),
//! holding its settings, its own state and its judgement; `kinds/mod.rs` lists them.
//!
//! - **convergence** (kstatus, `kstatus.rs`): once no window is open and either `settle`
//!   has passed since the last one closed or everything is Current, every object of the
//!   listed resources must be Current; stuck ones are reported with the rule that failed
//!   and since when.
//! - **recovery**: each object's recovery time after each window; one later than
//!   `recoverWithin` is a finding, and why one never came is said.
//! - **readiness race**: an object kstatus calls Current before its controller wrote
//!   `status.observedGeneration` — by its fallback rule, with no Ready, Reconciling or
//!   Stalled condition — from when to when.
//! - **hot loop**: more successful writes to one object by one client in a minute than
//!   the limit while its spec does not change, naming the fields that change on every
//!   write (diffs of the successive objects the upstream holds).
//! - **conflicts**: more 409s on one object for one client in a minute than the limit.
//! - **expected**: what fault-free runs showed, held against the end state.
//!
//! ```text
//!  name.rs     OracleName: how each is spelled on the wire
//!  hooks.rs    the Oracle trait, what it is told (Answered, Seen) and answers (Judged)
//!  state.rs    what they share (ground truth's objects, windows, timeline)
//!  oracles.rs  Oracles: the lock over shared state + each oracle, and its queries
//!  feed.rs     the on_* calls: record what is shared, tell every oracle
//!  evaluate.rs judge them in order, set the gauge, build Verdicts (verdicts.rs)
//! ```

pub(crate) mod caps;
pub mod end_state;
mod evaluate;
mod feed;
mod hooks;
mod kinds;
pub mod kstatus;
mod name;
mod object_ref;
mod oracles;
mod paths;
mod rates;
pub mod staleness;
mod state;
mod time_format;
mod tracked;
pub mod truth;
mod verdicts;

pub use caps::MAX_ENTRIES;
pub use kinds::expected;
pub use kinds::{
    ConflictsConfig, ConvergenceConfig, ExpectedConditions, HotLoopConfig, OracleConfig,
    ReadinessConfig,
};
pub use name::OracleName;
pub use object_ref::ObjectRef;
pub use oracles::Oracles;
pub use paths::changed_paths;
pub use rates::Peak;
pub(crate) use time_format::millis as rfc3339;
pub use verdicts::{
    Comeback, ExitMark, Mark, ObjectStatus, Recovery, RestartMark, Verdicts, Violation, WindowSpan,
};

#[cfg(test)]
mod tests;
