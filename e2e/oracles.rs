//! The oracles end to end: `stalemate demo` (every scenario), `stalemate run` around a
//! small kube-rs controller, and the HTML report in a real headless browser.

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{BIN, Sim};
use serde_json::Value;

const GR: &str = "gitrepositories.source.toolkit.fluxcd.io";

fn demo(dir: &Path, name: &str, args: &[&str]) -> Value {
    let json = dir.join(format!("{name}.json"));
    let out = Command::new(BIN)
        .arg("demo")
        .args(args)
        .arg("--report-json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "demo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

/// A simulator with the demo CRD and one GitRepository, `default/podinfo`, for the
/// demo controller to reconcile.
fn sim_with_podinfo() -> Sim {
    let sim = Sim::start();
    common::install_demo_crd(&sim);
    let repo = r#"{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "podinfo", "namespace": "default"}, "spec": {"url": "https://example.com/podinfo"}}"#;
    let out = sim.kubectl_stdin(&["create", "-f", "-"], repo);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sim
}

#[test]
fn demo_reports_the_stuck_object_and_the_fix_converges() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let fixed = std::thread::spawn(move || demo(&d, "fixed", &["--fixed", "--settle", "3s"]));
    let trace = dir.path().join("trace.jsonl");
    let live_html = dir.path().join("live.html");
    let stuck = demo(
        dir.path(),
        "stuck",
        &[
            "--settle",
            "3s",
            "--trace",
            trace.to_str().unwrap(),
            "--report-html",
            live_html.to_str().unwrap(),
        ],
    );
    assert_eq!(stuck["schema"], "stalemate.report/v1");
    // Staleness, recorded: ground truth of the GitRepository as it changed, and what the
    // controller was given — its own patch's event held by the freeze, then released.
    let truth = stuck["truth"].as_array().expect("truth marks");
    assert!(
        truth.iter().any(|t| t["name"] == "podinfo"
            && t["status"] == "InProgress"
            && t["observedGeneration"] == 0
            && t["generation"] == 1),
        "{truth:?}"
    );
    let fates: Vec<&str> = stuck["deliveries"]
        .as_array()
        .expect("delivery marks")
        .iter()
        .filter(|d| d["client"] == "gitrepo-controller" && d["name"] == "podinfo")
        .map(|d| d["fate"].as_str().unwrap())
        .collect();
    assert!(
        fates.contains(&"held") && fates.contains(&"released"),
        "{fates:?}"
    );
    // Drawn: a truth row, the client's row with the held and released event, and the
    // gap between them shaded — in a real browser.
    let dom = browser_dom(&live_html);
    assert!(
        dom.contains("class=\"truth\" data-status=\"InProgress\""),
        "{dom}"
    );
    assert!(
        dom.contains("class=\"gap\" data-client=\"gitrepo-controller\""),
        "{dom}"
    );
    assert!(
        dom.contains("class=\"held\"") && dom.contains("class=\"released\""),
        "{dom}"
    );
    assert!(dom.contains("seen by gitrepo-controller"), "{dom}");
    assert!(!dom.contains("<script"), "no scripts");
    assert_eq!(
        (stuck["verdict"].as_str(), stuck["judged"].as_bool()),
        (Some("fail"), Some(true))
    );
    let v = stuck["violations"].as_array().unwrap();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        (
            v[0]["oracle"].as_str(),
            v[0]["resource"].as_str(),
            v[0]["namespace"].as_str(),
            v[0]["name"].as_str()
        ),
        (Some("convergence"), Some(GR), Some("demo"), Some("podinfo"))
    );
    assert_eq!(
        v[0]["rule"],
        "InProgress: status.observedGeneration (0) != metadata.generation (1)"
    );
    let w = &stuck["windows"][0];
    assert_eq!(
        (w["name"].as_str(), w["fault"].as_str()),
        (Some("f1-stale-gitrepository"), Some("freeze"))
    );
    assert!(w["closedAt"].is_string());
    let conflicts = stuck["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["code"] == 409)
        .count();
    assert_eq!(
        conflicts, 5,
        "every retry of the conditions patch got a real 409"
    );
    assert_eq!(
        stuck["recoveries"][0]["seconds"],
        Value::Null,
        "never recovered"
    );

    let fixed = fixed.join().unwrap();
    assert_eq!(fixed["verdict"], "pass", "{fixed}");
    assert!(fixed["violations"].as_array().unwrap().is_empty());
    assert_eq!(fixed["objects"][0]["status"], "Current");
    assert!(fixed["recoveries"][0]["seconds"].is_number());

    // The trace renders into the same verdict, and its HTML opens in a real browser.
    let html = dir.path().join("report.html");
    let out = Command::new(BIN)
        .args([
            "report",
            trace.to_str().unwrap(),
            "--report-html",
            html.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("verdict: FAIL (1 violation(s))"), "{text}");
    let dom = browser_dom(&html);
    assert!(
        dom.contains("class=\"lane violated\" data-object=\"demo/podinfo\""),
        "{dom}"
    );
    assert!(
        dom.contains("class=\"window\" data-window=\"f1-stale-gitrepository\""),
        "{dom}"
    );
    assert_eq!(dom.matches("class=\"conflict\"").count(), 5);
    assert!(dom.contains("id=\"verdict\">FAIL"), "{dom}");
    // The trace has no ground truth, but it has what the controller was given.
    assert!(dom.contains("class=\"held\""), "{dom}");
}

/// The DOM chromium renders for a file (headless, no network, no sandbox in containers).
fn browser_dom(html: &Path) -> String {
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("a headless browser: `apt-get install chromium` (.ci/run installs it)");
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{browser}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn hot_loop_scenario_names_the_annotation() {
    let dir = tempfile::tempdir().unwrap();
    let r = demo(
        dir.path(),
        "hot",
        &["--scenario", "hot-loop", "--hot-loop-for", "2s"],
    );
    assert_eq!(r["verdict"], "fail");
    let v = &r["violations"][0];
    assert_eq!(
        (v["oracle"].as_str(), v["client"].as_str()),
        (Some("hotLoop"), Some("gitrepo-controller"))
    );
    assert!(
        v["rule"].as_str().unwrap().starts_with(
            "metadata.annotations[\"demo.stalemate.dev/reconciled-at\"] (changed on every write;"
        ),
        "{v}"
    );
}

/// Not a test of its own: `run_returns_…` starts this test binary again, filtered to this
/// function and with `STALEMATE_E2E_CONTROLLER` set, as the controller `stalemate run`
/// runs — a small kube-rs controller (the demo's, with Flux's patch pattern) configured
/// from `KUBECONFIG` like any other.
#[test]
fn controller_process() {
    use stalemate::demo::controller::{self, Behaviour};
    let Ok(mode) = std::env::var("STALEMATE_E2E_CONTROLLER") else {
        return;
    };
    let behaviour = if mode == "fixed" {
        Behaviour::Fixed
    } else {
        Behaviour::Buggy
    };
    // Each start appends the policy the kernel schedules it under (0 SCHED_OTHER, 3
    // SCHED_BATCH).
    if let Ok(path) = std::env::var("STALEMATE_E2E_POLICY_LOG") {
        use std::io::Write;
        let policy = common::sched_policy(&std::fs::read_to_string("/proc/self/stat").unwrap());
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(f, "{policy}").unwrap();
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = kube::Client::try_default()
            .await
            .expect("KUBECONFIG from stalemate run");
        let log: controller::Log = std::sync::Arc::new(|l| println!("{l}"));
        let queue = std::sync::Arc::new(stalemate::demo::metrics::Queue::new("gitrepository"));
        // With STALEMATE_E2E_METRICS: its workqueue metrics on the run's metrics port,
        // as `--metrics-bind-address=127.0.0.1:$STALEMATE_METRICS_PORT` would serve them.
        if std::env::var_os("STALEMATE_E2E_METRICS").is_some() {
            let port: u16 = std::env::var("STALEMATE_METRICS_PORT")
                .unwrap()
                .parse()
                .unwrap();
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            tokio::spawn(stalemate::demo::metrics::serve(addr, queue.clone()));
        }
        controller::run_with_metrics(client, behaviour, log, queue).await;
    });
}

/// Flux F1's schedule (a 1.5 s freeze after the controller's first status patch) with
/// the convergence oracle's `settle`, written in `dir`.
fn f1_schedule(dir: &Path, settle: &str) -> std::path::PathBuf {
    let schedule = dir.join("f1.json");
    std::fs::write(
        &schedule,
        serde_json::json!({
            "windows": [{
                "name": "f1", "resources": [GR], "fault": {"freeze": {}},
                "trigger": {"afterRequests": {"verb": "patch", "resource": GR, "subresource": "status", "count": 1}},
                "duration": "1500ms"
            }],
            "oracles": {"convergence": {"resources": [GR], "settle": settle}}
        })
        .to_string(),
    )
    .unwrap();
    schedule
}

/// A stuck controller that serves its workqueue metrics is judged once they say it has
/// settled — queues empty, the retry its conflicts caused come back — not after the
/// convergence oracle's 10 minutes of `settle` (which the run would otherwise wait out:
/// the object is not Current). The report says when and why. `--wait-settle` keeps
/// today's wait (not run here: it takes the 10 minutes).
#[test]
fn a_settled_controller_is_judged_without_waiting_out_settle() {
    let controller = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schedule = f1_schedule(dir.path(), "10m");
    let sim = sim_with_podinfo();
    let json = dir.path().join("run.json");
    let out = Command::new(BIN)
        .args(["run", "--schedule", schedule.to_str().unwrap()])
        .args(["--quiet", "1s", "--max-run", "20m", "--report-json"])
        .arg(&json)
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("STALEMATE_E2E_CONTROLLER", "buggy")
        .env("STALEMATE_E2E_METRICS", "1")
        .arg("--")
        .arg(&controller)
        .args(["controller_process", "--exact", "--nocapture"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}\n{report}");
    let v = &report["violations"][0];
    assert_eq!(v["oracle"], "convergence", "{report}");
    let why = v["why"].as_str().unwrap_or_default();
    assert!(
        why.contains(
            "when the controller's metrics said it had settled (workqueues empty, no retry pending)"
        ),
        "{why}"
    );
}

/// A run whose objects are right, with a controller whose workqueue metrics say it has
/// settled, ends then: not after `--quiet` (10 minutes here, which the run would
/// otherwise wait out), and it says so. Passes, exit 0.
#[test]
fn a_settled_controller_whose_objects_are_right_ends_without_waiting_out_quiet() {
    let controller = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schedule = f1_schedule(dir.path(), "3s");
    let sim = sim_with_podinfo();
    let json = dir.path().join("run.json");
    let out = Command::new(BIN)
        .args(["run", "--schedule", schedule.to_str().unwrap()])
        .args(["--quiet", "10m", "--max-run", "20m", "--report-json"])
        .arg(&json)
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("STALEMATE_E2E_CONTROLLER", "fixed")
        .env("STALEMATE_E2E_METRICS", "1")
        .arg("--")
        .arg(&controller)
        .args(["controller_process", "--exact", "--nocapture"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}\n{report}");
    assert_eq!(report["verdict"], "pass", "{report}");
    assert!(
        err.contains("before --quiet: the controller's metrics said it had settled"),
        "{err}"
    );
}

#[test]
fn run_returns_1_when_the_controller_is_stuck_and_0_when_fixed() {
    let controller = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schedule = f1_schedule(dir.path(), "3s");
    let go = |fixed: bool| {
        let sim = sim_with_podinfo();
        let json = dir.path().join(format!("run-{fixed}.json"));
        let out = Command::new(BIN)
            .args([
                "run",
                "--schedule",
                schedule.to_str().unwrap(),
                "--duration",
                "7s",
            ])
            .arg("--report-json")
            .arg(&json)
            .env("KUBECONFIG", &sim.kubeconfig)
            .env(
                "STALEMATE_E2E_CONTROLLER",
                if fixed { "fixed" } else { "buggy" },
            )
            .arg("--")
            .arg(&controller)
            .args(["controller_process", "--exact", "--nocapture"])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
            .unwrap_or(Value::Null);
        (
            out.status.code(),
            report,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, report, err) = go(false);
    assert_eq!(code, Some(1), "{err}\n{report}");
    assert_eq!(
        report["violations"][0]["rule"],
        "InProgress: status.observedGeneration (0) != metadata.generation (1)"
    );
    let (code, report, err) = go(true);
    assert_eq!(code, Some(0), "{err}\n{report}");
    assert_eq!(report["verdict"], "pass");

    // Failures are exit 2, and say which side failed.
    let out = Command::new(BIN)
        .args([
            "run",
            "--schedule",
            schedule.to_str().unwrap(),
            "--upstream-kubeconfig",
        ])
        .arg(dir.path().join("missing"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"));
}

/// A `touch` with a `delay`: 3 s after the controller's first status patch, the run
/// annotates its GitRepository and takes the annotation off again — two watch events
/// the controller is given — while `--quiet 1s` would have ended the run long before:
/// a window still to come keeps it going. The touch is a user's write (the run's own
/// credentials), not the controller's: it is in the trace as the window, and its events
/// as delivered to the controller.
#[test]
fn a_delayed_touch_reaches_the_controller_and_keeps_the_run_going() {
    let controller = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("touch.json");
    let patched =
        serde_json::json!({"verb": "patch", "resource": GR, "subresource": "status", "count": 1});
    std::fs::write(
        &schedule,
        serde_json::json!({
            "windows": [{
                "name": "nudge", "fault": {"touch": {"objects": [
                    {"resource": GR, "namespace": "default", "name": "podinfo"}]}},
                "trigger": {"afterRequests": patched, "delay": "3s"}
            }]
        })
        .to_string(),
    )
    .unwrap();
    let sim = sim_with_podinfo();
    let trace = dir.path().join("trace.jsonl");
    let out = Command::new(BIN)
        .args(["run", "--quiet", "1s", "--schedule"])
        .arg(&schedule)
        .arg("--trace")
        .arg(&trace)
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("STALEMATE_E2E_CONTROLLER", "fixed")
        .arg("--")
        .arg(&controller)
        .args(["controller_process", "--exact", "--nocapture"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let records: Vec<Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let at = |r: &Value| {
        humantime::parse_rfc3339_weak(r["ts"].as_str().unwrap_or_default()).expect("a timestamp")
    };
    let patch = records
        .iter()
        .find(|r| {
            r["kind"] == "request"
                && r["verb"] == "patch"
                && r["resource"] == format!("{GR}/status")
        })
        .expect("the controller's status patch");
    let opened = records
        .iter()
        .find(|r| r["kind"] == "window" && r["window"] == "nudge" && r["action"] == "open")
        .unwrap_or_else(|| panic!("the touch never opened: {err}"));
    let delay = at(opened).duration_since(at(patch)).unwrap_or_default();
    assert!(
        delay >= Duration::from_millis(2900),
        "opened {delay:?} after the patch"
    );
    // Both of its writes reached the controller's watch, after it.
    let after = records
        .iter()
        .filter(|r| {
            r["kind"] == "event"
                && r["client"] == "controller"
                && r["resource"] == GR
                && r["type"] == "MODIFIED"
                && r["fate"] == "delivered"
                && at(r) >= at(opened)
        })
        .count();
    assert!(after >= 2, "{after} events after the touch: {records:#?}");
    // And nothing of it is left on the object.
    let out = sim.kubectl_ok(&[
        "get",
        GR,
        "podinfo",
        "-o",
        "jsonpath={.metadata.annotations}",
    ]);
    assert!(!out.contains("stalemate.io/touched"), "{out}");
}

/// A `restart` window kills the controller right after its first status patch has been
/// answered, and starts it again: the oracles judge its recovery, the report lists the
/// restart, and `run`'s exit status is the verdict — not the kill.
#[test]
fn run_restarts_the_controller_and_judges_its_recovery() {
    let controller = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("crash.json");
    std::fs::write(
        &schedule,
        serde_json::json!({
            "windows": [{
                "name": "crash", "fault": {"restart": {"down": "500ms"}},
                "trigger": {"afterRequests": {"verb": "patch", "resource": GR, "subresource": "status", "count": 1}}
            }],
            "oracles": {"convergence": {"resources": [GR], "settle": "3s"}}
        })
        .to_string(),
    )
    .unwrap();
    let sim = sim_with_podinfo();
    let json = dir.path().join("run.json");
    let trace = dir.path().join("run.jsonl");
    let policies = dir.path().join("policies");
    let out = Command::new(BIN)
        .args([
            "run",
            "--schedule",
            schedule.to_str().unwrap(),
            "--duration",
            "8s",
        ])
        .arg("--report-json")
        .arg(&json)
        .arg("--trace")
        .arg(&trace)
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("STALEMATE_E2E_CONTROLLER", "fixed")
        .env("STALEMATE_E2E_POLICY_LOG", &policies)
        .arg("--")
        .arg(&controller)
        .args(["controller_process", "--exact", "--nocapture"])
        .output()
        .unwrap();
    let report: Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap_or_default()).unwrap_or(Value::Null);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}\n{report}");
    assert_eq!(report["verdict"], "pass");
    let restarts = report["restarts"].as_array().unwrap();
    assert_eq!(restarts.len(), 1, "{report}");
    // The restart was started from the serving thread that forwarded the status patch,
    // which runs SCHED_BATCH; the controller runs under the kernel's default both times,
    // as it would on its own.
    assert_eq!(
        std::fs::read_to_string(&policies).unwrap_or_default(),
        "0\n0\n",
        "the controller's scheduling policy at each start"
    );
    assert_eq!(restarts[0]["window"], "crash");
    assert_eq!(restarts[0]["downSeconds"], 0.5);
    // The kill came after the status patch was answered.
    let first_status_patch = report["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["verb"] == "patch" && m["code"] == 200)
        .expect("a status patch on the timeline");
    let at = |v: &Value| humantime::parse_rfc3339_weak(v.as_str().unwrap()).unwrap();
    assert!(at(&first_status_patch["at"]) <= at(&restarts[0]["at"]));
    // Recovered: Current after the restart window, and measured.
    let recovered = report["recoveries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["window"] == "crash")
        .expect("a recovery measured after the restart");
    assert!(recovered["seconds"].is_number(), "{report}");
    // The trace shows it, and `stalemate report` renders it from the trace.
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains(r#""kind":"restart""#) && l.contains("crash"))
    );
    let html = dir.path().join("from-trace.html");
    let st = Command::new(BIN)
        .arg("report")
        .arg(&trace)
        .arg("--report-html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(st.status.success());
    assert!(String::from_utf8_lossy(&st.stdout).contains("controller restarts:"));
    assert!(
        std::fs::read_to_string(&html)
            .unwrap()
            .contains("controller killed by crash")
    );
}

/// `serve` has no process to restart: a `restart` window is refused, in a schedule and
/// over the control API, saying why.
#[test]
fn serve_refuses_restart_windows() {
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("crash.json");
    std::fs::write(
        &schedule,
        r#"{"windows": [{"name": "crash", "fault": {"restart": {}}, "trigger": {"manual": {}}}]}"#,
    )
    .unwrap();
    let out = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--tls-dir",
        ])
        .arg(dir.path().join("tls"))
        .arg("--upstream-kubeconfig")
        .arg(&sim.kubeconfig)
        .arg("--schedule")
        .arg(&schedule)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"crash\"") && err.contains("stalemate run"),
        "{err}"
    );
    let proxy = common::Proxy::start(&sim, &[]);
    let (code, body) = proxy.admin_call(
        None,
        "POST",
        "/v1/windows",
        Some(&serde_json::json!({"name": "crash", "fault": {"restart": {}}})),
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("fault.restart"),
        "{body}"
    );
}

/// `run` with the demo controller under `schedule`, ended by `--quiet 1s`: its exit code,
/// JSON report and stdout (the terminal report).
fn run_quiet(schedule: &Path, json: &Path) -> (Option<i32>, Value, String) {
    let controller = std::env::current_exe().unwrap();
    let sim = sim_with_podinfo();
    let out = Command::new(BIN)
        .args(["run", "--schedule", schedule.to_str().unwrap()])
        .args(["--quiet", "1s", "--max-run", "5m", "--report-json"])
        .arg(json)
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("STALEMATE_E2E_CONTROLLER", "fixed")
        .arg("--")
        .arg(&controller)
        .args(["controller_process", "--exact", "--nocapture"])
        .output()
        .unwrap();
    let report: Value =
        serde_json::from_slice(&std::fs::read(json).unwrap_or_default()).unwrap_or(Value::Null);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code(), report, format!("{stdout}\n{stderr}"))
}

/// A schedule whose window never matches the controller (`config/flux-f1.json` is aimed
/// at source-controller's user agent) passes — no violation, exit 0 as documented — but
/// says, in the terminal and the JSON report, that no window opened, so nothing was
/// tested. The generic `config/first-run.json` opens on the same controller (matched by
/// its listener), and lists the windows it never gave a reason to open.
#[test]
fn a_run_whose_windows_never_opened_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("flux-f1.json");
    let (code, report, out) = run_quiet(&common::repo("config/flux-f1.json"), &json);
    assert_eq!(code, Some(0), "{out}\n{report}");
    assert_eq!(report["verdict"], "pass", "{report}");
    assert_eq!(report["noWindowOpened"], true, "{report}");
    assert_eq!(
        report["windowsNeverOpened"],
        serde_json::json!(["f1-stale-gitrepository"]),
        "{report}"
    );
    assert!(
        out.contains("no window opened: the faults never reached the controller — check the windows' clients and resources"),
        "{out}"
    );
    assert!(
        out.contains("verdict: PASS, but nothing was tested"),
        "{out}"
    );

    let json = dir.path().join("first-run.json");
    let (code, report, out) = run_quiet(&common::repo("config/first-run.json"), &json);
    assert_eq!(code, Some(0), "{out}\n{report}");
    assert!(report.get("noWindowOpened").is_none(), "{report}");
    let opened: Vec<&str> = report["windows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["name"].as_str())
        .collect();
    assert_eq!(opened, ["after-first-patch"], "{report}");
    assert_eq!(
        report["windowsNeverOpened"],
        serde_json::json!(["after-first-create", "after-first-update"]),
        "{report}"
    );
    assert!(
        out.contains("never opened: after-first-create, after-first-update"),
        "{out}"
    );
}
