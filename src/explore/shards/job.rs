//! `explore job`: the shards of one explore as a Kubernetes Indexed Job — a ConfigMap
//! with the files explore reads, and a Job whose pod `I` runs `explore --shard I/N` on a
//! control plane of its own (`--envtest`, from the image) and prints its output to its
//! log at the end (`pack.rs`), where `explore gather` reads it.
//!
//! ```text
//!  ConfigMap NAME-input   setup, oracles, actions files  ─► mounted at INPUT_DIR
//!  Job NAME  Indexed, completions N, parallelism P, one retry per index
//!    pod I:  stalemate explore --envtest ASSETS --shard $(JOB_COMPLETION_INDEX)/N
//!              --out OUT_DIR --archive-to-stdout [the flags, paths → INPUT_DIR] -- CMD
//! ```

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// Where the pod finds the ConfigMap's files.
pub const INPUT_DIR: &str = "/etc/stalemate-explore";
/// A scratch volume (emptyDir): the output goes in it.
pub const WORK_DIR: &str = "/var/stalemate";
pub const OUT_DIR: &str = "/var/stalemate/out";
/// The container's name (gather reads its log).
pub const CONTAINER: &str = "explore";
/// Where the image made with the Dockerfile's `explore` target has stalemate.
const STALEMATE: &str = "/usr/local/bin/stalemate";
/// What a ConfigMap can hold (etcd's request limit, as the apiserver enforces it).
const CONFIGMAP_MAX: usize = 1 << 20;

/// A flag as it was given to `explore job`: `--long=value` per value, or `--long`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    pub long: String,
    pub values: Vec<String>,
    /// A switch (no value).
    pub switch: bool,
}

/// What `explore job` was asked.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub namespace: Option<String>,
    pub image: String,
    pub shards: usize,
    pub parallelism: usize,
    /// The control plane's binaries in the image (`--envtest DIR`).
    pub assets: String,
    /// The explore flags, in the order given.
    pub flags: Vec<Given>,
    pub cmd: Vec<String>,
}

/// Flags whose values are files the pod must be given (`--actions`: unless `generated`
/// or `none`).
fn is_file(long: &str, value: &str) -> bool {
    match long {
        "setup" | "oracles" => true,
        "actions" => value != "generated" && value != "none",
        _ => false,
    }
}

/// A ConfigMap key for a file: `setup-1-my-setup.yaml` (keys allow `[-._a-zA-Z0-9]`).
fn key(long: &str, n: usize, path: &str) -> String {
    let base = Path::new(path)
        .file_name()
        .map(|b| b.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{long}-{n}-{clean}")
}

/// What kubelet expands in a container's command and args is `$(VAR)`, and `$$` is a
/// `$`: the user's own text gets every `$` doubled, so it reaches explore as written.
pub fn escape(s: &str) -> String {
    s.replace('$', "$$")
}

/// The pod's explore command line, and the files it reads as a ConfigMap's `data` and
/// `binaryData` (a file that is not UTF-8).
struct Pod {
    args: Vec<String>,
    data: serde_json::Map<String, Value>,
    binary: serde_json::Map<String, Value>,
}

impl Pod {
    fn new(spec: &Spec) -> Result<Pod> {
        let mut pod = Pod {
            args: vec![
                "explore".into(),
                format!("--envtest={}", spec.assets),
                format!("--shard=$(JOB_COMPLETION_INDEX)/{}", spec.shards),
                format!("--out={OUT_DIR}"),
                "--archive-to-stdout".into(),
            ],
            data: Default::default(),
            binary: Default::default(),
        };
        let mut size = 0;
        for g in &spec.flags {
            if g.switch {
                pod.args.push(format!("--{}", g.long));
                continue;
            }
            for v in &g.values {
                if is_file(&g.long, v) {
                    size += pod.add_file(&g.long, v)?;
                } else {
                    pod.args.push(format!("--{}={}", g.long, escape(v)));
                }
            }
        }
        if size > CONFIGMAP_MAX - 64 * 1024 {
            bail!(
                "the files explore's pods need ({size} bytes: --setup, --oracles, --actions) do not fit in a ConfigMap (1 MiB): build them into the image and give their paths there instead"
            );
        }
        pod.args.push("--".into());
        pod.args.extend(spec.cmd.iter().map(|c| escape(c)));
        Ok(pod)
    }

    /// `--long=PATH` read into the ConfigMap, given as where it is mounted; its size.
    fn add_file(&mut self, long: &str, path: &str) -> Result<usize> {
        let k = key(long, self.data.len() + self.binary.len() + 1, path);
        let bytes = std::fs::read(path).with_context(|| format!("--{long} {path}"))?;
        let size = bytes.len();
        match String::from_utf8(bytes) {
            Ok(text) => self.data.insert(k.clone(), text.into()),
            Err(e) => {
                use base64::Engine;
                let b = base64::engine::general_purpose::STANDARD.encode(e.as_bytes());
                self.binary.insert(k.clone(), b.into())
            }
        };
        self.args.push(format!("--{long}={INPUT_DIR}/{k}"));
        Ok(size)
    }
}

/// The ConfigMap and the Job, as objects (`kubectl apply` them as YAML).
pub fn objects(spec: &Spec) -> Result<(Value, Value)> {
    if spec.shards == 0 {
        bail!("--shards must be at least 1");
    }
    if spec.parallelism == 0 {
        bail!("--parallelism must be at least 1");
    }
    let pod = Pod::new(spec)?;
    let input = format!("{}-input", spec.name);
    let labels = json!({
        "app.kubernetes.io/name": "stalemate-explore",
        "app.kubernetes.io/instance": spec.name,
    });
    let meta = |name: &str| {
        let mut m = json!({"name": name, "labels": labels.clone()});
        if let Some(ns) = &spec.namespace {
            m["namespace"] = ns.clone().into();
        }
        m
    };
    let mut configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(&input), "data": pod.data});
    if !pod.binary.is_empty() {
        configmap["binaryData"] = pod.binary.into();
    }
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(&spec.name),
        "spec": {
            "completionMode": "Indexed",
            "completions": spec.shards,
            "parallelism": spec.parallelism,
            // A pod that fails (explore's exit 2: a control plane that did not start, an
            // eviction) is tried once more; a second failure fails its index alone, the
            // other shards go on. Findings are not failures (--archive-to-stdout).
            "backoffLimitPerIndex": 1,
            "template": {
                "metadata": {"labels": labels.clone()},
                "spec": {
                    "restartPolicy": "Never",
                    // Each pod runs its own control plane: it needs no API access.
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "containers": [{
                        "name": CONTAINER,
                        "image": spec.image,
                        "command": [STALEMATE],
                        "args": pod.args,
                        "volumeMounts": [
                            {"name": "input", "mountPath": INPUT_DIR, "readOnly": true},
                            {"name": "work", "mountPath": WORK_DIR},
                        ],
                    }],
                    "volumes": [
                        {"name": "input", "configMap": {"name": input}},
                        {"name": "work", "emptyDir": {}},
                    ],
                },
            },
        },
    });
    Ok((configmap, job))
}

