//! Flux's real source-controller (v1.9.3) and kustomize-controller (v1.9.6), built from the
//! Go module proxy by `e2e/assets/build-flux.sh`, under `stalemate run --envtest`, cloning
//! from a git server on loopback (`e2e/assets/git_http.py`: Debian's `git http-backend`),
//! run as `examples/flux/source-controller.sh` and `kustomize-controller.sh` run them.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use common::envtest::{assets, output_in_group};
use common::{BIN, KillOnDrop, repo};

/// Flux's directory (the binaries, `crds/`, `kustomize-crds/`): `$STALEMATE_FLUX_ASSETS`, or
/// what `build-flux.sh` builds (a second when cached; cold, about 3 minutes).
fn flux_assets() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(d) = std::env::var_os("STALEMATE_FLUX_ASSETS")
            .map(PathBuf::from)
            .filter(|d| {
                d.join("source-controller").is_file() && d.join("kustomize-controller").is_file()
            })
        {
            return d;
        }
        let out = Command::new("bash")
            .arg(repo("e2e/assets/build-flux.sh"))
            .stderr(Stdio::inherit())
            .output()
            .expect("run e2e/assets/build-flux.sh");
        assert!(out.status.success(), "e2e/assets/build-flux.sh failed");
        PathBuf::from(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .last()
                .expect("build-flux.sh prints the directory")
                .trim(),
        )
    })
    .clone()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=stalemate",
            "-c",
            "user.email=e2e@stalemate.dev",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git (Debian `git`; .ci/run installs it)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A bare repository `podinfo.git` with one commit under `dir/git`, served on loopback;
