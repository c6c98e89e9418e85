//! DaemonSets: their defaults (rolling updates one pod at a time) and the workload rules
//! (`workloads.rs`).

use serde_json::{Value, json};

use super::workloads;
use crate::defaults::{default, object, template};
use crate::strategy::Strategy;
use stalemate_wire::k8s::status::FieldError;

pub(crate) struct DaemonSets;

impl Strategy for DaemonSets {
    fn defaults(&self, obj: &mut Value, create: bool) {
        daemon_set(obj, create);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        workloads::validate_create(obj)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        workloads::validate_update(old, new)
    }
}

fn daemon_set(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    let us = object(spec, "updateStrategy");
    default(us, "type", json!("RollingUpdate"));
    if us["type"] == "RollingUpdate" {
        let ru = object(us, "rollingUpdate");
        default(ru, "maxUnavailable", json!(1));
        default(ru, "maxSurge", json!(0));
    }
    default(spec, "revisionHistoryLimit", json!(10));
    template(object(spec, "template"));
    if create {
        obj["status"] = json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
            "desiredNumberScheduled": 0, "numberReady": 0});
    }
}
