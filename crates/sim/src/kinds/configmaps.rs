//! ConfigMaps: their keys valid config keys, their data frozen once `immutable` is set.

use serde_json::Value;

use crate::strategy::Strategy;
use crate::validate::keys_of;
use stalemate_wire::k8s::status::FieldError;

pub(crate) struct ConfigMaps;

impl Strategy for ConfigMaps {
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        keys_of(obj, "data", &mut errs);
        keys_of(obj, "binaryData", &mut errs);
        errs
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        data_frozen(old, new, &mut errs);
        errs
    }
}

/// Data that may not change once `immutable` is set (ConfigMaps and Secrets alike).
pub(crate) fn data_frozen(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    if old["immutable"] == true {
        for field in ["data", "binaryData"] {
            if old[field] != new[field] {
                errs.push(FieldError::forbidden(
                    field,
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
}
