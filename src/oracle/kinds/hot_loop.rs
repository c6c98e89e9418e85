//! The hot-loop oracle: more successful writes to one object by one client in a minute
//! than the limit, outside the windows and their grace (`rates.rs`), while its spec does
//! not change — naming the fields that change on every write (diffs of the successive
//! objects ground truth holds).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::k8s::duration::GoDuration;
use crate::oracle::hooks::{Answered, Judged, Judging, Oracle};
use crate::oracle::name::OracleName;
use crate::oracle::object_ref::ObjectRef;
use crate::oracle::rates::{self, Counter, Hit, Key, MINUTE, Peak};
use crate::oracle::state::Shared;
use crate::oracle::tracked::Obj;
use crate::oracle::verdicts::{Verdicts, Violation};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HotLoopConfig {
    pub max_writes_per_object_per_minute: u32,
    /// How long after a window closes its effects are still its own: writes in a window
    /// or this soon after are reported as seen there, not as a violation (`rates.rs`).
    #[serde(default = "crate::oracle::rates::default_grace")]
    pub grace: GoDuration,
    /// Resources whose objects are watched to name the churning fields (default: the
    /// convergence resources). Writes are counted for every resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
}

impl HotLoopConfig {
    /// At most `max` writes per object per minute, with the default grace, naming the
    /// churning fields of `resources`.
    pub fn at_most(max: u32, resources: Vec<String>) -> HotLoopConfig {
        HotLoopConfig {
            max_writes_per_object_per_minute: max,
            grace: rates::default_grace(),
            resources,
        }
    }
}

pub(crate) struct HotLoop {
    config: HotLoopConfig,
    pub(crate) counter: Counter,
}

impl HotLoop {
    pub(super) fn new(config: HotLoopConfig) -> HotLoop {
        HotLoop {
            config,
            counter: Counter::default(),
        }
    }

    /// A hot loop on the key's object by its client, unless the spec changed in that
    /// stretch (then the writes were work); the rule names the fields every write changed.
    fn violation(
        &self,
        objects: &BTreeMap<ObjectRef, Obj>,
        key: &Key,
        hit: &Hit,
    ) -> Option<Violation> {
        let fields = churning_fields(objects.get(&key.1), hit)?;
        let rule = format!(
            "{fields} (changed on every write; {} writes within a minute, limit {})",
            hit.peak, self.config.max_writes_per_object_per_minute
        );
        Some(rates::hit_violation(OracleName::HotLoop, key, hit, rule))
    }
}

impl Oracle for HotLoop {
    fn name(&self) -> OracleName {
        OracleName::HotLoop
    }

    fn on_request(&mut self, r: &Answered<'_>, shared: &Shared) -> u64 {
        let Some(name) = r.name else { return 0 };
        // Writes done: a 409 is the conflicts oracle's.
        if !r.verb.is_write() || !(200..300).contains(&r.code) {
            return 0;
        }
        // `gitrepositories/status` is a write to the object.
        let resource = r.resource.split('/').next().unwrap_or(r.resource);
        let key = (
            r.client.to_string(),
            ObjectRef {
                resource: resource.to_string(),
                namespace: r.namespace.unwrap_or("").to_string(),
                name: name.to_string(),
            },
        );
        let inside = rates::inside_windows(&shared.windows, r.at, self.config.grace.0);
        let limit = self.config.max_writes_per_object_per_minute as usize;
        self.counter.count(key, r.at, inside, limit)
    }

    fn on_gone(&mut self, key: &ObjectRef, shared: &Shared) -> Vec<Violation> {
        let settled = (self.counter.hits.iter())
            .filter(|((_, k), _)| k == key)
            .filter_map(|(key, hit)| self.violation(&shared.objects, key, hit))
            .collect();
        self.counter.forget(key);
        settled
    }

    fn judges_deleted(&self) -> bool {
        true
    }

    fn judge(&self, j: &Judging<'_>) -> Judged {
        Judged {
            pending: None,
            violations: (self.counter.hits.iter())
                .filter_map(|(key, hit)| self.violation(&j.shared.objects, key, hit))
                .collect(),
        }
    }

    fn report(&self, verdicts: &mut Verdicts, _j: &Judging<'_>) {
        (verdicts.inside_windows).extend(self.counter.inside_notes(
            self.name(),
            "writes within a minute",
            self.config.grace.0,
            self.config.max_writes_per_object_per_minute,
        ));
    }

    fn over_limit_after(&self, last_close: Option<SystemTime>) -> bool {
        self.counter.violated_after(last_close)
    }

    fn peaks(&self, into: &mut BTreeMap<(String, ObjectRef), Peak>) {
        for (key, (n, at)) in &self.counter.peaks {
            let p = into.entry(key.clone()).or_default();
            p.writes = *n;
            p.last = p.last.max(Some(*at));
        }
    }
}

/// The fields every write in the hit's stretch changed, deepest first named; `None` if
/// the spec changed in that stretch (the writes were work, not a loop).
fn churning_fields(object: Option<&Obj>, hit: &Hit) -> Option<String> {
    let diffs: Vec<&BTreeSet<String>> = object
        .map(|o| {
            o.diffs
                .iter()
                .filter(|(t, _)| {
                    *t + MINUTE >= hit.first && *t <= hit.last + Duration::from_secs(5)
                })
                .map(|(_, d)| d)
                .collect()
        })
        .unwrap_or_default();
    if diffs.iter().any(|d| {
        d.iter()
            .any(|p| p == "spec" || p.starts_with("spec.") || p.starts_with("spec["))
    }) {
        return None;
    }
    // A field churns when every write changed it — or changed a whole object above it
    // (the first stamp adds `metadata.annotations` itself, the next ones one key in it).
    let covers = |q: &str, p: &str| {
        p == q
            || p.strip_prefix(q)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    };
    let churn: BTreeSet<String> = diffs
        .iter()
        .flat_map(|d| d.iter())
        .filter(|p| diffs.iter().all(|d| d.iter().any(|q| covers(q, p))))
        .cloned()
        .collect();
    // Name the deepest: drop a path another churning one is below.
    let churn: BTreeSet<String> = churn
        .iter()
        .filter(|p| !churn.iter().any(|c| c != *p && covers(p, c)))
        .cloned()
        .collect();
    Some(if churn.is_empty() {
        "(fields unknown: the object is not watched; add its resource to hotLoop.resources)"
            .to_string()
    } else {
        churn.into_iter().collect::<Vec<_>>().join(", ")
    })
}
