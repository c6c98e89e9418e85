//! Clients from other ecosystems through the proxy, against the simulator: kopf (the
//! Python operator framework) and the official Python client, installed from PyPI into
//! `e2e/clients/python/.venv` by `.ci/run` (pinned: `requirements.lock`).

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::{BIN, Proxy, Sim, repo};
use serde_json::{Value, json};

/// A program of the Python virtual environment.
fn venv(program: &str) -> PathBuf {
    let p = repo("e2e/clients/python/.venv/bin").join(program);
    assert!(
        p.exists(),
        "{} is missing: .ci/run makes it (python3 -m venv e2e/clients/python/.venv && e2e/clients/python/.venv/bin/pip install -r e2e/clients/python/requirements.lock)",
        p.display()
    );
    p
}

fn trace(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `stalemate run --sim` with kopf as the controller; returns (exit code, report, trace).
fn run_kopf(
    dir: &Path,
    name: &str,
    windows: Value,
    workload: Option<&str>,
) -> (Option<i32>, Value, Vec<Value>, String) {
    let schedule = dir.join(format!("{name}.json"));
    std::fs::write(
        &schedule,
        json!({
            "clients": {"kopf": {"listener": "controller"}, "workload": {"listener": "workload"}},
            "windows": windows,
            "oracles": {"convergence": {"resources": ["widgets.demo.stalemate.dev"], "settle": "3s"}}
        })
        .to_string(),
    )
    .unwrap();
    let (report, tr) = (
        dir.join(format!("{name}.report.json")),
        dir.join(format!("{name}.trace.jsonl")),
    );
    let mut cmd = Command::new(BIN);
    cmd.args([
        "run",
        "--sim",
        "--quiet",
        "3s",
        "--max-run",
        "60s",
        "--setup",
    ])
    .arg(repo("examples/widgets/setup.yaml"))
    .arg("--schedule")
    .arg(&schedule)
    .arg("--report-json")
    .arg(&report)
    .arg("--trace")
    .arg(&tr);
    if let Some(w) = workload {
        cmd.args(["--workload", w]);
    }
    let out = cmd
        .arg("--")
        .arg(venv("kopf"))
        .args(["run", "--standalone", "--namespace", "demo"])
        .arg(repo("e2e/clients/python/widget_operator.py"))
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let report: Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap_or_default()).unwrap_or(Value::Null);
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), report, trace(&tr), log)
}

const WIDGETS: &str = "widgets.demo.stalemate.dev";

/// The kstatus a report gives the object `name`.
fn kstatus_of<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["objects"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["name"] == name))
        .map_or(&Value::Null, |o| &o["status"])
}

/// kopf through a freeze of its Widgets right after its first patch (it adds its
/// finalizer, then waits to see its own change come back): the event is held, released,
/// kopf writes status, and the convergence oracle calls the Widget Current.
#[test]
fn kopf_converges_through_a_freeze() {
    let dir = tempfile::tempdir().unwrap();
    let (code, report, trace, log) = run_kopf(
        dir.path(),
        "freeze",
        json!([{"name": "freeze", "client": "kopf", "resources": [WIDGETS], "fault": {"freeze": {}},
                "trigger": {"afterRequests": {"verb": "patch", "resource": WIDGETS, "count": 1}}, "duration": "1500ms"}]),
        None,
    );
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(report["verdict"], "pass", "{report}");
    assert_eq!(kstatus_of(&report, "w1"), "Current", "{report}");
    let fates: Vec<&str> = trace
        .iter()
        .filter(|r| r["kind"] == "event" && r["client"] == "kopf" && r["resource"] == WIDGETS)
        .map(|r| r["fate"].as_str().unwrap())
        .collect();
    assert!(
        fates.contains(&"held") && fates.contains(&"released"),
        "{fates:?}"
    );
    // It wrote status through the status subresource, after the window.
    assert!(trace.iter().any(|r| r["kind"] == "request"
        && r["client"] == "kopf"
        && r["verb"] == "patch"
        && r["resource"] == format!("{WIDGETS}/status")));
}

