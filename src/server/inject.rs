//! `stalemate inject`: put the proxy in front of a controller that runs in a cluster.
//!
//! In a pod, client-go and kube-rs find the apiserver from `KUBERNETES_SERVICE_HOST/PORT`
//! and trust it with `/var/run/secrets/kubernetes.io/serviceaccount/ca.crt`
//! (docs/PROTOCOL.md §F). So the controller containers get
//! `KUBERNETES_SERVICE_HOST=127.0.0.1`, the proxy's port, and, at that path, a projected
//! volume holding their own service-account token, stalemate's CA as `ca.crt`, and the
//! namespace. The `stalemate` sidecar keeps the real mount (the kubelet adds it to every
//! container that does not mount that path itself) and serves in in-cluster mode. The
//! controller's requests carry its own token, which the proxy forwards unchanged: RBAC and
//! audit see the controller.
//!
//! Everything added is recorded in the pod template's `stalemate.dev/injection`
//! annotation, so injecting twice equals injecting once and `--uninject` restores the
//! original exactly.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The sidecar's container name.
pub const CONTAINER: &str = "stalemate";
/// The pod template annotation recording what was injected.
pub const RECORD: &str = "stalemate.dev/injection";
const SA_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const SA_VOLUME: &str = "stalemate-serviceaccount";
const TLS_VOLUME: &str = "stalemate-tls";
const SCHEDULE_VOLUME: &str = "stalemate-schedule";
/// The sidecar's own pod (the downward API), for the Warning event a schedule that does
/// not load records on it (cli/schedule_rejected.rs).
pub const POD_NAME_ENV: &str = "STALEMATE_POD_NAME";
pub const POD_NAMESPACE_ENV: &str = "STALEMATE_POD_NAMESPACE";
pub const POD_UID_ENV: &str = "STALEMATE_POD_UID";
pub const PROXY_PORT: u16 = 7443;
pub const ADMIN_PORT: u16 = 9464;

/// What to inject.
#[derive(Debug, Clone)]
pub struct Options {
    pub image: String,
    /// ConfigMap holding `schedule.json`.
    pub schedule_configmap: String,
    /// Secret holding the serving certificate (`tls.crt`, `tls.key`).
    pub tls_secret: String,
    /// ConfigMap holding the CA as `ca.crt`.
    pub ca_configmap: String,
    /// Containers to put behind the proxy (empty: all but the sidecar).
    pub containers: Vec<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            image: format!(
                "ghcr.io/kube-stalemate/stalemate:{}",
                env!("CARGO_PKG_VERSION")
            ),
            schedule_configmap: "stalemate-schedule".into(),
            tls_secret: "stalemate-tls".into(),
            ca_configmap: "stalemate-ca".into(),
            containers: vec![],
        }
    }
}

/// A document that could not be injected: which one, which field, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("document {doc} ({what}): {field}: {message}")]
pub struct InjectError {
    pub doc: usize,
    pub what: String,
    pub field: String,
    pub message: String,
}

/// What was changed, so it can be undone.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    /// The pod template had no `annotations` map.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    created_annotations: bool,
    /// Annotations added (absent before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    added_annotations: Vec<String>,
    /// The pod spec had no `volumes` list.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    created_volumes: bool,
    /// Per injected container: what it had before.
    containers: Vec<ContainerRecord>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerRecord {
    name: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    created_env: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    created_mounts: bool,
    /// Env entries replaced in place: (index, original).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    replaced_env: Vec<(usize, Value)>,
    /// A mount at the service-account path that was replaced: (index, original).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replaced_mount: Option<(usize, Value)>,
}

fn describe(doc: &Value) -> String {
    format!(
        "{} {}",
        doc["kind"].as_str().unwrap_or("?"),
        doc["metadata"]["name"].as_str().unwrap_or("?")
    )
}

