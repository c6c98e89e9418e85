//! One explore in shards (`--shard I/N`, `explore merge`) and as a Kubernetes Indexed
//! Job (`explore job`, `explore gather`), against one unsharded explore of the same
//! buggy controller: the shards together find what it finds. The Job's pods run here as
//! processes — the command lines the Job gives them, with its environment and the
//! ConfigMap's files where it mounts them — each on a real control plane of its own
//! (`--envtest`, as in the pod); the printed objects pass a server-side dry run on a real
//! kube-apiserver.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use super::common::{self, BIN, Kubectl};
use super::{CONTROLLER_ENV, ONE_AT_A_TIME, controller_argv, explore_bin, gitrepo_setup, marker};

/// The flags every explore here shares: small budgets, no long windows, no replays.
fn flags(setup: &str) -> Vec<String> {
    shrinking(setup, "1", "0")
}

/// The same, with `--shrink-steps STEPS --replay REPLAYS`.
fn shrinking(setup: &str, steps: &str, replays: &str) -> Vec<String> {
    [
        "--setup",
        setup,
        "--actions",
        "none",
        "--quiet",
        "3s",
        "--settle",
        "5s",
        "--budget",
        "3",
        "--shrink-steps",
        steps,
        "--replay",
        replays,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Each finding's signatures.
fn signatures(summary: &Value) -> BTreeSet<Vec<String>> {
    summary["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            f["signatures"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .collect()
}

/// What one unsharded explore (`--jobs 2`) finds, run once for both tests.
fn unsharded() -> &'static BTreeSet<Vec<String>> {
    static FOUND: OnceLock<BTreeSet<Vec<String>>> = OnceLock::new();
    FOUND.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut args = flags(&gitrepo_setup());
        args.extend(["--jobs".into(), "2".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let e = explore_bin(
            Path::new(BIN),
            dir.path(),
            "gitrepo",
            &controller_argv(),
            &args,
        );
        assert_eq!(e.code, Some(1), "{}", e.stderr);
        let found = signatures(&e.summary);
        assert!(!found.is_empty(), "{}", e.summary);
        found
    })
}

/// Shards 0/2 and 1/2 of the buggy controller side by side (`--jobs 1` each), with
/// `flags`, their outputs under `dir`.
fn two_shards(dir: &Path, flags: Vec<String>) -> Vec<super::Explored> {
    let shards: Vec<_> = (0..2)
        .map(|i| {
            let d = dir.join(format!("s{i}"));
            let mut args = flags.clone();
            args.extend([
                "--jobs".into(),
                "1".into(),
                "--shard".into(),
                format!("{i}/2"),
            ]);
            std::thread::spawn(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                explore_bin(Path::new(BIN), &d, "gitrepo", &controller_argv(), &args)
            })
        })
        .collect();
    shards.into_iter().map(|t| t.join().unwrap()).collect()
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// Two shards side by side (`--jobs 1` each), merged: the unsharded run's findings,
/// each once, every trial of both, renumbered; and a bad `--shard` is refused clearly.
#[test]
fn shards_merged_find_what_one_run_finds() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let e = run(&["explore", "--shard", "2/2", "--", "true"]);
    assert_eq!(e.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("the index must be below the count"),
        "{}",
        String::from_utf8_lossy(&e.stderr)
    );
    let want = unsharded();
    let dir = tempfile::tempdir().unwrap();
    let shards = two_shards(dir.path(), flags(&gitrepo_setup()));
    let mut dirs = Vec::new();
    let mut trials = 0;
    for (i, s) in shards.iter().enumerate() {
        assert!(matches!(s.code, Some(0 | 1)), "{}", s.stderr);
        assert_eq!(s.summary["shard"]["index"], i, "{}", s.summary["shard"]);
        assert_eq!(s.summary["shard"]["count"], 2);
        assert!(
            s.summary["shard"]["taken"].as_u64().unwrap()
                < s.summary["shard"]["plans"].as_u64().unwrap()
        );
        trials += s.summary["trialsRun"].as_u64().unwrap();
        dirs.push(s.out.display().to_string());
    }
    let out = dir.path().join("merged");
    let out_s = out.display().to_string();
    let mut args = vec![
        "explore",
        "merge",
        dirs[1].as_str(),
        dirs[0].as_str(),
        "--out",
        &out_s,
    ];
    let m = run(&args);
    assert_eq!(
        m.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&m.stderr)
    );
    let merged: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(&signatures(&merged), want, "{merged}");
    assert_eq!(merged["verdict"], "findings");
    assert_eq!(merged["trialsRun"], trials);
    assert!(merged.get("shard").is_none());
    let ids: Vec<u64> = merged["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, (1..=trials).collect::<Vec<_>>());
    for f in merged["findings"].as_array().unwrap() {
        for file in f["files"].as_array().unwrap() {
            assert!(out.join(file.as_str().unwrap()).is_file(), "{file}");
        }
        let argv = f["reproduce"].to_string();
        assert!(
            argv.contains(
                &out.join(f["scheduleFile"].as_str().unwrap())
                    .display()
                    .to_string()
            ),
            "{argv}"
        );
    }
    assert!(
        std::fs::read_to_string(out.join("summary.html"))
            .unwrap()
            .contains("observedGeneration")
    );
    // Each shard shrank its own: nothing is left to shrink after the merge.
    assert!(
        !String::from_utf8_lossy(&m.stderr).contains("not shrunk"),
        "{}",
        String::from_utf8_lossy(&m.stderr)
    );
    let seed = run(&["explore", "--shrink", &out_s, "--seed", "2", "--", "ctl"]);
    let said = String::from_utf8_lossy(&seed.stderr);
    assert_eq!(seed.status.code(), Some(2), "{said}");
    assert!(said.contains("it explored with --seed 1, not 2"), "{said}");
    let mut again = vec!["explore", "--shrink", &out_s, "--out"];
    let elsewhere = dir.path().join("nothing").display().to_string();
    again.push(&elsewhere);
    again.push("--");
    let argv = controller_argv();
    again.extend(argv.iter().map(String::as_str));
    let none = run(&again);
    let said = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(1), "{said}");
    assert!(
        said.contains("were shrunk already: nothing to run")
            || said.contains("was shrunk already: nothing to run"),
        "{said}"
    );
    assert!(!dir.path().join("nothing").exists());
    // A shard given twice is refused.
    args[2] = dirs[0].as_str();
    let twice = run(&args);
    assert_eq!(twice.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("given twice"));
}

