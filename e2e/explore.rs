//! `stalemate explore` end to end, on real controller processes (this test binary run
//! again as the demo's controllers, like `e2e/oracles.rs`): it finds F1 knowing nothing
//! about it, and its reproducer makes `stalemate run` fail; fixed controllers give nothing;
//! a hot-looping one fails without any fault; a bug that needs a workload is found with
//! one; two more bug classes (duplicate children, deletion from a stale read) are found
//! and their fixes are not; a bug in a second controller under test (`--controller`) is
//! found with plans aimed at it; the same search runs against a cluster (a
//! `stalemate sim` process), put back between trials and cleaned up after; and in shards,
//! merged, and as an Indexed Job's pods gathered from their logs (`explore_shards.rs`).
//!
//! The tests run one at a time: each explore runs trials side by side already.

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

// Shards, merge, and explore as a Job: in a file of their own, run with these.
#[path = "explore_shards.rs"]
mod shards;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use common::{BIN, Sim, repo};
use serde_json::Value;

const GR: &str = "gitrepositories.source.toolkit.fluxcd.io";
const CONTROLLER_ENV: &str = "STALEMATE_E2E_EXPLORE_CONTROLLER";

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Run as a controller when explore starts this binary again.
#[test]
fn controller_process() {
    use stalemate::demo::controller::{self, Behaviour};
    use stalemate::demo::widgets::{self, Kind};
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
            "hot-loop" => controller::run(client, Behaviour::HotLoop, log).await,
            "child-creator" => widgets::run(client, Kind::ChildCreator { fixed: false }, log).await,
            "child-creator-fixed" => {
                widgets::run(client, Kind::ChildCreator { fixed: true }, log).await
            }
            "orphan-cleaner" => {
                widgets::run(client, Kind::OrphanCleaner { fixed: false }, log).await
            }
            "orphan-cleaner-fixed" => {
                widgets::run(client, Kind::OrphanCleaner { fixed: true }, log).await
            }
            "generation-memo" => {
                widgets::run(client, Kind::GenerationMemo { fixed: false }, log).await
            }
            "generation-memo-fixed" => {
                widgets::run(client, Kind::GenerationMemo { fixed: true }, log).await
            }
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

struct Explored {
    code: Option<i32>,
    summary: Value,
    stderr: String,
    out: PathBuf,
}

fn explore(dir: &Path, controller: &str, args: &[&str]) -> Explored {
    explore_cmd(dir, controller, &controller_argv(), args)
}

/// `stalemate explore ARGS -- ARGV`, its output in `DIR/out-LABEL`.
fn explore_cmd(dir: &Path, controller: &str, argv: &[String], args: &[&str]) -> Explored {
    explore_bin(Path::new(BIN), dir, controller, argv, args)
}

/// `explore_cmd` with the stalemate binary at `bin`.
fn explore_bin(
    bin: &Path,
    dir: &Path,
    controller: &str,
    argv: &[String],
    args: &[&str],
) -> Explored {
    let out_dir = dir.join(format!("out-{controller}"));
    // In a process group of its own: an --envtest control plane shares it, and is killed
    // with it whatever happens.
    let out = common::envtest::output_in_group(
        Command::new(bin)
            .arg("explore")
            .args(args)
            // Round 2's freezes outlast a controller's patience (5m30s each); these
            // controllers have none to outlast, and what they are tested for is found
            // without them (e2e/zoo.rs runs a controller that has one).
            .args(if args.contains(&"--long-window") {
                &[][..]
            } else {
                &["--long-window", "0"][..]
            })
            .arg("--out")
            .arg(&out_dir)
            .arg("--")
            .args(argv)
            .env(CONTROLLER_ENV, controller)
            .env("STALEMATE_E2E_MARKER", marker(controller)),
    );
    let summary = std::fs::read(out_dir.join("summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Explored {
        code: out.status.code(),
        summary,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        out: out_dir,
    }
}

/// What every process an explore of `controller` starts carries in its environment
/// (its controllers, and an --envtest control plane's etcd and apiservers).
fn marker(controller: &str) -> String {
    format!("{controller}-{}", std::process::id())
}

/// The processes still running with `marker` in their environment.
fn running_with(marker: &str) -> Vec<String> {
    let want = format!("STALEMATE_E2E_MARKER={marker}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()))
        })
        .map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).replace('\0', " ")
        })
        .collect()
}

