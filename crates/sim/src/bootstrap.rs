//! What a cluster starts with: the namespaces every cluster has, and in `default` the
//! apiserver's own `kubernetes` Service at the service range's first address (the
//! apiserver's bootstrap controllers). Created through the generic writes, as
//! `kube-apiserver`.

use serde_json::json;

use super::kinds::{self, services};
use super::store::State;
use super::write;

/// Create what every cluster starts with in `st`, whose root CA (published in every
/// namespace as `kube-root-ca.crt`) is `root_ca`.
pub(crate) fn cluster(st: &mut State, root_ca: &str) {
    st.root_ca = root_ca.to_string();
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
        let _ = write::create_in(
            st,
            kinds::strategy,
            ns_rt,
            None,
            json!({"metadata": {"name": ns}}),
            &w,
        );
    }
    // The apiserver's own Service, at the range's first address.
    if let Some(svc) = reg.find("", "v1", "services") {
        let ip = services::KUBERNETES_IP.to_string();
        let kubernetes = json!({"metadata": {"name": "kubernetes",
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": ip, "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}});
        let _ = write::create_in(st, kinds::strategy, svc, Some("default"), kubernetes, &w);
    }
    // No history is started anew here: a 1.37 apiserver's watch caches start from the
    // empty etcd, before its bootstrap objects, so a watch of a built-in resource from
    // `resourceVersion=1` replays them all (1.33's started after them: 410).
}
