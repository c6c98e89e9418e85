//! Defaulting shared by the kinds (`kinds/`): what kube-apiserver's defaulting functions
//! (`pkg/apis/*/v1/defaults.go`) fill in on every write of a built-in object, here the
//! helpers and the pod spec's defaults that every kind with a pod template shares.
//! Controllers read these fields — client-go does not default what it decodes, and the
//! Deployment controller, for one, does nothing with a Deployment whose
//! `spec.strategy.type` is empty — so the simulator sets them as the real apiserver does,
//! checked field for field against it by `e2e/sim_differential.rs` (the values are the
//! ones v1.33 writes).

use serde_json::{Map, Value, json};

/// Set `m[key]` to `v` unless it is there already (and not null).
pub(crate) fn default(m: &mut Value, key: &str, v: Value) {
    if let Some(o) = m.as_object_mut() {
        match o.get(key) {
            Some(x) if !x.is_null() => {}
            _ => {
                o.insert(key.to_string(), v);
            }
        }
    }
}

/// The items of the array at `m[key]`, if there is one (never creating the key:
/// indexing a `Value` mutably would insert a `null`).
pub(crate) fn items<'a>(m: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    m.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// The object at `m[key]`, created empty if missing.
pub(crate) fn object<'a>(m: &'a mut Value, key: &str) -> &'a mut Value {
    if !m[key].is_object() {
        m[key] = Value::Object(Map::new());
    }
    &mut m[key]
}

/// A pod template: what a pod made from it would get (`SetDefaults_PodSpec` and the
/// container defaults). Its zero `metadata.creationTimestamp` is left out (`omitzero`
/// since apimachinery 0.35; 1.33 wrote `null`).
pub(crate) fn template(t: &mut Value) {
    // ObjectMeta is a struct: always shown, if only as `{}`.
    object(t, "metadata");
    pod_spec(object(t, "spec"));
}

/// `SetDefaults_PodSpec` and what it reaches: containers, volumes.
pub(crate) fn pod_spec(spec: &mut Value) {
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "securityContext", json!({}));
    default(spec, "schedulerName", json!("default-scheduler"));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        items(spec, list).for_each(container);
    }
    items(spec, "volumes").for_each(volume);
}

fn container(c: &mut Value) {
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default(c, "terminationMessagePolicy", json!("File"));
    default(c, "resources", json!({}));
    let image = c["image"].as_str().unwrap_or_default();
    default(c, "imagePullPolicy", json!(pull_policy(image)));
    for p in items(c, "ports") {
        default(p, "protocol", json!("TCP"));
    }
    for e in items(c, "env") {
        if let Some(field_ref) = e
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("fieldRef"))
            .filter(|f| f.is_object())
        {
            default(field_ref, "apiVersion", json!("v1"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).filter(|p| p.is_object()) {
            default(p, "timeoutSeconds", json!(1));
            default(p, "periodSeconds", json!(10));
            default(p, "successThreshold", json!(1));
            default(p, "failureThreshold", json!(3));
            if let Some(h) = p.get_mut("httpGet").filter(|h| h.is_object()) {
                default(h, "path", json!("/"));
                default(h, "scheme", json!("HTTP"));
            }
        }
    }
}

/// `Always` for `:latest` or no tag, `IfNotPresent` for a tag or a digest.
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn volume(v: &mut Value) {
    for source in ["configMap", "secret", "projected", "downwardAPI"] {
        if let Some(s) = v.get_mut(source).filter(|s| s.is_object()) {
            default(s, "defaultMode", json!(420));
        }
    }
    if let Some(h) = v.get_mut("hostPath").filter(|h| h.is_object()) {
        default(h, "type", json!(""));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policies() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("registry:5000/nginx"), "Always");
        assert_eq!(pull_policy("registry:5000/nginx:1.2"), "IfNotPresent");
        assert_eq!(pull_policy("nginx@sha256:abc"), "IfNotPresent");
    }
}
