//! What the apps workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets) share:
//! a selector that must select their template's labels and may not change, and — for
//! the two with replica counts in their status — counts that must add up.

use serde_json::Value;

use crate::selector::{self, LabelSelector};
use crate::validate::{go_map, required};
use stalemate_wire::k8s::status::FieldError;

/// A workload's selector must select its template's labels (`ValidatePodTemplateSpecForReplicaSet`).
pub(super) fn selector_matches(obj: &Value, errs: &mut Vec<FieldError>) {
    let sel = &obj["spec"]["selector"];
    let labels = &obj["spec"]["template"]["metadata"]["labels"];
    if sel.is_null() {
        errs.push(required("spec.selector"));
        return;
    }
    let selector = selector::string_form(sel);
    let matches = LabelSelector::parse(&selector)
        .map(|s| s.matches(labels))
        .unwrap_or(false);
    if !matches {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            &go_map(labels),
            "`selector` does not match template `labels`",
        ));
    }
}

/// A workload's selector is immutable (apps/v1).
pub(super) fn selector_unchanged(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    if old["spec"]["selector"] != new["spec"]["selector"] {
        errs.push(FieldError::invalid(
            "spec.selector",
            &new["spec"]["selector"].to_string(),
            "field is immutable",
        ));
    }
}

/// The checks of a create, and of an update besides its immutable selector.
pub(super) fn validate_create(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    selector_matches(obj, &mut errs);
    errs
}

/// The create checks, and the selector unchanged.
pub(super) fn validate_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = validate_create(new);
    selector_unchanged(old, new, &mut errs);
    errs
}

/// What a status write of a Deployment or a ReplicaSet breaks: replica counts above
/// `status.replicas`, or more available replicas than ready ones.
pub(super) fn replica_counts(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let s = &obj["status"];
    let n = |k: &str| s[k].as_i64().unwrap_or(0);
    for k in ["updatedReplicas", "readyReplicas", "availableReplicas"] {
        if n(k) > n("replicas") && s.get(k).is_some() {
            errs.push(FieldError::invalid(
                &format!("status.{k}"),
                &n(k).to_string(),
                "cannot be greater than status.replicas",
            ));
        }
    }
    if n("availableReplicas") > n("readyReplicas") {
        errs.push(FieldError::invalid(
            "status.availableReplicas",
            &n("availableReplicas").to_string(),
            "cannot be greater than readyReplicas",
        ));
    }
    errs
}