/// Every message of every finding.
fn messages(summary: &Value) -> Vec<String> {
    summary["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["found"].as_array().cloned().unwrap_or_default())
        .map(|x| {
            format!(
                "{} {}",
                x["oracle"].as_str().unwrap_or(""),
                x["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn run_reproducer(finding: &Value, controller: &str) -> Output {
    let argv: Vec<String> = finding["reproduce"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    common::envtest::output_in_group(
        Command::new(&argv[0])
            .args(&argv[1..])
            .env(CONTROLLER_ENV, controller),
    )
}

fn gitrepo_setup() -> String {
    repo("examples/gitrepo/setup.yaml").display().to_string()
}

fn widgets_setup() -> String {
    repo("examples/widgets/setup.yaml").display().to_string()
}

/// The proof of the search: F1 found without a word about it — convergence and the
/// differential oracle both name the GitRepository — and the reproducer it writes makes
/// `stalemate run` exit 1. The fixed controller, explored the same way, gives nothing.
#[test]
fn finds_f1_with_a_reproducer_and_nothing_on_the_fix() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let setup = gitrepo_setup();
    // `--settle 5s` here and below: the example controllers do not back off after
    // errors, so the default 30 s of recovery allowance would only make failing trials
    // slower (e2e/flux.rs keeps the default for a controller that does).
    let args = [
        "--setup",
        &setup,
        "--quiet",
        "3s",
        "--jobs",
        "2",
        "--budget",
        "6",
        "--settle",
        "5s",
        "--shrink-steps",
        "2",
    ];
    let e = explore(dir.path(), "gitrepo", &args);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let s = &e.summary;
    assert_eq!(s["schema"], "stalemate.explore/v1");
    assert_eq!(s["verdict"], "findings");
    let all = messages(s);
    assert!(
        all.iter().any(|m| m
            == &format!("convergence {GR} demo/podinfo: InProgress: status.observedGeneration (0) != metadata.generation (1)")),
        "{all:#?}"
    );
    assert!(
        all.iter().any(|m| m
            == &format!(
                "differential {GR} demo/podinfo: status.observedGeneration: 1 in reference, 0 here"
            )),
        "{all:#?}"
    );
    let f = s["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["runExits1"] == true)
        .expect("a finding stalemate run judges by itself");
    // The reproducer is a plain schedule, its files are there, and `run` fails with it.
    let schedule: Value = serde_json::from_slice(
        &std::fs::read(e.out.join(f["scheduleFile"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    assert!(!schedule["windows"].as_array().unwrap().is_empty());
    for file in f["files"].as_array().unwrap() {
        assert!(e.out.join(file.as_str().unwrap()).is_file(), "{file}");
    }
    // Replayed once before it was reported (`--replay 1`, the default), and it came back.
    assert_eq!(
        f["replayed"],
        serde_json::json!({"cameBack": 1, "of": 1}),
        "{f}"
    );
    assert!(
        e.stderr.contains("replayed: came back 1 of 1 time\n"),
        "{}",
        e.stderr
    );
    let r = run_reproducer(f, "gitrepo");
    assert_eq!(
        r.status.code(),
        Some(1),
        "{}\n{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(
        String::from_utf8_lossy(&r.stdout)
            .contains("status.observedGeneration (0) != metadata.generation (1)")
    );
    assert!(s["firstFindingSeconds"].as_f64().unwrap() > 0.0);
    let html = std::fs::read_to_string(e.out.join("summary.html")).unwrap();
    assert!(html.contains("observedGeneration") && !html.contains("<script"));
    shrink_steps_were_confirmed(s, f);
    readiness_race_is_reported_once_about_the_setup(&e);
    the_finding_as_a_report_replays_with_one_command(&e, f);

    let fixed = explore(dir.path(), "gitrepo-fixed", &args);
    assert_eq!(fixed.code, Some(0), "{}\n{}", fixed.stderr, fixed.summary);
    assert_eq!(fixed.summary["verdict"], "clean");
    assert_eq!(fixed.summary["trialsRun"], 6);
    assert!(
        fixed.summary["trials"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["verdict"] == "pass")
    );
}

/// Every shrinking step the finding kept failed each time it was tried, at least twice:
/// its reproducer (a shrinking trial, if shrinking kept a step) is one of two or more
/// failing trials of the same schedule, none of which passed.
fn shrink_steps_were_confirmed(s: &Value, f: &Value) {
    let trials = s["trials"].as_array().unwrap();
    let reproducer = trials.iter().find(|t| t["id"] == f["trial"]).unwrap();
    if reproducer["shrinking"].is_null() {
        return;
    }
    let same: Vec<&Value> = trials
        .iter()
        .filter(|t| !t["shrinking"].is_null() && t["schedule"] == reproducer["schedule"])
        .collect();
    assert!(same.len() >= 2, "{:#?}", same);
    assert!(same.iter().all(|t| t["verdict"] == "fail"), "{same:#?}");
}

/// The readiness race is on by default: the GitRepository is Current by kstatus's fallback
/// rule from its creation until the controller first writes its status, in every run. It
/// is said once, about the setup's resources, and is no finding.
fn readiness_race_is_reported_once_about_the_setup(e: &Explored) {
    let advisories = e.summary["advisories"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        advisories
            .iter()
            .any(|a| a["oracle"] == "readinessRace" && a["name"] == "podinfo"),
        "{advisories:#?}"
    );
    assert!(
        !messages(&e.summary)
            .iter()
            .any(|m| m.starts_with("readinessRace")),
        "{:#?}",
        messages(&e.summary)
    );
    assert_eq!(
        e.stderr
            .matches("about the setup's resources (not a finding)")
            .count(),
        1,
        "{}",
        e.stderr
    );
}

/// `explore report DIR N`: an issue text with every part a maintainer needs, and a
/// bundle whose `reproduce.sh` fails (exit 1) where the bug is, run from elsewhere.
fn the_finding_as_a_report_replays_with_one_command(e: &Explored, f: &Value) {
    let n = f["number"].as_u64().unwrap();
    let out = Command::new(BIN)
        .args(["explore", "report"])
        .arg(&e.out)
        .arg(n.to_string())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let issue_path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let bundle = e.out.join(format!("report-{n:02}"));
    assert_eq!(
        issue_path,
        std::fs::canonicalize(bundle.join("ISSUE.md")).unwrap()
    );
    let issue = std::fs::read_to_string(&issue_path).unwrap();
    for part in [
        "## What a user sees",
        "## Versions",
        "## Reproduce",
        "sh reproduce.sh",
        "## The window",
        "## The controller's requests around it",
        "opened (",
        "## What the oracles said",
        "status.observedGeneration: 1 in reference, 0 here",
        "stalemate's API simulator",
    ] {
        assert!(issue.contains(part), "{part:?} not in\n{issue}");
    }
    for file in [
        "reproduce.sh",
        "schedule.json",
        "references.json",
        "trace.jsonl",
        "setup/01-setup.yaml",
    ] {
        assert!(bundle.join(file).is_file(), "{file}");
    }
    let references: Value =
        serde_json::from_slice(&std::fs::read(bundle.join("references.json")).unwrap()).unwrap();
    assert_eq!(
        references["expected"]["objects"][0]["fields"]["status.observedGeneration"], 1,
        "{references:#}"
    );
    // From another directory, with the controller as its arguments.
    let elsewhere = tempfile::tempdir().unwrap();
    let r = common::envtest::output_in_group(
        Command::new("sh")
            .arg(bundle.join("reproduce.sh"))
            .args(controller_argv())
            .current_dir(elsewhere.path())
            .env("STALEMATE", BIN)
            .env(CONTROLLER_ENV, "gitrepo"),
    );
    assert_eq!(
        r.status.code(),
        Some(1),
        "{}\n{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(
        String::from_utf8_lossy(&r.stdout)
            .contains("status.observedGeneration (0) != metadata.generation (1)")
    );
}

/// A controller that is broken with no fault at all is reported as that, once, and the
/// search goes on against the references as they are: a trial that shows the same hot
/// loop is not a finding.
#[test]
fn a_hot_loop_fails_without_any_fault() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let setup = gitrepo_setup();
    let e = explore(
        dir.path(),
        "hot-loop",
        &[
            "--setup", &setup, "--quiet", "2s", "--budget", "3", "--jobs", "2",
        ],
    );
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    assert!(
        e.stderr.contains("the controller fails without any fault"),
        "{}",
        e.stderr
    );
    assert_eq!(e.summary["verdict"], "fails-without-faults");
    let v = &e.summary["withoutFaults"][0];
    assert_eq!(v["oracle"], "hotLoop");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("demo.stalemate.dev/reconciled-at"),
        "{v}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("in both reference runs"),
        "{v}"
    );
    // The search went on, and trials that loop as the references did pass.
    assert_eq!(e.summary["trialsRun"], 3, "{}", e.stderr);
    assert!(
        e.summary["trials"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["verdict"] == "pass"),
        "{}",
        e.stderr
    );
    assert!(
        e.stderr
            .contains("without any fault (the same in the trials is not called a finding)")
    );
}

/// A spec the controller must reject is not a failure: an object that ends Failed
/// (kstatus: `Stalled=True`) in both references is what trials are judged against. The
/// fixed controller with a rejected GitRepository beside a good one is clean, its trials
/// end once the rejected one is Failed again (not after `--settle`), and their schedules
/// (a finding's reproducer is one) carry the expectation.
#[test]
fn an_object_the_controller_rejects_is_judged_against_the_references() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let rejected = dir.path().join("rejected.yaml");
    std::fs::write(
        &rejected,
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: rejected, namespace: demo}\nspec: {url: 'file:///srv/git/podinfo', interval: 1m}\n",
    )
    .unwrap();
    let setup = gitrepo_setup();
    let rejected = rejected.display().to_string();
    let args = [
        "--setup", &setup, &rejected, "--quiet", "2s", "--jobs", "2", "--budget", "4", "--settle",
        "60s",
    ];
    let fixed = explore(dir.path(), "gitrepo-fixed", &args);
    assert_eq!(fixed.code, Some(0), "{}\n{}", fixed.stderr, fixed.summary);
    assert_eq!(fixed.summary["verdict"], "clean", "{}", fixed.stderr);
    assert!(
        fixed.stderr.contains(&format!(
            "{GR} demo/rejected is Failed (kstatus) at the end of both reference runs"
        )),
        "{}",
        fixed.stderr
    );
    assert_eq!(fixed.summary["trialsRun"], 4);
    for t in fixed.summary["trials"].as_array().unwrap() {
        assert_eq!(t["verdict"], "pass", "{t}");
        // Judged once both objects were done, not after the 60 s allowance.
        assert!(t["seconds"].as_f64().unwrap() < 60.0, "{t}");
        let failed = &t["schedule"]["oracles"]["convergence"]["failed"];
        assert_eq!(
            failed,
            &serde_json::json!([{"resource": GR, "namespace": "demo", "name": "rejected"}]),
            "{t}"
        );
    }
}

/// The workload's own requests anchor windows on the controller: a Widget and its
/// ConfigMap created by the workload while the controller's Widget view is frozen make
/// the buggy orphan cleaner delete the ConfigMap. The fixed one asks the API first.
#[test]
fn a_workload_driven_bug_is_found_with_a_workload() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let setup = widgets_setup();
    let workload = format!(
        "kubectl --cache-dir {} create -f {}",
        dir.path().join("kubectl-cache").display(),
        repo("examples/widgets/w2.yaml").display()
    );
    let args = [
        "--setup",
        &setup,
        "--workload",
        &workload,
        "--quiet",
        "2s",
        "--jobs",
        "2",
        "--budget",
        "8",
        "--settle",
        "5s",
        "--shrink-steps",
        "1",
    ];
    // Run from a copy of stalemate that is replaced while the search runs (as a rebuild
    // during a long explore would): the `run it:` line must name the path it was started
    // as, which the kernel then calls `… (deleted)`.
    let bin = dir.path().join("bin/stalemate");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &bin).unwrap();
    let replace = {
        let bin = bin.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            let new = bin.with_extension("new");
            std::fs::copy(BIN, &new).unwrap();
            std::fs::rename(&new, &bin).unwrap();
        })
    };
    let e = explore_bin(
        &bin,
        dir.path(),
        "orphan-cleaner",
        &controller_argv(),
        &args,
    );
    replace.join().unwrap();
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let all = messages(&e.summary);
    assert!(
        all.contains(&"differential configmaps demo/w2-config: configmaps demo/w2-config is missing (it exists in the reference runs)".to_string()),
        "{all:#?}"
    );
    let plan = e.summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            messages(&serde_json::json!({"findings": [f]}))
                .iter()
                .any(|m| m.contains("w2-config is missing"))
        })
        .map(|f| f["plan"].as_str().unwrap().to_string())
        .unwrap();
    assert!(plan.contains("the workload's"), "{plan}");
    // The `run it:` line is a command a shell takes as it is: the workload one argument.
    let line = e
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("run it: "))
        .expect("a run it: line");
    let out = Command::new("sh")
        .args([
            "-c",
            &format!("for a in {line}; do printf '%s\\0' \"$a\"; done"),
        ])
        .output()
        .unwrap();
    let argv: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_terminator('\0')
        .map(str::to_string)
        .collect();
    let reproduce: Vec<String> = e.summary["findings"][0]["reproduce"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert_eq!(argv, reproduce, "{line}");
    assert!(argv.contains(&workload), "{argv:?}");
    assert_eq!(argv[0], bin.display().to_string(), "{line}");

    let fixed = explore(dir.path(), "orphan-cleaner-fixed", &args);
    assert_eq!(fixed.code, Some(0), "{}\n{}", fixed.stderr, fixed.summary);
}

