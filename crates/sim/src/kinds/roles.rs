//! Roles and ClusterRoles: every rule names at least one verb.

use serde_json::Value;

use crate::strategy::Strategy;
use stalemate_wire::k8s::status::FieldError;

pub(crate) struct Roles;

impl Strategy for Roles {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        rules(obj, &mut errs);
        errs
    }
}

fn rules(obj: &Value, errs: &mut Vec<FieldError>) {
    for (i, r) in obj["rules"].as_array().into_iter().flatten().enumerate() {
        if r["verbs"].as_array().is_none_or(|v| v.is_empty()) {
            errs.push(FieldError {
                reason: "FieldValueRequired",
                field: format!("rules[{i}].verbs"),
                message: "Required value: verbs must contain at least one value".into(),
            });
        }
    }
}
