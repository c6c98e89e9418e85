//! Sessions against a fresh simulator, with kubectl as the controller and the workload.

use super::*;
use std::path::Path;
use std::time::Duration;

fn setup() -> Vec<crate::setup::Manifest> {
    crate::setup::parse(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n",
        "setup.yaml",
    )
    .unwrap()
}

/// A run of `controller` on a fresh simulator with the `demo` namespace as its setup.
fn on_sim(dir: &Path, controller: Vec<String>) -> Options {
    Options {
        setup: setup(),
        ..Options::new(
            std::sync::Arc::new(upstream::sim::Sim),
            Default::default(),
            controller,
            dir.to_path_buf(),
        )
    }
}

/// `sh -c SCRIPT` with every kubectl it runs given a discovery cache of its own, not the
/// user's ~/.kube/cache: `KUBECACHEDIR` for those run through another program (`timeout 1
/// kubectl …` bypasses a shell function), the function for a kubectl older than that
/// variable.
fn sh(dir: &Path, script: &str) -> Vec<String> {
    let cache = dir.join("kubectl-cache");
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "export KUBECACHEDIR={0}; kubectl() {{ command kubectl --cache-dir {0} \"$@\"; }}; {script}",
            cache.display()
        ),
    ]
}

fn requests<'a>(trace: &'a [Stamped], client: &str) -> Vec<(&'a str, &'a str)> {
    trace
        .iter()
        .filter_map(|s| match &s.record {
            Record::Request {
                client: c,
                verb,
                resource,
                ..
            } if c == client => Some((*verb, resource.as_str())),
            _ => None,
        })
        .collect()
}

/// The run ends when the controller has been quiet; its writes are in the trace under
/// its listener's name, and what it created is in the end state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ends_when_quiet_with_a_trace_and_the_end_state() {
    let dir = tempfile::tempdir().unwrap();
    let controller = sh(
        dir.path(),
        "kubectl create configmap made -n demo --from-literal=k=v && exec sleep 60",
    );
    let mut o = on_sim(dir.path(), controller);
    o.end = End::Quiet {
        quiet: Duration::from_millis(700),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    o.snapshot = true;
    o.output = Some(dir.path().join("out.log"));
    let out = run(o).await.unwrap();
    assert_eq!(out.ended, Ended::Quiet);
    assert!(out.controller_failed.is_none());
    assert!(
        requests(&out.trace, CONTROLLER).contains(&("create", "configmaps")),
        "{:?}",
        requests(&out.trace, CONTROLLER)
    );
    assert!(out.extent.resources.contains("configmaps"));
    assert!(out.extent.namespaces.contains("demo"));
    let made = out
        .snapshot
        .iter()
        .find(|(k, _)| k.resource == "configmaps" && k.name == "made")
        .map(|(_, v)| v.clone())
        .expect("the created ConfigMap is in the end state");
    assert_eq!(made["data"]["k"], "v");
    // The run's verdict lines end the trace.
    assert!(matches!(
        out.trace.last().map(|s| &s.record),
        Some(Record::Judgement { .. })
    ));
}

/// The workload starts once the controller has settled, on its own listener; the run
/// waits for it; its exit status is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workload_is_another_client_and_the_run_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    // A controller that only watches: ready once its watch is open, never writing.
    let mut o = on_sim(
        dir.path(),
        sh(dir.path(), "kubectl get configmaps -n demo --watch -o name"),
    );
    o.workload = vec![
        sh(
            dir.path(),
            "sleep 1; kubectl create configmap by-workload -n demo; exit 3",
        )
        .remove(2),
    ];
    o.settle_before_workload = Duration::from_millis(300);
    o.end = End::Quiet {
        quiet: Duration::from_millis(300),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    o.snapshot = true;
    let out = run(o).await.unwrap();
    assert_eq!(out.ended, Ended::Quiet);
    assert_eq!(out.workload_exit, Some(3));
    assert!(requests(&out.trace, WORKLOAD).contains(&("create", "configmaps")));
    assert!(!requests(&out.trace, CONTROLLER).contains(&("create", "configmaps")));
    // Quiet counts from the workload's end: the controller gets `quiet` to react to it.
    let workload_wrote = out
        .trace
        .iter()
        .filter(|s| matches!(&s.record, Record::Request { client, .. } if client == WORKLOAD))
        .map(|s| s.at)
        .max()
        .unwrap();
    let ended = out.trace.last().unwrap().at;
    assert!(
        ended.duration_since(workload_wrote).unwrap() >= Duration::from_millis(300),
        "the run ended {:?} after the workload's last request",
        ended.duration_since(workload_wrote)
    );
    assert!(
        out.snapshot
            .keys()
            .any(|k| k.resource == "configmaps" && k.name == "by-workload")
    );
}