/// Duplicate children: a cache that has not seen the child yet makes the buggy creator
/// create another; the fixed one derives the child's name and takes AlreadyExists.
#[test]
fn duplicate_children_are_found_and_the_fix_is_clean() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let setup = widgets_setup();
    let args = [
        "--setup",
        &setup,
        "--quiet",
        "2s",
        "--jobs",
        "2",
        "--budget",
        "6",
        "--settle",
        "5s",
        "--shrink-steps",
        "1",
    ];
    let e = explore(dir.path(), "child-creator", &args);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let all = messages(&e.summary);
    assert!(
        all.iter().any(|m| m.starts_with("differential configmaps demo/w1-*: objects named configmaps demo/w1-*: 1 in reference, ")),
        "{all:#?}"
    );
    assert!(
        all.iter()
            .any(|m| m.starts_with("differential the controller created ")
                && m.ends_with(" configmaps (1 in the fault-free runs)")),
        "{all:#?}"
    );
    let fixed = explore(dir.path(), "child-creator-fixed", &args);
    assert_eq!(fixed.code, Some(0), "{}\n{}", fixed.stderr, fixed.summary);
}

/// A bug only a user's action shows: the generation memo keyed by name forgets a
/// Widget only on its DELETED event, so a delete and recreate it sees coalesced (as a
/// relisting client does) leaves the new Widget without a status. The setup alone
/// (`--actions none`) never recreates anything: clean. With the generated actions the
/// first sequence deletes and recreates the Widget, and the finding names it; its
/// reproducer carries the action as `--workload` steps and fails again under `run`.
/// The fix (keyed by UID) is clean with the same actions.
#[test]
fn a_bug_that_needs_a_user_action_is_found_with_generated_actions_only() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let setup = widgets_setup();
    let args = |budget: &'static str, actions: &'static str| {
        vec![
            "--setup".to_string(),
            setup.clone(),
            "--quiet".into(),
            "2s".into(),
            "--jobs".into(),
            "2".into(),
            "--budget".into(),
            budget.into(),
            "--settle".into(),
            "5s".into(),
            "--shrink-steps".into(),
            "1".into(),
            "--actions".into(),
            actions.into(),
        ]
    };
    let run = |controller: &str, a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        explore(dir.path(), controller, &a)
    };
    // Without actions: every plan of the setup alone (8), nothing found.
    let none = run("generation-memo", args("12", "none"));
    assert_eq!(none.code, Some(0), "{}\n{}", none.stderr, none.summary);
    assert!(
        none.summary["sequences"]
            .as_array()
            .is_none_or(|s| s.is_empty())
    );
    // With them: found, after a delete and recreate (the setup's rounds 1–3 first,
    // then the sequences').
    let e = run("generation-memo", args("16", "generated"));
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let findings = e.summary["findings"].as_array().unwrap();
    let f = findings
        .iter()
        .find(|f| {
            f["actions"].as_str().is_some_and(|a| {
                a.contains("delete widgets.demo.stalemate.dev demo/w1 and create it again")
            })
        })
        .unwrap_or_else(|| panic!("no finding after a recreate: {}", e.summary));
    assert!(
        f["found"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "w1"),
        "{f}"
    );
    // Every trial names its actions; the sequences say what became of each.
    let trials = e.summary["trials"].as_array().unwrap();
    assert!(trials.iter().any(|t| t["actions"].is_null()));
    assert!(trials.iter().any(|t| t["actions"].is_string()));
    let seqs = e.summary["sequences"].as_array().unwrap();
    assert_eq!(seqs[0]["status"], "searched", "{seqs:#?}");
    // The reproducer runs the action as a workload step a shell takes as it is.
    let argv: Vec<&str> = f["reproduce"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let step = argv
        .iter()
        .position(|a| *a == "--workload")
        .expect("a --workload step");
    assert!(
        argv[step + 1].starts_with("kubectl delete widgets.demo.stalemate.dev w1 -n demo"),
        "{argv:?}"
    );
    let out = run_reproducer(f, "generation-memo");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fixed = run("generation-memo-fixed", args("16", "generated"));
    assert_eq!(fixed.code, Some(0), "{}\n{}", fixed.stderr, fixed.summary);
}

