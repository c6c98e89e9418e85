//! Validation of built-in objects: the checks of kube-apiserver's validation
//! (`pkg/apis/*/validation`) that a controller's own writes run into — a workload's
//! selector against its template, the fields that are immutable once set, a pod's
//! containers, a Service's ports, a Secret's keys, a Role's verbs, the replica counts a
//! status may report. Each answers 422 `Invalid` with the causes (field and reason) the
//! real apiserver gives, checked against it by `e2e/sim_differential.rs`. Everything
//! else kube-apiserver validates is not checked here (docs/simulator.md,
//! "Not simulated").

use serde_json::Value;

use super::registry::ResourceType;
use crate::status::FieldError;

fn required(field: &str) -> FieldError {
    FieldError {
        reason: "FieldValueRequired",
        field: field.into(),
        message: "Required value".into(),
    }
}

/// Go's `%#v` of a `map[string]string`, as the messages quote label maps.
fn go_map(m: &Value) -> String {
    let entries: Vec<String> = m
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or_default()))
        .collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

fn is_workload(rt: &ResourceType) -> bool {
    rt.group == "apps"
        && matches!(
            rt.kind.as_str(),
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
        )
}

fn is(rt: &ResourceType, group: &str, kind: &str) -> bool {
    !rt.custom && rt.group == group && rt.kind == kind
}

/// What a new object breaks.
pub fn create(rt: &ResourceType, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if rt.custom {
        return errs;
    }
    if is_workload(rt) {
        selector_matches(obj, &mut errs);
    }
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Pod")
            if obj["spec"]["containers"]
                .as_array()
                .is_none_or(|c| c.is_empty()) =>
        {
            errs.push(required("spec.containers"));
        }
        ("", "Service") => {
            let headless = obj["spec"]["clusterIP"] == "None";
            let external = obj["spec"]["type"] == "ExternalName";
            if !headless
                && !external
                && obj["spec"]["ports"].as_array().is_none_or(|p| p.is_empty())
            {
                errs.push(required("spec.ports"));
            }
        }
        ("", "Secret") => {
            secret_keys(obj, &mut errs);
            secret_type_data(obj, &mut errs);
        }
        ("", "ConfigMap") => config_keys(obj, &mut errs),
        ("batch", "Job") => {
            let policy = &obj["spec"]["template"]["spec"]["restartPolicy"];
            if !matches!(policy.as_str(), Some("OnFailure" | "Never")) {
                errs.push(FieldError {
                    reason: "FieldValueRequired",
                    field: "spec.template.spec.restartPolicy".into(),
                    message: "Required value: valid values: \"OnFailure\", \"Never\"".into(),
                });
            }
        }
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => role_rules(obj, &mut errs),
        _ => {}
    }
    errs
}