/// Workload steps run one after another, each once the controller has settled after the
/// one before; a step that fails ends the workload, its exit the workload's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_steps_wait_for_the_controller_and_a_failing_step_ends_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = on_sim(
        dir.path(),
        sh(dir.path(), "kubectl get configmaps -n demo --watch -o name"),
    );
    let step = |cmd: &str| sh(dir.path(), cmd).remove(2);
    o.workload = vec![
        step("kubectl create configmap step-1 -n demo"),
        step("kubectl create configmap step-2 -n demo; exit 4"),
        step("kubectl create configmap step-3 -n demo"),
    ];
    o.settle_before_workload = Duration::from_millis(700);
    o.end = End::Quiet {
        quiet: Duration::from_millis(300),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    o.snapshot = true;
    let out = run(o).await.unwrap();
    assert_eq!(out.ended, Ended::Quiet);
    assert_eq!(out.workload_exit, Some(4));
    let created = |name: &str| {
        out.trace.iter().find_map(|s| match &s.record {
            Record::Created { name: n, .. } if n == name => Some(s.at),
            _ => None,
        })
    };
    let (one, two) = (created("step-1").unwrap(), created("step-2").unwrap());
    assert!(created("step-3").is_none(), "a step after a failed one ran");
    // The second step waited for the controller to settle after the first.
    assert!(
        two.duration_since(one).unwrap() >= Duration::from_millis(700),
        "step 2 began {:?} after step 1",
        two.duration_since(one)
    );
}

/// A controller whose start-up is quiet for longer than the workload's settle (caches
/// syncing, workers starting) before it reconciles: asked to, the first step waits for
/// its first write, so the user acts on a controller that has acted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_step_can_wait_for_the_controllers_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = on_sim(
        dir.path(),
        sh(
            dir.path(),
            "kubectl get configmaps -n demo -o name; sleep 2; kubectl create configmap by-controller -n demo; kubectl get configmaps -n demo --watch -o name",
        ),
    );
    o.workload = vec![sh(dir.path(), "kubectl create configmap by-workload -n demo").remove(2)];
    o.settle_before_workload = Duration::from_millis(300);
    o.first_step_after_a_write = true;
    o.end = End::Quiet {
        quiet: Duration::from_millis(300),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    let out = run(o).await.unwrap();
    assert_eq!(out.workload_exit, Some(0));
    let created = |name: &str| {
        out.trace.iter().find_map(|s| match &s.record {
            Record::Created { name: n, .. } if n == name => Some(s.at),
            _ => None,
        })
    };
    let (controller, workload) = (created("by-controller"), created("by-workload"));
    assert!(
        controller.is_some() && workload.is_some() && controller < workload,
        "the step ran before the controller's first write: {controller:?} {workload:?}"
    );
}