/// A controller nobody here wrote, with the official Python client (slow to start: its
/// import alone takes seconds on a busy machine), explored with default flags (generated
/// actions on) but two jobs, a budget and one shrink step a window: its stale-cache bug is found, no trial is judged
/// before the controller acted, and its fix — which takes a create's 409 for
/// AlreadyExists, as real controllers do — is clean with the actions too (explore
/// injects no 409 a real apiserver would not send; the 503s on creates it plans are
/// `plan/tests.rs`'s).
#[test]
fn a_python_controllers_bug_is_found_and_its_fix_is_clean() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let setup = widgets_setup();
    let python = common::repo("e2e/clients/python/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: .ci/run makes it",
        python.display()
    );
    let argv = |fixed: bool| {
        let mut a = vec![
            python.display().to_string(),
            common::repo("e2e/clients/python/child_controller.py")
                .display()
                .to_string(),
        ];
        if fixed {
            a.push("--fixed".into());
        }
        a
    };
    // Default flags — generated actions on — within a budget: the setup's plans
    // through round 3 (16 of its 22 here) and then every action sequence's first ones.
    let args = [
        "--setup",
        setup.as_str(),
        "--jobs",
        "2",
        "--budget",
        "24",
        "--shrink-steps",
        "1",
    ];
    let e = explore_cmd(dir.path(), "python-child", &argv(false), &args);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let all = messages(&e.summary);
    assert!(
        all.iter().any(|m| m.starts_with(
            "differential configmaps demo/w1-*: objects named configmaps demo/w1-*: 1 in reference, "
        )),
        "{all:#?}"
    );
    // Judged once ready: no trial saw the Widget before the controller acted on it.
    let early: Vec<&Value> = e.summary["trials"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["found"].as_array().unwrap().iter())
        .filter(|f| f["message"].as_str().unwrap_or("").contains("absent here"))
        .collect();
    assert!(early.is_empty(), "{early:#?}");
    // The focus: the setup's Widget, and the ConfigMaps it owns.
    assert_eq!(
        e.summary["focus"],
        serde_json::json!(["configmaps", "widgets.demo.stalemate.dev"])
    );
    assert!(e.summary["plansByRank"][0].as_u64().unwrap() > 0);
    let fixed = explore_cmd(dir.path(), "python-child-fixed", &argv(true), &args);
    assert_eq!(fixed.code, Some(0), "{}\n{}", fixed.stderr, fixed.summary);
    let trials = fixed.summary["trials"].as_array().unwrap();
    assert!(
        trials.len() >= 10,
        "the fix was exercised: {}",
        fixed.summary
    );
    assert!(
        trials.iter().any(|t| t["actions"].is_string()),
        "the fix was exercised with actions too: {}",
        fixed.summary
    );
    assert!(
        !trials
            .iter()
            .any(|t| t["plan"].as_str().unwrap_or("").starts_with("answer 409")),
        "no write of it carries a precondition: no 409 planned"
    );
}

