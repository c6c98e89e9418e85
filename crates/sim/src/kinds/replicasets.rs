//! ReplicaSets: their defaults, the workload rules (`workloads.rs`) and their status's
//! replica counts.

use serde_json::{Value, json};

use super::workloads;
use crate::defaults::{default, object, template};
use crate::strategy::Strategy;
use stalemate_wire::k8s::status::FieldError;

pub(crate) struct ReplicaSets;

impl Strategy for ReplicaSets {
    fn defaults(&self, obj: &mut Value, create: bool) {
        replica_set(obj, create);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        workloads::validate_create(obj)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        workloads::validate_update(old, new)
    }

    fn validate_status(&self, obj: &Value) -> Vec<FieldError> {
        workloads::replica_counts(obj)
    }
}

fn replica_set(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    default(spec, "replicas", json!(1));
    template(object(spec, "template"));
    if create {
        obj["status"] = json!({"replicas": 0});
    }
}
