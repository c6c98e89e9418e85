//! What kube-apiserver fills in on every write of a built-in object before it stores it:
//! the defaulting functions (`pkg/apis/*/v1/defaults.go`) and the strategies'
//! `PrepareForCreate` (a new object's status reset). Controllers read these fields —
//! client-go does not default what it decodes, and the Deployment controller, for one,
//! does nothing with a Deployment whose `spec.strategy.type` is empty — so the simulator
//! sets them as the real apiserver does, checked field for field against it by
//! `e2e/sim_differential.rs` (the values below are the ones v1.33 writes).
//!
//! Covered: pods and every pod template (Deployments, ReplicaSets, StatefulSets,
//! DaemonSets, Jobs, CronJobs, ReplicationControllers, PodTemplates), Services,
//! PersistentVolumeClaims and PersistentVolumes, Namespaces, Secrets. Other built-ins are
//! stored as written.

use serde_json::{Map, Value, json};

use super::registry::ResourceType;

/// Set `m[key]` to `v` unless it is there already (and not null).
fn default(m: &mut Value, key: &str, v: Value) {
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
fn items<'a>(m: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    m.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// The object at `m[key]`, created empty if missing.
fn object<'a>(m: &'a mut Value, key: &str) -> &'a mut Value {
    if !m[key].is_object() {
        m[key] = Value::Object(Map::new());
    }
    &mut m[key]
}

/// Defaults and derived fields for a write of `obj` (`create`: a new object, whose
/// status the strategy resets).
pub fn apply(rt: &ResourceType, obj: &mut Value, create: bool) {
    if rt.custom {
        return;
    }
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Namespace") if create => {
            obj["spec"]["finalizers"] = json!(["kubernetes"]);
            obj["status"] = json!({"phase": "Active"});
        }
        ("", "Secret") => secret(obj),
        ("", "Pod") => pod(obj, create),
        ("", "PodTemplate") => template(object(obj, "template")),
        ("", "ReplicationController") => replication_controller(obj, create),
        ("", "Service") => service(obj, create),
        ("", "PersistentVolumeClaim") => {
            default(object(obj, "spec"), "volumeMode", json!("Filesystem"));
            if create {
                obj["status"] = json!({"phase": "Pending"});
            }
        }
        ("", "PersistentVolume") => {
            let spec = object(obj, "spec");
            default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
            default(spec, "volumeMode", json!("Filesystem"));
            if create {
                obj["status"] = json!({"phase": "Pending"});
            }
        }
        ("apps", "Deployment") => deployment(obj, create),
        ("apps", "ReplicaSet") => {
            let spec = object(obj, "spec");
            default(spec, "replicas", json!(1));
            template(object(spec, "template"));
            if create {
                obj["status"] = json!({"replicas": 0});
            }
        }
        ("apps", "StatefulSet") => stateful_set(obj, create),
        ("apps", "DaemonSet") => daemon_set(obj, create),
        ("batch", "Job") => job(obj, create),
        ("batch", "CronJob") => cron_job(obj, create),
        _ => {}
    }
}

/// `stringData` is write-only: folded into `data` (the secret strategy); type Opaque.
fn secret(obj: &mut Value) {
    if let Some(Value::Object(sd)) = obj
        .as_object_mut()
        .and_then(|m| m.shift_remove("stringData"))
    {
        use base64::Engine;
        for (k, v) in sd {
            let s = v.as_str().unwrap_or_default();
            obj["data"][k] = base64::engine::general_purpose::STANDARD.encode(s).into();
        }
    }
    default(obj, "type", json!("Opaque"));
}

/// A pod template: what a pod made from it would get (`SetDefaults_PodSpec` and the
/// container defaults). Its zero `metadata.creationTimestamp` is left out (`omitzero`
/// since apimachinery 0.35; 1.33 wrote `null`).
pub fn template(t: &mut Value) {
    // ObjectMeta is a struct: always shown, if only as `{}`.
    object(t, "metadata");
    pod_spec(object(t, "spec"));
}

/// `SetDefaults_PodSpec` and what it reaches: containers, volumes.
pub fn pod_spec(spec: &mut Value) {
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

fn deployment(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    default(spec, "replicas", json!(1));
    let strategy = object(spec, "strategy");
    default(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        let ru = object(strategy, "rollingUpdate");
        default(ru, "maxUnavailable", json!("25%"));
        default(ru, "maxSurge", json!("25%"));
    }
    default(spec, "revisionHistoryLimit", json!(10));
    default(spec, "progressDeadlineSeconds", json!(600));
    template(object(spec, "template"));
    if create {
        obj["status"] = json!({});
    }
}

fn stateful_set(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    default(spec, "replicas", json!(1));
    default(spec, "podManagementPolicy", json!("OrderedReady"));
    let us = object(spec, "updateStrategy");
    default(us, "type", json!("RollingUpdate"));
    if us["type"] == "RollingUpdate" {
        default(object(us, "rollingUpdate"), "partition", json!(0));
    }
    default(spec, "revisionHistoryLimit", json!(10));
    let retention = object(spec, "persistentVolumeClaimRetentionPolicy");
    default(retention, "whenDeleted", json!("Retain"));
    default(retention, "whenScaled", json!("Retain"));
    template(object(spec, "template"));
    if create {
        obj["status"] = json!({"replicas": 0, "availableReplicas": 0});
    }
}

fn daemon_set(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    let us = object(spec, "updateStrategy");
    default(us, "type", json!("RollingUpdate"));
    if us["type"] == "RollingUpdate" {
        let ru = object(us, "rollingUpdate");
        default(ru, "maxUnavailable", json!(1));
        default(ru, "maxSurge", json!(0));
    }
    default(spec, "revisionHistoryLimit", json!(10));
    template(object(spec, "template"));
    if create {
        obj["status"] = json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
            "desiredNumberScheduled": 0, "numberReady": 0});
    }
}