/// A controller that never stops writing is cut at `max_run`; a setup that names an
/// unknown kind fails the run before the controller starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_controller_is_cut_and_a_bad_setup_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let busy = sh(
        dir.path(),
        "while true; do kubectl annotate --overwrite namespace demo at=$(date +%s%N) >/dev/null; done",
    );
    let mut o = on_sim(dir.path(), busy.clone());
    o.end = End::Quiet {
        quiet: Duration::from_secs(2),
        max_run: Duration::from_secs(4),
    };
    let out = run(o).await.unwrap();
    assert_eq!(out.ended, Ended::MaxRun);

    let mut o = Options::new(
        std::sync::Arc::new(upstream::sim::Sim),
        Default::default(),
        busy,
        dir.path().to_path_buf(),
    );
    o.setup = crate::setup::parse(
        r#"{"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "x"}}"#,
        "bad.yaml",
    )
    .unwrap();
    let e = run(o).await.err().expect("the setup fails");
    let e = format!("{e:#}");
    assert!(
        e.contains("applying --setup") && e.contains("bad.yaml, document 1 (Nope x)"),
        "{e}"
    );
}

/// A controller quiet by the proxy's account whose workqueue metrics never say idle
/// (Karpenter's provisioner waits inside its work item: its unfinished-work gauge is
/// never 0) is cut at twice `max_run`, the hard limit, and not run for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_but_never_idle_by_its_metrics_is_cut_at_twice_max_run() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = dir.path().join("m");
    std::fs::create_dir_all(&metrics).unwrap();
    std::fs::write(
        metrics.join("metrics"),
        "workqueue_depth{name=\"p\"} 0\nworkqueue_unfinished_work_seconds{name=\"p\"} 0.5\nworkqueue_adds_total{name=\"p\"} 1\nworkqueue_retries_total{name=\"p\"} 0\n",
    )
    .unwrap();
    let script = format!(
        "kubectl annotate namespace demo a=1 >/dev/null && cd {} && exec python3 -m http.server --bind 127.0.0.1 \"$STALEMATE_METRICS_PORT\" >/dev/null 2>&1",
        metrics.display()
    );
    let mut o = on_sim(dir.path(), sh(dir.path(), &script));
    o.idle_url = Some("http://127.0.0.1:$STALEMATE_METRICS_PORT/metrics".into());
    o.end = End::Quiet {
        quiet: Duration::from_secs(1),
        max_run: Duration::from_secs(3),
    };
    let out = tokio::time::timeout(Duration::from_secs(120), run(o))
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(out.ended, Ended::MaxRun);
}

/// A controller that asks the simulator for what it cannot answer (here a pod's log, as
/// `kubectl logs` would) is not judged: the run fails naming it and pointing at
/// `--envtest`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_simulator_cannot_answer_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let controller = sh(
        dir.path(),
        "kubectl get --raw /api/v1/namespaces/demo/pods/p/log; exec sleep 60",
    );
    let mut o = on_sim(dir.path(), controller);
    o.end = End::Quiet {
        quiet: Duration::from_millis(700),
        max_run: Duration::from_secs(60),
    };
    o.output = Some(dir.path().join("out.log"));
    let e = run(o).await.err().expect("the run is not judged");
    let e = format!("{e:#}");
    assert!(
        e.contains("get pods/log (1×)") && e.contains("--envtest"),
        "{e}"
    );
}

/// The quiet clock starts once the controller is ready: a controller that takes longer
/// to start than `quiet` (importing its client, syncing its informers) is still judged
/// after it acted, not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_counts_from_a_slow_controllers_first_request() {
    let dir = tempfile::tempdir().unwrap();
    let controller = sh(
        dir.path(),
        "sleep 2; kubectl create configmap late -n demo; exec sleep 60",
    );
    let mut o = on_sim(dir.path(), controller);
    o.end = End::Quiet {
        quiet: Duration::from_millis(300),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    let out = run(o).await.unwrap();
    assert_eq!(out.ended, Ended::Quiet);
    assert!(
        requests(&out.trace, CONTROLLER).contains(&("create", "configmaps")),
        "the run ended before the controller's first request: {:?}",
        requests(&out.trace, CONTROLLER)
    );
}

/// A controller that makes no request within `--start-timeout` is an error naming the
/// flag, not a quiet (and so clean) run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_that_never_starts_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = on_sim(dir.path(), sh(dir.path(), "exec sleep 60"));
    o.start_timeout = Duration::from_secs(1);
    o.end = End::Quiet {
        quiet: Duration::from_millis(300),
        max_run: Duration::from_secs(60),
    };
    let e = run(o)
        .await
        .err()
        .expect("a controller that never started is an error");
    let e = format!("{e:#}");
    assert!(
        e.contains("made no request within 1s") && e.contains("--start-timeout"),
        "{e}"
    );
}