/// kopf's watches expired (410) right after its first patch: it relists and converges
/// (the convergence oracle calls its Widget Current). And its finalizer works through the
/// proxy: the workload adds a second Widget, waits until kopf calls it Ready, deletes it —
/// kopf's delete handler runs, its finalizer comes off, the delete completes.
#[test]
fn kopf_relists_and_releases_its_finalizer() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("kubectl-cache");
    let k = format!("kubectl --cache-dir {} -n demo", cache.display());
    let workload = format!(
        "{k} create -f {w2} && {k} wait --for=condition=Ready widgets.demo.stalemate.dev/w2 --timeout=30s && {k} delete widgets.demo.stalemate.dev w2 --wait=true --timeout=30s",
        w2 = repo("examples/widgets/w2.yaml").display()
    );
    let (code, report, trace, log) = run_kopf(
        dir.path(),
        "relist",
        json!([{"name": "relist", "client": "kopf", "resources": [WIDGETS], "fault": {"relist": {"how": "expired"}},
                "trigger": {"afterRequests": {"verb": "patch", "resource": WIDGETS, "count": 1}}, "duration": "500ms"}]),
        Some(&workload),
    );
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(report["verdict"], "pass", "{report}");
    assert_eq!(kstatus_of(&report, "w1"), "Current", "{report}");
    assert!(
        trace
            .iter()
            .any(|r| r["kind"] == "event" && r["client"] == "kopf" && r["fate"] == "injected"),
        "the expired event was injected"
    );
    let lists = trace
        .iter()
        .filter(|r| {
            r["kind"] == "request"
                && r["client"] == "kopf"
                && r["verb"] == "list"
                && r["resource"] == WIDGETS
        })
        .count();
    assert!(
        lists >= 2,
        "kopf listed again after the 410 ({lists} lists)"
    );
    // The workload's delete went through; kopf saw the deletion and let go.
    assert!(trace.iter().any(|r| r["kind"] == "request"
        && r["client"] == "workload"
        && r["verb"] == "delete"
        && r["code"] == 200));
    assert!(log.contains("released w2"), "{log}");
    assert!(
        log.contains("deleted"),
        "kubectl waited for the Widget to go: {log}"
    );
}

/// The official Python client's `watch.Watch().stream` through a `lag` window: every event
/// arrives, in order, and none before the lag has passed since it was made.
#[test]
fn python_watch_sees_lagged_events_in_order() {
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("lag.json");
    std::fs::write(
        &schedule,
        json!({"windows": [{"name": "lag", "resources": ["configmaps"], "fault": {"lag": {"delay": "1s"}}}]}).to_string(),
    )
    .unwrap();
    let proxy = Proxy::start(&sim, &["--schedule", schedule.to_str().unwrap()]);
    sim.kubectl_ok(&[
        "create",
        "configmap",
        "lagged",
        "-n",
        "default",
        "--from-literal=n=start",
    ]);
    let mut child = Command::new(venv("python"))
        .arg(repo("e2e/clients/python/watch_lag.py"))
        .args(["default", "5"])
        .env("KUBECONFIG", &proxy.kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(ready["ready"], true);
    std::thread::sleep(Duration::from_millis(300)); // the watch request is on its way
    let mut made = Vec::new();
    for n in 0..5 {
        made.push(SystemTime::now());
        sim.kubectl_ok(&[
            "patch",
            "configmap",
            "lagged",
            "-n",
            "default",
            "-p",
            &json!({"data": {"n": n.to_string()}}).to_string(),
        ]);
    }
    let got: Vec<Value> = lines
        .by_ref()
        .take(5)
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    let ns: Vec<&str> = got.iter().map(|e| e["n"].as_str().unwrap_or("?")).collect();
    assert_eq!(
        ns,
        ["0", "1", "2", "3", "4"],
        "in order, none lost: {got:?}"
    );
    let rvs: Vec<u64> = got
        .iter()
        .map(|e| e["resourceVersion"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "{rvs:?}");
    for (e, t) in got.iter().zip(&made) {
        let made_at = t
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let late = e["at"].as_f64().unwrap() - made_at;
        assert!(
            late >= 0.95,
            "event n={} arrived {late:.3}s after it was made (lag 1s)",
            e["n"]
        );
    }
}

/// The official JavaScript client (`@kubernetes/client-node`, installed by `.ci/run` with
/// `npm ci` from `e2e/clients/node/package-lock.json`).
fn node_project() -> PathBuf {
    let p = repo("e2e/clients/node");
    assert!(
        p.join("node_modules/@kubernetes/client-node").exists(),
        "e2e/clients/node/node_modules is missing: .ci/run makes it (cd e2e/clients/node && npm ci)"
    );
    p
}

/// What the simulator holds: name → (resourceVersion, data.n).
fn truth(sim: &Sim) -> std::collections::BTreeMap<String, (String, Value)> {
    let list: Value = serde_json::from_str(&sim.kubectl_ok(&[
        "get",
        "configmaps",
        "-n",
        "default",
        "-o",
        "json",
    ]))
    .unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_string(),
                (
                    o["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                    o["data"]["n"].clone(),
                ),
            )
        })
        .collect()
}