/// The two as a YAML stream.
pub fn yaml(spec: &Spec) -> Result<String> {
    let (configmap, job) = objects(spec)?;
    serde_saphyr::to_string_multiple(&[configmap, job]).context("writing YAML")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(long: &str, values: &[&str]) -> Given {
        Given {
            long: long.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
            switch: false,
        }
    }

    #[test]
    fn files_go_in_the_configmap_and_the_pod_reads_them_there() {
        let dir = tempfile::tempdir().unwrap();
        let setup = dir.path().join("my setup.yaml");
        std::fs::write(&setup, "kind: Namespace\n").unwrap();
        let setup = setup.display().to_string();
        let spec = Spec {
            name: "ex".into(),
            namespace: Some("team".into()),
            image: "reg/img:1".into(),
            shards: 4,
            parallelism: 2,
            assets: "/opt/kube".into(),
            flags: vec![
                given("setup", &[&setup]),
                given("actions", &["none"]),
                given("workload", &["echo $HOME $(date)"]),
                Given {
                    long: "x".into(),
                    values: vec![],
                    switch: true,
                },
            ],
            cmd: vec!["/bin/ctl".into(), "--v=$(X)".into()],
        };
        let (cm, job) = objects(&spec).unwrap();
        assert_eq!(cm["metadata"]["name"], "ex-input");
        assert_eq!(cm["metadata"]["namespace"], "team");
        assert_eq!(cm["data"]["setup-1-my-setup.yaml"], "kind: Namespace\n");
        let spec_ = &job["spec"];
        assert_eq!(spec_["completionMode"], "Indexed");
        assert_eq!(spec_["completions"], 4);
        assert_eq!(spec_["parallelism"], 2);
        let pod = &spec_["template"]["spec"];
        assert_eq!(pod["automountServiceAccountToken"], false);
        let args: Vec<&str> = pod["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "explore",
                "--envtest=/opt/kube",
                "--shard=$(JOB_COMPLETION_INDEX)/4",
                "--out=/var/stalemate/out",
                "--archive-to-stdout",
                "--setup=/etc/stalemate-explore/setup-1-my-setup.yaml",
                "--actions=none",
                "--workload=echo $$HOME $$(date)",
                "--x",
                "--",
                "/bin/ctl",
                "--v=$$(X)",
            ]
        );
        let y = yaml(&spec).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_str_multiple(&y).unwrap();
        assert_eq!(docs, [cm, job]);
    }

    #[test]
    fn what_cannot_be_a_job_is_said() {
        let spec = |shards, files: Vec<Given>| Spec {
            name: "ex".into(),
            namespace: None,
            image: "i".into(),
            shards,
            parallelism: 1,
            assets: "/a".into(),
            flags: files,
            cmd: vec!["c".into()],
        };
        assert!(
            objects(&spec(0, vec![]))
                .unwrap_err()
                .to_string()
                .contains("--shards")
        );
        let e = objects(&spec(1, vec![given("oracles", &["/no/such/file"])])).unwrap_err();
        assert!(
            format!("{e:#}").contains("--oracles /no/such/file"),
            "{e:#}"
        );
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.yaml");
        std::fs::write(&big, "x".repeat(CONFIGMAP_MAX)).unwrap();
        let e = objects(&spec(
            1,
            vec![given("setup", &[&big.display().to_string()])],
        ))
        .unwrap_err();
        assert!(e.to_string().contains("do not fit in a ConfigMap"), "{e}");
    }
}
