//! `stalemate run --envtest`: a controller behind the proxy in front of a real control
//! plane of its own (etcd and kube-apiserver of the default pinned version, v1.37, built
//! from the Go module proxy,
//! `e2e/assets/build.sh`). The demo controller's F1 on the real apiserver and its fix;
//! what the controller's environment is told; kube-controller-manager itself as the
//! controller under test, with kwok's fake node running its pods; and bad input — a
//! missing directory, a wrong binary, an apiserver that fails or never gets ready — each
//! a clear error with nothing left running; and a Ctrl-C while the control plane starts.

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::envtest::{assets, default_minor, output_in_group, processes_mentioning};
use common::{BIN, repo};
use serde_json::Value;

const CONTROLLER_ENV: &str = "STALEMATE_E2E_ENVTEST_CONTROLLER";
const GR: &str = "gitrepositories.source.toolkit.fluxcd.io";

/// Run as the demo controller when `stalemate run` starts this binary again.
#[test]
fn controller_process() {
    use stalemate::demo::controller::{self, Behaviour};
    let Ok(which) = std::env::var(CONTROLLER_ENV) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = kube::Client::try_default()
            .await
            .expect("KUBECONFIG from stalemate");
        let log: controller::Log = std::sync::Arc::new(|l| println!("{l}"));
        match which.as_str() {
            "gitrepo" => controller::run(client, Behaviour::Buggy, log).await,
            "gitrepo-fixed" => controller::run(client, Behaviour::Fixed, log).await,
            other => panic!("no controller {other:?}"),
        }
    });
}

fn controller_argv() -> Vec<String> {
    vec![
        std::env::current_exe().unwrap().display().to_string(),
        "controller_process".into(),
        "--exact".into(),
        "--nocapture".into(),
    ]
}

/// The window behind F1 (`config/flux-f1.json`, for any client): the GitRepository's
/// watch frozen 1.5 s after the controller's first status patch, judged 3 s after.
const F1: &str = r#"{
  "windows": [{
    "name": "f1", "resources": ["gitrepositories.source.toolkit.fluxcd.io"],
    "fault": {"freeze": {}}, "duration": "1500ms",
    "trigger": {"afterRequests": {"verb": "patch", "subresource": "status", "count": 1}}
  }],
  "oracles": {"convergence": {"resources": ["gitrepositories.source.toolkit.fluxcd.io"], "settle": "3s"}}
}"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn stalemate(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args).env("RUST_LOG", "warn,rustls=error");
    for (k, v) in env {
        c.env(k, v);
    }
    output_in_group(&mut c)
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// F1 on the real thing: the demo controller, with Flux's patch pattern, against a real
/// kube-apiserver — its optimistic-lock conditions patch gets the real server's 409s
/// while its view is frozen, and the GitRepository is left stuck. The fixed controller,
/// through the same window, converges. The run says what it ran against.
#[test]
fn f1_on_a_real_apiserver_and_the_fix_converges() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = write(dir.path(), "f1.json", F1);
    let assets = assets();
    let setup = repo("examples/gitrepo/setup.yaml");
    let argv = |_: &str| -> Vec<String> {
        let mut a: Vec<String> = [
            "run",
            "--envtest",
            assets.to_str().unwrap(),
            "--setup",
            setup.to_str().unwrap(),
            "--quiet",
            "3s",
            "--max-run",
            "120s",
            "--schedule",
            schedule.to_str().unwrap(),
            "--",
        ]
        .map(String::from)
        .to_vec();
        a.extend(controller_argv());
        a
    };
    let args = argv("");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let buggy = stalemate(&args, &[(CONTROLLER_ENV, "gitrepo")]);
    assert_eq!(buggy.status.code(), Some(1), "{}", text(&buggy));
    let out = String::from_utf8_lossy(&buggy.stdout);
    assert!(
        out.contains(&format!(
            "convergence {GR} demo/podinfo: InProgress: status.observedGeneration (0) != metadata.generation (1)"
        )) || out.contains("status.observedGeneration (0) != metadata.generation (1)"),
        "{}",
        text(&buggy)
    );
    // The real server's 409s, not injected ones: the conditions patch's optimistic lock.
    assert!(
        String::from_utf8_lossy(&buggy.stdout).contains("409 Conflict"),
        "{}",
        text(&buggy)
    );
    let said = String::from_utf8_lossy(&buggy.stderr);
    assert!(
        said.contains(&format!(
            "in front of a real kube-apiserver (Kubernetes {}.",
            default_minor()
        )),
        "{said}"
    );
    let fixed = stalemate(&args, &[(CONTROLLER_ENV, "gitrepo-fixed")]);
    assert_eq!(fixed.status.code(), Some(0), "{}", text(&fixed));
}

