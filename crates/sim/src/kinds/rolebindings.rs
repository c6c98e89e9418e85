//! RoleBindings and ClusterRoleBindings: the role they bind may not change.

use serde_json::Value;

use crate::strategy::Strategy;
use stalemate_wire::k8s::status::FieldError;

pub(crate) struct RoleBindings;

impl Strategy for RoleBindings {
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        if old["roleRef"] != new["roleRef"] {
            errs.push(FieldError::invalid(
                "roleRef",
                &new["roleRef"].to_string(),
                "cannot change roleRef",
            ));
        }
        errs
    }
}