/// Each finding's reproducer: its schedule's windows and their durations summed (ms).
fn reproducer_size(out: &Path, finding: &Value) -> (usize, u128) {
    let path = out.join(finding["scheduleFile"].as_str().unwrap());
    let s: stalemate::schedule::Schedule =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let millis = s
        .windows
        .iter()
        .filter_map(|w| w.duration.map(|d| d.0.as_millis()))
        .sum();
    (s.windows.len(), millis)
}

/// Shards told not to shrink (`--shrink-steps 0 --replay 0`, so that a bug several
/// find is not shrunk by each), merged: the merge names each finding as shrunk by none.
/// `explore --shrink` then shrinks and replays each once, into another directory (the
/// merged one untouched): every finding shrunk, no bigger than before, its trials after
/// the merged ones, and its reproducer still fails under `stalemate run`.
#[test]
fn findings_no_shard_shrank_are_shrunk_once_after_the_merge() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for s in two_shards(dir.path(), shrinking(&gitrepo_setup(), "0", "0")) {
        assert!(matches!(s.code, Some(0 | 1)), "{}", s.stderr);
        assert!(
            s.summary["findings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["shrunk"] == false && f.get("replayed").is_none()),
            "{}",
            s.summary
        );
        dirs.push(s.out.display().to_string());
    }
    let merged = dir.path().join("merged");
    let merged_s = merged.display().to_string();
    let m = run(&["explore", "merge", &dirs[0], &dirs[1], "--out", &merged_s]);
    let said = String::from_utf8_lossy(&m.stderr);
    assert_eq!(m.status.code(), Some(1), "{said}");
    assert!(said.contains("not shrunk by any shard"), "{said}");
    assert!(
        said.contains(&format!("explore --shrink {merged_s}")),
        "{said}"
    );
    let before_bytes = std::fs::read(merged.join("summary.json")).unwrap();
    let before: Value = serde_json::from_slice(&before_bytes).unwrap();
    let findings = before["findings"].as_array().unwrap().clone();
    assert!(!findings.is_empty(), "{before}");
    assert!(findings.iter().all(|f| f["shrunk"] == false));
    // The result goes elsewhere: the merged output is never written.
    let same = run(&[
        "explore", "--shrink", &merged_s, "--out", &merged_s, "--", "ctl",
    ]);
    assert_eq!(same.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&same.stderr).contains("another directory"));

    let mut args = shrinking(&gitrepo_setup(), "2", "1");
    args.extend([
        "--jobs".into(),
        "2".into(),
        "--shrink".into(),
        merged_s.clone(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let at = dir.path().join("shrunk");
    let e = explore_bin(Path::new(BIN), &at, "gitrepo", &controller_argv(), &args);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    assert_eq!(
        std::fs::read(merged.join("summary.json")).unwrap(),
        before_bytes
    );
    let after = &e.summary;
    let merged_trials = before["trials"].as_array().unwrap().len();
    let trials = after["trials"].as_array().unwrap();
    assert_eq!(after["trialsRun"], trials.len());
    assert!(trials.len() > merged_trials, "{after}");
    assert_eq!(after["merged"], before["merged"]);
    let numbers: Vec<&Value> = findings.iter().map(|f| &f["number"]).collect();
    for t in &trials[merged_trials..] {
        assert!(numbers.contains(&&t["shrinking"]), "{t}");
    }
    let shrunk = after["findings"].as_array().unwrap();
    assert_eq!(shrunk.len(), findings.len());
    for (b, a) in findings.iter().zip(shrunk) {
        assert_eq!(a["number"], b["number"]);
        assert_eq!(a["signatures"][0], b["signatures"][0], "{a}");
        assert_eq!(a["shrunk"], true, "{a}");
        assert_eq!(a["replayed"]["of"], 1, "{a}");
        assert!(
            trials[merged_trials..]
                .iter()
                .any(|t| t["shrinking"] == a["number"]),
            "finding {} was not shrunk here",
            a["number"]
        );
        assert!(
            reproducer_size(&e.out, a) <= reproducer_size(&merged, b),
            "{a}"
        );
        for file in a["files"].as_array().unwrap() {
            assert!(e.out.join(file.as_str().unwrap()).is_file(), "{file}");
        }
        assert!(
            a["reproduce"]
                .to_string()
                .contains(&e.out.display().to_string()),
            "{}",
            a["reproduce"]
        );
    }
    let rerun = super::run_reproducer(&shrunk[0], "gitrepo");
    assert_eq!(
        rerun.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
}

/// `explore job`'s objects, read back.
fn job_objects(extra: &[&str]) -> (String, Value, Value) {
    let setup = gitrepo_setup();
    let mut args: Vec<String> = [
        "explore",
        "job",
        "--shards",
        "2",
        "--image",
        "stalemate-explore:e2e",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(flags(&setup));
    args.extend([
        "--jobs".into(),
        "1".into(),
        "--long-window".into(),
        "0".into(),
        "--".into(),
    ]);
    args.extend(controller_argv());
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&yaml).unwrap();
    assert_eq!(docs.len(), 2, "{yaml}");
    (yaml, docs[0].clone(), docs[1].clone())
}

/// What kubelet does to a container's args: `$(VAR)` from its environment, `$$` a `$`.
fn kubelet_expand(arg: &str, index: usize) -> String {
    arg.replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
        .replace("$$", "$")
}

/// The Job's pods run here: their command lines, `JOB_COMPLETION_INDEX`, the
/// ConfigMap's files at the mount path; their output (stderr, then stdout, as a log has
/// them) saved as `kubectl logs` would, gathered and merged: the unsharded findings.
#[test]
fn a_jobs_pods_logs_gather_into_what_one_run_finds() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let want = unsharded();
    let assets = common::envtest::assets().display().to_string();
    let (_, cm, job) = job_objects(&["--assets", &assets]);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input");
    std::fs::create_dir_all(&input).unwrap();
    for (k, v) in cm["data"].as_object().unwrap() {
        std::fs::write(input.join(k), v.as_str().unwrap()).unwrap();
    }
    let pod = &job["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let mount = |name: &str| {
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap()["mountPath"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (input_mount, work_mount) = (mount("input"), mount("work"));
    let pods: Vec<_> = (0..2)
        .map(|i| {
            let work = dir.path().join(format!("work-{i}"));
            std::fs::create_dir_all(&work).unwrap();
            let argv: Vec<String> = c["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    kubelet_expand(a.as_str().unwrap(), i)
                        .replace(&input_mount, &input.display().to_string())
                        .replace(&work_mount, &work.display().to_string())
                })
                .collect();
            std::thread::spawn(move || {
                common::envtest::output_in_group(
                    Command::new(BIN)
                        .args(&argv)
                        .env("JOB_COMPLETION_INDEX", i.to_string())
                        .env(CONTROLLER_ENV, "gitrepo")
                        .env("STALEMATE_E2E_MARKER", marker("gitrepo-pod")),
                )
            })
        })
        .collect();
    let mut logs = Vec::new();
    for (i, p) in pods.into_iter().enumerate() {
        let out = p.join().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "pod {i}: {stderr}");
        let log = dir.path().join(format!("pod-{i}.log"));
        std::fs::write(&log, [out.stderr.as_slice(), &out.stdout].concat()).unwrap();
        logs.push(log.display().to_string());
    }
    let gathered = dir.path().join("gathered");
    let g = gathered.display().to_string();
    let mut args = vec!["explore", "gather", "--out", &g, "--from-log"];
    args.extend(logs.iter().map(String::as_str));
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for i in 0..2 {
        let s: Value = serde_json::from_slice(
            &std::fs::read(gathered.join(format!("shard-{i}/summary.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(s["shard"]["index"], i);
        assert_eq!(s["upstream"], "envtest");
        assert!(gathered.join(format!("shard-{i}/summary.html")).is_file());
    }
    let merged: Value =
        serde_json::from_slice(&std::fs::read(gathered.join("merged/summary.json")).unwrap())
            .unwrap();
    assert_eq!(&signatures(&merged), want, "{merged}");
    for f in merged["findings"].as_array().unwrap() {
        assert!(
            gathered
                .join("merged")
                .join(f["scheduleFile"].as_str().unwrap())
                .is_file()
        );
    }
    assert_eq!(
        super::running_with(&marker("gitrepo-pod")),
        Vec::<String>::new()
    );
}

/// The ConfigMap and Job pass a server-side dry run on a real kube-apiserver (the batch
/// API's own validation: Indexed, backoffLimitPerIndex with restartPolicy Never, the
/// volumes); created for real, `gather` finds the Job and says no shard has a pod that
/// succeeded (nothing runs pods here).
#[test]
fn the_job_passes_a_server_side_dry_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let api = common::envtest::RealApiserver::start();
    let (yaml, _, _) = job_objects(&["--name", "ex", "--parallelism", "1"]);
    let dry = api.kubectl_stdin(&["apply", "--dry-run=server", "-f", "-"], &yaml);
    let said = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry.status.success(),
        "{}\n{yaml}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(
        said.contains("configmap/ex-input created (server dry run)"),
        "{said}"
    );
    assert!(
        said.contains("job.batch/ex created (server dry run)"),
        "{said}"
    );
    let kc = api.kubeconfig.display().to_string();
    let out = tempfile::tempdir().unwrap();
    let o = out.path().display().to_string();
    let none = run(&["explore", "gather", "ex", "--kubeconfig", &kc, "--out", &o]);
    assert_eq!(none.status.code(), Some(2));
    let e = String::from_utf8_lossy(&none.stderr);
    assert!(e.contains("job ex in namespace default"), "{e}");
    let created = api.kubectl_stdin(&["apply", "-f", "-"], &yaml);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let pending = run(&[
        "explore",
        "gather",
        "ex",
        "--kubeconfig",
        &kc,
        "-n",
        "default",
        "--out",
        &o,
    ]);
    assert_eq!(pending.status.code(), Some(2));
    let e = String::from_utf8_lossy(&pending.stderr);
    assert!(
        e.contains("shard 0: no pod succeeded (none made yet)") && e.contains("shard 1:"),
        "{e}"
    );
}
