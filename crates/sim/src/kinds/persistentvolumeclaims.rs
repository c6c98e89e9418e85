//! PersistentVolumeClaims: `Filesystem` volumes, `Pending` when new, the
//! StorageObjectInUseProtection finalizer (a claim in use is not removed under its pod;
//! the protection controller takes the finalizer off), and a spec that an unbound claim
//! may not change.

use serde_json::{Value, json};

use crate::defaults::{default, object};
use crate::meta;
use crate::store::State;
use crate::strategy::Strategy;
use stalemate_wire::k8s::status::{ApiError, FieldError};

pub(crate) struct PersistentVolumeClaims;

impl Strategy for PersistentVolumeClaims {
    fn defaults(&self, obj: &mut Value, create: bool) {
        default(object(obj, "spec"), "volumeMode", json!("Filesystem"));
        if create {
            obj["status"] = json!({"phase": "Pending"});
        }
    }

    fn admit(&self, _st: &State, _ns: &str, obj: &mut Value) -> Result<(), ApiError> {
        meta::add_finalizer(obj, "kubernetes.io/pvc-protection");
        Ok(())
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        if old["spec"] != new["spec"] {
            // A claim that is not bound may change nothing of its spec.
            errs.push(FieldError::forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            ));
        }
        errs
    }
}
