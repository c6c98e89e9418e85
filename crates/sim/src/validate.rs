//! Validation helpers shared by the kinds (`kinds/`), whose `validate_*` hooks hold the
//! checks of kube-apiserver's validation (`pkg/apis/*/validation`) that a controller's
//! own writes run into. Each answers 422 `Invalid` with the causes (field and reason)
//! the real apiserver gives, checked against it by `e2e/sim_differential.rs`. Everything
//! else kube-apiserver validates is not checked (docs/simulator.md, "Not simulated").

use serde_json::Value;

use stalemate_wire::k8s::status::FieldError;

pub(crate) fn required(field: &str) -> FieldError {
    FieldError {
        reason: "FieldValueRequired",
        field: field.into(),
        message: "Required value".into(),
    }
}

/// Go's `%#v` of a `map[string]string`, as the messages quote label maps.
pub(crate) fn go_map(m: &Value) -> String {
    let entries: Vec<String> = m
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or_default()))
        .collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

/// `IsConfigMapKey`: alphanumerics, `-`, `_`, `.`.
fn bad_key(k: &str) -> bool {
    k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

const KEY_RULE: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// The keys of the map at `obj[field]` that are not valid config keys.
pub(crate) fn keys_of(obj: &Value, field: &str, errs: &mut Vec<FieldError>) {
    for k in obj[field].as_object().into_iter().flatten().map(|(k, _)| k) {
        if bad_key(k) {
            errs.push(FieldError::invalid(
                &format!("{field}[{k}]"),
                &format!("{k:?}"),
                KEY_RULE,
            ));
        }
    }
}
