//! `stalemate inject`: golden outputs on real-shaped manifests, idempotence, the
//! `--uninject` round trip, clear errors, and the injected manifests accepted by
//! `kubectl apply` against the simulator.

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{BIN, Sim};
use serde_json::Value;

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("e2e/golden/inject")
        .join(name)
}

/// `stalemate inject ARGS` with `input` on stdin: (success, stdout, stderr).
fn inject(args: &[&str], input: &str) -> (bool, String, String) {
    let mut child = Command::new(BIN)
        .arg("inject")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn docs(yaml: &str) -> Vec<Value> {
    serde_saphyr::from_str_multiple(yaml).unwrap()
}

#[test]
fn golden_outputs_idempotence_and_uninject_round_trip() {
    for name in ["source-controller", "statefulset", "list"] {
        let input = std::fs::read_to_string(golden(&format!("{name}.in.yaml"))).unwrap();
        let (ok, out, err) = inject(&["-f", "-"], &input);
        assert!(ok, "{name}: {err}");
        let want_path = golden(&format!("{name}.out.yaml"));
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&want_path, &out).unwrap();
        }
        let want = std::fs::read_to_string(&want_path).unwrap();
        assert_eq!(
            out,
            want,
            "{name}: output differs from {}",
            want_path.display()
        );
        let (ok, twice, _) = inject(&[], &out);
        assert!(ok);
        assert_eq!(twice, out, "{name}: injecting twice equals injecting once");
        let (ok, back, err) = inject(&["--uninject"], &out);
        assert!(ok, "{err}");
        assert_eq!(
            docs(&back),
            docs(&input),
            "{name}: --uninject restores the original"
        );
    }
}