/// The pod template's metadata and spec paths of a workload, if it has one.
fn pod_paths(kind: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    match kind {
        "Pod" => Some((&["metadata"], &["spec"])),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => Some((
            &["spec", "template", "metadata"],
            &["spec", "template", "spec"],
        )),
        _ => None,
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, k| v.get_mut(*k))
}

fn ensure_object<'a>(v: &'a mut Value, path: &[&str]) -> &'a mut Value {
    let mut cur = v;
    for k in path {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        cur = cur
            .as_object_mut()
            .map(|m| {
                m.entry(k.to_string())
                    .or_insert_with(|| Value::Object(Map::new()))
            })
            .unwrap_or_else(|| unreachable!("made an object above"));
    }
    cur
}

/// Inject into every workload of a list of documents (`kind: List` items included);
/// other documents pass through untouched.
pub fn inject_all(docs: Vec<Value>, o: &Options) -> Result<Vec<Value>, InjectError> {
    docs.into_iter()
        .enumerate()
        .map(|(i, d)| transform(d, i + 1, &|doc, n| inject(doc, o, n)))
        .collect()
}

/// Undo `inject_all`.
pub fn uninject_all(docs: Vec<Value>) -> Result<Vec<Value>, InjectError> {
    docs.into_iter()
        .enumerate()
        .map(|(i, d)| transform(d, i + 1, &uninject))
        .collect()
}

fn transform(
    mut doc: Value,
    n: usize,
    step: &dyn Fn(&mut Value, usize) -> Result<(), InjectError>,
) -> Result<Value, InjectError> {
    if doc["kind"].as_str().is_some_and(|k| k.ends_with("List"))
        && let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut)
    {
        for item in items.iter_mut() {
            step(item, n)?;
        }
        return Ok(doc);
    }
    step(&mut doc, n)?;
    Ok(doc)
}

fn err(doc: &Value, n: usize, field: &str, message: impl Into<String>) -> InjectError {
    InjectError {
        doc: n,
        what: describe(doc),
        field: field.into(),
        message: message.into(),
    }
}

fn inject(doc: &mut Value, o: &Options, n: usize) -> Result<(), InjectError> {
    let Some(kind) = doc["kind"].as_str().map(str::to_string) else {
        return Ok(());
    };
    let Some((meta_path, spec_path)) = pod_paths(&kind) else {
        return Ok(());
    };
    // Injecting twice equals injecting once: start from the original.
    uninject(doc, n)?;
    check_pod_template(doc, o, n, spec_path)?;
    let mut record = Record::default();
    let spec = at_mut(doc, spec_path).unwrap_or_else(|| unreachable!("checked above"));
    if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) {
        for c in containers.iter_mut() {
            let name = c["name"].as_str().unwrap_or("").to_string();
            if !(o.containers.is_empty() || o.containers.contains(&name)) {
                continue;
            }
            let Some(cm) = c.as_object_mut() else {
                continue;
            };
            record.containers.push(behind_proxy(cm, name));
        }
        containers.push(sidecar(o));
    }
    let Some(sm) = spec.as_object_mut() else {
        return Ok(());
    };
    record.created_volumes = !sm.contains_key("volumes");
    if let Some(vols) = sm
        .entry("volumes")
        .or_insert_with(|| json!([]))
        .as_array_mut()
    {
        vols.extend(volumes(o));
    }
    annotate(doc, meta_path, record);
    Ok(())
}

/// That the workload has a pod template with containers, among them every one
/// `--containers` names.
fn check_pod_template(
    doc: &mut Value,
    o: &Options,
    n: usize,
    spec_path: &[&str],
) -> Result<(), InjectError> {
    let spec_field = spec_path.join(".");
    let Some(spec) = at_mut(doc, spec_path).filter(|s| s.is_object()) else {
        return Err(err(doc, n, &spec_field, "no pod template here"));
    };
    let names: Vec<String> = spec["containers"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        let d = doc.clone();
        return Err(err(
            &d,
            n,
            &format!("{spec_field}.containers"),
            "no containers",
        ));
    }
    for want in &o.containers {
        if !names.contains(want) {
            let d = doc.clone();
            return Err(err(
                &d,
                n,
                "--containers",
                format!("no container named {want:?} (it has {})", names.join(", ")),
            ));
        }
    }
    Ok(())
}

