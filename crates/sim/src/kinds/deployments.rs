//! Deployments: their defaults (rolling update of 25 %/25 %, ten revisions, a ten-minute
//! progress deadline), the workload rules (`workloads.rs`), a status write that keeps the
//! labels, and a generation that moves on annotation changes too.

use serde_json::{Value, json};

use super::workloads;
use crate::defaults::{default, object, template};
use crate::meta;
use crate::resource_type::ResourceType;
use crate::strategy::Strategy;
use stalemate_wire::k8s::status::FieldError;

pub(crate) struct Deployments;

impl Strategy for Deployments {
    fn defaults(&self, obj: &mut Value, create: bool) {
        deployment(obj, create);
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

    /// `deploymentStatusStrategy.PrepareForUpdate`: the labels are not the status writer's.
    fn prepare_for_status_update(&self, old: &Value, new: &mut Value) {
        meta::keep_old(old, new, "labels");
    }

    /// A Deployment's annotations count too (the rollback annotation of old;
    /// `deploymentStrategy.PrepareForUpdate`).
    fn spec_changed(&self, rt: &ResourceType, old: &Value, new: &Value) -> bool {
        meta::spec_changed(rt, old, new)
            || old["metadata"].get("annotations") != new["metadata"].get("annotations")
    }
}

fn deployment(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    default(spec, "replicas", json!(1));
    let strategy = object(spec, "strategy");
    default(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        let ru = object(strategy, "rollingUpdate");
        default(ru, "maxUnavailable", json!("25%"));
        default(ru, "maxSurge", json!("25%"));
    }
    default(spec, "revisionHistoryLimit", json!(10));
    default(spec, "progressDeadlineSeconds", json!(600));
    template(object(spec, "template"));
    if create {
        obj["status"] = json!({});
    }
}