/// A `--setup` file with bad documents: explore refuses it with every error, each named
/// by its document (and item) at the line and column of the field at fault.
#[test]
fn a_bad_setup_is_refused_with_each_error_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let setup = dir.path().join("setup.yaml");
    std::fs::write(
        &setup,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n---\nkind: ConfigMap\nmetadata: {name: a, namespace: demo}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: \"\"\n- just a string\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .arg("explore")
        .arg("--setup")
        .arg(&setup)
        .args(["--actions-list", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let f = setup.display();
    let why = "is missing (every setup object needs apiVersion, kind and metadata.name)";
    let listed: Vec<&str> = err.lines().filter_map(|l| l.strip_prefix("  ")).collect();
    assert_eq!(
        listed,
        [
            format!("{f}:6:1: document 2: `apiVersion` {why}"),
            format!("{f}:15:11: document 3, item 1: `metadata.name` {why}"),
            format!(
                "{f}:16:3: document 3, item 2: not an object (a Kubernetes manifest is a mapping)"
            ),
        ],
        "{err}"
    );
    assert!(
        err.contains(&format!("--setup {f} has 3 error(s):\n")),
        "{err}"
    );
    // A syntax error names its document too.
    std::fs::write(&setup, "a: 1\n---\nb: [1, 2\nc: d\n").unwrap();
    let out = Command::new(BIN)
        .arg("explore")
        .arg("--setup")
        .arg(&setup)
        .args(["--actions-list", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("\n  {f}:4:2: document 2: not YAML or JSON: ")),
        "{err}"
    );
}

/// An `--actions FILE` with bad entries: every one at its line and column, and explore
/// refuses it before it starts a control plane.
#[test]
fn a_bad_actions_file_is_refused_with_each_error_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let actions = dir.path().join("actions.yaml");
    std::fs::write(
        &actions,
        "- name: scale down\n  run: kubectl scale --replicas=0 deploy/x\n- name: typo\n  rnu: kubectl delete cm a\n- name: nothing\n- name: two steps\n  steps:\n  - kubectl delete cm a\n  - [kubectl, create, cm, a]\n",
    )
    .unwrap();
    let f = actions.display();
    let want = [
        format!(
            "{f}:4:3: [1].rnu: unknown field `rnu`, expected one of `name`, `steps`, `run` (expected a list of {{name, run}} or {{name, steps: [CMD, …]}})"
        ),
        format!(
            "{f}:5:3: [2]: entry 3 (\"nothing\") has no command: give run: CMD or steps: [CMD, …]"
        ),
        format!(
            "{f}:9:5: [3].steps[1]: invalid type: sequence, expected a string (expected a list of {{name, run}} or {{name, steps: [CMD, …]}})"
        ),
    ];
    for extra in [&["--actions-list"][..], &[]] {
        let started = std::time::Instant::now();
        let out = Command::new(BIN)
            .arg("explore")
            .arg("--actions")
            .arg(&actions)
            .args(extra)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let listed: Vec<&str> = err.lines().filter_map(|l| l.strip_prefix("  ")).collect();
        assert_eq!(listed, want, "{extra:?}: {err}");
        assert!(
            err.contains(&format!("--actions {f} has 3 error(s):\n")),
            "{err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "refused only after {:?}",
            started.elapsed()
        );
    }
}

/// A controller that writes nothing in its fault-free runs gives explore nothing to
/// perturb: exit 2 with advice, never "clean".
#[test]
fn a_controller_that_writes_nothing_is_not_called_clean() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("kubectl-cache");
    let watcher = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!(
            "exec kubectl --cache-dir {} get configmaps -n demo --watch -o name",
            cache.display()
        ),
    ];
    let setup = widgets_setup();
    let e = explore_cmd(dir.path(), "watcher", &watcher, &["--setup", &setup]);
    assert_eq!(e.code, Some(2), "{}", e.stderr);
    assert!(
        e.stderr.contains("nothing to perturb")
            && e.stderr
                .contains("give a --setup that needs reconciling or a --workload"),
        "{}",
        e.stderr
    );
}