/// Put one controller container behind the proxy; the record of what it had before.
fn behind_proxy(cm: &mut Map<String, Value>, name: String) -> ContainerRecord {
    // The controller containers: the proxy as their apiserver, its CA as theirs.
    let env = [
        json!({"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"}),
        json!({"name": "KUBERNETES_SERVICE_PORT", "value": PROXY_PORT.to_string()}),
    ];
    let mount = json!({"name": SA_VOLUME, "mountPath": SA_PATH, "readOnly": true});
    let mut cr = ContainerRecord {
        name,
        ..Default::default()
    };
    cr.created_env = !cm.contains_key("env");
    let envs = cm.entry("env").or_insert_with(|| json!([]));
    if let Some(envs) = envs.as_array_mut() {
        for e in &env {
            match envs.iter().position(|x| x["name"] == e["name"]) {
                Some(i) => {
                    cr.replaced_env.push((i, envs[i].clone()));
                    envs[i] = e.clone();
                }
                None => envs.push(e.clone()),
            }
        }
    }
    cr.created_mounts = !cm.contains_key("volumeMounts");
    let mounts = cm.entry("volumeMounts").or_insert_with(|| json!([]));
    if let Some(mounts) = mounts.as_array_mut() {
        match mounts.iter().position(|m| m["mountPath"] == SA_PATH) {
            Some(i) => {
                cr.replaced_mount = Some((i, mounts[i].clone()));
                mounts[i] = mount.clone();
            }
            None => mounts.push(mount.clone()),
        }
    }
    cr
}

/// The pod template's annotations: scrape ones, and the record of what was injected.
fn annotate(doc: &mut Value, meta_path: &[&str], mut record: Record) {
    // Scrape annotations, unless the pod already has its own (Flux's controllers do, for
    // their own metrics): then the PodMonitor finds the `stalemate-admin` port.
    let meta = ensure_object(doc, meta_path);
    let Some(mm) = meta.as_object_mut() else {
        return;
    };
    record.created_annotations = !mm.contains_key("annotations");
    let ann = mm
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(ann) = ann.as_object_mut() {
        if !ann.contains_key("prometheus.io/scrape") {
            for (k, v) in [
                ("prometheus.io/scrape", "true"),
                ("prometheus.io/port", "9464"),
                ("prometheus.io/path", "/metrics"),
            ] {
                if !ann.contains_key(k) {
                    ann.insert(k.into(), v.into());
                    record.added_annotations.push(k.into());
                }
            }
        }
        ann.insert(
            RECORD.into(),
            Value::String(serde_json::to_string(&record).unwrap_or_default()),
        );
    }
}

fn sidecar(o: &Options) -> Value {
    json!({
        "name": CONTAINER,
        "image": o.image,
        "args": [
            "serve", "--in-cluster",
            "--listen", format!("127.0.0.1:{PROXY_PORT}"),
            "--admin-listen", format!("0.0.0.0:{ADMIN_PORT}"),
            "--tls-cert", "/etc/stalemate/tls/tls.crt",
            "--tls-key", "/etc/stalemate/tls/tls.key",
            "--schedule", "/etc/stalemate/schedule/schedule.json",
            // One controller's connection stays on one serving thread; without a CPU
            // limit the default (one per node CPU) would start threads that sit idle.
            "--threads", "2"
        ],
        "env": [
            {"name": "STALEMATE_ADMIN_TOKEN", "valueFrom": {"secretKeyRef": {"name": "stalemate-admin", "key": "token", "optional": true}}},
            {"name": POD_NAME_ENV, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": POD_NAMESPACE_ENV, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
            {"name": POD_UID_ENV, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.uid"}}}
        ],
        "ports": [{"name": "stalemate-admin", "containerPort": ADMIN_PORT, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "stalemate-admin"}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "stalemate-admin"}, "periodSeconds": 10},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": {
            "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
            "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}
        },
        "volumeMounts": [
            {"name": TLS_VOLUME, "mountPath": "/etc/stalemate/tls", "readOnly": true},
            {"name": SCHEDULE_VOLUME, "mountPath": "/etc/stalemate/schedule", "readOnly": true}
        ]
    })
}