/// The controller is told where its control plane is: `STALEMATE_CONTROL_PLANE` holds
/// the CA, the service-account keys and an admin kubeconfig that reaches the apiserver
/// directly; `KUBEBUILDER_ASSETS` the binaries. (The controller here is a shell that
/// checks them; a failing check makes the run exit 2, "the controller failed".)
#[test]
fn the_controller_is_told_where_its_control_plane_is() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = write(dir.path(), "none.json", "{}");
    let cache = dir.path().join("kubectl-cache");
    let script = format!(
        r#"set -e
for f in ca.crt ca.key sa.key sa.pub admin.kubeconfig; do test -s "$STALEMATE_CONTROL_PLANE/$f"; done
"$KUBEBUILDER_ASSETS/kube-apiserver" --version | grep -q 'Kubernetes {minor}'
# Direct, as the admin: the real server says who that is.
kubectl --cache-dir {cache} --kubeconfig "$STALEMATE_CONTROL_PLANE/admin.kubeconfig" auth whoami -o jsonpath='{{.status.userInfo.username}}' | grep -qx 'stalemate:envtest-admin'
# Through the proxy: the controller's own KUBECONFIG reaches the same cluster.
kubectl --cache-dir {cache} get namespace kube-system -o name | grep -qx namespace/kube-system
echo control-plane-ok"#,
        cache = cache.display(),
        minor = default_minor(),
    );
    let assets = assets();
    let out = stalemate(
        &[
            "run",
            "--envtest",
            assets.to_str().unwrap(),
            "--schedule",
            schedule.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("control-plane-ok"),
        "{}",
        text(&out)
    );
}

/// A store laid out as controller-runtime's `setup-envtest use` lays it out
/// (`<store>/k8s/1.37.2-linux-amd64/`, read-only), holding the pinned binaries.
fn setup_envtest_store(root: &Path) -> PathBuf {
    let version = common::envtest::default_version();
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let item = root
        .join("k8s")
        .join(format!("{}-linux-{arch}", version.trim_start_matches('v')));
    std::fs::create_dir_all(&item).unwrap();
    for bin in ["etcd", "kube-apiserver", "kubectl"] {
        std::fs::copy(assets().join(bin), item.join(bin)).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&item, std::fs::Permissions::from_mode(0o555)).unwrap();
    item
}