/// Supervised as a Deployment would (`restart_crashed`, explore's way): a controller
/// that exits once at start comes back and is judged on what it then does; one that
/// keeps exiting is a crash loop, named with its exits. What it keeps in
/// `STALEMATE_DATA_DIR` outlives its restarts, as a pod's emptyDir does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_restarted_and_a_crash_loop_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let controller = sh(
        dir.path(),
        r#"m="$STALEMATE_DATA_DIR/crashed-once"; if [ ! -e "$m" ]; then touch "$m"; kubectl get configmaps -n demo >/dev/null; exit 3; fi; kubectl create configmap after-crash -n demo; exec sleep 60"#,
    );
    let policy = crate::process::CrashPolicy {
        backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(200),
        reset_after: Duration::from_secs(600),
        give_up_after: Some(3),
    };
    let mut o = on_sim(dir.path(), controller);
    o.restart_crashed = Some(policy);
    o.end = End::Quiet {
        quiet: Duration::from_millis(500),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    o.snapshot = true;
    let out = run(o).await.unwrap();
    assert_eq!(out.ended, Ended::Quiet);
    assert!(
        out.controller_failed.is_none(),
        "{:?}",
        out.controller_failed
    );
    assert_eq!(out.crashes.len(), 1);
    assert_eq!(out.crashes[0].status, "exit status: 3");
    assert!(
        out.snapshot
            .keys()
            .any(|k| k.resource == "configmaps" && k.name == "after-crash"),
        "judged on what the restarted controller did"
    );
    assert!(dir.path().join("controller-data/crashed-once").exists());

    let mut o = on_sim(
        dir.path(),
        sh(
            dir.path(),
            "kubectl get configmaps -n demo >/dev/null; exit 4",
        ),
    );
    o.restart_crashed = Some(policy);
    o.end = End::Quiet {
        quiet: Duration::from_millis(500),
        max_run: Duration::from_secs(60),
    };
    let out = run(o).await.unwrap();
    assert_eq!(out.ended, Ended::ControllerExited);
    let why = out.controller_failed.expect("a crash loop is a failure");
    assert!(
        why.contains("kept exiting: 3 exits (exit status: 4, exit status: 4, exit status: 4)"),
        "{why}"
    );
}

/// A write whose client goes away before its answer (a controller killed mid-request)
/// is traced all the same, as `abandoned` with code 499: the upstream may have done it,
/// and explore must not count it as not done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_its_client_gave_up_on_is_traced_as_abandoned() {
    let dir = tempfile::tempdir().unwrap();
    // Creates of configmaps wait 3 s in the proxy; the client gives up after 1 s.
    let schedule: crate::schedule::Schedule = serde_json::from_value(serde_json::json!({
        "clients": {"controller": {"listener": "controller"}},
        "windows": [{"name": "slow", "client": "controller", "resources": ["configmaps"],
                     "fault": {"latency": {"verbs": ["create"], "delay": "3s"}},
                     "trigger": {"at": "0s"}, "duration": "30s"}]
    }))
    .unwrap();
    let controller = sh(
        dir.path(),
        "kubectl get configmaps -n demo >/dev/null; timeout 1 kubectl create configmap slow -n demo; exec sleep 60",
    );
    let mut o = on_sim(dir.path(), controller);
    o.schedule = schedule;
    o.end = End::After(Duration::from_secs(4));
    o.trace = TraceTo::Memory;
    let out = run(o).await.unwrap();
    let abandoned: Vec<_> = out
        .trace
        .iter()
        .filter(|s| {
            matches!(
                &s.record,
                Record::Request {
                    verb: "create",
                    code: 499,
                    answer: "abandoned",
                    ..
                }
            )
        })
        .collect();
    assert_eq!(
        abandoned.len(),
        1,
        "{:#?}",
        requests(&out.trace, CONTROLLER)
    );
}