#[test]
fn injected_pods_are_wired_to_the_proxy() {
    let input = std::fs::read_to_string(golden("source-controller.in.yaml")).unwrap();
    let (_, out, _) = inject(
        &[
            "--image",
            "stalemate:test",
            "--schedule-configmap",
            "flux-f1",
        ],
        &input,
    );
    let d = &docs(&out)[0];
    let spec = &d["spec"]["template"]["spec"];
    let containers = spec["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 2);
    let manager = &containers[0];
    let env: Vec<(&str, &str)> = manager["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?)))
        .collect();
    assert!(env.contains(&("KUBERNETES_SERVICE_HOST", "127.0.0.1")));
    assert!(env.contains(&("KUBERNETES_SERVICE_PORT", "7443")));
    assert!(
        manager["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(
                |m| m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount"
                    && m["name"] == "stalemate-serviceaccount"
            )
    );
    let sidecar = &containers[1];
    assert_eq!(
        (sidecar["name"].as_str(), sidecar["image"].as_str()),
        (Some("stalemate"), Some("stalemate:test"))
    );
    let args: Vec<&str> = sidecar["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        args.windows(2).any(|w| w == ["--listen", "127.0.0.1:7443"]),
        "{args:?}"
    );
    assert!(args.contains(&"--in-cluster"));
    assert_eq!(sidecar["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(sidecar["securityContext"]["runAsNonRoot"], true);
    assert_eq!(sidecar["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert!(sidecar["resources"]["requests"]["memory"].is_string());
    // The sidecar keeps the real service-account mount: it does not mount that path.
    assert!(
        !sidecar["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount")
    );
    let vols = spec["volumes"].as_array().unwrap();
    let sa = vols
        .iter()
        .find(|v| v["name"] == "stalemate-serviceaccount")
        .unwrap();
    let sources = sa["projected"]["sources"].as_array().unwrap();
    assert_eq!(sources[0]["serviceAccountToken"]["path"], "token");
    assert_eq!(sources[1]["configMap"]["items"][0]["path"], "ca.crt");
    assert_eq!(sources[2]["downwardAPI"]["items"][0]["path"], "namespace");
    let sched = vols
        .iter()
        .find(|v| v["name"] == "stalemate-schedule")
        .unwrap();
    assert_eq!(sched["configMap"]["name"], "flux-f1");
    // Flux's own scrape annotations are left alone (the PodMonitor finds our port).
    assert_eq!(
        d["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"],
        "8080"
    );
    // --containers picks; an unknown name is an error naming it.
    let (ok, _, err) = inject(&["--containers", "nope"], &input);
    assert!(!ok && err.contains("document 1 (Deployment source-controller): --containers: no container named \"nope\" (it has manager)"), "{err}");
}

#[test]
fn bad_input_is_named() {
    let (ok, _, err) = inject(&[], "kind: [unclosed");
    assert!(
        !ok && err.contains("standard input: not Kubernetes YAML"),
        "{err}"
    );
    let (ok, _, err) = inject(&[], "- a\n- b\n");
    assert!(
        !ok && err.contains("document 1: not a Kubernetes object"),
        "{err}"
    );
    let (ok, _, err) = inject(
        &[],
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: 1}\n",
    );
    assert!(
        !ok && err.contains("document 1 (Deployment x): spec.template.spec: no pod template here"),
        "{err}"
    );
    let (ok, _, err) = inject(
        &[],
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n",
    );
    assert!(
        !ok && err.contains("spec.containers: no containers"),
        "{err}"
    );
    let out = Command::new(BIN)
        .args(["inject", "-f", "/nonexistent.yaml"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("reading /nonexistent.yaml"));
}

#[test]
fn injected_manifests_are_accepted_by_kubectl_apply() {
    let sim = Sim::start();
    sim.kubectl_ok(&["create", "namespace", "flux-system"]);
    let input = std::fs::read_to_string(golden("source-controller.in.yaml")).unwrap();
    // Apply a manifest; the names of the containers the simulator then holds.
    let apply = |yaml: &str| -> Vec<String> {
        let applied = sim.kubectl_stdin(&["apply", "-f", "-"], yaml);
        assert!(
            applied.status.success(),
            "{}",
            String::from_utf8_lossy(&applied.stderr)
        );
        let got: Value = serde_json::from_str(&sim.kubectl_ok(&[
            "-n",
            "flux-system",
            "get",
            "deployment",
            "source-controller",
            "-o",
            "json",
        ]))
        .unwrap();
        got["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str().map(str::to_string))
            .collect()
    };
    let (_, out, _) = inject(&[], &input);
    assert_eq!(apply(&out), ["manager", "stalemate"]);
    // Applying the uninjected manifest takes the sidecar out again.
    let (_, back, _) = inject(&["--uninject"], &out);
    assert_eq!(apply(&back).len(), 1);
}

/// `certs --kubernetes` prints what a sidecar needs; applied to the simulator, the Secret
/// and ConfigMap hold a certificate pair a proxy serves 127.0.0.1 with, under that CA.
#[test]
fn certs_for_kubernetes_apply_and_serve() {
    use base64::Engine;
    let out = Command::new(BIN)
        .args(["certs", "--kubernetes", "--namespace", "flux-system"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    let d = docs(&yaml);
    assert_eq!(
        (
            d[0]["kind"].as_str(),
            d[0]["type"].as_str(),
            d[0]["metadata"]["name"].as_str()
        ),
        (
            Some("Secret"),
            Some("kubernetes.io/tls"),
            Some("stalemate-tls")
        )
    );
    assert_eq!(
        (d[1]["kind"].as_str(), d[1]["metadata"]["name"].as_str()),
        (Some("ConfigMap"), Some("stalemate-ca"))
    );
    let sim = Sim::start();
    sim.kubectl_ok(&["create", "namespace", "flux-system"]);
    let applied = sim.kubectl_stdin(&["apply", "-f", "-"], &yaml);
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let secret: Value = serde_json::from_str(&sim.kubectl_ok(&[
        "-n",
        "flux-system",
        "get",
        "secret",
        "stalemate-tls",
        "-o",
        "json",
    ]))
    .unwrap();
    let cm: Value = serde_json::from_str(&sim.kubectl_ok(&[
        "-n",
        "flux-system",
        "get",
        "configmap",
        "stalemate-ca",
        "-o",
        "json",
    ]))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let b64 = |v: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap()
    };
    std::fs::write(dir.path().join("tls.crt"), b64(&secret["data"]["tls.crt"])).unwrap();
    std::fs::write(dir.path().join("tls.key"), b64(&secret["data"]["tls.key"])).unwrap();
    std::fs::write(
        dir.path().join("ca.crt"),
        cm["data"]["ca.crt"].as_str().unwrap(),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--tls-cert",
        ])
        .arg(dir.path().join("tls.crt"))
        .arg("--tls-key")
        .arg(dir.path().join("tls.key"))
        .arg("--upstream-kubeconfig")
        .arg(&sim.kubeconfig)
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let r = common::curl(
        &dir.path().join("ca.crt"),
        line.trim(),
        "GET",
        "/version",
        &[],
        None,
        &[],
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        r.status, 200,
        "TLS to 127.0.0.1 verified with the ConfigMap's CA"
    );
}

/// The sidecar wiring without a cluster: the files and variables a pod would see, on both
/// sides. The sidecar (`serve --in-cluster`) reaches the simulator with the pod's own
/// service-account files; the controller's in-cluster config (what `inject` gives it:
/// KUBERNETES_SERVICE_HOST=127.0.0.1, the proxy's port, a projected directory with its
/// token, stalemate's CA and the namespace) reaches the proxy — and its requests arrive
/// at the simulator with its own token.
#[tokio::test]
async fn sidecar_wiring_in_cluster_mode() {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    use kube::api::{Api, PostParams};
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();
    let sim_addr = sim.url.trim_start_matches("https://").to_string();
    let (sim_host, sim_port) = sim_addr.rsplit_once(':').unwrap();
    // The kubelet's mount in the sidecar: the pod's token, the cluster's CA.
    let pod_sa = dir.path().join("pod-serviceaccount");
    std::fs::create_dir_all(&pod_sa).unwrap();
    std::fs::write(
        pod_sa.join("token"),
        sim.sa_token("flux-system", "stalemate-sidecar"),
    )
    .unwrap();
    std::fs::copy(sim.dir.path().join("tls/ca.crt"), pod_sa.join("ca.crt")).unwrap();
    std::fs::write(pod_sa.join("namespace"), "flux-system").unwrap();
    // The Secret stalemate-tls, mounted at /etc/stalemate/tls.
    let tls = dir.path().join("tls");
    let st = Command::new(BIN)
        .args(["certs", "--out"])
        .arg(&tls)
        .status()
        .unwrap();
    assert!(st.success());
    let mut sidecar = common::KillOnDrop(
        Command::new(BIN)
            .args([
                "serve",
                "--in-cluster",
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
                "--tls-cert",
            ])
            .arg(tls.join("tls.crt"))
            .arg("--tls-key")
            .arg(tls.join("tls.key"))
            .env("KUBERNETES_SERVICE_HOST", sim_host)
            .env("KUBERNETES_SERVICE_PORT", sim_port)
            .env("STALEMATE_SERVICEACCOUNT_DIR", &pod_sa)
            .env("RUST_LOG", "error")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(sidecar.0.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let proxy_port = line.trim().rsplit_once(':').unwrap().1.to_string();
    // The controller's projected volume.
    let ctl_sa = dir.path().join("controller-serviceaccount");
    std::fs::create_dir_all(&ctl_sa).unwrap();
    std::fs::write(
        ctl_sa.join("token"),
        sim.sa_token("flux-system", "source-controller"),
    )
    .unwrap();
    std::fs::copy(tls.join("ca.crt"), ctl_sa.join("ca.crt")).unwrap();
    std::fs::write(ctl_sa.join("namespace"), "flux-system").unwrap();
    let cfg = stalemate::upstream::incluster_config("127.0.0.1", &proxy_port, &ctl_sa).unwrap();
    assert_eq!(cfg.default_namespace, "flux-system");
    let client = kube::Client::try_from(cfg).unwrap();
    let review: SelfSubjectReview = Api::all(client.clone())
        .create(&PostParams::default(), &serde_json::from_value(serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})).unwrap())
        .await
        .unwrap();
    drop(sidecar);
    let user = review.status.unwrap().user_info.unwrap().username.unwrap();
    assert_eq!(
        user, "system:serviceaccount:flux-system:source-controller",
        "the controller's own token reached the simulator"
    );
}

/// Lists of named things (containers, env, mounts, volumes) in name order: a strategic
/// merge patch and `inject` add the same entries, in different places.
fn by_name(v: &Value) -> Value {
    match v {
        Value::Array(a) => {
            let mut a: Vec<Value> = a.iter().map(by_name).collect();
            if a.iter().all(|x| x["name"].is_string()) {
                a.sort_by(|x, y| x["name"].as_str().cmp(&y["name"].as_str()));
            }
            Value::Array(a)
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), by_name(x))).collect()),
        x => x.clone(),
    }
}

fn kustomize(dir: &Path) -> Vec<Value> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    docs(&String::from_utf8(out.stdout).unwrap())
}

#[test]
fn deploy_renders_and_matches_inject() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rendered = kustomize(&root.join("deploy/example"));
    let schedule_cm = rendered
        .iter()
        .find(|d| {
            d["kind"] == "ConfigMap"
                && d["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("stalemate-schedule-")
        })
        .expect("the schedule ConfigMap, generated with a hash suffix");
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("config/flux-f1.json")).unwrap())
            .unwrap();
    let got: Value =
        serde_json::from_str(schedule_cm["data"]["schedule.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        got, want,
        "deploy/flux/schedule.json is config/flux-f1.json"
    );
    let cm_name = schedule_cm["metadata"]["name"].as_str().unwrap();
    assert!(rendered.iter().any(|d| d["kind"] == "PodMonitor"
        && d["spec"]["podMetricsEndpoints"][0]["port"] == "stalemate-admin"));
    let deployments: Vec<&Value> = rendered
        .iter()
        .filter(|d| d["kind"] == "Deployment")
        .collect();
    assert_eq!(deployments.len(), 4);
    for d in deployments {
        let name = d["metadata"]["name"].as_str().unwrap();
        // What `stalemate inject` writes for the same Deployment.
        let original =
            std::fs::read_to_string(root.join("deploy/example/flux-system.yaml")).unwrap();
        let original = docs(&original)
            .into_iter()
            .find(|x| x["kind"] == "Deployment" && x["metadata"]["name"] == name)
            .unwrap();
        let (ok, injected, err) = inject(&[], &serde_json::to_string(&original).unwrap());
        assert!(ok, "{err}");
        let injected = &docs(&injected)[0];
        let spec = &d["spec"]["template"]["spec"];
        let ispec = &injected["spec"]["template"]["spec"];
        assert_eq!(
            by_name(&spec["containers"]),
            by_name(&ispec["containers"]),
            "{name}: containers as inject writes them"
        );
        let mut vols = spec["volumes"].clone();
        for v in vols.as_array_mut().unwrap() {
            if v["name"] == "stalemate-schedule" {
                assert_eq!(
                    v["configMap"]["name"], cm_name,
                    "{name}: the generated ConfigMap is referenced"
                );
                v["configMap"]["name"] = "stalemate-schedule".into();
            }
        }
        assert_eq!(
            by_name(&vols),
            by_name(&ispec["volumes"]),
            "{name}: volumes as inject writes them"
        );
    }
    assert!(rendered.iter().any(|d| d["kind"] == "ConfigMap"
        && d["metadata"]["name"] == "unrelated"
        && d["data"]["k"] == "v"));
}

#[test]
fn dashboard_uses_the_documented_metrics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("deploy/grafana/stalemate-dashboard.json")).unwrap(),
    )
    .unwrap();
    let documented = std::fs::read_to_string(root.join("docs/metrics.md")).unwrap();
    let panels = dash["panels"].as_array().unwrap();
    let titles: Vec<&str> = panels.iter().filter_map(|p| p["title"].as_str()).collect();
    for want in [
        "Open windows",
        "Held events",
        "View lag (s)",
        "Requests / s",
        "Real 409 conflicts / s",
        "Writes / s",
        "Oracle violations",
    ] {
        assert!(titles.contains(&want), "{want} in {titles:?}");
    }
    let re = regex::Regex::new(r"stalemate_([a-z_]+)").unwrap();
    for p in panels {
        let expr = p["targets"][0]["expr"].as_str().unwrap();
        for c in re.captures_iter(expr) {
            let metric = &c[1];
            assert!(
                documented.contains(&format!("| `{metric}`"))
                    || documented.contains(&format!("`{metric}`,")),
                "{metric} (panel {:?}) is not in docs/metrics.md's metrics table",
                p["title"]
            );
        }
    }
}

/// Every `.sh` under `dir`, recursively, as a path from the repository's root.
fn shell_scripts(root: &Path, dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "sh") {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn scripts_pass_shellcheck() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Every script of the examples (the zoo's operators, their workloads) and of the
    // assets (the build scripts and the zoo's recipes), and these.
    let found: Vec<String> = ["examples", "e2e/assets", "e2e/kind"]
        .iter()
        .flat_map(|d| shell_scripts(root, d))
        .collect();
    assert!(
        found.iter().any(|f| f == "e2e/assets/build-zoo.sh"),
        "{found:?}"
    );
    let out = Command::new("shellcheck")
        .arg("-x")
        .args(&found)
        .args([
            "e2e/kind/runc-bounded",
            "fuzz/run.sh",
            "bench/run.sh",
            "bench/profile.sh",
            "bench/ab.sh",
            "bench/explore.sh",
            "docs/screenshot.sh",
            "bench/lib.sh",
            ".ci/run",
            "e2e/suite.sh",
        ])
        .current_dir(root)
        .output()
        .expect("shellcheck (`apt-get install shellcheck`; .ci/run installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
