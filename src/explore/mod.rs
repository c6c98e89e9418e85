//! `stalemate explore`: find staleness bugs in an unmodified controller without being
//! told where they are.
//!
//! ```text
//!  2 fault-free reference runs ──► baseline (end state, masks, rates) ─┐
//!        │ (one fails already: "fails without any fault")             │
//!        └─► plans (plan/): windows anchored on the controller's       │
//!            own requests, breadth first                              │
//!  trials: each plan on a fresh upstream, until quiet ──► judge ◄─────┘
//!  failing trials grouped by signature ─► simplest plan ─► shrunk ─► findings/NN-*.json
//! ```
//!
//! Every trial is a [`crate::session`] on an upstream of the kind chosen
//! (`session/upstream/`): on the simulator or a real control plane (`--envtest`), trials
//! run side by side (`--jobs`), each with an upstream of its own; on a cluster one at a
//! time, the cluster put back between them.
//!
//! Where things are: `plan/` the plans, one file per fault family; `search/` the search
//! itself (`run`: references, tracks of trials, shrinking; each part an `impl Search`);
//! `shards/` one explore as many (`explore job`, `gather`, `merge`); below them what
//! they share — `config.rs`, `judge.rs` (+ `judged.rs`, `differ.rs`), `effect.rs`,
//! `record.rs`, `output.rs`, `focus.rs`, `shard.rs` (`--shard I/N`), `actions/` (user
//! actions), `invoked.rs`, `shell.rs`; and `issue.rs` (`explore report`, on an output
//! as `shards/merge.rs` reads it).

pub mod actions;
mod config;
pub mod differ;
pub mod effect;
pub mod focus;
mod invoked;
pub mod issue;
pub mod judge;
pub mod judged;
pub mod output;
pub mod plan;
mod record;
mod search;
pub mod shard;
pub mod shards;
mod shell;

pub use config::{Config, Verdict, base_schedule, default_oracles, windows_span};
pub use judge::under_test;
pub use record::{Finding, Replayed, Trial, TrialPhases, TrialVerdict};
pub use search::run;