/// Several controllers under test (`--controller NAME=CMD`): F1 lives in the second
/// one, beside a first that only watches. explore plans for each — anchored on anyone's
/// writes, aimed at it — finds it with a plan aimed at `gitrepo` and says so, and the
/// reproducer carries the second controller, so `stalemate run` fails with it.
#[test]
fn a_bug_in_a_second_controller_is_found_with_plans_aimed_at_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("kubectl-cache");
    let watcher = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!(
            "exec kubectl --cache-dir {} get namespaces --watch -o name",
            cache.display()
        ),
    ];
    let exe = std::env::current_exe().unwrap();
    let other = format!(
        "gitrepo={CONTROLLER_ENV}=gitrepo exec '{}' controller_process --exact --nocapture",
        exe.display()
    );
    let setup = gitrepo_setup();
    let args = [
        "--setup",
        &setup,
        "--controller",
        &other,
        "--quiet",
        "3s",
        "--jobs",
        "2",
        "--budget",
        "6",
        "--settle",
        "5s",
        "--shrink-steps",
        "1",
    ];
    let e = explore_cmd(dir.path(), "watcher", &watcher, &args);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    assert!(
        e.stderr
            .contains("controllers under test — controller: 0 anchors of its own")
            && e.stderr.contains("; gitrepo: "),
        "{}",
        e.stderr
    );
    let all = messages(&e.summary);
    assert!(
        all.iter().any(|m| m
            == &format!("convergence {GR} demo/podinfo: InProgress: status.observedGeneration (0) != metadata.generation (1)")),
        "{all:#?}"
    );
    let f = e.summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["runExits1"] == true)
        .expect("a finding stalemate run judges by itself");
    let plan = f["plan"].as_str().unwrap();
    assert!(plan.contains("to controller gitrepo"), "{plan}");
    let reproduce: Vec<&str> = f["reproduce"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(
        reproduce.contains(&"--controller") && reproduce.contains(&other.as_str()),
        "{reproduce:?}"
    );
    let r = run_reproducer(f, "watcher");
    assert_eq!(
        r.status.code(),
        Some(1),
        "{}\n{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
}

/// On a real kube-apiserver (`--envtest`: a control plane of its own per run, side by
/// side): F1 found, its reproducer — `stalemate run --envtest` — fails, the fix is clean,
/// and no etcd or apiserver is left running afterwards.
#[test]
fn finds_f1_on_a_real_apiserver() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let setup = gitrepo_setup();
    let assets = common::envtest::assets().display().to_string();
    let args = [
        "--envtest",
        &assets,
        "--setup",
        &setup,
        "--quiet",
        "3s",
        "--jobs",
        "2",
        "--budget",
        "4",
        "--settle",
        "5s",
        "--shrink-steps",
        "1",
    ];
    let e = explore(dir.path(), "gitrepo", &args);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    assert_eq!(e.summary["upstream"], "envtest");
    let all = messages(&e.summary);
    assert!(
        all.iter().any(|m| m
            == &format!("convergence {GR} demo/podinfo: InProgress: status.observedGeneration (0) != metadata.generation (1)")),
        "{all:#?}"
    );
    let f = e.summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["runExits1"] == true && f["title"].as_str().unwrap().contains("observedGeneration")
        })
        .expect("F1, judged by stalemate run by itself");
    let argv = f["reproduce"].to_string();
    assert!(
        argv.contains("\"--envtest\"") && !argv.contains("--sim"),
        "{argv}"
    );
    let r = run_reproducer(f, "gitrepo");
    assert_eq!(
        r.status.code(),
        Some(1),
        "{}\n{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("in front of a real kube-apiserver"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert_eq!(running_with(&marker("gitrepo")), Vec::<String>::new());

    let fixed = explore(dir.path(), "gitrepo-fixed", &args);
    assert_eq!(fixed.code, Some(0), "{}\n{}", fixed.stderr, fixed.summary);
    assert_eq!(fixed.summary["verdict"], "clean");
    assert_eq!(fixed.summary["trialsRun"], 4);
    assert_eq!(running_with(&marker("gitrepo-fixed")), Vec::<String>::new());
    // Each run's control plane put back for the next (two references, four trials), on
    // one more control plane than --jobs; none refused.
    assert!(
        fixed
            .stderr
            .contains("explore: control planes: 3 started, put back 6 time(s) between runs\n"),
        "{}",
        fixed.stderr
    );
}