fn replication_controller(obj: &mut Value, create: bool) {
    let labels = obj["spec"]["template"]["metadata"]["labels"].clone();
    let spec = object(obj, "spec");
    default(spec, "replicas", json!(1));
    if labels.is_object() {
        default(spec, "selector", labels.clone());
    }
    template(object(spec, "template"));
    if labels.is_object() {
        default(object(obj, "metadata"), "labels", labels);
    }
    if create {
        obj["status"] = json!({"replicas": 0});
    }
}

/// Job defaults, and on create the selector the strategy generates from the uid (unless
/// `manualSelector`), its labels on the template and, when it has none, on the Job.
fn job(obj: &mut Value, create: bool) {
    let uid = obj["metadata"]["uid"].clone();
    let name = obj["metadata"]["name"].clone();
    let spec = object(obj, "spec");
    if spec["parallelism"].is_null() && spec["completions"].is_null() {
        spec["parallelism"] = json!(1);
        spec["completions"] = json!(1);
    }
    default(spec, "parallelism", json!(1));
    default(spec, "backoffLimit", json!(6));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    if spec["podFailurePolicy"].is_null() {
        default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    }
    template(object(spec, "template"));
    if create && spec["manualSelector"] != json!(true) {
        default(spec, "manualSelector", json!(false));
        let labels = json!({
            "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
            "controller-uid": uid, "job-name": name,
        });
        spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
        let tl = object(object(object(spec, "template"), "metadata"), "labels");
        for (k, v) in labels.as_object().into_iter().flatten() {
            tl[k] = v.clone();
        }
    }
    // SetDefaults_Job: a Job without labels takes its template's, on every write (a
    // manual selector's too).
    let template_labels = obj["spec"]["template"]["metadata"]["labels"].clone();
    let meta = object(obj, "metadata");
    if meta["labels"].as_object().is_none_or(|l| l.is_empty()) && template_labels.is_object() {
        meta["labels"] = template_labels;
    }
    if create {
        obj["status"] = json!({});
    }
}

fn cron_job(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    default(spec, "concurrencyPolicy", json!("Allow"));
    default(spec, "suspend", json!(false));
    default(spec, "successfulJobsHistoryLimit", json!(3));
    default(spec, "failedJobsHistoryLimit", json!(1));
    let jt = object(spec, "jobTemplate");
    object(jt, "metadata");
    template(object(object(jt, "spec"), "template"));
    if create {
        obj["status"] = json!({});
    }
}

/// Service defaults (`SetDefaults_Service`, the IP family and traffic policy defaults);
/// the cluster IP itself is allocated by the caller, which owns the allocator.
fn service(obj: &mut Value, create: bool) {
    let spec = object(obj, "spec");
    default(spec, "type", json!("ClusterIP"));
    default(spec, "sessionAffinity", json!("None"));
    let external_name = spec["type"] == "ExternalName";
    for p in items(spec, "ports") {
        default(p, "protocol", json!("TCP"));
        let port = p["port"].clone();
        default(p, "targetPort", port);
    }
    if !external_name {
        default(spec, "internalTrafficPolicy", json!("Cluster"));
        // A headless Service without a selector may have endpoints of both families.
        let headless_any = spec["clusterIP"] == "None"
            && spec["selector"].as_object().is_none_or(|s| s.is_empty());
        if headless_any {
            default(spec, "ipFamilyPolicy", json!("RequireDualStack"));
            default(spec, "ipFamilies", json!(["IPv4", "IPv6"]));
        } else {
            default(spec, "ipFamilyPolicy", json!("SingleStack"));
            default(spec, "ipFamilies", json!(["IPv4"]));
        }
    }
    if matches!(spec["type"].as_str(), Some("NodePort" | "LoadBalancer")) {
        default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if create {
        obj["status"] = json!({"loadBalancer": {}});
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(group: &str, kind: &str) -> ResourceType {
        super::super::builtins::types()
            .into_iter()
            .find(|t| t.group == group && t.kind == kind)
            .expect("a built-in")
    }

    /// What kube-apiserver 1.37 wrote for this Deployment (recorded with kubectl).
    #[test]
    fn a_deployment_gets_the_real_defaults() {
        let mut d = json!({"spec": {"selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [
                {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}});
        apply(&rt("apps", "Deployment"), &mut d, true);
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
    fn pull_policies_and_qos() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("registry:5000/nginx"), "Always");
        assert_eq!(pull_policy("registry:5000/nginx:1.2"), "IfNotPresent");
        assert_eq!(pull_policy("nginx@sha256:abc"), "IfNotPresent");
        let spec = |r: Value| json!({"containers": [{"resources": r}]});
        assert_eq!(qos_class(&spec(json!({}))), "BestEffort");
        let g = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}});
        assert_eq!(qos_class(&spec(g)), "Guaranteed");
        assert_eq!(
            qos_class(&spec(json!({"requests": {"cpu": "1"}}))),
            "Burstable"
        );
    }

    #[test]
    fn a_job_selects_its_pods_by_its_uid() {
        let mut j = json!({"metadata": {"name": "j", "uid": "u-1"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
        apply(&rt("batch", "Job"), &mut j, true);
        assert_eq!(
            j["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            "u-1"
        );
        assert_eq!(j["spec"]["template"]["metadata"]["labels"]["job-name"], "j");
        assert_eq!(j["metadata"]["labels"]["controller-uid"], "u-1");
        assert_eq!(j["spec"]["completions"], 1);
        assert_eq!(j["spec"]["backoffLimit"], 6);
    }
}