/// What an update of the object itself (not its status) breaks: `create`'s checks, and
/// what may not change once set.
pub fn update(rt: &ResourceType, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = create(rt, new);
    if rt.custom {
        return errs;
    }
    let changed = |path: &[&str]| {
        let get = |v: &Value| path.iter().fold(v.clone(), |v, k| v[*k].clone());
        get(old) != get(new)
    };
    if is_workload(rt) && changed(&["spec", "selector"]) {
        errs.push(FieldError::invalid(
            "spec.selector",
            &new["spec"]["selector"].to_string(),
            "field is immutable",
        ));
    }
    if is(rt, "", "Pod") {
        // Only images, the deadline, tolerations (added) and the grace period may change.
        let strip = |v: &Value| {
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
        };
        if strip(old) != strip(new) {
            errs.push(FieldError::forbidden(
                "spec",
                "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
            ));
        }
    }
    if is(rt, "", "Service") {
        let (o, n) = (&old["spec"]["clusterIPs"], &new["spec"]["clusterIPs"]);
        if o.as_array().is_some_and(|a| !a.is_empty()) && n.get(0) != o.get(0) {
            errs.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                &n.to_string(),
                "may not change once set",
            ));
        }
    }
    if is(rt, "", "Secret") || is(rt, "", "ConfigMap") {
        if is(rt, "", "Secret") && changed(&["type"]) {
            errs.insert(
                0,
                FieldError::invalid("type", &new["type"].to_string(), "field is immutable"),
            );
        }
        if old["immutable"] == true {
            for field in ["data", "binaryData"] {
                if changed(&[field]) {
                    errs.push(FieldError::forbidden(
                        field,
                        "field is immutable when `immutable` is set",
                    ));
                }
            }
        }
    }
    if is(rt, "batch", "Job") && changed(&["spec", "template"]) {
        errs.extend(job_template_update(old, new));
    }
    let binding = is(rt, "rbac.authorization.k8s.io", "RoleBinding")
        || is(rt, "rbac.authorization.k8s.io", "ClusterRoleBinding");
    if binding && changed(&["roleRef"]) {
        errs.push(FieldError::invalid(
            "roleRef",
            &new["roleRef"].to_string(),
            "cannot change roleRef",
        ));
    }
    if is(rt, "", "PersistentVolumeClaim") && changed(&["spec"]) {
        // A claim that is not bound may change nothing of its spec.
        errs.push(FieldError::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    errs
}

/// What a status write breaks: the replica counts of a workload's status.
pub fn status(rt: &ResourceType, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !(is(rt, "apps", "Deployment") || is(rt, "apps", "ReplicaSet")) {
        return errs;
    }
    let s = &obj["status"];
    let n = |k: &str| s[k].as_i64().unwrap_or(0);
    for k in ["updatedReplicas", "readyReplicas", "availableReplicas"] {
        if n(k) > n("replicas") && s.get(k).is_some() {
            errs.push(FieldError::invalid(
                &format!("status.{k}"),
                &n(k).to_string(),
                "cannot be greater than status.replicas",
            ));
        }
    }
    if n("availableReplicas") > n("readyReplicas") {
        errs.push(FieldError::invalid(
            "status.availableReplicas",
            &n("availableReplicas").to_string(),
            "cannot be greater than readyReplicas",
        ));
    }
    errs
}

/// A workload's selector must select its template's labels (`ValidatePodTemplateSpecForReplicaSet`).
fn selector_matches(obj: &Value, errs: &mut Vec<FieldError>) {
    let sel = &obj["spec"]["selector"];
    let labels = &obj["spec"]["template"]["metadata"]["labels"];
    if sel.is_null() {
        errs.push(required("spec.selector"));
        return;
    }
    let selector = super::scale::selector(sel);
    let matches = super::selector::LabelSelector::parse(&selector)
        .map(|s| s.matches(labels))
        .unwrap_or(false);
    if !matches {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            &go_map(labels),
            "`selector` does not match template `labels`",
        ));
    }
}