/// Binaries from setup-envtest need none of our build scripts: `--envtest STORE` takes
/// the store's one version, and `--envtest 1.37` finds it in setup-envtest's default
/// store (`$XDG_DATA_HOME/kubebuilder-envtest`) when our build cache has none. The
/// controller is told the item's directory as `KUBEBUILDER_ASSETS`.
#[test]
fn setup_envtest_directories_work() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = write(dir.path(), "none.json", "{}");
    let data = dir.path().join("data");
    let store = data.join("kubebuilder-envtest");
    let item = setup_envtest_store(&store);
    let empty_cache = dir.path().join("no-builds");
    std::fs::create_dir_all(&empty_cache).unwrap();
    let check = format!(
        r#"test "$KUBEBUILDER_ASSETS" = "{}" && "$KUBEBUILDER_ASSETS/kube-apiserver" --version | grep -q 'Kubernetes {}' && echo store-ok"#,
        item.display(),
        default_minor(),
    );
    let minor = default_minor();
    for envtest in [store.to_str().unwrap(), minor.trim_start_matches('v')] {
        let out = stalemate(
            &[
                "run",
                "--envtest",
                envtest,
                "--schedule",
                schedule.to_str().unwrap(),
                "--",
                "sh",
                "-c",
                &check,
            ],
            &[
                ("STALEMATE_CACHE", empty_cache.to_str().unwrap()),
                ("XDG_DATA_HOME", data.to_str().unwrap()),
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "--envtest {envtest}: {}",
            text(&out)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("store-ok"),
            "--envtest {envtest}: {}",
            text(&out)
        );
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&item, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Two CRDs of one group served at different versions, as Kyverno's are: the group's
/// preferred version (v2, the newest) does not serve `rules`, which only v1 does.
const TWO_VERSIONS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: rules.policies.example.com}
spec:
  group: policies.example.com
  scope: Namespaced
  names: {plural: rules, singular: rule, kind: Rule, listKind: RuleList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
      subresources: {status: {}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: reports.policies.example.com}
spec:
  group: policies.example.com
  scope: Namespaced
  names: {plural: reports, singular: report, kind: Report, listKind: ReportList}
  versions:
    - name: v2
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: policies.example.com/v1
kind: Rule
metadata: {name: r1, namespace: demo}
spec: {deny: all}
"#;

/// A resource the group's preferred version does not serve is found at the version
/// that does (`k8s::discovery`): the setup waits for it and applies its object, and
/// the convergence oracle watches it and judges it — where only the preferred version
/// was looked at, the setup gave up after 30 s ("created but is not served").
#[test]
fn a_resource_the_preferred_version_does_not_serve_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let setup = write(dir.path(), "two-versions.yaml", TWO_VERSIONS);
    let schedule = write(
        dir.path(),
        "converge.json",
        r#"{"oracles": {"convergence": {"resources": ["rules.policies.example.com"], "settle": "1s"}}}"#,
    );
    let cache = dir.path().join("kubectl-cache");
    let script = format!(
        "kubectl --cache-dir {} -n demo patch rules.policies.example.com r1 --subresource status --type merge -p '{{\"status\":{{\"observedGeneration\":1}}}}'",
        cache.display()
    );
    let assets = assets();
    let out = stalemate(
        &[
            "run",
            "--envtest",
            assets.to_str().unwrap(),
            "--setup",
            setup.to_str().unwrap(),
            "--quiet",
            "2s",
            "--schedule",
            schedule.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &format!("{script} && sleep 600"),
        ],
        &[],
    );
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("rules.policies.example.com"), "{said}");
    assert!(said.contains("demo/r1"), "{said}");
    assert!(!said.contains("not served"), "{said}");
}

const DEPLOYMENT: &str = r#"apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.example/web:1}]
"#;

/// kube-controller-manager itself as the controller under test, handed its control
/// plane's CA and service-account key from the environment, with `--with kwok` (a fake
/// node, and kube-scheduler putting pods on it): the Deployment of the setup gets a
/// ReplicaSet and 3 running pods, and scaled by the workload to 5 it gets 5 — each
/// ReplicaSet and pod created by the controller through the proxy.
#[test]
fn kube_controller_manager_under_test_runs_pods_on_kwok() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = write(dir.path(), "none.json", "{}");
    let setup = write(dir.path(), "deployment.yaml", DEPLOYMENT);
    let trace = dir.path().join("trace.jsonl");
    let cache = dir.path().join("kubectl-cache");
    let kcm = r#"exec "$KUBEBUILDER_ASSETS/kube-controller-manager" --kubeconfig="$KUBECONFIG" \
        --root-ca-file="$STALEMATE_CONTROL_PLANE/ca.crt" \
        --service-account-private-key-file="$STALEMATE_CONTROL_PLANE/sa.key" \
        --controllers=deployment,replicaset,serviceaccount --leader-elect=false --secure-port=0"#;
    let ready = |n: u32| {
        format!(
            "kubectl --cache-dir {} -n demo wait --for=jsonpath='{{.status.readyReplicas}}'={n} deployment/web --timeout=120s",
            cache.display()
        )
    };
    let workload = format!(
        "{} && kubectl --cache-dir {} -n demo scale deployment web --replicas=5 && {}",
        ready(3),
        cache.display(),
        ready(5)
    );
    let assets = assets();
    let out = stalemate(
        &[
            "run",
            "--envtest",
            assets.to_str().unwrap(),
            "--with",
            "kwok",
            "--setup",
            setup.to_str().unwrap(),
            "--workload",
            &workload,
            "--quiet",
            "3s",
            "--max-run",
            "240s",
            "--trace",
            trace.to_str().unwrap(),
            "--schedule",
            schedule.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            kcm,
        ],
        &[],
    );
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        !said.contains("the workload exited with status"),
        "the Deployment never became ready: {said}"
    );
    let created = |resource: &str| {
        std::fs::read_to_string(&trace)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| {
                r["kind"] == "request"
                    && r["client"] == "controller"
                    && r["verb"] == "create"
                    && r["resource"] == resource
                    && r["code"] == 201
            })
            .count()
    };
    assert_eq!(created("replicasets.apps"), 1, "{said}");
    assert_eq!(created("pods"), 5, "{said}");
}