/// A quiet run whose end state is not what it should be yet goes on — a controller
/// waiting out a retry back-off makes no request — until it is (or `settle` is up);
/// without the check, the same run ends at its first quiet moment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_run_waits_for_its_end_state_within_settle() {
    let dir = tempfile::tempdir().unwrap();
    // Quiet for 3 s between its two writes: longer than `quiet`.
    let controller = sh(
        dir.path(),
        "kubectl create configmap first -n demo && sleep 3 && kubectl create configmap second -n demo && exec sleep 60",
    );
    let run_with = |check: bool| {
        let mut o = on_sim(dir.path(), controller.clone());
        o.end = End::Quiet {
            quiet: Duration::from_millis(700),
            max_run: Duration::from_secs(60),
        };
        o.snapshot = true;
        o.output = Some(dir.path().join("out.log"));
        o.extent_hint = Extent {
            resources: ["configmaps".to_string()].into(),
            namespaces: ["demo".to_string()].into(),
        };
        if check {
            o.end_state = Some(EndStateCheck {
                ok: Box::new(|s: &Snapshot| {
                    s.keys()
                        .any(|k| k.resource == "configmaps" && k.name == "second")
                }),
                settle: Duration::from_secs(50),
            });
        }
        o
    };
    let has = |out: &Outcome, name: &str| {
        out.snapshot
            .keys()
            .any(|k| k.resource == "configmaps" && k.name == name)
    };
    let early = run(run_with(false)).await.unwrap();
    assert_eq!(early.ended, Ended::Quiet);
    assert!(has(&early, "first") && !has(&early, "second"));
    let waited = run(run_with(true)).await.unwrap();
    assert_eq!(waited.ended, Ended::Quiet);
    assert!(has(&waited, "first") && has(&waited, "second"));
}

/// A server-side apply that makes an object (a patch answered 201 Created, as
/// cert-manager makes its Secrets) is traced as a create, as a POST is; the same apply
/// again (200) is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_side_apply_that_makes_an_object_is_traced_as_a_create() {
    let dir = tempfile::tempdir().unwrap();
    let cm = "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: applied, namespace: demo}\\ndata: {a: b}\\n'";
    let controller = sh(
        dir.path(),
        &format!(
            "{cm} | kubectl apply --server-side --field-manager=ctl -f - && {cm} | kubectl apply --server-side --field-manager=ctl -f - && exec sleep 60"
        ),
    );
    let mut o = on_sim(dir.path(), controller);
    o.end = End::Quiet {
        quiet: Duration::from_millis(700),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    let out = run(o).await.unwrap();
    let patches: Vec<u16> = out
        .trace
        .iter()
        .filter_map(|s| match &s.record {
            Record::Request {
                client, verb, code, ..
            } if client == CONTROLLER && *verb == "patch" => Some(*code),
            _ => None,
        })
        .collect();
    assert_eq!(patches, [201, 200], "{patches:?}");
    assert_eq!(created_by(&out.trace, CONTROLLER), ["applied"]);
}

