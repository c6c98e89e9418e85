//! The conflicts oracle: more 409s on one object for one client in a minute than the
//! limit, outside the windows and their grace (`rates.rs` says why not inside them).

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::k8s::duration::GoDuration;
use crate::oracle::hooks::{Answered, Judged, Judging, Oracle};
use crate::oracle::name::OracleName;
use crate::oracle::object_ref::ObjectRef;
use crate::oracle::rates::{self, Counter, Hit, Key, Peak};
use crate::oracle::state::Shared;
use crate::oracle::verdicts::{Verdicts, Violation};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConflictsConfig {
    pub max_per_object_per_minute: u32,
    /// As `hotLoop.grace`: 409s in a window or this soon after it closed are the
    /// window's doing (a client retrying against the cache it held), reported, not judged.
    #[serde(default = "crate::oracle::rates::default_grace")]
    pub grace: GoDuration,
}

impl ConflictsConfig {
    /// At most `max` 409s per object per minute, with the default grace.
    pub fn at_most(max: u32) -> ConflictsConfig {
        ConflictsConfig {
            max_per_object_per_minute: max,
            grace: rates::default_grace(),
        }
    }
}

pub(super) struct Conflicts {
    config: ConflictsConfig,
    counter: Counter,
}

impl Conflicts {
    pub(super) fn new(config: ConflictsConfig) -> Conflicts {
        Conflicts {
            config,
            counter: Counter::default(),
        }
    }

    fn violation(&self, key: &Key, hit: &Hit) -> Violation {
        let rule = format!(
            "{} conflicts (409) in a minute, limit {}",
            hit.peak, self.config.max_per_object_per_minute
        );
        rates::hit_violation(OracleName::Conflicts, key, hit, rule)
    }
}

impl Oracle for Conflicts {
    fn name(&self) -> OracleName {
        OracleName::Conflicts
    }

    fn on_request(&mut self, r: &Answered<'_>, shared: &Shared) -> u64 {
        let Some(name) = r.name else { return 0 };
        if r.code != 409 {
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
        let limit = self.config.max_per_object_per_minute as usize;
        self.counter.count(key, r.at, inside, limit)
    }

    fn on_gone(&mut self, key: &ObjectRef, _shared: &Shared) -> Vec<Violation> {
        let settled = (self.counter.hits.iter())
            .filter(|((_, k), _)| k == key)
            .map(|(key, hit)| self.violation(key, hit))
            .collect();
        self.counter.forget(key);
        settled
    }

    fn judges_deleted(&self) -> bool {
        true
    }

    fn judge(&self, _j: &Judging<'_>) -> Judged {
        Judged {
            pending: None,
            violations: (self.counter.hits.iter())
                .map(|(key, hit)| self.violation(key, hit))
                .collect(),
        }
    }

    fn report(&self, verdicts: &mut Verdicts, _j: &Judging<'_>) {
        (verdicts.inside_windows).extend(self.counter.inside_notes(
            self.name(),
            "conflicts (409) in a minute",
            self.config.grace.0,
            self.config.max_per_object_per_minute,
        ));
    }

    fn over_limit_after(&self, last_close: Option<SystemTime>) -> bool {
        self.counter.violated_after(last_close)
    }

    fn peaks(&self, into: &mut BTreeMap<(String, ObjectRef), Peak>) {
        for (key, (n, at)) in &self.counter.peaks {
            let p = into.entry(key.clone()).or_default();
            p.conflicts = *n;
            p.last = p.last.max(Some(*at));
        }
    }
}
