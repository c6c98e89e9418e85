//! Explore's control planes put back between trials (`--envtest`, no `--with`): what a
//! trial left — a namespace, objects held by finalizers, a custom resource, a definition
//! of its own, a cluster-scoped object, a pod bound to a node nobody runs — is gone when
//! the next trial gets the same control plane, and the setup's definitions are still
//! served; a trial that wrote to what the control plane held when ready spoils it, and the
//! next trial gets a new one, the old one stopped. On the real apiserver of the default
//! pinned version.

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::envtest::{assets, processes_mentioning};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::json;
use stalemate::session::upstream::{Choice, Started};

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

fn widgets() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

/// The kubeconfig a started control plane gives the proxy.
fn kubeconfig(s: &dyn Started) -> PathBuf {
    match s.source() {
        stalemate::upstream::Source::Kubeconfig {
            path: Some(path), ..
        } => path,
        other => panic!("an envtest control plane is reached by a kubeconfig, not {other:?}"),
    }
}

async fn client(s: &dyn Started) -> kube::Client {
    stalemate::k8s::kubeconfig::client(&kubeconfig(s), None)
        .await
        .expect("a client for the control plane")
}

async fn namespaces(c: &kube::Client) -> BTreeSet<String> {
    Api::<Namespace>::all(c.clone())
        .list(&ListParams::default())
        .await
        .expect("list namespaces")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect()
}

/// What a trial might leave: each kind of thing a put back has to take away.
async fn leave_behind(c: &kube::Client) {
    let pp = PostParams::default();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "trial"}})).unwrap();
    Api::<Namespace>::all(c.clone())
        .create(&pp, &ns)
        .await
        .unwrap();
    let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    let cm: ConfigMap = serde_json::from_value(held.clone()).unwrap();
    Api::<ConfigMap>::namespaced(c.clone(), "trial")
        .create(&pp, &cm)
        .await
        .unwrap();
    let mut w: DynamicObject = serde_json::from_value(held).unwrap();
    w.types = Some(kube::api::TypeMeta {
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
    });
    Api::<DynamicObject>::namespaced_with(c.clone(), "trial", &widgets())
        .create(&pp, &w)
        .await
        .unwrap();
    let gadgets = WIDGETS
        .replace("widgets", "gadgets")
        .replace("Widget", "Gadget")
        .replace("widget", "gadget");
    let crd: CustomResourceDefinition = serde_saphyr::from_str(&gadgets).unwrap();
    Api::<CustomResourceDefinition>::all(c.clone())
        .create(&pp, &crd)
        .await
        .unwrap();
    let role: ClusterRole =
        serde_json::from_value(json!({"metadata": {"name": "trial-role"}})).unwrap();
    Api::<ClusterRole>::all(c.clone())
        .create(&pp, &role)
        .await
        .unwrap();
    // No kube-controller-manager makes it: the pod's admission needs it.
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    Api::<ServiceAccount>::namespaced(c.clone(), "default")
        .create(&pp, &sa)
        .await
        .unwrap();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "bound"},
        "spec": {"nodeName": "nowhere", "containers": [{"name": "c", "image": "x"}]}
    }))
    .unwrap();
    Api::<Pod>::namespaced(c.clone(), "default")
        .create(&pp, &pod)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_plane_is_put_back_between_trials_or_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let setup = stalemate::setup::parse(WIDGETS, "widgets.yaml").unwrap();
    let kind = Choice::Envtest {
        assets: Some(assets()),
        with: Default::default(),
    }
    .for_explore(1, &setup, false)
    .await
    .expect("control planes for explore");

    let first = kind.start(dir.path()).await.expect("a control plane");
    let c = client(&*first).await;
    let fresh = namespaces(&c).await;
    leave_behind(&c).await;
    let used = kubeconfig(&*first);
    first.stop().await;

    let second = kind
        .start(dir.path())
        .await
        .expect("the control plane put back");
    assert_eq!(kubeconfig(&*second), used, "{}", second.describe());
    assert!(
        second.describe().contains("put back after 1 run(s)"),
        "{}",
        second.describe()
    );
    let c = client(&*second).await;
    assert_eq!(namespaces(&c).await, fresh, "the trial's namespace is gone");
    let roles = Api::<ClusterRole>::all(c.clone());
    assert!(roles.get_opt("trial-role").await.unwrap().is_none());
    let pods = Api::<Pod>::namespaced(c.clone(), "default");
    assert!(pods.get_opt("bound").await.unwrap().is_none());
    let sas = Api::<ServiceAccount>::namespaced(c.clone(), "default");
    assert!(sas.get_opt("default").await.unwrap().is_none());
    let crds = Api::<CustomResourceDefinition>::all(c.clone());
    assert!(crds.get_opt("gadgets.example.com").await.unwrap().is_none());
    assert!(
        crds.get_opt("widgets.example.com").await.unwrap().is_some(),
        "the setup's definition is part of what it held when ready"
    );
    let ws = Api::<DynamicObject>::all_with(c.clone(), &widgets());
    assert!(
        ws.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // A trial that writes to what the control plane held when ready spoils it.
    let spoil = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
    Api::<Namespace>::all(c.clone())
        .patch("default", &PatchParams::default(), &spoil)
        .await
        .unwrap();
    let spoiled = kubeconfig(&*second);
    second.stop().await;

    let third = kind.start(dir.path()).await.expect("a new control plane");
    assert_ne!(kubeconfig(&*third), spoiled, "{}", third.describe());
    assert!(
        !third.describe().contains("put back"),
        "{}",
        third.describe()
    );
    let c = client(&*third).await;
    let default = Api::<Namespace>::all(c).get("default").await.unwrap();
    let labels = default.metadata.labels.unwrap_or_default();
    assert!(!labels.contains_key("touched"), "{labels:?}");
    let old = spoiled.parent().unwrap();
    assert_eq!(processes_mentioning(old), Vec::<String>::new());
    third.stop().await;
    kind.finish().await.unwrap();
}