/// A directory of fake binaries: the real etcd, and a `kube-apiserver` that is `script`.
fn fake_assets(dir: &Path, script: &str) -> PathBuf {
    let fake = dir.join("assets");
    std::fs::create_dir_all(&fake).unwrap();
    std::os::unix::fs::symlink(assets().join("etcd"), fake.join("etcd")).unwrap();
    let api = fake.join("kube-apiserver");
    std::fs::write(&api, format!("#!/bin/sh\n{script}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&api, std::fs::Permissions::from_mode(0o755)).unwrap();
    fake
}

const ANSWERS_VERSION: &str =
    r#"if [ "$1" = --version ]; then echo "Kubernetes v1.33.13"; exit 0; fi"#;

/// Bad input is a clear error (exit 2) naming what is wrong, and leaves nothing running:
/// no directory; a binary that is not what its name says; an apiserver that exits at
/// once (its log's end in the message); one whose port is always taken (tried again,
/// then called a port clash); one that never gets ready; `--with` something unknown, or
/// without `--envtest`.
#[test]
fn bad_input_is_named_and_nothing_is_left_running() {
    let dir = tempfile::tempdir().unwrap();
    // Its own temporary directory, to see what each failed start leaves there.
    let tmp = tempfile::tempdir().unwrap();
    let tmp_dir = tmp.path().to_str().unwrap();
    let schedule = write(dir.path(), "none.json", "{}");
    let run = |envtest: &str| {
        stalemate(
            &[
                "run",
                "--envtest",
                envtest,
                "--schedule",
                schedule.to_str().unwrap(),
                "--",
                "true",
            ],
            &[("TMPDIR", tmp_dir)],
        )
    };
    let expect = |out: &Output, says: &str| {
        assert_eq!(out.status.code(), Some(2), "{}", text(out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "expected {says:?} in: {}", text(out));
    };

    expect(
        &run("/nonexistent/assets"),
        "--envtest /nonexistent/assets: not a directory",
    );

    let wrong = tempfile::tempdir().unwrap();
    let fake = fake_assets(wrong.path(), "echo 'etcd Version: 3.5.21'");
    expect(&run(fake.to_str().unwrap()), "not kube-apiserver");

    let exits = tempfile::tempdir().unwrap();
    let fake = fake_assets(
        exits.path(),
        &format!("{ANSWERS_VERSION}\necho 'Error: unknown flag: --frobnicate' >&2\nexit 1"),
    );
    let out = run(fake.to_str().unwrap());
    expect(&out, "kube-apiserver exited with exit status: 1");
    expect(&out, "unknown flag: --frobnicate");
    // The log the error names is there to read after `run` has exited.
    let log = named_log(&out);
    assert!(log.starts_with(tmp.path()), "{}", log.display());
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.contains("unknown flag: --frobnicate"),
        "{}: {logged:?}",
        log.display()
    );
    assert_eq!(
        processes_mentioning(&fake),
        Vec::<String>::new(),
        "its etcd is gone"
    );

    let clash = tempfile::tempdir().unwrap();
    let fake = fake_assets(
        clash.path(),
        &format!(
            "{ANSWERS_VERSION}\necho 'E1124 failed to listen on 127.0.0.1:1: listen tcp 127.0.0.1:1: bind: address already in use' >&2\nexit 1"
        ),
    );
    let out = run(fake.to_str().unwrap());
    expect(&out, "port clash");
    assert!(named_log(&out).is_file(), "{}", text(&out));
    assert_eq!(processes_mentioning(&fake), Vec::<String>::new());

    let hangs = tempfile::tempdir().unwrap();
    let fake = fake_assets(hangs.path(), &format!("{ANSWERS_VERSION}\nexec sleep 600"));
    let out = stalemate(
        &[
            "envtest",
            "--assets",
            fake.to_str().unwrap(),
            "--ready-timeout",
            "3s",
        ],
        &[("TMPDIR", tmp_dir)],
    );
    expect(&out, "kube-apiserver did not get ready within 3s");
    assert_eq!(
        processes_mentioning(&fake),
        Vec::<String>::new(),
        "the apiserver that never got ready, and its etcd, are gone"
    );
    // Its temporary directory keeps the logs the error names, not etcd's data.
    let left = files_under(tmp.path());
    assert!(
        !left.is_empty()
            && left
                .iter()
                .all(|f| f.starts_with("stalemate-envtest-") && f.ends_with(".log")),
        "after a failed start only logs are left: {left:?}"
    );
    let log = named_log(&out);
    assert!(
        log.starts_with(tmp.path()) && log.is_file(),
        "{}",
        log.display()
    );

    let out = stalemate(
        &[
            "run",
            "--envtest",
            "--with",
            "kube-proxy",
            "--schedule",
            "x",
            "--",
            "true",
        ],
        &[("TMPDIR", tmp_dir)],
    );
    expect(&out, "\"kube-proxy\" is not a component");
    let out = stalemate(
        &["run", "--with", "kwok", "--schedule", "x", "--", "true"],
        &[("TMPDIR", tmp_dir)],
    );
    expect(&out, "--envtest");
    let left = files_under(tmp.path());
    assert!(
        left.iter()
            .all(|f| f.starts_with("stalemate-envtest-") && f.ends_with(".log")),
        "nothing but the failed control planes' logs is left: {left:?}"
    );
    // One directory per failed start (the apiserver that exited, the port clash, the one
    // never ready), holding only logs; none from `run` itself.
    let dirs: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dirs.len(), 3, "no other directory is left: {dirs:?}");
    assert!(
        dirs.iter().all(|d| d.starts_with("stalemate-envtest-")),
        "{dirs:?}"
    );
}

/// A terminal's Ctrl-C while the control plane is starting — SIGINT to the whole process
/// group, so etcd and the apiserver get it too — stops `run` and `envtest` cleanly: each
/// says it was interrupted (exit 2), and nothing is left running nor in the temporary
/// directory, not even logs (a start the signal cut short is not a failure anyone asked
/// about). Before, neither had a handler until the control plane was up: each died of
/// the signal and left its directory in /tmp.
#[test]
fn ctrl_c_while_the_control_plane_starts_stops_it_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = write(dir.path(), "none.json", "{}");
    // An apiserver that never gets ready (not `exec`: its command line, which names the
    // fake directory, stays in the process list): the signal lands mid-start, however
    // fast or slow the machine.
    let never = tempfile::tempdir().unwrap();
    let fake = fake_assets(never.path(), &format!("{ANSWERS_VERSION}\nsleep 600"));
    for args in starting_a_control_plane(&fake, &schedule, &["true"]) {
        interrupted_mid_start(&args, &fake, Signalled::Group, || {});
    }
}