/// `IsConfigMapKey`: alphanumerics, `-`, `_`, `.`.
fn bad_key(k: &str) -> bool {
    k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

const KEY_RULE: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

fn keys_of(obj: &Value, field: &str, errs: &mut Vec<FieldError>) {
    for k in obj[field].as_object().into_iter().flatten().map(|(k, _)| k) {
        if bad_key(k) {
            errs.push(FieldError::invalid(
                &format!("{field}[{k}]"),
                &format!("{k:?}"),
                KEY_RULE,
            ));
        }
    }
}

fn secret_keys(obj: &Value, errs: &mut Vec<FieldError>) {
    keys_of(obj, "data", errs);
}

fn config_keys(obj: &Value, errs: &mut Vec<FieldError>) {
    keys_of(obj, "data", errs);
    keys_of(obj, "binaryData", errs);
}

/// The keys a Secret's type requires (`ValidateSecret`).
fn secret_type_data(obj: &Value, errs: &mut Vec<FieldError>) {
    let required_keys: &[&str] = match obj["type"].as_str() {
        Some("kubernetes.io/tls") => &["tls.crt", "tls.key"],
        Some("kubernetes.io/dockerconfigjson") => &[".dockerconfigjson"],
        Some("kubernetes.io/dockercfg") => &[".dockercfg"],
        _ => &[],
    };
    for k in required_keys {
        if obj["data"].get(*k).is_none() {
            errs.push(required(&format!("data[{k}]")));
        }
    }
}

fn role_rules(obj: &Value, errs: &mut Vec<FieldError>) {
    for (i, r) in obj["rules"].as_array().into_iter().flatten().enumerate() {
        if r["verbs"].as_array().is_none_or(|v| v.is_empty()) {
            errs.push(FieldError {
                reason: "FieldValueRequired",
                field: format!("rules[{i}].verbs"),
                message: "Required value: verbs must contain at least one value".into(),
            });
        }
    }
}

/// A Job's pod template is immutable (`validatePodTemplateUpdate`), but for a suspended
/// Job that has not started (or says it is suspended) and has no active pods, whose
/// scheduling directives and container resources may change (1.36+:
/// MutableSchedulingDirectivesForSuspendedJobs, MutablePodResourcesForSuspendedJobs).
fn job_template_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let status = &old["status"];
    let suspended_condition = (status["conditions"].as_array().into_iter().flatten())
        .any(|c| c["type"] == "Suspended" && c["status"] == "True");
    let mutable = old["spec"]["suspend"] == true
        && (status["startTime"].is_null() || suspended_condition)
        && status["active"].as_i64().unwrap_or(0) == 0;
    if !mutable {
        return vec![FieldError::invalid(
            "spec.template",
            "the pod template",
            "field is immutable",
        )];
    }
    let (new_spec, mut was) = (
        &new["spec"]["template"]["spec"],
        old["spec"]["template"]["spec"].clone(),
    );
    for k in ["nodeSelector", "tolerations", "schedulingGates"] {
        was[k] = new_spec[k].clone();
    }
    if !was["affinity"].is_null() || !new_spec["affinity"].is_null() {
        was["affinity"]["nodeAffinity"] = new_spec["affinity"]["nodeAffinity"].clone();
    }
    for list in ["containers", "initContainers"] {
        let theirs = new_spec[list].as_array().cloned().unwrap_or_default();
        if let Some(ours) = was[list].as_array_mut().filter(|o| o.len() == theirs.len()) {
            for (o, n) in ours
                .iter_mut()
                .zip(&theirs)
                .filter(|(o, n)| o["name"] == n["name"])
            {
                o["resources"] = n["resources"].clone();
            }
        }
    }
    // Nulls left by the copies are absent fields.
    let tidy = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.retain(|_, x| !x.is_null());
            if m.get("affinity").is_some_and(|a| {
                a.as_object()
                    .is_some_and(|a| a.values().all(Value::is_null))
            }) {
                m.shift_remove("affinity");
            }
        }
        v
    };
    if tidy(&was) == tidy(new_spec) {
        return Vec::new();
    }
    vec![FieldError::invalid(
        "spec.template.spec",
        "the pod spec",
        "field is immutable",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt(group: &str, kind: &str) -> ResourceType {
        super::super::builtins::types()
            .into_iter()
            .find(|t| t.group == group && t.kind == kind)
            .expect("a built-in")
    }

    #[test]
    fn a_workload_selector_must_match_and_stay() {
        let d = rt("apps", "Deployment");
        let ok = json!({"spec": {"selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x", "tier": "a"}}}}});
        assert!(create(&d, &ok).is_empty());
        let bad = json!({"spec": {"selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "y"}}}}});
        let e = create(&d, &bad);
        assert_eq!(e[0].field, "spec.template.metadata.labels");
        assert_eq!(
            e[0].message,
            "Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`"
        );
        let mut moved = ok.clone();
        moved["spec"]["selector"]["matchLabels"]["app"] = json!("z");
        let fields: Vec<String> = update(&d, &ok, &moved)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(fields, ["spec.template.metadata.labels", "spec.selector"]);
    }

    #[test]
    fn secrets_keys_types_and_immutability() {
        let s = rt("", "Secret");
        assert_eq!(
            create(&s, &json!({"data": {"no/slash": "eA=="}}))[0].field,
            "data[no/slash]"
        );
        let old = json!({"type": "Opaque", "data": {"a": "eA=="}});
        let new = json!({"type": "kubernetes.io/tls", "data": {"a": "eA=="}});
        let fields: Vec<String> = update(&s, &old, &new)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(fields, ["type", "data[tls.crt]", "data[tls.key]"]);
        let frozen = json!({"type": "Opaque", "immutable": true, "data": {"a": "eA=="}});
        let changed = json!({"type": "Opaque", "immutable": true, "data": {"a": "eQ=="}});
        assert_eq!(
            update(&s, &frozen, &changed)[0].reason,
            "FieldValueForbidden"
        );
    }

    #[test]
    fn status_counts() {
        let d = rt("apps", "Deployment");
        let e = status(
            &d,
            &json!({"status": {"replicas": 4, "readyReplicas": 1, "availableReplicas": 2}}),
        );
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "status.availableReplicas");
    }
}