/// The names a client's creates made, as the trace has them.
fn created_by(trace: &[crate::trace::Stamped], client: &str) -> Vec<String> {
    trace
        .iter()
        .filter_map(|s| match &s.record {
            Record::Created {
                client: c, name, ..
            } if c == client => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// When a client's create of `name` was answered, as the trace has it.
fn created_at(trace: &[crate::trace::Stamped], client: &str, name: &str) -> std::time::SystemTime {
    trace
        .iter()
        .find_map(|s| match &s.record {
            Record::Created {
                client: c, name: n, ..
            } if c == client && n == name => Some(s.at),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no create of {name} by {client} in the trace"))
}

/// Two controllers under test at once (`run --controller NAME=CMD`): each on its own
/// listener, so its requests are its own client's in the trace, with its own ports, data
/// directory, `TMPDIR` and log; a whole `partition` aimed at one of them (the other's node is
/// healthy), opened by its first create, holds that create until the window closes,
/// while the other's create made meanwhile goes through. Both are stopped at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controllers_one_partitioned() {
    let dir = tempfile::tempdir().unwrap();
    let cut = sh(
        dir.path(),
        r#"echo main-says-hello; touch "$STALEMATE_DATA_DIR/mine" "$TMPDIR/mine"; sleep 0.5; kubectl create configmap from-main -n demo; kubectl create configmap main-after -n demo; exec sleep 60"#,
    );
    let mut o = on_sim(dir.path(), cut);
    let other = format!(
        r#"echo second-says-hello; export KUBECACHEDIR={0}/other-cache; touch "$STALEMATE_DATA_DIR/mine" "$TMPDIR/mine"; echo "$STALEMATE_METRICS_PORT" > "$STALEMATE_DATA_DIR/port"; kubectl --cache-dir {0}/other-cache create configmap from-other -n demo; until kubectl --cache-dir {0}/other-cache get configmap from-main -n demo >/dev/null 2>&1 && false; do [ -e "$STALEMATE_DATA_DIR/done" ] && break; sleep 1.5; kubectl --cache-dir {0}/other-cache --request-timeout=2s create configmap other-during -n demo && touch "$STALEMATE_DATA_DIR/done"; done; exec sleep 60"#,
        dir.path().display()
    );
    o.others = vec![crate::session::Other::parse(&format!("second={other}")).unwrap()];
    o.schedule = serde_json::from_value(serde_json::json!({
        "windows": [{"name": "cut", "client": "controller", "fault": {"partition": {}},
                     "trigger": {"afterRequests": {"verb": "create", "resource": "configmaps"}},
                     "duration": "3s"}]
    }))
    .unwrap();
    o.end = End::Quiet {
        quiet: Duration::from_millis(800),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    o.snapshot = true;
    let log = dir.path().join("logs/run.log");
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    o.output = Some(log.clone());
    let out = run(o).await.unwrap();
    assert!(
        out.controller_failed.is_none(),
        "{:?}",
        out.controller_failed
    );
    // Each its own log: the other's beside the run's, not interleaved.
    let other_log = crate::session::other_log(&log, "second");
    assert_eq!(other_log, dir.path().join("logs/run.second.log"));
    let (main_said, other_said) = (
        std::fs::read_to_string(&log).unwrap(),
        std::fs::read_to_string(&other_log).unwrap(),
    );
    assert!(main_said.contains("main-says-hello") && !main_said.contains("second-says"));
    assert!(other_said.contains("second-says-hello") && !other_said.contains("main-says"));
    for name in ["from-main", "main-after", "from-other", "other-during"] {
        assert!(
            out.snapshot
                .keys()
                .any(|k| k.resource == "configmaps" && k.name == name),
            "{name} was not created"
        );
    }
    let creates = |client: &str| created_by(&out.trace, client);
    assert!(creates("second").contains(&"other-during".to_string()));
    assert!(!creates("controller").contains(&"other-during".to_string()));
    assert!(creates("controller").contains(&"main-after".to_string()));
    // The other controller's create made during the window went through: not cut off.
    let window_closed = out
        .trace
        .iter()
        .find_map(|s| match &s.record {
            Record::Window { action, .. } if *action == "close" => Some(s.at),
            _ => None,
        })
        .expect("the window closed");
    let at = |client: &str, name: &str| created_at(&out.trace, client, name);
    assert!(at("second", "other-during") < window_closed);
    assert!(at("controller", "main-after") >= window_closed);
    for d in [
        "controller-data/mine",
        "second-data/mine",
        "second-data/port",
        // A temp dir of each one's own, as a pod's /tmp.
        "controller-tmp/mine",
        "second-tmp/mine",
    ] {
        assert!(dir.path().join(d).exists(), "{d}");
    }
}

/// A `restart` window aimed at another controller under test kills and starts that one
/// (its data directory outlives it) and leaves the controller after `--` running; the
/// trace and the verdicts name whose restart it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_aimed_at_another_controller_restarts_that_one() {
    let dir = tempfile::tempdir().unwrap();
    let main = sh(
        dir.path(),
        r#"echo started >> "$STALEMATE_DATA_DIR/starts"; kubectl create configmap from-main -n demo; exec sleep 60"#,
    );
    let mut o = on_sim(dir.path(), main);
    let other = format!(
        r#"echo started >> "$STALEMATE_DATA_DIR/starts"; sleep 0.3; kubectl --cache-dir {0}/other-cache create configmap from-other -n demo || true; exec sleep 60"#,
        dir.path().display()
    );
    o.others = vec![crate::session::Other::parse(&format!("second={other}")).unwrap()];
    o.schedule = serde_json::from_value(serde_json::json!({
        "windows": [{"name": "crash", "client": "second", "fault": {"restart": {}},
                     "trigger": {"afterRequests": {"verb": "create", "resource": "configmaps", "count": 1}}}]
    }))
    .unwrap();
    o.end = End::Quiet {
        quiet: Duration::from_millis(800),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    let out = run(o).await.unwrap();
    assert!(
        out.controller_failed.is_none(),
        "{:?}",
        out.controller_failed
    );
    // Quiet once the restarted one is ready again: the controller after `--`, which
    // made no request since, is not waiting for a start-up of its own.
    assert_eq!(out.ended, Ended::Quiet);
    let starts = |d: &str| {
        std::fs::read_to_string(dir.path().join(d).join("starts"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!((starts("controller-data"), starts("second-data")), (1, 2));
    let restarted: Vec<&str> = out
        .trace
        .iter()
        .filter_map(|s| match &s.record {
            Record::Restart { controller, .. } => Some(controller.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(restarted, ["second"]);
    let restarts = &out.report.verdicts.restarts;
    assert_eq!(restarts.len(), 1);
    assert_eq!(restarts[0].controller, "second");
}

/// The Leases the controllers under test wrote are read before they are stopped, with
/// how long each lasts while held (what explore sizes its partitions and recovery
/// allowance from); a released one says nothing, and a Lease the workload wrote is not a
/// controller's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_leases_are_read_with_their_duration() {
    let dir = tempfile::tempdir().unwrap();
    let lease = |name: &str, holder: &str, secs: u32| {
        format!(
            r#"printf '{{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"name":"{name}","namespace":"demo"}},"spec":{{"holderIdentity":"{holder}","leaseDurationSeconds":{secs}}}}}' | kubectl create -f -"#
        )
    };
    // `released`: what client-go's ReleaseOnCancel leaves, no holder and 1 s.
    let main = sh(
        dir.path(),
        &format!(
            "{}; {}; kubectl annotate lease mine -n demo renewed=1; exec sleep 60",
            lease("mine", "me", 35),
            lease("released", "", 1)
        ),
    );
    let mut o = on_sim(dir.path(), main);
    o.workload = sh(dir.path(), &lease("users", "user", 99));
    o.end = End::Quiet {
        quiet: Duration::from_millis(800),
        max_run: Duration::from_secs(60),
    };
    o.trace = TraceTo::Memory;
    o.snapshot = true;
    let out = run(o).await.unwrap();
    let held = |name: &str, secs: Option<u64>| leases::Held {
        controller: "controller".into(),
        namespace: "demo".into(),
        name: name.into(),
        duration: secs.map(Duration::from_secs),
    };
    assert_eq!(out.leases, [held("mine", Some(35)), held("released", None)]);
}

#[test]
fn another_controller_is_name_equals_command() {
    let o = crate::session::Other::parse("source=./source-controller.sh --flag=1").unwrap();
    assert_eq!(
        (o.name.as_str(), o.command.as_str()),
        ("source", "./source-controller.sh --flag=1")
    );
    for (bad, says) in [
        ("source", "give NAME=CMD"),
        ("Source=x", "lowercase letters"),
        ("controller=x", "is taken"),
        ("workload=x", "is taken"),
        ("other=x", "is taken"),
        ("s=  ", "no command"),
    ] {
        let e = crate::session::Other::parse(bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
}