/// SIGTERM to stalemate alone (`kill PID`) while its control plane starts: the start
/// goes on (its processes were not signalled), and then `run` starts no controller and
/// `envtest` announces no control plane — each stops what it started, says it was
/// interrupted (exit 2) and leaves nothing behind. The real apiserver is held until the
/// signal has been sent, so it lands mid-start on any machine.
#[test]
fn a_signal_to_stalemate_alone_while_the_control_plane_starts_starts_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = write(dir.path(), "none.json", "{}");
    let started = dir.path().join("controller-started");
    let held = tempfile::tempdir().unwrap();
    let go = held.path().join("go");
    let real = assets().join("kube-apiserver");
    let fake = fake_assets(
        held.path(),
        &format!(
            "if [ \"$1\" = --version ]; then exec {real} --version; fi\n\
             while [ ! -e {go} ]; do sleep 0.05; done\nexec {real} \"$@\"",
            real = real.display(),
            go = go.display()
        ),
    );
    let touch = ["touch", started.to_str().unwrap()];
    for args in starting_a_control_plane(&fake, &schedule, &touch) {
        let _ = std::fs::remove_file(&go);
        let (_, out) = interrupted_mid_start(&args, &fake, Signalled::AloneThenRelease, || {
            std::fs::write(&go, "").unwrap()
        });
        assert!(!started.exists(), "{args:?} started the controller");
        assert!(out.is_empty(), "{args:?} announced: {out}");
    }
}

