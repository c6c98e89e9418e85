//! The strategies as the generic writes reach them: looked up by resource type, their
//! defaults and validation checked against what kube-apiserver answers.

use serde_json::{Value, json};

use super::strategy;
use crate::resource_type::ResourceType;
use stalemate_wire::k8s::status::FieldError;

fn rt(group: &str, kind: &str) -> ResourceType {
    crate::builtins::types()
        .into_iter()
        .find(|t| t.group == group && t.kind == kind)
        .expect("a built-in")
}

fn defaults(rt: &ResourceType, obj: &mut Value, create: bool) {
    strategy(rt).defaults(obj, create);
}

fn validate_create(rt: &ResourceType, obj: &Value) -> Vec<FieldError> {
    strategy(rt).validate_create(obj)
}

fn validate_update(rt: &ResourceType, old: &Value, new: &Value) -> Vec<FieldError> {
    strategy(rt).validate_update(old, new)
}

fn validate_status(rt: &ResourceType, obj: &Value) -> Vec<FieldError> {
    strategy(rt).validate_status(obj)
}

/// What kube-apiserver 1.37 wrote for this Deployment (recorded with kubectl).
#[test]
fn a_deployment_gets_the_real_defaults() {
    let mut d = json!({"spec": {"selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
            {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}});
    defaults(&rt("apps", "Deployment"), &mut d, true);
    assert_eq!(
        d["spec"],
        json!({"selector": {"matchLabels": {"app": "d"}}, "replicas": 1,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {},
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "securityContext": {}, "terminationGracePeriodSeconds": 30}}})
    );
    assert_eq!(d["status"], json!({}));
}

#[test]
fn a_job_selects_its_pods_by_its_uid() {
    let mut j = json!({"metadata": {"name": "j", "uid": "u-1"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
    defaults(&rt("batch", "Job"), &mut j, true);
    assert_eq!(
        j["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        "u-1"
    );
    assert_eq!(j["spec"]["template"]["metadata"]["labels"]["job-name"], "j");
    assert_eq!(j["metadata"]["labels"]["controller-uid"], "u-1");
    assert_eq!(j["spec"]["completions"], 1);
    assert_eq!(j["spec"]["backoffLimit"], 6);
}

#[test]
fn a_workload_selector_must_match_and_stay() {
    let d = rt("apps", "Deployment");
    let ok = json!({"spec": {"selector": {"matchLabels": {"app": "x"}},
        "template": {"metadata": {"labels": {"app": "x", "tier": "a"}}}}});
    assert!(validate_create(&d, &ok).is_empty());
    let bad = json!({"spec": {"selector": {"matchLabels": {"app": "x"}},
        "template": {"metadata": {"labels": {"app": "y"}}}}});
    let e = validate_create(&d, &bad);
    assert_eq!(e[0].field, "spec.template.metadata.labels");
    assert_eq!(
        e[0].message,
        "Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`"
    );
    let mut moved = ok.clone();
    moved["spec"]["selector"]["matchLabels"]["app"] = json!("z");
    let fields: Vec<String> = validate_update(&d, &ok, &moved)
        .into_iter()
        .map(|e| e.field)
        .collect();
    assert_eq!(fields, ["spec.template.metadata.labels", "spec.selector"]);
}

#[test]
fn secrets_keys_types_and_immutability() {
    let s = rt("", "Secret");
    assert_eq!(
        validate_create(&s, &json!({"data": {"no/slash": "eA=="}}))[0].field,
        "data[no/slash]"
    );
    let old = json!({"type": "Opaque", "data": {"a": "eA=="}});
    let new = json!({"type": "kubernetes.io/tls", "data": {"a": "eA=="}});
    let fields: Vec<String> = validate_update(&s, &old, &new)
        .into_iter()
        .map(|e| e.field)
        .collect();
    assert_eq!(fields, ["type", "data[tls.crt]", "data[tls.key]"]);
    let frozen = json!({"type": "Opaque", "immutable": true, "data": {"a": "eA=="}});
    let changed = json!({"type": "Opaque", "immutable": true, "data": {"a": "eQ=="}});
    assert_eq!(
        validate_update(&s, &frozen, &changed)[0].reason,
        "FieldValueForbidden"
    );
}

#[test]
fn status_counts() {
    let d = rt("apps", "Deployment");
    let e = validate_status(
        &d,
        &json!({"status": {"replicas": 4, "readyReplicas": 1, "availableReplicas": 2}}),
    );
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].field, "status.availableReplicas");
}
