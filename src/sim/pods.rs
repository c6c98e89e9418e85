//! What kube-apiserver does for pods beyond storing them:
//!
//! - **admission on create** — ServiceAccount (the pod runs as `default` unless it names
//!   one, which must exist; its token, the cluster CA and the namespace are mounted at
//!   `/var/run/secrets/kubernetes.io/serviceaccount` unless automounting is off),
//!   DefaultTolerationSeconds (300 s on `not-ready` and `unreachable`), Priority (0 and
//!   `PreemptLowerPriority` without a class);
//! - **`pods/binding`** and the `bindings` resource — what kube-scheduler posts: the pod
//!   assigned to a node (`spec.nodeName`), once;
//! - **`pods/eviction`** — the pod deleted (PodDisruptionBudgets are not consulted).
//!
//! A pod is deleted at once when asked (there is no kubelet to wait for).

use serde_json::{Value, json};

use super::http::Ctx;
use super::meta::Scope;
use super::store::State;
use super::write;
use crate::status::{self, ApiError};

const SA_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The admission plugins that change a new pod (in the order kube-apiserver runs them).
pub fn admit(st: &State, ns: &str, pod: &mut Value) -> Result<(), ApiError> {
    service_account(st, ns, pod)?;
    tolerations(pod);
    priority(st, pod)
}

fn service_account(st: &State, ns: &str, pod: &mut Value) -> Result<(), ApiError> {
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let spec = &mut pod["spec"];
    let sa_name = match spec["serviceAccountName"]
        .as_str()
        .filter(|s| !s.is_empty())
    {
        Some(s) => s.to_string(),
        None => spec["serviceAccount"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
            .to_string(),
    };
    spec["serviceAccountName"] = sa_name.clone().into();
    spec["serviceAccount"] = sa_name.clone().into();
    let Some(sa) = st.get("/serviceaccounts", ns, &sa_name) else {
        let pods = status::GroupResource {
            group: "",
            resource: "pods",
        };
        return Err(ApiError::forbidden(
            pods,
            &name,
            &format!(
                "error looking up service account {ns}/{sa_name}: serviceaccount \"{sa_name}\" not found"
            ),
        ));
    };
    let automount = spec["automountServiceAccountToken"]
        .as_bool()
        .or(sa.value["automountServiceAccountToken"].as_bool())
        .unwrap_or(true);
    let mounted = ["initContainers", "containers"].iter().any(|l| {
        spec[*l].as_array().into_iter().flatten().any(|c| {
            c["volumeMounts"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["mountPath"] == SA_MOUNT)
        })
    });
    if !automount || mounted {
        return Ok(());
    }
    let volume = format!("kube-api-access-{}", random_suffix());
    let mount = json!({"name": volume, "readOnly": true, "mountPath": SA_MOUNT});
    for list in ["initContainers", "containers"] {
        if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs {
                match c.get_mut("volumeMounts").and_then(Value::as_array_mut) {
                    Some(ms) => ms.push(mount.clone()),
                    None => c["volumeMounts"] = json!([mount]),
                }
            }
        }
    }
    let projected = json!({"name": volume, "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
    ], "defaultMode": 420}});
    match spec.get_mut("volumes").and_then(Value::as_array_mut) {
        Some(vs) => vs.push(projected),
        None => spec["volumes"] = json!([projected]),
    }
    Ok(())
}

/// Five characters of the alphabet `utilrand.String` draws from.
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    use rand::Rng;
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// DefaultTolerationSeconds: 300 s on `node.kubernetes.io/not-ready` and
/// `unreachable` (NoExecute), unless the pod tolerates them already.
fn tolerations(pod: &mut Value) {
    let spec = &mut pod["spec"];
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let has = spec["tolerations"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| {
                (t["key"] == key || (t["key"].is_null() && t["operator"] == "Exists"))
                    && (t["effect"] == "NoExecute" || t["effect"].is_null())
            });
        if has {
            continue;
        }
        let t = json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300});
        match spec.get_mut("tolerations").and_then(Value::as_array_mut) {
            Some(ts) => ts.push(t),
            None => spec["tolerations"] = json!([t]),
        }
    }
}

/// Priority admission: the class's value (the two system classes are built in), or 0.
fn priority(st: &State, pod: &mut Value) -> Result<(), ApiError> {
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let spec = &mut pod["spec"];
    let (value, policy) = match spec["priorityClassName"].as_str().unwrap_or_default() {
        "" => (0, "PreemptLowerPriority".to_string()),
        "system-node-critical" => (2_000_001_000, "PreemptLowerPriority".into()),
        "system-cluster-critical" => (2_000_000_000, "PreemptLowerPriority".into()),
        class => match st.get("scheduling.k8s.io/priorityclasses", "", class) {
            Some(pc) => (
                pc.value["value"].as_i64().unwrap_or(0),
                pc.value["preemptionPolicy"]
                    .as_str()
                    .unwrap_or("PreemptLowerPriority")
                    .to_string(),
            ),
            None => {
                let pods = status::GroupResource {
                    group: "",
                    resource: "pods",
                };
                return Err(ApiError::forbidden(
                    pods,
                    &name,
                    &format!("no PriorityClass with name {class} was found"),
                ));
            }
        },
    };
    if spec["priority"].is_null() {
        spec["priority"] = value.into();
    }
    if spec["preemptionPolicy"].is_null() {
        spec["preemptionPolicy"] = policy.into();
    }
    Ok(())
}

fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

/// `POST pods/NAME/binding` (or `POST bindings` naming the pod): `spec.nodeName` set to
/// the target node's name, once — a second binding is a 409, as on a real apiserver.
pub fn bind(ctx: &Ctx, body: &[u8]) -> Result<Value, ApiError> {
    let binding = write::decode_body(body)?;
    let pod_name = match &ctx.req.name {
        Some(n) => n.clone(),
        None => binding["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    let node = binding["target"]["name"].as_str().unwrap_or_default();
    if node.is_empty() {
        return Err(ApiError::new(
            422,
            "Invalid",
            format!("Binding \"{pod_name}\" is invalid: target.name: Required value"),
        ));
    }
    let mut w = write::writer(ctx, "Update", None)?;
    w.internal = true;
    let ns = ctx.req.namespace.clone().unwrap_or_default();
    let mut st = ctx.sim.lock();
    let reg = st.registry.clone();
    let Some(pods) = reg.find("", "v1", "pods") else {
        return Err(ApiError::page_not_found());
    };
    let pods_gr = pods.group_resource();
    let old = st
        .get("/pods", &ns, &pod_name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(pods_gr, &pod_name))?;
    if let Some(on) = old.value["spec"]["nodeName"]
        .as_str()
        .filter(|n| !n.is_empty())
    {
        return Err(ApiError::conflict(
            pods_gr,
            &pod_name,
            &format!("pod {pod_name} is already assigned to node \"{on}\""),
        ));
    }
    let mut pod = old.value.clone();
    pod["spec"]["nodeName"] = node.into();
    let scope = Scope::Main {
        status_subresource: true,
    };
    write::commit(&mut st, pods, &old, pod, scope, &w)?;
    Ok(success(201))
}

/// `POST pods/NAME/eviction`: the pod deleted.
pub fn evict(ctx: &Ctx) -> Result<Value, ApiError> {
    super::delete::delete(ctx, b"")?;
    Ok(success(201))
}