/// The two commands that start a control plane from `fake`: `run --envtest` (with an
/// empty `schedule`, running `controller`) and `envtest`.
fn starting_a_control_plane(fake: &Path, schedule: &Path, controller: &[&str]) -> [Vec<String>; 2] {
    let fake = fake.display().to_string();
    let mut run: Vec<String> = ["run", "--envtest", &fake, "--schedule"]
        .map(String::from)
        .into();
    run.push(schedule.display().to_string());
    run.push("--".into());
    run.extend(controller.iter().map(|a| a.to_string()));
    [run, vec!["envtest".into(), "--assets".into(), fake]]
}

/// Who gets the signal, in [`interrupted_mid_start`].
#[derive(Clone, Copy, Debug)]
enum Signalled {
    /// SIGINT to stalemate's process group, as a terminal's Ctrl-C.
    Group,
    /// SIGTERM to stalemate's pid alone; then the apiserver is let go.
    AloneThenRelease,
}

/// Start stalemate with `args` (TMPDIR a fresh directory) in a process group of its own
/// and, once the (fake) apiserver is starting, signal it as `how` says, then call
/// `after`. Checks it said it was interrupted, exited 2, and left nothing running nor in
/// TMPDIR; its (stderr, stdout).
fn interrupted_mid_start(
    args: &[String],
    fake: &Path,
    how: Signalled,
    after: impl FnOnce(),
) -> (String, String) {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn,rustls=error")
        .env("TMPDIR", tmp.path())
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut child = common::envtest::GroupOnDrop(child);
    // The apiserver is up (the binaries' `--version` check has no `--etcd-servers`): etcd
    // is running, and the control plane waits for the apiserver to get ready.
    common::wait_for("the apiserver to start", Duration::from_secs(120), || {
        let starting = processes_mentioning(fake)
            .iter()
            .any(|cmd| cmd.contains("--etcd-servers="));
        (starting || child.0.try_wait().unwrap().is_some()).then_some(())
    });
    let pid = libc::pid_t::try_from(pid).unwrap();
    // SAFETY: kill(2)/killpg(2) on the child we spawned and its process group.
    unsafe {
        match how {
            Signalled::Group => libc::killpg(pid, libc::SIGINT),
            Signalled::AloneThenRelease => libc::kill(pid, libc::SIGTERM),
        };
    }
    after();
    let status = common::wait_for("stalemate to exit", Duration::from_secs(120), || {
        child.0.try_wait().unwrap()
    });
    // The signalled etcd and apiserver may take a moment to exit.
    let running = || [processes_mentioning(fake), processes_mentioning(tmp.path())].concat();
    let settled = std::time::Instant::now() + Duration::from_secs(10);
    while !running().is_empty() && std::time::Instant::now() < settled {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = running();
    // Whatever is left could hold its output open: gone before that is read to its end.
    common::envtest::kill_group(pid.unsigned_abs());
    let (mut err, mut out) = (String::new(), String::new());
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut err).unwrap();
    std::io::Read::read_to_string(&mut child.0.stdout.take().unwrap(), &mut out).unwrap();
    let what = format!("{args:?} ({how:?}): {status:?}\n{err}");
    assert!(left.is_empty(), "left running: {left:?}\n{what}");
    assert_eq!(status.code(), Some(2), "{what}");
    assert!(
        err.contains("interrupted (SIGINT or SIGTERM)") && !err.contains("panicked"),
        "{what}"
    );
    let files: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(files.is_empty(), "left in TMPDIR: {files:?}\n{what}");
    (err, out)
}

/// The log a failed start's error names: `… (its log: PATH):`.
fn named_log(out: &Output) -> PathBuf {
    let err = String::from_utf8_lossy(&out.stderr);
    let path = err
        .split_once("its log: ")
        .and_then(|(_, rest)| rest.split_once("):"))
        .map(|(path, _)| path)
        .unwrap_or_else(|| panic!("no log named in: {err}"));
    PathBuf::from(path)
}

/// Every file under `dir`, as a path relative to it.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                found.push(
                    path.strip_prefix(dir)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    found.sort();
    found
}
