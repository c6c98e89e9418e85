//! CustomResourceDefinitions: their structure checked on every write, their status
//! settled as the apiextensions controllers settle it (names accepted, established), the
//! registry rebuilt so that their resources are served from then on, and their custom
//! resources deleted with them (the `customresourcecleanup` finalizer).

use serde_json::{Value, json};

use crate::meta;
use crate::registry::{self, Registry};
use crate::store::{EventType, State, Stored};
use crate::strategy::{Strategies, Strategy};
use stalemate_wire::k8s::status::FieldError;

/// Where CRDs are stored.
pub(crate) const KEY: &str = "apiextensions.k8s.io/customresourcedefinitions";

pub(crate) struct Crds;

impl Strategy for Crds {
    fn defaults(&self, obj: &mut Value, create: bool) {
        if create {
            prepare(obj);
        }
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        validate(obj)
    }

    fn validate_status(&self, obj: &Value) -> Vec<FieldError> {
        validate(obj)
    }

    /// Answered as created; its names accepted and established by the next write, as
    /// the apiextensions controllers do at once (a watch sees ADDED, then MODIFIED).
    fn after_create(&self, st: &mut State, _kinds: Strategies, created: &Stored) {
        let mut established = created.value.clone();
        establish(&mut established);
        st.put(KEY, established, EventType::Modified);
        rebuild_registry(st);
    }

    fn after_update(&self, st: &mut State) {
        rebuild_registry(st);
    }

    /// The CRD finalizer deletes every custom resource first (`customresourcecleanup`).
    fn after_remove(&self, st: &mut State, gone: &Stored) {
        for t in registry::from_crd(&gone.value) {
            st.remove_all(&t.storage_key());
        }
        rebuild_registry(st);
    }
}

/// Validation beyond names: CRD structure.
fn validate(obj: &Value) -> Vec<FieldError> {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let spec = &obj["spec"];
    let mut errs = Vec::new();
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    }
    if plural.is_empty() {
        errs.push(FieldError::required("spec.names.plural", ""));
    }
    if spec["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
    {
        errs.push(FieldError::required("spec.names.kind", ""));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            &format!("{name:?}"),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if !matches!(spec["scope"].as_str(), Some("Namespaced" | "Cluster")) {
        errs.push(FieldError {
            reason: "FieldValueNotSupported",
            field: "spec.scope".into(),
            message: format!(
                "Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"",
                spec["scope"]
            ),
        });
    }
    let versions = spec["versions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if versions.is_empty() {
        errs.push(FieldError::invalid(
            "spec.versions",
            "null",
            "must have exactly one version marked as storage version",
        ));
    } else if versions
        .iter()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .count()
        != 1
    {
        errs.push(FieldError::invalid(
            "spec.versions",
            "[...]",
            "must have exactly one version marked as storage version",
        ));
    }
    errs
}

/// A new CRD as its strategy stores it (`customResourceDefinitionStrategy.PrepareForCreate`
/// and the v1 defaults): no conversion is `None`, its status holds only the stored
/// version, no condition and no accepted name yet.
fn prepare(obj: &mut Value) {
    if obj["spec"]["conversion"].is_null() {
        obj["spec"]["conversion"] = json!({"strategy": "None"});
    }
    let storage = storage_versions(obj);
    obj["status"] = json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": storage});
}

/// The version its objects are stored in (`storage: true`), as `storedVersions` lists it.
fn storage_versions(obj: &Value) -> Vec<Value> {
    obj["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .map(|v| v["name"].clone())
        .collect()
}

/// CRD status as the apiextensions controllers settle it: names accepted, established.
fn establish(obj: &mut Value) {
    let now = meta::now_rfc3339();
    let names = obj["spec"]["names"].clone();
    let kind = names["kind"].as_str().unwrap_or_default().to_string();
    let mut accepted = names.clone();
    if accepted["singular"].is_null() {
        accepted["singular"] = kind.to_ascii_lowercase().into();
    }
    if accepted["listKind"].is_null() {
        accepted["listKind"] = format!("{kind}List").into();
    }
    obj["spec"]["names"] = accepted.clone();
    let storage = storage_versions(obj);
    obj["status"] = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
        ],
        "acceptedNames": accepted,
        "storedVersions": storage,
    });
}

/// Serve the built-ins and every stored CRD's versions.
fn rebuild_registry(st: &mut State) {
    let crds: Vec<Value> = st.iter(KEY, None).map(|c| c.value.clone()).collect();
    st.serve(Registry::new(&crds));
}