fn volumes(o: &Options) -> Vec<Value> {
    vec![
        json!({"name": SA_VOLUME, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
            {"configMap": {"name": o.ca_configmap, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ]}}),
        json!({"name": TLS_VOLUME, "secret": {"secretName": o.tls_secret}}),
        json!({"name": SCHEDULE_VOLUME, "configMap": {"name": o.schedule_configmap}}),
    ]
}

fn uninject(doc: &mut Value, n: usize) -> Result<(), InjectError> {
    let Some(kind) = doc["kind"].as_str().map(str::to_string) else {
        return Ok(());
    };
    let Some((meta_path, spec_path)) = pod_paths(&kind) else {
        return Ok(());
    };
    let raw = at_mut(doc, meta_path)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(RECORD))
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(raw) = raw else {
        return Ok(());
    };
    let record: Record = serde_json::from_str(&raw).map_err(|e| {
        let d = doc.clone();
        err(
            &d,
            n,
            &format!("{}.annotations[{RECORD:?}]", meta_path.join(".")),
            format!("not a stalemate injection record: {e}"),
        )
    })?;
    if let Some(spec) = at_mut(doc, spec_path).and_then(Value::as_object_mut) {
        if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) {
            containers.retain(|c| c["name"] != CONTAINER);
            for cr in &record.containers {
                let Some(c) = containers
                    .iter_mut()
                    .find(|c| c["name"] == cr.name.as_str())
                    .and_then(Value::as_object_mut)
                else {
                    continue;
                };
                restore_container(c, cr);
            }
        }
        if let Some(vols) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
            vols.retain(|v| {
                !matches!(
                    v["name"].as_str(),
                    Some(SA_VOLUME | TLS_VOLUME | SCHEDULE_VOLUME)
                )
            });
        }
        if record.created_volumes {
            spec.remove("volumes");
        }
    }
    if let Some(meta) = at_mut(doc, meta_path).and_then(Value::as_object_mut) {
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            ann.shift_remove(RECORD);
            for k in &record.added_annotations {
                ann.shift_remove(k);
            }
        }
        if record.created_annotations {
            meta.remove("annotations");
        }
    }
    Ok(())
}

/// Give a controller container back the env and mounts it had before it was injected.
fn restore_container(c: &mut Map<String, Value>, cr: &ContainerRecord) {
    if let Some(envs) = c.get_mut("env").and_then(Value::as_array_mut) {
        for (i, orig) in &cr.replaced_env {
            if let Some(slot) = envs.get_mut(*i) {
                *slot = orig.clone();
            }
        }
        let replaced: Vec<usize> = cr.replaced_env.iter().map(|(i, _)| *i).collect();
        let mut idx = 0;
        envs.retain(|e| {
            let keep = replaced.contains(&idx)
                || !matches!(
                    e["name"].as_str(),
                    Some("KUBERNETES_SERVICE_HOST" | "KUBERNETES_SERVICE_PORT")
                );
            idx += 1;
            keep
        });
    }
    if cr.created_env {
        c.remove("env");
    }
    if let Some(mounts) = c.get_mut("volumeMounts").and_then(Value::as_array_mut) {
        match &cr.replaced_mount {
            Some((i, orig)) => {
                if let Some(slot) = mounts.get_mut(*i) {
                    *slot = orig.clone();
                }
            }
            None => mounts.retain(|m| m["name"] != SA_VOLUME),
        }
    }
    if cr.created_mounts {
        c.remove("volumeMounts");
    }
}
