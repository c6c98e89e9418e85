//! `stalemate sim` driven by the real kubectl (the machine's dispatcher picks the bundled
//! kubectl matching the simulator's reported version — 1.28 and 1.33 here — and runs its
//! own, 1.32, for a server it bundles none for: the default 1.37).

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::kubectl::kubectl_cmd;
use common::{Sim, install_gitrepo_crd, wait_for};
use serde_json::Value;

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

const GITREPO: &str = r#"apiVersion: source.testbed.example.com/v1
kind: GitRepository
metadata: {name: podinfo, namespace: fixtures, labels: {app: podinfo}}
spec: {url: "https://example.invalid/podinfo.git", interval: 1m, ref: {branch: main}}
"#;

fn which_kubectl() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|p| p.exists())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

fn lifecycle(minor: u32) {
    let sim = Sim::start_with(&["--kube-version", &format!("1.{minor}")]);
    let version = json(&sim.kubectl_ok(&["version", "-o", "json"]));
    assert_eq!(version["serverVersion"]["minor"], minor.to_string());
    // The machines' kubectl is a dispatcher bundling 1.27–1.33 and choosing by the server's
    // /version: check it really ran the matching client, so each version is covered —
    // or, for a server newer than it bundles, its own.
    let bundled = |m: u32| {
        which_kubectl().is_some_and(|k| k.with_file_name(format!("kubectl.1.{m}")).exists())
    };
    let client = version["clientVersion"]["gitVersion"]
        .as_str()
        .unwrap_or_default();
    if bundled(minor) {
        assert_eq!(
            version["clientVersion"]["minor"],
            minor.to_string(),
            "the dispatcher picked kubectl 1.{minor}"
        );
    } else if bundled(33) {
        assert!(
            client.ends_with("-dispatcher"),
            "no kubectl 1.{minor} bundled: the dispatcher runs its own, not {client}"
        );
    } else {
        eprintln!(
            "note: no kubectl version dispatcher here; ran {}",
            version["clientVersion"]["gitVersion"]
        );
    }

    // Typed creates, which kubectl sends as protobuf (the Deployment's pod template, the
    // Job's and the Role's, every field of them decoded).
    sim.kubectl_ok(&["create", "namespace", "fixtures"]);
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "create",
        "deployment",
        "web",
        "--image=nginx:1",
        "--replicas=2",
    ]);
    let d = json(&sim.kubectl_ok(&["-n", "fixtures", "get", "deployment", "web", "-o", "json"]));
    assert_eq!(d["spec"]["replicas"], 2, "{d}");
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1",
        "{d}"
    );
    assert_eq!(
        d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%",
        "{d}"
    );
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "create",
        "job",
        "once",
        "--image=busybox",
        "--",
        "true",
    ]);
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "create",
        "role",
        "r",
        "--verb=get",
        "--resource=pods",
    ]);
    let role = json(&sim.kubectl_ok(&["-n", "fixtures", "get", "role", "r", "-o", "json"]));
    assert_eq!(
        role["rules"][0]["verbs"],
        serde_json::json!(["get"]),
        "{role}"
    );
    install_gitrepo_crd(&sim);
    let resources = sim.kubectl_ok(&[
        "api-resources",
        "--api-group",
        "source.testbed.example.com",
        "-o",
        "name",
    ]);
    assert_eq!(
        resources.trim(),
        "gitrepositories.source.testbed.example.com"
    );

    // Create with apply; generation starts at 1.
    let out = sim.kubectl_stdin(&["apply", "-f", "-"], GITREPO);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let get = |sim: &Sim| {
        json(&sim.kubectl_ok(&["-n", "fixtures", "get", "gitrepo", "podinfo", "-o", "json"]))
    };
    let o = get(&sim);
    assert_eq!(o["metadata"]["generation"], 1);
    let rv1: u64 = o["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    // A spec change bumps generation and the RV.
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "patch",
        "gitrepo",
        "podinfo",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"ref":{"branch":"dev"}}}"#,
    ]);
    let o = get(&sim);
    assert_eq!(o["metadata"]["generation"], 2);
    let rv2: u64 = o["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);

    // Status through the main resource is dropped: a no-op, RV unchanged.
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "patch",
        "gitrepo",
        "podinfo",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"observedGeneration":9}}"#,
    ]);
    let o = get(&sim);
    assert!(o.get("status").is_none());
    assert_eq!(o["metadata"]["resourceVersion"], rv2.to_string());

    // Through /status: status changes, generation does not.
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "patch",
        "gitrepo",
        "podinfo",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"observedGeneration":2,"conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
    let o = get(&sim);
    assert_eq!(o["status"]["observedGeneration"], 2);
    assert_eq!(o["metadata"]["generation"], 2);
    // Human output uses the CRD's printer columns (server-side Table).
    let table = sim.kubectl_ok(&["-n", "fixtures", "get", "gitrepo"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0]
            .split_whitespace()
            .eq(["NAME", "URL", "READY", "AGE"]),
        "{table}"
    );
    assert!(
        lines[1].starts_with("podinfo")
            && lines[1].contains("https://example.invalid/podinfo.git")
            && lines[1].contains("True"),
        "{table}"
    );

    // JSON patch on metadata: no generation bump; strategic merge on a CR: 415.
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "patch",
        "gitrepo",
        "podinfo",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]"#,
    ]);
    assert_eq!(get(&sim)["metadata"]["generation"], 2);
    let out = sim.kubectl(&[
        "-n",
        "fixtures",
        "patch",
        "gitrepo",
        "podinfo",
        "--type",
        "strategic",
        "-p",
        r#"{"spec":{"interval":"3m"}}"#,
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("the body of the request was in an unknown format")
    );

    // Strategic merge on a built-in: maps merge.
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "create",
        "configmap",
        "cm",
        "--from-literal=a=1",
    ]);
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "patch",
        "configmap",
        "cm",
        "-p",
        r#"{"data":{"b":"2"}}"#,
    ]);
    let cm = json(&sim.kubectl_ok(&["-n", "fixtures", "get", "cm", "cm", "-o", "json"]));
    assert_eq!(cm["data"], serde_json::json!({"a": "1", "b": "2"}));

    // A stale replace gets the server's 409.
    let mut stale = get(&sim);
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "annotate",
        "gitrepo",
        "podinfo",
        "touched=yes",
    ]);
    stale["spec"]["interval"] = "5m".into();
    let out = sim.kubectl_stdin(&["replace", "-f", "-"], &stale.to_string());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Conflict") && err.contains("the object has been modified"),
        "{err}"
    );

    // Server-side apply (approximated as a merge) records its manager.
    let ssa = GITREPO.replace("interval: 1m", "interval: 2m");
    let out = sim.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "e2e",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &ssa,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let o = json(&sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "get",
        "gitrepo",
        "podinfo",
        "-o",
        "json",
        "--show-managed-fields",
    ]));
    assert_eq!(o["spec"]["interval"], "2m");
    assert!(
        o["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["manager"] == "e2e" && e["operation"] == "Apply")
    );

    // A finalizer blocks deletion until it is removed.
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "patch",
        "gitrepo",
        "podinfo",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":["e2e/hold"]}}"#,
    ]);
    let gen_before = get(&sim)["metadata"]["generation"].as_i64().unwrap();
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "delete",
        "gitrepo",
        "podinfo",
        "--wait=false",
    ]);
    let o = get(&sim);
    assert!(
        o["metadata"]["deletionTimestamp"].is_string(),
        "terminating, not gone"
    );
    assert_eq!(
        o["metadata"]["generation"].as_i64().unwrap(),
        gen_before + 1,
        "graceful deletion bumps generation"
    );
    sim.kubectl_ok(&[
        "-n",
        "fixtures",
        "patch",
        "gitrepo",
        "podinfo",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let out = sim.kubectl(&["-n", "fixtures", "get", "gitrepo", "podinfo"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NotFound"),
        "gone once the finalizer is removed"
    );

    // Deleting the namespace deletes what is in it; deleting the CRD stops serving it.
    sim.kubectl_ok(&["delete", "namespace", "fixtures"]);
    let ns = sim.kubectl(&["get", "namespace", "fixtures"]);
    assert!(!ns.status.success());
    sim.kubectl_ok(&[
        "delete",
        "crd",
        "gitrepositories.source.testbed.example.com",
    ]);
    let out = sim.kubectl(&["get", "gitrepositories.source.testbed.example.com", "-A"]);
    assert!(!out.status.success(), "the resource is no longer served");
}

#[test]
fn kubectl_1_28_lifecycle() {
    lifecycle(28);
}

#[test]
fn kubectl_1_33_lifecycle() {
    lifecycle(33);
}

/// The default version, which the dispatcher bundles no kubectl for.
#[test]
fn kubectl_1_37_lifecycle() {
    lifecycle(37);
}

/// `kubectl get -w --output-watch-events` sees every change, in order, with increasing RVs.
#[test]
fn kubectl_watch_sees_every_change_in_order() {
    let sim = Sim::start();
    sim.kubectl_ok(&["create", "namespace", "w"]);
    let mut watch = kubectl_cmd(&sim.kubeconfig, &sim.cache_dir())
        .args([
            "-n",
            "w",
            "get",
            "configmaps",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
            "-l",
            "e2e=yes",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w");
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The watch is established once kubectl has listed; creating `ready` proves it.
    sim.kubectl_ok(&["-n", "w", "create", "configmap", "ready"]);
    std::thread::sleep(Duration::from_millis(300));
    sim.kubectl_ok(&["-n", "w", "label", "configmap", "ready", "e2e=yes"]);
    wait_for(
        "the watch to see the label",
        Duration::from_secs(20),
        || rx.recv_timeout(Duration::from_millis(100)).ok(),
    );

    for i in 0..5 {
        sim.kubectl_ok(&[
            "-n",
            "w",
            "create",
            "configmap",
            &format!("c{i}"),
            &format!("--from-literal=v={i}"),
        ]);
        sim.kubectl_ok(&["-n", "w", "label", "configmap", &format!("c{i}"), "e2e=yes"]);
    }
    sim.kubectl_ok(&[
        "-n",
        "w",
        "patch",
        "configmap",
        "c0",
        "-p",
        r#"{"data":{"v":"changed"}}"#,
    ]);
    sim.kubectl_ok(&["-n", "w", "label", "configmap", "c1", "e2e-"]);
    sim.kubectl_ok(&["-n", "w", "delete", "configmap", "c2"]);

    let mut events = Vec::new();
    while events.len() < 8 {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("watch event");
        events.push(json(&line));
    }
    let _ = watch.kill();
    let _ = watch.wait();
    let summary: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("ADDED", "c0"),
        ("ADDED", "c1"),
        ("ADDED", "c2"),
        ("ADDED", "c3"),
        ("ADDED", "c4"),
        ("MODIFIED", "c0"),
        ("DELETED", "c1"),
        ("DELETED", "c2"),
    ]
    .iter()
    .map(|(t, n)| (t.to_string(), n.to_string()))
    .collect();
    assert_eq!(
        summary, want,
        "labels entering the selection are ADDED, leaving it DELETED"
    );
    let rvs: Vec<u64> = events
        .iter()
        .map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        rvs.windows(2).all(|w| w[0] < w[1]),
        "resourceVersions increase: {rvs:?}"
    );
    assert_eq!(events[5]["object"]["data"]["v"], "changed");
}
