//! The readiness-race oracle: an object kstatus calls Current before its controller
//! wrote `status.observedGeneration` — by its fallback rule, with no Ready, Reconciling
//! or Stalled condition — from when to when.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::oracle::hooks::{Judged, Judging, Oracle, Seen};
use crate::oracle::kstatus;
use crate::oracle::name::OracleName;
use crate::oracle::object_ref::ObjectRef;
use crate::oracle::state::Shared;
use crate::oracle::verdicts::Violation;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadinessConfig {
    pub resources: Vec<String>,
}

pub(super) struct ReadinessRace {
    config: ReadinessConfig,
    /// When kstatus first called each object Current unobserved, and when that ended
    /// (the controller wrote its status), if it has.
    races: BTreeMap<ObjectRef, (SystemTime, Option<SystemTime>)>,
}

impl ReadinessRace {
    pub(super) fn new(config: ReadinessConfig) -> ReadinessRace {
        ReadinessRace {
            config,
            races: BTreeMap::new(),
        }
    }
}

impl Oracle for ReadinessRace {
    fn name(&self) -> OracleName {
        OracleName::ReadinessRace
    }

    fn on_object(&mut self, o: &Seen<'_>, _shared: &Shared) {
        if !self.config.resources.contains(&o.key.resource) {
            return;
        }
        let racing = kstatus::current_unobserved(o.obj, o.kstatus);
        match self.races.get(o.key).copied() {
            None if racing => {
                self.races.insert(o.key.clone(), (o.at, None));
            }
            // The controller has written status since: the race lasted until now.
            Some((since, None)) if !racing => {
                self.races.insert(o.key.clone(), (since, Some(o.at)));
            }
            _ => {}
        }
    }

    fn on_gone(&mut self, key: &ObjectRef, _shared: &Shared) -> Vec<Violation> {
        self.races
            .remove(key)
            .map(|race| violation(key, race))
            .into_iter()
            .collect()
    }

    fn judges_deleted(&self) -> bool {
        true
    }

    fn forget(&mut self, key: &ObjectRef) {
        self.races.remove(key);
    }

    fn judge(&self, _j: &Judging<'_>) -> Judged {
        Judged {
            pending: None,
            violations: (self.races.iter()).map(|(k, r)| violation(k, *r)).collect(),
        }
    }
}

fn violation(k: &ObjectRef, (since, until): (SystemTime, Option<SystemTime>)) -> Violation {
    Violation {
        oracle: OracleName::ReadinessRace,
        resource: k.resource.clone(),
        namespace: k.namespace.clone(),
        name: k.name.clone(),
        rule: "kstatus Current before the controller wrote status.observedGeneration (by its fallback rule: no Ready, Reconciling or Stalled condition)".into(),
        since,
        client: None,
        until,
        peak: None,
        why: None,
    }
}
