//! Secrets: `stringData` folded into `data`, type `Opaque` by default; their keys valid
//! config keys, the keys their type requires present, their type immutable and their
//! data frozen once `immutable` is set.

use serde_json::{Value, json};

use super::configmaps::data_frozen;
use crate::defaults::default;
use crate::strategy::Strategy;
use crate::validate::{keys_of, required};
use stalemate_wire::k8s::status::FieldError;

pub(crate) struct Secrets;

impl Strategy for Secrets {
    fn defaults(&self, obj: &mut Value, _create: bool) {
        secret(obj);
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        keys_of(obj, "data", &mut errs);
        type_data(obj, &mut errs);
        errs
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if old["type"] != new["type"] {
            errs.push(FieldError::invalid(
                "type",
                &new["type"].to_string(),
                "field is immutable",
            ));
        }
        errs.extend(self.validate_create(new));
        data_frozen(old, new, &mut errs);
        errs
    }
}

/// `stringData` is write-only: folded into `data` (the secret strategy); type Opaque.
fn secret(obj: &mut Value) {
    if let Some(Value::Object(sd)) = obj
        .as_object_mut()
        .and_then(|m| m.shift_remove("stringData"))
    {
        use base64::Engine;
        for (k, v) in sd {
            let s = v.as_str().unwrap_or_default();
            obj["data"][k] = base64::engine::general_purpose::STANDARD.encode(s).into();
        }
    }
    default(obj, "type", json!("Opaque"));
}

/// The keys a Secret's type requires (`ValidateSecret`).
fn type_data(obj: &Value, errs: &mut Vec<FieldError>) {
    let required_keys: &[&str] = match obj["type"].as_str() {
        Some("kubernetes.io/tls") => &["tls.crt", "tls.key"],
        Some("kubernetes.io/dockerconfigjson") => &[".dockerconfigjson"],
        Some("kubernetes.io/dockercfg") => &[".dockercfg"],
        _ => &[],
    };
    for k in required_keys {
        if obj["data"].get(*k).is_none() {
            errs.push(required(&format!("data[{k}]")));
        }
    }
}
