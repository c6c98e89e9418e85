//! Pods: what kube-apiserver does for them beyond storing them —
//!
//! - **defaults** — `SetDefaults_Pod` (the pod spec, `enableServiceLinks`, requests from
//!   limits) and on create the strategy's status: `Pending`, and the QoS class;
//! - **admission on create** — ServiceAccount (the pod runs as `default` unless it names
//!   one, which must exist; its token, the cluster CA and the namespace are mounted at
//!   `/var/run/secrets/kubernetes.io/serviceaccount` unless automounting is off),
//!   DefaultTolerationSeconds (300 s on `not-ready` and `unreachable`), Priority (0 and
//!   `PreemptLowerPriority` without a class);
//! - **validation** — containers required; an update may change little but images;
//! - **status writes** keep the owner references and the QoS class;
//! - **delete** — graceful, with no kubelet to wait for: marked, then gone at once.
//!
//! Binding and eviction, the pods' subresources, are answered in `verbs/pods.rs`.

use serde_json::{Value, json};

use crate::defaults::{default, items, object, pod_spec};
use crate::meta;
use crate::store::State;
use crate::strategy::Strategy;
use crate::validate::required;
use stalemate_wire::k8s::status::{self, ApiError, FieldError};

pub(crate) struct Pods;

impl Strategy for Pods {
    fn defaults(&self, obj: &mut Value, create: bool) {
        pod(obj, create);
    }

    fn admit(&self, st: &State, ns: &str, obj: &mut Value) -> Result<(), ApiError> {
        admit(st, ns, obj)
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if obj["spec"]["containers"]
            .as_array()
            .is_none_or(|c| c.is_empty())
        {
            errs.push(required("spec.containers"));
        }
        errs
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_create(new);
        if spec_but_mutable(old) != spec_but_mutable(new) {
            errs.push(FieldError::forbidden(
                "spec",
                "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
            ));
        }
        errs
    }

    /// podStatusStrategy: the owner references are not the status writer's; the QoS class
    /// is set at creation, and a status write without one (old kubelets dropped it)
    /// keeps it.
    fn prepare_for_status_update(&self, old: &Value, new: &mut Value) {
        meta::keep_old(old, new, "ownerReferences");
        let qos = &old["status"]["qosClass"];
        if !qos.is_null() {
            let status = &mut new["status"];
            if status["qosClass"].as_str().is_none_or(str::is_empty) {
                status["qosClass"] = qos.clone();
            }
        }
    }

    /// `podStrategy.CheckGracefulDelete`, with a grace period of 0: there is no kubelet.
    fn deleted_gracefully(&self) -> bool {
        true
    }
}

/// A pod's spec without what an update may change: images, the deadline, tolerations
/// (added) and the grace period.
fn spec_but_mutable(v: &Value) -> Value {
    let mut s = v["spec"].clone();
    for list in ["containers", "initContainers"] {
        if let Some(cs) = s.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                c.shift_remove("image");
            }
        }
    }
    if let Some(m) = s.as_object_mut() {
        for k in [
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
        ] {
            m.shift_remove(k);
        }
    }
    s
}

/// `SetDefaults_Pod` (the spec, `enableServiceLinks`, requests from limits) and, on
/// create, the strategy's status: Pending, and the QoS class the resources give.
fn pod(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    pod_spec(spec);
    default(spec, "enableServiceLinks", json!(true));
    for c in items(spec, "containers") {
        if let Some(limits) = c["resources"]["limits"].as_object().cloned() {
            let requests = object(object(c, "resources"), "requests");
            for (k, v) in limits {
                default(requests, &k, v);
            }
        }
    }
    if create {
        let qos = qos_class(&obj["spec"]);
        obj["status"] = json!({"phase": "Pending", "qosClass": qos});
    }
    // Go writes a condition's zero times as null.
    if let Some(status) = obj.get_mut("status") {
        for c in items(status, "conditions") {
            default(c, "lastProbeTime", Value::Null);
            default(c, "lastTransitionTime", Value::Null);
        }
    }
}

/// `qos.GetPodQOS`: Guaranteed when every container's cpu and memory requests equal
/// its limits, BestEffort when none has any, Burstable otherwise.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|l| spec[*l].as_array().into_iter().flatten())
        .collect();
    let any = containers.iter().any(|c| {
        ["requests", "limits"].iter().any(|k| {
            c["resources"][*k]
                .as_object()
                .is_some_and(|m| m.contains_key("cpu") || m.contains_key("memory"))
        })
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        ["cpu", "memory"].iter().all(|r| {
            let l = &c["resources"]["limits"][*r];
            !l.is_null() && *l == c["resources"]["requests"][*r]
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

const SA_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The admission plugins that change a new pod (in the order kube-apiserver runs them).
fn admit(st: &State, ns: &str, pod: &mut Value) -> Result<(), ApiError> {
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
        return Err(forbidden(
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
                return Err(forbidden(
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

/// A pod create refused by an admission plugin (403, as the apiserver says it).
fn forbidden(name: &str, why: &str) -> ApiError {
    let pods = status::GroupResource {
        group: "",
        resource: "pods",
    };
    ApiError::forbidden(pods, name, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_classes() {
        let spec = |r: Value| json!({"containers": [{"resources": r}]});
        assert_eq!(qos_class(&spec(json!({}))), "BestEffort");
        let g = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}});
        assert_eq!(qos_class(&spec(g)), "Guaranteed");
        assert_eq!(
            qos_class(&spec(json!({"requests": {"cpu": "1"}}))),
            "Burstable"
        );
    }
}