/// On a cluster: trials one at a time, `--reset` before each, what explore created
/// deleted between trials and after the last. Nothing that was there before is touched.
#[test]
fn explores_a_cluster_and_puts_it_back() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();
    // Something of the user's that the controller reconciles too: explore must leave it.
    common::install_demo_crd(&sim);
    sim.kubectl_ok(&["create", "namespace", "other"]);
    sim.kubectl_stdin(
        &["apply", "-f", "-"],
        &serde_json::json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": {"name": "theirs", "namespace": "other"}, "spec": {"url": "https://example.com/theirs"}}).to_string(),
    );
    let resets = dir.path().join("resets");
    let reset = format!("echo reset >> {}", resets.display());
    let setup = gitrepo_setup();
    let kubeconfig = sim.kubeconfig.display().to_string();
    let e = explore(
        dir.path(),
        "gitrepo",
        &[
            "--upstream-kubeconfig",
            &kubeconfig,
            "--reset",
            &reset,
            "--setup",
            &setup,
            "--quiet",
            "2s",
            "--budget",
            "2",
            "--settle",
            "5s",
            "--shrink-steps",
            "0",
            // Each replay is one more run, and reset: counted below without them.
            "--replay",
            "0",
        ],
    );
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    assert_eq!(e.summary["upstream"], "cluster");
    assert!(
        messages(&e.summary)
            .iter()
            .any(|m| m.starts_with(&format!("convergence {GR} demo/podinfo"))),
        "{}",
        e.summary
    );
    // 2 reference runs + 2 trials, each after a reset.
    let n = std::fs::read_to_string(&resets).unwrap().lines().count();
    assert_eq!(n, 4);
    // Trials ran one at a time even though no --jobs was given.
    let trials = e.summary["trials"].as_array().unwrap();
    for w in trials.windows(2) {
        assert!(w[1]["at"].as_f64() >= w[0]["at"].as_f64());
    }
    // Put back: explore's GitRepository is gone, the user's is not.
    let left = sim.kubectl_ok(&["get", "gitrepositories", "-A", "-o", "name"]);
    assert_eq!(
        left.trim(),
        "gitrepository.source.toolkit.fluxcd.io/theirs",
        "{left}"
    );
    // The reproducer names the cluster.
    let argv = e.summary["findings"][0]["reproduce"].to_string();
    assert!(
        argv.contains("--upstream-kubeconfig") && !argv.contains("--sim"),
        "{argv}"
    );
}

/// Ctrl-C (SIGINT) in the middle of a search: every run stops with its controller, the
/// summary holds what finished, exit 2 — and no controller is left running (they run in
/// process groups of their own, so only stalemate can stop them).
#[test]
fn an_interrupted_search_stops_its_controllers() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let marker = format!("gitrepo-fixed-{}", std::process::id());
    let mut child = Command::new(BIN)
        .args([
            "explore",
            "--setup",
            &gitrepo_setup(),
            "--quiet",
            "2s",
            "--jobs",
            "2",
        ])
        .arg("--out")
        .arg(&out)
        .arg("--")
        .args(controller_argv())
        .env(CONTROLLER_ENV, "gitrepo-fixed")
        .env("STALEMATE_E2E_MARKER", &marker)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for(
        "a trial to start",
        std::time::Duration::from_secs(60),
        || out.join("logs/trial-001.log").exists().then_some(()),
    );
    // SAFETY: kill(2) on the child we spawned.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = common::wait_for(
        "explore to stop",
        std::time::Duration::from_secs(30),
        || child.try_wait().unwrap(),
    );
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["findings"].as_array().map(Vec::len), Some(0));
    // Nothing that carries this test's marker is still running.
    let left = running_with(&marker);
    assert!(left.is_empty(), "still running: {left:?}");
}

