//! PersistentVolumes: `Retain` and `Filesystem` by default, `Pending` when new, and the
//! StorageObjectInUseProtection finalizer (a volume in use is not removed under its
//! claim; the protection controller takes the finalizer off).

use serde_json::{Value, json};

use crate::defaults::{default, object};
use crate::meta;
use crate::store::State;
use crate::strategy::Strategy;
use stalemate_wire::k8s::status::ApiError;

pub(crate) struct PersistentVolumes;

impl Strategy for PersistentVolumes {
    fn defaults(&self, obj: &mut Value, create: bool) {
        let spec = object(obj, "spec");
        default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
        default(spec, "volumeMode", json!("Filesystem"));
        if create {
            obj["status"] = json!({"phase": "Pending"});
        }
    }

    fn admit(&self, _st: &State, _ns: &str, obj: &mut Value) -> Result<(), ApiError> {
        meta::add_finalizer(obj, "kubernetes.io/pv-protection");
        Ok(())
    }
}
