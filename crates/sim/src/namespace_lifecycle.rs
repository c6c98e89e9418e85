//! The namespace lifecycle every namespaced object goes through, whatever its kind: its
//! namespace must exist and not be terminating for it to be created (the
//! NamespaceLifecycle admission plugin), and a terminating namespace is removed once the
//! last object in it is (the namespace controller). What a Namespace itself does is in
//! `kinds/namespaces.rs`.

use super::resource_type::ResourceType;
use super::store::State;
use stalemate_wire::k8s::status::{self, ApiError};

/// Where namespaces are stored.
pub(crate) const KEY: &str = "/namespaces";

/// Namespace admission: the namespace must exist and not be terminating
/// (`plugin/pkg/admission/namespace/lifecycle`).
pub(crate) fn admit(st: &State, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError> {
    if !rt.namespaced {
        return Ok(());
    }
    let ns_gr = status::GroupResource {
        group: "",
        resource: "namespaces",
    };
    match st.get(KEY, "", ns) {
        None => Err(ApiError::not_found(ns_gr, ns)),
        Some(n) if n.value["metadata"].get("deletionTimestamp").is_some() => {
            Err(ApiError::forbidden(
                rt.group_resource(),
                name,
                &format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            ))
        }
        Some(_) => Ok(()),
    }
}

/// Remove a terminating namespace once nothing is left in it.
pub(crate) fn try_finalize(st: &mut State, ns: &str) {
    let Some(n) = st.get(KEY, "", ns).cloned() else {
        return;
    };
    if n.value["metadata"].get("deletionTimestamp").is_none() {
        return;
    }
    let reg = st.registry.clone();
    let empty = reg
        .all()
        .iter()
        .filter(|t| t.namespaced)
        .all(|t| st.iter(&t.storage_key(), Some(ns)).next().is_none());
    if !empty {
        return;
    }
    if n.value["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
    {
        return;
    }
    st.remove(KEY, &n.key());
}
