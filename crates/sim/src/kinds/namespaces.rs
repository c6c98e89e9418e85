//! Namespaces: a new one is labelled with its name, defaulted to the `kubernetes`
//! finalizer and `Active`, and filled by the service-account and root-CA-publisher
//! controllers (its `default` service account, `kube-root-ca.crt`); a deleted one turns
//! `Terminating` (no grace period: namespaces are finalized, not gracefully deleted) and
//! is emptied by the namespace controller, then removed once nothing is left
//! (`namespace_lifecycle.rs`). Its name is a DNS label.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::namespace_lifecycle::{self, KEY};
use crate::store::{State, Stored};
use crate::strategy::{Strategies, Strategy};
use crate::{delete, meta, write};

pub(crate) struct Namespaces;

impl Strategy for Namespaces {
    fn name_problem(&self, name: &str) -> Option<String> {
        meta::name_problem(name, true)
    }

    /// Set before field management sees the object, so that the writer owns it
    /// (`fixtures/.../ns-create.body`).
    fn prepare_for_create(&self, obj: &mut Value) {
        let name = obj["metadata"]["name"].clone();
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    }

    fn defaults(&self, obj: &mut Value, create: bool) {
        if create {
            obj["spec"]["finalizers"] = json!(["kubernetes"]);
            obj["status"] = json!({"phase": "Active"});
        }
    }

    fn after_create(&self, st: &mut State, kinds: Strategies, created: &Stored) {
        populate(st, kinds, created.name());
    }

    /// `spec.finalizers` hold a namespace too (the namespace controller's `kubernetes`).
    fn has_finalizers(&self, obj: &Value) -> bool {
        let nonempty = |v: &Value| v.as_array().is_some_and(|a| !a.is_empty());
        nonempty(&obj["metadata"]["finalizers"]) || nonempty(&obj["spec"]["finalizers"])
    }

    /// No grace period (`fixtures/.../ns-delete.body`).
    fn prepare_for_delete(&self, obj: &mut Value) {
        obj["status"]["phase"] = "Terminating".into();
    }

    fn after_delete_marked(
        &self,
        st: &mut State,
        kinds: Strategies,
        marked: Arc<Stored>,
    ) -> Arc<Stored> {
        empty(st, kinds, marked.name());
        st.get(KEY, "", marked.name()).cloned().unwrap_or(marked)
    }
}

/// What the service-account and root-CA-publisher controllers put in every namespace.
fn populate(st: &mut State, kinds: Strategies, ns: &str) {
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
            kinds,
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
            kinds,
            cm,
            Some(ns),
            json!({"metadata": {"name": "kube-root-ca.crt", "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                "data": {"ca.crt": ca}}),
            &kcm,
        );
    }
}

/// The namespace controller: delete everything in a terminating namespace.
fn empty(st: &mut State, kinds: Strategies, ns: &str) {
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
            delete::delete_object(st, kinds, rt, &o, false);
        }
    }
    namespace_lifecycle::try_finalize(st, ns);
}