/// `timeout`, or a terminal's Ctrl-C, signals explore's whole process group — the
/// `--envtest` control plane's etcd and apiservers with it — while a finding is being
/// shrunk: no trial starts after the signal (the one running ends), no etcd is started in
/// place of the one the signal stopped, exit 2 with the finding kept, and nothing left
/// running. (Before, shrinking went on starting trials, each of which restarted etcd.)
#[test]
fn a_search_signalled_with_its_control_plane_while_shrinking_starts_nothing_more() {
    use std::os::unix::process::CommandExt;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let marker = format!("python-child-interrupted-{}", std::process::id());
    let python = common::repo("e2e/clients/python/.venv/bin/python");
    let assets = common::envtest::assets().display().to_string();
    let child = Command::new(BIN)
        .args([
            "explore",
            "--long-window",
            "0",
            "--envtest",
            &assets,
            "--setup",
            &widgets_setup(),
        ])
        // The first plans include the finding (a freeze of configmaps); fewer trials
        // before shrinking starts.
        .args(["--jobs", "2", "--budget", "6", "--out"])
        .arg(&out)
        .arg("--")
        .arg(&python)
        .arg(common::repo("e2e/clients/python/child_controller.py"))
        .env("STALEMATE_E2E_MARKER", &marker)
        .process_group(0)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = common::envtest::GroupOnDrop(child);
    let rx = stderr_lines(&mut child.0);
    // The first shrinking trial has ended: the next one is running.
    let mut before = Vec::new();
    let shrinking = |l: &str| l.starts_with("trial ") && l.contains("(shrinking finding 1)");
    assert!(
        lines_until(&rx, Duration::from_secs(600), &mut before, shrinking),
        "explore ended before any shrinking trial:\n{}",
        before.join("\n")
    );
    let pgid = libc::pid_t::try_from(child.0.id()).unwrap();
    // SAFETY: killpg(2) on the process group of the child we spawned (still running: its
    // stderr is open).
    unsafe {
        libc::killpg(pgid, libc::SIGTERM);
    }
    // Until its stderr closes: a hang fails here rather than hanging the test.
    let mut after = Vec::new();
    lines_until(&rx, Duration::from_secs(120), &mut after, |_| false);
    let status = common::wait_for("explore to exit", Duration::from_secs(30), || {
        child.0.try_wait().unwrap()
    });
    let all = format!(
        "{}\n--- SIGTERM to the group ---\n{}",
        before.join("\n"),
        after.join("\n")
    );
    assert_eq!(status.code(), Some(2), "{all}");
    assert!(all.contains("interrupted"), "{all}");
    let trials_after: Vec<&String> = after.iter().filter(|l| l.starts_with("trial ")).collect();
    assert!(
        trials_after.len() <= 1,
        "trials started after the signal: {trials_after:#?}\n{all}"
    );
    assert!(!all.contains("starting another"), "{all}");
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let findings = summary["findings"].as_array().map_or(0, Vec::len);
    assert!(findings >= 1, "the finding was lost: {all}");
    // The signal reached etcd and the apiservers too; they may take a moment to exit.
    let settled = std::time::Instant::now() + Duration::from_secs(30);
    while !running_with(&marker).is_empty() && std::time::Instant::now() < settled {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = running_with(&marker);
    assert!(left.is_empty(), "still running: {left:?}");
}

/// Someone else stops the shared etcd of an `--envtest` search with SIGTERM (the signal
/// reaches etcd alone, not stalemate or its process group): the search starts another etcd
/// and goes on. The trials running on the old one error — within a minute, not after a
/// 504 per resource read from an apiserver without storage — and the ones after run on a
/// control plane started on the new etcd, not on a spare left over from the old one.
/// (Before, a signalled etcd was taken for a Ctrl-C, and every later trial errored.)
#[test]
fn a_search_whose_etcd_someone_else_stops_starts_another() {
    use std::os::unix::process::CommandExt;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // The control planes' files go under TMPDIR: how this search's etcd is told apart.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let marker = format!("etcd-stopped-{}", std::process::id());
    let assets = common::envtest::assets().display().to_string();
    let child = Command::new(BIN)
        .args([
            "explore",
            "--long-window",
            "0",
            "--envtest",
            &assets,
            "--setup",
            &gitrepo_setup(),
        ])
        .args(["--quiet", "3s", "--settle", "5s", "--shrink-steps", "1"])
        .args(["--jobs", "2", "--budget", "6", "--out"])
        .arg(dir.path().join("out"))
        .arg("--")
        .args(controller_argv())
        .env(CONTROLLER_ENV, "gitrepo")
        .env("STALEMATE_E2E_MARKER", &marker)
        .env("TMPDIR", &tmp)
        .process_group(0)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = common::envtest::GroupOnDrop(child);
    let rx = stderr_lines(&mut child.0);
    let trial = |l: &str| l.starts_with("trial ");
    let mut before = Vec::new();
    assert!(
        lines_until(&rx, Duration::from_secs(600), &mut before, trial),
        "explore ended before any trial:\n{}",
        before.join("\n")
    );
    let etcd = etcd_under(&tmp);
    // SAFETY: kill(2) on the etcd this search started (found by its data directory).
    assert_eq!(unsafe { libc::kill(etcd, libc::SIGTERM) }, 0);
    let mut after = Vec::new();
    lines_until(&rx, Duration::from_secs(600), &mut after, |_| false);
    let status = common::wait_for("explore to exit", Duration::from_secs(30), || {
        child.0.try_wait().unwrap()
    });
    let all = format!(
        "{}\n--- SIGTERM to etcd {etcd} ---\n{}",
        before.join("\n"),
        after.join("\n")
    );
    assert!(matches!(status.code(), Some(0 | 1)), "{all}");
    let replaced = after
        .iter()
        .position(|l| l.contains("the shared etcd exited; starting another"))
        .unwrap_or_else(|| panic!("no etcd started in place of the stopped one:\n{all}"));
    let errors = after
        .iter()
        .filter(|l| trial(l) && l.contains("→ error:"))
        .count();
    // At most the trials running on the old etcd when it stopped (--jobs 2).
    assert!(errors <= 2, "{errors} trials errored:\n{all}");
    let ran = after[replaced..]
        .iter()
        .filter(|l| trial(l) && !l.contains("→ error:"))
        .count();
    assert!(ran >= 1, "no trial ran on the new etcd:\n{all}");
    let settled = std::time::Instant::now() + Duration::from_secs(30);
    while !running_with(&marker).is_empty() && std::time::Instant::now() < settled {
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = running_with(&marker);
    assert!(left.is_empty(), "still running: {left:?}");
}

/// The pid of the etcd whose command line names a directory under `tmp`.
fn etcd_under(tmp: &Path) -> libc::pid_t {
    let tmp = tmp.display().to_string();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<libc::pid_t>() else {
            continue;
        };
        let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let mut args = cmd.split(|b| *b == 0).map(String::from_utf8_lossy);
        let is_etcd = args.next().is_some_and(|a| {
            Path::new(a.as_ref())
                .file_name()
                .is_some_and(|f| f == "etcd")
        });
        if is_etcd && args.any(|a| a.contains(&tmp)) {
            return pid;
        }
    }
    panic!("no etcd running under {tmp}")
}

/// The child's stderr, line by line, read on a thread of its own (for [`lines_until`]).
fn stderr_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    rx
}

/// Lines from `rx` into `lines` until one that `stop` accepts (true) or the sender's end
/// (false); panics, with the lines, if neither comes `within`.
fn lines_until(
    rx: &std::sync::mpsc::Receiver<String>,
    within: Duration,
    lines: &mut Vec<String>,
    stop: impl Fn(&str) -> bool,
) -> bool {
    let deadline = std::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let done = stop(&line);
                lines.push(line);
                if done {
                    return true;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return false,
            Err(e) => panic!(
                "nothing more within {within:?} ({e}):\n{}",
                lines.join("\n")
            ),
        }
    }
}
