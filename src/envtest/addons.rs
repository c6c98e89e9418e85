//! What `--with` adds to a control plane: kube-controller-manager (the built-in
//! controllers: Deployments make ReplicaSets make Pods, namespaces are emptied, service
//! accounts and tokens appear), kube-scheduler (pods get a node), and kwok with one fake
//! node (its pods become Running, as under a kubelet).
//!
//! They talk to the apiserver directly, not through the proxy: they are the cluster the
//! controller under test runs in, not what is tested. Each is waited for by what it does
//! — the `default` service account appears, the fake node turns Ready — rather than by a
//! health port, so a started run finds the cluster as a real one would be.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::Api;

use super::assets::Assets;
use super::component::Component;
use super::daemon::Daemon;
use super::pki::{self, Pki};

/// The fake node kwok keeps Ready.
pub const NODE: &str = "kwok-node-0";

/// Start `component` against the apiserver at `url`.
pub fn spawn(
    component: Component,
    assets: &Assets,
    pki: &Pki,
    url: &str,
    dir: &Path,
) -> Result<Daemon> {
    let file = |f: &str| pki.path(f).display().to_string();
    let (name, args): (&'static str, Vec<String>) = match component {
        Component::ControllerManager => {
            let kc = pki.kubeconfig(
                "kube-controller-manager.kubeconfig",
                url,
                "system:kube-controller-manager",
                None,
            )?;
            (
                "kube-controller-manager",
                vec![
                    format!("--kubeconfig={}", kc.display()),
                    "--leader-elect=false".into(),
                    // No serving port: nothing here scrapes it, and two trials' managers
                    // would race for one.
                    "--secure-port=0".into(),
                    // As kubeadm: each controller under its own service account, so what
                    // a controller may do is what RBAC's bootstrap policy grants it.
                    "--use-service-account-credentials=true".into(),
                    format!("--root-ca-file={}", file(pki::CA_CERT)),
                    format!("--service-account-private-key-file={}", file(pki::SA_KEY)),
                    format!("--cluster-signing-cert-file={}", file(pki::CA_CERT)),
                    format!("--cluster-signing-key-file={}", file(pki::CA_KEY)),
                    "--service-cluster-ip-range=10.0.0.0/24".into(),
                ],
            )
        }
        Component::Scheduler => {
            let kc = pki.kubeconfig(
                "kube-scheduler.kubeconfig",
                url,
                "system:kube-scheduler",
                None,
            )?;
            (
                "kube-scheduler",
                vec![
                    format!("--kubeconfig={}", kc.display()),
                    "--leader-elect=false".into(),
                    "--secure-port=0".into(),
                ],
            )
        }
        Component::Kwok => (
            "kwok",
            vec![
                format!("--kubeconfig={}", file(pki::ADMIN_KUBECONFIG)),
                format!("--config={}", kwok_stages(dir)?.display()),
                "--manage-all-nodes=false".into(),
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".into(),
                "--cidr=10.0.1.0/24".into(),
                "--node-ip=10.0.1.1".into(),
                "--node-lease-duration-seconds=40".into(),
            ],
        ),
    };
    Daemon::spawn(name, &assets.binary(name)?, &args, dir)
}

/// kwok's pod stages (`kwok-stages.yaml`), written beside the control plane's files.
fn kwok_stages(dir: &Path) -> Result<std::path::PathBuf> {
    let path = dir.join("kwok-stages.yaml");
    std::fs::write(&path, include_str!("kwok-stages.yaml"))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Until `component` has shown it works, or `timeout`; `alive` is asked as it waits
/// whether the control plane's processes still run.
pub async fn wait_working(
    component: Component,
    client: &kube::Client,
    timeout: Duration,
    alive: &mut (dyn FnMut() -> Result<()> + Send),
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    if component == Component::Kwok {
        create_node(client).await?;
    }
    loop {
        alive()?;
        let done = match component {
            // The service-account controller's first act.
            Component::ControllerManager => {
                Api::<ServiceAccount>::namespaced(client.clone(), "default")
                    .get_opt("default")
                    .await
                    .is_ok_and(|sa| sa.is_some())
            }
            // Nothing to see until a pod comes; its informers are up within a second.
            Component::Scheduler => true,
            Component::Kwok => match Api::<Node>::all(client.clone()).get_opt(NODE).await {
                Ok(Some(n)) if node_ready(&n) => {
                    untaint(client, &n).await?;
                    true
                }
                _ => false,
            },
        };
        if done {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "{} did not start working within {}s",
                component.binary(),
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn node_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The taint the apiserver gives a new node (`node.kubernetes.io/not-ready`) is taken
/// off by kube-controller-manager's node lifecycle controller once the node is Ready;
/// with kwok alone nothing would, and no pod would ever be scheduled: do its part.
async fn untaint(client: &kube::Client, n: &Node) -> Result<()> {
    let taints = n.spec.as_ref().and_then(|s| s.taints.as_ref());
    let Some(taints) = taints else { return Ok(()) };
    let keep: Vec<_> = taints
        .iter()
        .filter(|t| t.key != "node.kubernetes.io/not-ready")
        .collect();
    if keep.len() == taints.len() {
        return Ok(());
    }
    let patch = serde_json::json!({"spec": {"taints": keep}});
    Api::<Node>::all(client.clone())
        .patch(
            NODE,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .context("taking the not-ready taint off the fake node")?;
    Ok(())
}

/// The fake node: kwok manages nodes with its annotation and keeps them Ready; no taint,
/// so any pod may land on it.
async fn create_node(client: &kube::Client) -> Result<()> {
    let node: Node = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": NODE,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        },
    }))
    .context("the fake node's manifest")?;
    Api::<Node>::all(client.clone())
        .create(&Default::default(), &node)
        .await
        .context("creating kwok's fake node")?;
    Ok(())
}