/// client-node's informer through `freeze`, `coalesce` and `relist {how: expired}` windows
/// opened over the control API: after each, its cache ends equal to ground truth (names,
/// resourceVersions, data), and through the coalesce it never saw the states in between.
#[test]
fn node_informer_ends_equal_to_ground_truth() {
    use std::io::Write;
    let sim = Sim::start();
    let proxy = Proxy::start(&sim, &[]);
    for name in ["a", "b", "c"] {
        sim.kubectl_ok(&[
            "create",
            "configmap",
            name,
            "-n",
            "default",
            "--from-literal=n=0",
        ]);
    }
    let mut child = Command::new("node")
        .arg(node_project().join("informer.mjs"))
        .arg("default")
        .env("KUBECONFIG", &proxy.kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node (Debian `nodejs`; .ci/run installs it)");
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&l) {
                let _ = tx.send(v);
            }
        }
    });
    let mut seen: Vec<Value> = Vec::new();
    let next_until = |what: &str, f: &dyn Fn(&Value) -> bool, seen: &mut Vec<Value>| -> Value {
        loop {
            let v = rx
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("timed out waiting for {what}; saw {seen:?}"));
            seen.push(v.clone());
            if f(&v) {
                return v;
            }
        }
    };
    next_until("ready", &|v| v["ready"] == true, &mut seen);
    let cache = |stdin: &mut std::process::ChildStdin, seen: &mut Vec<Value>| {
        stdin.write_all(b"dump\n").unwrap();
        let c = next_until("the cache", &|v| v.get("cache").is_some(), seen);
        c["cache"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["name"].as_str().unwrap().to_string(),
                    (o["rv"].as_str().unwrap().to_string(), o["n"].clone()),
                )
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let open = |window: Value| {
        let (code, body) = proxy.admin_call(None, "POST", "/v1/windows", Some(&window));
        assert!(code < 300, "{code} {body}");
    };
    let settled = |stdin: &mut std::process::ChildStdin, seen: &mut Vec<Value>, phase: &str| {
        let want = truth(&sim);
        let start = std::time::Instant::now();
        loop {
            let got = cache(stdin, seen);
            if got == want {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "{phase}: the informer's cache {got:?} never became ground truth {want:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };

    // Freeze: changes made while it holds arrive after it.
    open(
        json!({"name": "freeze", "resources": ["configmaps"], "fault": {"freeze": {}}, "duration": "2s"}),
    );
    sim.kubectl_ok(&[
        "patch",
        "configmap",
        "a",
        "-n",
        "default",
        "-p",
        r#"{"data":{"n":"1"}}"#,
    ]);
    sim.kubectl_ok(&[
        "patch",
        "configmap",
        "a",
        "-n",
        "default",
        "-p",
        r#"{"data":{"n":"2"}}"#,
    ]);
    sim.kubectl_ok(&[
        "create",
        "configmap",
        "d",
        "-n",
        "default",
        "--from-literal=n=0",
    ]);
    std::thread::sleep(Duration::from_millis(2200));
    settled(&mut stdin, &mut seen, "freeze");

    // Coalesce: three changes in the window, the informer sees only the last.
    let mark = seen.len();
    open(
        json!({"name": "coalesce", "resources": ["configmaps"], "fault": {"coalesce": {}}, "duration": "2s"}),
    );
    for n in ["1", "2", "3"] {
        sim.kubectl_ok(&[
            "patch",
            "configmap",
            "c",
            "-n",
            "default",
            "-p",
            &json!({"data": {"n": n}}).to_string(),
        ]);
    }
    next_until(
        "c at n=3",
        &|v| v["name"] == "c" && v["n"] == "3",
        &mut seen,
    );
    settled(&mut stdin, &mut seen, "coalesce");
    let states: Vec<&Value> = seen[mark..]
        .iter()
        .filter(|v| v["name"] == "c" && v.get("event").is_some())
        .map(|v| &v["n"])
        .collect();
    assert_eq!(
        states,
        [&json!("3")],
        "through the coalesce the informer saw only the last state"
    );

    // Relist (expired): the informer's watch gets 410; it lists again and catches up.
    open(
        json!({"name": "relist", "resources": ["configmaps"], "fault": {"relist": {"how": "expired"}}, "duration": "500ms"}),
    );
    sim.kubectl_ok(&[
        "patch",
        "configmap",
        "a",
        "-n",
        "default",
        "-p",
        r#"{"data":{"n":"9"}}"#,
    ]);
    sim.kubectl_ok(&["delete", "configmap", "b", "-n", "default"]);
    std::thread::sleep(Duration::from_millis(700));
    settled(&mut stdin, &mut seen, "relist");
    assert!(
        seen.iter()
            .any(|v| v["event"] == "delete" && v["name"] == "b"),
        "the delete reached the informer: {seen:?}"
    );

    stdin.write_all(b"quit\n").unwrap();
    let _ = child.wait();
}
