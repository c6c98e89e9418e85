//! The `oracles` section of a schedule: what each oracle judges, and its limits.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::k8s::duration::GoDuration;

/// The `oracles` section of a schedule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OracleConfig {
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
    pub expected: Option<super::expected::ExpectedConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConvergenceConfig {
    /// Resources as kubectl names them (`plural.group`).
    pub resources: Vec<String>,
    /// How long after the last window closes the objects have to become Current.
    #[serde(default = "thirty_seconds")]
    pub settle: GoDuration,
    /// Objects whose right answer is kstatus Failed — a spec their controller must
    /// reject (`Stalled=True`): done when Failed, as the others are when Current.
    /// explore fills it with what ended Failed in both of its fault-free runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<super::object_ref::ObjectRef>,
    /// Condition types an object's controller writes when it is done: while one is
    /// absent (or describes an older generation) the object is not Current, whatever
    /// kstatus's fallback rule says. explore fills it with the types both of its
    /// fault-free runs ended with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ExpectedConditions>,
    /// How soon after the last window closes every object is to be Current again (the
    /// recovery oracle, `recovery.rs`; default: `settle`). Longer than `settle`, it is
    /// what the run waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recover_within: Option<GoDuration>,
}

/// The condition types one object ends with when its controller is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedConditions {
    /// As kubectl names it (`plural.group`).
    pub resource: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    pub types: Vec<String>,
}

impl ConvergenceConfig {
    /// What the recovery oracle allows after the last window closes.
    pub fn recover_within(&self) -> Duration {
        self.recover_within.map_or(self.settle.0, |d| d.0)
    }

    /// How long after the last window closes the objects are waited for.
    pub fn allowance(&self) -> Duration {
        self.settle.0.max(self.recover_within())
    }

    /// Whether `status` is where the object is meant to end.
    pub fn done(&self, k: &super::object_ref::ObjectRef, status: super::kstatus::Status) -> bool {
        use super::kstatus::Status;
        status == Status::Current || (status == Status::Failed && self.failed.contains(k))
    }

    /// The object's kstatus, held to the condition types it is expected to end with.
    pub fn verdict(
        &self,
        k: &super::object_ref::ObjectRef,
        obj: &serde_json::Value,
    ) -> super::kstatus::Verdict {
        match self
            .conditions
            .iter()
            .find(|c| c.resource == k.resource && c.namespace == k.namespace && c.name == k.name)
        {
            Some(c) => super::kstatus::compute_expecting(obj, &c.types),
            None => super::kstatus::compute(obj),
        }
    }
}

fn thirty_seconds() -> GoDuration {
    GoDuration(Duration::from_secs(30))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadinessConfig {
    pub resources: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HotLoopConfig {
    pub max_writes_per_object_per_minute: u32,
    /// How long after a window closes its effects are still its own: writes in a window
    /// or this soon after are reported as seen there, not as a violation (`rates.rs`).
    #[serde(default = "ten_seconds")]
    pub grace: GoDuration,
    /// Resources whose objects are watched to name the churning fields (default: the
    /// convergence resources). Writes are counted for every resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConflictsConfig {
    pub max_per_object_per_minute: u32,
    /// As `hotLoop.grace`: 409s in a window or this soon after it closed are the
    /// window's doing (a client retrying against the cache it held), reported, not judged.
    #[serde(default = "ten_seconds")]
    pub grace: GoDuration,
}

fn ten_seconds() -> GoDuration {
    GoDuration(Duration::from_secs(10))
}

impl OracleConfig {
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
