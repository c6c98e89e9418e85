//! The oracles there are, one file each behind the `Oracle` trait (`hooks.rs`), each
//! with its settings, its own state and its judgement — as `fault/` has one file per
//! fault. This file is their list: the `oracles` section of a schedule (one field per
//! oracle) and the oracles a run gets from it, in the order their violations are
//! reported.
//!
//! Adding an oracle: its file here (settings, state, `impl Oracle`), a field and a line
//! in [`OracleConfig::build`] below, and its name in `name.rs`.

mod conflicts;
mod convergence;
pub mod expected;
mod hot_loop;
mod readiness_race;
mod recovery;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::oracle::hooks::Oracle;
pub use conflicts::ConflictsConfig;
pub use convergence::{ConvergenceConfig, ExpectedConditions};
#[cfg(test)]
pub(super) use hot_loop::HotLoop;
pub use hot_loop::HotLoopConfig;
pub use readiness_race::ReadinessConfig;

/// The `oracles` section of a schedule: what each oracle judges, and its limits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OracleConfig {
    /// Also the recovery oracle's (`recoverWithin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convergence: Option<ConvergenceConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_race: Option<ReadinessConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_loop: Option<HotLoopConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts: Option<ConflictsConfig>,
    /// What fault-free runs showed, judged at the end (`expected.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<expected::ExpectedConfig>,
}

impl OracleConfig {
    /// The oracles it configures, in the order their violations are reported.
    pub(super) fn build(&self) -> Vec<Box<dyn Oracle>> {
        let mut v: Vec<Box<dyn Oracle>> = Vec::new();
        if let Some(c) = &self.convergence {
            v.push(Box::new(convergence::Convergence::new(c.clone())));
            // Judged after convergence: only once it can judge (`recovery.rs`).
            v.push(Box::new(recovery::Recovery::new(c.clone())));
        }
        if let Some(c) = &self.readiness_race {
            v.push(Box::new(readiness_race::ReadinessRace::new(c.clone())));
        }
        if let Some(c) = &self.hot_loop {
            v.push(Box::new(hot_loop::HotLoop::new(c.clone())));
        }
        if let Some(c) = &self.conflicts {
            v.push(Box::new(conflicts::Conflicts::new(c.clone())));
        }
        if let Some(c) = &self.expected {
            v.push(Box::new(expected::Expected::new(c.clone())));
        }
        v
    }

    /// The resources ground truth must watch.
    pub fn watched_resources(&self) -> BTreeSet<String> {
        let mut r = BTreeSet::new();
        if let Some(c) = &self.convergence {
            r.extend(c.resources.iter().cloned());
        }
        if let Some(c) = &self.readiness_race {
            r.extend(c.resources.iter().cloned());
        }
        if let Some(h) = &self.hot_loop {
            r.extend(h.resources.iter().cloned());
        }
        r
    }
}
