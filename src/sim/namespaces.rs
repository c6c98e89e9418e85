//! Namespaces' lifecycle, as kube-apiserver and the controllers every cluster runs have
//! it: the namespaces a cluster starts with (and the `kubernetes` Service); admission
//! refusing content in a namespace that is missing or terminating; the `default`
//! service account and `kube-root-ca.crt` in each new one; and a terminating one
//! emptied, then removed once its finalizers are gone.

use std::sync::Arc;

use serde_json::json;

use super::Sim;
use super::registry::ResourceType;
use super::store::{State, Stored};
use super::write;
use crate::status::{self, ApiError};

/// Where namespaces are stored.
pub const KEY: &str = "/namespaces";

/// Namespace admission: the namespace must exist and not be terminating
/// (`plugin/pkg/admission/namespace/lifecycle`).
pub fn check(st: &State, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError> {
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

/// What the service-account and root-CA-publisher controllers put in every namespace.
pub fn populate(st: &mut State, ns: &str) {
    let kcm = write::Writer {
        manager: "kube-controller-manager".into(),
        dry_run: false,
        operation: "Update",
        applied: None,
        internal: false,
    };
    let reg = st.registry.clone();
    if let Some(sa) = reg.find("", "v1", "serviceaccounts") {
        let _ = write::create_in(
            st,
            sa,
            Some(ns),
            json!({"metadata": {"name": "default"}}),
            &kcm,
        );
    }
    let ca = st.root_ca.clone();
    if let Some(cm) = reg.find("", "v1", "configmaps") {
        let _ = write::create_in(
            st,
            cm,
            Some(ns),
            json!({"metadata": {"name": "kube-root-ca.crt", "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                "data": {"ca.crt": ca}}),
            &kcm,
        );
    }
}

/// Create the namespaces every cluster starts with.
pub fn bootstrap(sim: &Sim) {
    let mut st = sim.lock();
    st.root_ca = sim.certs.ca_cert_pem.clone();
    let reg = st.registry.clone();
    let Some(ns_rt) = reg.find("", "v1", "namespaces") else {
        return;
    };
    let w = write::Writer {
        manager: "kube-apiserver".into(),
        dry_run: false,
        operation: "Update",
        applied: None,
        internal: false,
    };
    for ns in ["default", "kube-node-lease", "kube-public", "kube-system"] {
        let _ = write::create_in(&mut st, ns_rt, None, json!({"metadata": {"name": ns}}), &w);
    }
    // The apiserver's own Service, at the range's first address.
    if let Some(svc) = reg.find("", "v1", "services") {
        let ip = super::services::KUBERNETES_IP.to_string();
        let kubernetes = json!({"metadata": {"name": "kubernetes",
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": ip, "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}});
        let _ = write::create_in(&mut st, svc, Some("default"), kubernetes, &w);
    }
    // No history is started anew here: a 1.37 apiserver's watch caches start from the
    // empty etcd, before its bootstrap objects, so a watch of a built-in resource from
    // `resourceVersion=1` replays them all (1.33's started after them: 410).
}

/// The namespace controller: delete everything in a terminating namespace.
pub fn empty(st: &mut State, ns: &str) {
    let reg = st.registry.clone();
    let mut seen = std::collections::HashSet::new();
    for rt in reg
        .all()
        .iter()
        .filter(|t| t.namespaced && !t.virtual_create)
    {
        if !seen.insert(rt.storage_key()) {
            continue;
        }
        let objs: Vec<Arc<Stored>> = st.iter(&rt.storage_key(), Some(ns)).cloned().collect();
        for o in objs {
            super::delete::delete_object(st, rt, &o, false);
        }
    }
    try_finalize(st, ns);
}

/// Remove a terminating namespace once nothing is left in it.
pub fn try_finalize(st: &mut State, ns: &str) {
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
