//! StatefulSets: their defaults (ordered pod management, rolling updates from partition 0,
//! PVCs retained) and the workload rules (`workloads.rs`).

use serde_json::{Value, json};

use super::workloads;
use crate::defaults::{default, object, template};
use crate::strategy::Strategy;
use stalemate_wire::k8s::status::FieldError;

pub(crate) struct StatefulSets;

impl Strategy for StatefulSets {
    fn defaults(&self, obj: &mut Value, create: bool) {
        stateful_set(obj, create);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        workloads::validate_create(obj)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        workloads::validate_update(old, new)
    }
}

fn stateful_set(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    default(spec, "replicas", json!(1));
    default(spec, "podManagementPolicy", json!("OrderedReady"));
    let us = object(spec, "updateStrategy");
    default(us, "type", json!("RollingUpdate"));
    if us["type"] == "RollingUpdate" {
        default(object(us, "rollingUpdate"), "partition", json!(0));
    }
    default(spec, "revisionHistoryLimit", json!(10));
    let retention = object(spec, "persistentVolumeClaimRetentionPolicy");
    default(retention, "whenDeleted", json!("Retain"));
    default(retention, "whenScaled", json!("Retain"));
    template(object(spec, "template"));
    if create {
        obj["status"] = json!({"replicas": 0, "availableReplicas": 0});
    }
}