/// its clone URL.
fn git_server(dir: &Path) -> (KillOnDrop, String) {
    let root = dir.join("git");
    std::fs::create_dir_all(root.join("work")).unwrap();
    git(
        &root,
        &["init", "-q", "--bare", "-b", "master", "podinfo.git"],
    );
    let work = root.join("work");
    git(&work, &["init", "-q", "-b", "master"]);
    std::fs::write(work.join("README.md"), "podinfo\n").unwrap();
    // What kustomize-controller applies (examples/flux/kustomization.yaml: ./deploy).
    std::fs::create_dir_all(work.join("deploy")).unwrap();
    std::fs::write(
        work.join("deploy/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo-config\ndata:\n  greeting: hello\n",
    )
    .unwrap();
    git(&work, &["add", "README.md", "deploy"]);
    git(&work, &["commit", "-q", "-m", "Initial commit"]);
    git(&work, &["push", "-q", "../podinfo.git", "master"]);
    let mut child = Command::new("python3")
        .arg(repo("e2e/assets/git_http.py"))
        .arg(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("http://127.0.0.1:"),
        "git server said {line:?}"
    );
    (KillOnDrop(child), format!("{}podinfo.git", line.trim()))
}

/// `--setup` files: source-controller's CRDs, then `examples/flux/gitrepository.yaml`
/// pointed at `url`.
fn setup(dir: &Path, url: &str) -> Vec<String> {
    let mut crds: Vec<String> = std::fs::read_dir(flux_assets().join("crds"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    crds.sort();
    let repo_yaml = std::fs::read_to_string(repo("examples/flux/gitrepository.yaml"))
        .unwrap()
        .replace("GIT_URL", url);
    let path = dir.join("gitrepository.yaml");
    std::fs::write(&path, repo_yaml).unwrap();
    crds.push(path.display().to_string());
    crds
}

/// `stalemate SUBCOMMAND --envtest` with source-controller's CRDs and the GitRepository
/// as setup, idle by its workqueue metrics, then `extra`, then the controller as
/// `examples/flux/source-controller.sh` runs it; the exit code and all it said.
fn stalemate_on_flux(
    subcommand: &str,
    dir: &Path,
    url: &str,
    extra: &[&str],
) -> (Option<i32>, String) {
    let mut args: Vec<String> = vec![
        subcommand.into(),
        "--envtest".into(),
        assets().display().to_string(),
    ];
    for s in setup(dir, url) {
        args.extend(["--setup".into(), s]);
    }
    args.extend(
        [
            "--idle-url",
            "http://127.0.0.1:$STALEMATE_METRICS_PORT/metrics",
        ]
        .map(String::from),
    );
    args.extend(extra.iter().map(|a| a.to_string()));
    args.push("--".into());
    args.push(
        repo("examples/flux/source-controller.sh")
            .display()
            .to_string(),
    );
    let out = output_in_group(
        Command::new(BIN)
            .args(&args)
            .env("SOURCE_CONTROLLER", flux_assets().join("source-controller")),
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

/// A `--trace` file's records.
fn trace_records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The GitRepository's entry in a run's JSON report: Current, judged, passed.
fn assert_gitrepository_current(report: &Path) {
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
    assert_eq!(r["verdict"], "pass", "{r}");
    assert_eq!(r["judged"], true, "{r}");
    let gitrepo = r["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "podinfo")
        .unwrap_or_else(|| panic!("{r}"))
        .clone();
    assert_eq!(gitrepo["status"], "Current", "{gitrepo}");
}

/// Fault-free, source-controller converges: the GitRepository is Ready with an artifact
/// and `observedGeneration == generation` (kstatus Current), judged by the convergence
/// oracle; exit 0. Its workqueue metrics say idle (`--idle-url`).
#[test]
fn source_controller_converges_without_faults() {
    let dir = tempfile::tempdir().unwrap();
    let (_git, url) = git_server(dir.path());
    let schedule = dir.path().join("schedule.json");
    std::fs::write(
        &schedule,
        r#"{"oracles": {"convergence": {"resources": ["gitrepositories.source.toolkit.fluxcd.io"], "settle": "3s"}}}"#,
    )
    .unwrap();
    let report = dir.path().join("report.json");
    let (code, said) = stalemate_on_flux(
        "run",
        dir.path(),
        &url,
        &[
            "--quiet",
            "3s",
            "--max-run",
            "120s",
            "--schedule",
            schedule.to_str().unwrap(),
            "--report-json",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("stored artifact for commit 'Initial commit'"),
        "{said}"
    );
    assert_gitrepository_current(&report);
}

/// F1's trigger, on the real binary: `config/flux-f1.json` (the bug report's window: the
/// GitRepository's watch frozen for 1.5 s after the controller's first status patch)
/// makes every try of the optimistic-lock conditions patch fail — five 409s in a row,
/// the whole of `patchStatusConditions`' back-off — inside the window. v1.9.3 recovers
/// all the same (the failed patch is an error, so the reconcile is requeued, and the
/// first one after the window writes conditions and `observedGeneration`:
/// examples/flux/README.md), and stalemate says so: judged, pass, Current.
#[test]
fn f1_window_makes_the_conditions_patch_fail_and_source_controller_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let (_git, url) = git_server(dir.path());
    let report = dir.path().join("report.json");
    let trace = dir.path().join("trace.jsonl");
    // `--duration`: as the bug report's schedule is run by hand; the verdict is judged
    // once the GitRepository is Current again (or at the schedule's 30 s `settle`).
    let (code, said) = stalemate_on_flux(
        "run",
        dir.path(),
        &url,
        &[
            "--duration",
            "36s",
            "--schedule",
            repo("config/flux-f1.json").to_str().unwrap(),
            "--report-json",
            report.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{said}");
    assert_gitrepository_current(&report);
    let records = trace_records(&trace);
    let window = |action: &str| {
        records
            .iter()
            .position(|r| r["kind"] == "window" && r["action"] == action)
            .unwrap_or_else(|| panic!("no window {action} in the trace: {said}"))
    };
    let (open, close) = (window("open"), window("close"));
    // 409s on the GitRepository's status patches with a precondition (the conditions
    // patch) inside the window, and the longest run of them: five tries each.
    let mut run = 0;
    let mut longest = 0;
    let mut total = 0;
    for r in &records[open..close] {
        if r["kind"] != "request"
            || r["verb"] != "patch"
            || r["resource"] != "gitrepositories.source.toolkit.fluxcd.io/status"
        {
            continue;
        }
        if r["code"] == 409 && r["precondition"] == true {
            run += 1;
            total += 1;
            longest = longest.max(run);
        } else if r["precondition"] == true {
            run = 0;
        }
    }
    // Normally 10 (two patches, five tries each, all inside); a slow clone on a busy
    // machine can push the second past the window's end.
    assert!(
        total >= 5 && longest >= 3,
        "expected the conditions patch's tries to conflict inside the window: {total} 409s, at most {longest} in a row: {said}"
    );
}

/// `stalemate explore` on the real source-controller, with nothing given by hand but the
/// setup: its trials reach the controller (their windows open — one that did not is
/// counted as not exercised — and the freezes and 409s make the conditions patch
/// conflict), and it recovers from each — v1.9.3 has no F1
/// (examples/flux/README.md) — so explore reports it clean, exit 0.
#[test]
fn explore_exercises_source_controller_and_finds_it_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let (_git, url) = git_server(dir.path());
    let out = dir.path().join("explore");
    let (code, said) = stalemate_on_flux(
        "explore",
        dir.path(),
        &url,
        &[
            "--quiet",
            "2s",
            "--converge",
            "gitrepositories.source.toolkit.fluxcd.io",
            "--budget",
            "6",
            "--jobs",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{said}");
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["verdict"], "clean", "{said}");
    assert_eq!(s["trialsRun"], 6, "{said}");
    // Its first plans open on the controller's first patches, which every run makes;
    // one may still miss its moment on a busy machine.
    assert!(s["notExercised"].as_u64().is_some_and(|n| n <= 1), "{said}");
    let trials = s["trials"].as_array().unwrap();
    let most = |field: &str| {
        trials
            .iter()
            .map(|t| t["effect"][field].as_u64().unwrap_or(0))
            .max()
            .unwrap_or(0)
    };
    for t in trials {
        assert_eq!(t["verdict"], "pass", "{t}");
    }
    let opened = trials
        .iter()
        .filter(|t| t["effect"]["windows"][0]["opened"].is_number())
        .count();
    assert_eq!(
        opened as u64 + s["notExercised"].as_u64().unwrap_or(99),
        6,
        "each trial is exercised or counted as not: {said}"
    );
    assert!(most("held") >= 1, "no trial held an event: {said}");
    assert!(
        most("conflicts") >= 5,
        "no trial made the conditions patch conflict on every try: {said}"
    );
}

/// A controller backing off after errors is given the convergence oracle's `settle` to
/// recover, not called stuck at the first quiet moment. 500s to source-controller's first
/// patches (the finalizer) for 1.5 s: each failed reconcile is retried by Flux's rate
/// limiter (750 ms, doubling), and the requeue after the finalizer lands comes 3 s later —
/// longer than `--quiet`. The run waits for it: exit 0, Current, and the trace shows the
/// controller writing again after more than `--quiet` of silence.
#[test]
fn a_controller_backing_off_after_errors_is_given_settle_to_recover() {
    let dir = tempfile::tempdir().unwrap();
    let (_git, url) = git_server(dir.path());
    let schedule = dir.path().join("schedule.json");
    std::fs::write(
        &schedule,
        r#"{
  "clients": {"controller": {"listener": "controller"}},
  "windows": [{
    "name": "errors", "client": "controller",
    "resources": ["gitrepositories.source.toolkit.fluxcd.io"],
    "fault": {"errors": {"status": 500, "verbs": ["patch"], "rate": 1.0}},
    "trigger": {"afterRequests": {"verb": "patch", "resource": "gitrepositories.source.toolkit.fluxcd.io", "count": 1}},
    "duration": "1500ms"
  }],
  "oracles": {"convergence": {"resources": ["gitrepositories.source.toolkit.fluxcd.io"], "settle": "30s"}}
}"#,
    )
    .unwrap();
    let report = dir.path().join("report.json");
    let trace = dir.path().join("trace.jsonl");
    let (code, said) = stalemate_on_flux(
        "run",
        dir.path(),
        &url,
        &[
            "--quiet",
            "2s",
            "--max-run",
            "120s",
            "--schedule",
            schedule.to_str().unwrap(),
            "--report-json",
            report.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{said}");
    assert_gitrepository_current(&report);
    let writes: Vec<(SystemTime, serde_json::Value)> = trace_records(&trace)
        .into_iter()
        .filter(|r| {
            r["kind"] == "request"
                && r["verb"] == "patch"
                && r["resource"]
                    .as_str()
                    .is_some_and(|x| x.starts_with("gitrepositories."))
        })
        .map(|r| {
            let ts = humantime::parse_rfc3339(r["ts"].as_str().unwrap()).unwrap();
            (ts, r)
        })
        .collect();
    let injected = writes
        .iter()
        .filter(|(_, r)| r["code"] == 500 && r["answer"] == "injected")
        .count();
    assert!(
        injected >= 2,
        "the window answered {injected} patches: {said}"
    );
    let longest_gap = writes
        .windows(2)
        .map(|w| w[1].0.duration_since(w[0].0).unwrap_or_default())
        .max()
        .unwrap_or_default();
    assert!(
        longest_gap > Duration::from_secs(2),
        "no silence longer than --quiet between two of the controller's patches (longest {longest_gap:?}): the back-off this test is about did not happen: {said}"
    );
}

/// The seed's GitOps deadlock, on Flux as its users run it: source-controller and
/// kustomize-controller under test together (`--controller source=…`), the Kustomization
/// applying the repository's ConfigMap; kustomize-controller's node loses its datapath —
/// a 60 s `blackhole` partition aimed at it alone (`config/flux-partition.json`) — and
/// meanwhile the user changes the Kustomization (the fix that cannot be applied). Its
/// lease renewals hang until the renew deadline (30 s), it loses leadership and exits;
/// kubelet's back-off (10 s, the real one) starts it again, still cut off; once the link
/// is up it takes the (expired) lease and applies the change. The report shows the exit,
/// the back-off and the comeback; the Kustomization is Current again within settle: pass.
#[test]
fn kustomize_controller_loses_its_lease_behind_a_partition_and_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let (_git, url) = git_server(dir.path());
    let mut args: Vec<String> = vec![
        "run".into(),
        "--envtest".into(),
        assets().display().to_string(),
    ];
    let mut files = setup(dir.path(), &url);
    let mut kcrds: Vec<String> = std::fs::read_dir(flux_assets().join("kustomize-crds"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    kcrds.sort();
    files.splice(0..0, kcrds);
    files.push(
        repo("examples/flux/kustomization.yaml")
            .display()
            .to_string(),
    );
    for s in files {
        args.extend(["--setup".into(), s]);
    }
    let report = dir.path().join("report.json");
    let trace = dir.path().join("trace.jsonl");
    args.extend(
        [
            "--schedule",
            repo("config/flux-partition.json").to_str().unwrap(),
            "--restart-policy",
            "always",
            "--quiet",
            "3s",
            "--max-run",
            "240s",
            "--report-json",
            report.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
            "--controller",
        ]
        .map(String::from),
    );
    let cache = dir.path().join("kubectl-cache");
    args.push(format!(
        "source={}",
        repo("examples/flux/source-controller.sh").display()
    ));
    // The user's fix, made once the partition has begun (the workload waits for quiet,
    // which the cut-off controller soon is): a label for everything it applies.
    args.push("--workload".into());
    args.push(format!(
        "kubectl --cache-dir {} -n flux-demo patch kustomization podinfo --type merge -p '{{\"spec\":{{\"commonMetadata\":{{\"labels\":{{\"fix\":\"applied\"}}}}}}}}'",
        cache.display()
    ));
    args.push("--".into());
    args.push(
        repo("examples/flux/kustomize-controller.sh")
            .display()
            .to_string(),
    );
    let out = output_in_group(
        Command::new(BIN)
            .args(&args)
            .env("SOURCE_CONTROLLER", flux_assets().join("source-controller"))
            .env(
                "KUSTOMIZE_CONTROLLER",
                flux_assets().join("kustomize-controller"),
            ),
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{said}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["verdict"], "pass", "{said}");
    let exits = r["exits"]
        .as_array()
        .unwrap_or_else(|| panic!("no exits: {said}"));
    assert!(
        exits
            .iter()
            .any(|e| e["controller"] == "controller" && e["status"] == "exit status: 1"),
        "kustomize-controller did not exit on its lost lease: {said}"
    );
    assert_eq!(
        exits[0]["backoffSeconds"], 10.0,
        "kubelet's first back-off: {said}"
    );
    assert!(
        exits.iter().all(|e| e["controller"] != "source"),
        "source-controller's node was healthy: {said}"
    );
    assert!(
        r["backoff"]
            .as_str()
            .is_some_and(|b| b.contains("(kubelet's)")),
        "{said}"
    );
    let comeback = &r["comeback"];
    assert!(comeback["currentAt"].is_string(), "{said}");
    let recovered = r["recoveries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["resource"] == "kustomizations.kustomize.toolkit.fluxcd.io")
        .unwrap_or_else(|| panic!("{said}"))["seconds"]
        .as_f64()
        .unwrap_or_else(|| panic!("the Kustomization never recovered: {said}"));
    // The fix waited for the controller: the partition, and then a whole lease duration
    // (Flux's 35 s), which a new candidate waits from when it first sees the old holder's
    // record (client-go's leader election times leases by its own observation) — the old
    // process, cut off, could not release it.
    assert!(recovered > 30.0, "the fix waited for {recovered} s: {said}");
    assert!(comeback["answered"]["controller"].is_string(), "{said}");
    let kustomization = r["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["resource"] == "kustomizations.kustomize.toolkit.fluxcd.io")
        .unwrap_or_else(|| panic!("{said}"))
        .clone();
    assert_eq!(kustomization["status"], "Current", "{said}");
    // The lease: renewals by kustomize-controller, its exit and the take-over after.
    let records = trace_records(&trace);
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "exit" && r["controller"] == "controller"),
        "{said}"
    );
    assert!(
        records.iter().any(|r| r["kind"] == "request"
            && r["client"] == "controller"
            && r["resource"] == "leases.coordination.k8s.io"),
        "kustomize-controller used no Lease: {said}"
    );
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "request" && r["client"] == "source"),
        "source-controller's requests are its own client's: {said}"
    );
    // The fix landed inside the partition, and was applied (the ConfigMap patched again by
    // kustomize-controller) only after it.
    let at = |r: &serde_json::Value| humantime::parse_rfc3339(r["ts"].as_str().unwrap()).unwrap();
    let window = |action: &str| {
        records
            .iter()
            .find(|r| r["kind"] == "window" && r["action"] == action)
            .map(at)
            .unwrap_or_else(|| panic!("no window {action}: {said}"))
    };
    let (opened, closed) = (window("open"), window("close"));
    let fix = records
        .iter()
        .find(|r| r["kind"] == "request" && r["client"] == "workload" && r["verb"] == "patch")
        .map(at)
        .unwrap_or_else(|| panic!("no fix: {said}"));
    assert!(
        opened < fix && fix < closed,
        "the fix came outside the partition: {said}"
    );
    assert!(
        records.iter().any(|r| r["kind"] == "request"
            && r["client"] == "controller"
            && r["verb"] == "patch"
            && r["resource"] == "configmaps"
            && at(r) > closed),
        "the fix was not applied after the partition: {said}"
    );
    // The report's account (exits, back-off, comeback), for whoever reads the test's log.
    if let Some(i) = said.find("stalemate report") {
        eprintln!(
            "{}",
            &said[i..].lines().take(30).collect::<Vec<_>>().join("\n")
        );
    }
}
