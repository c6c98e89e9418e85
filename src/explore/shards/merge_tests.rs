use super::*;
use serde_json::{Value, json};

fn trial(id: usize, verdict: &str, shrinking: Option<usize>) -> Value {
    let mut t = json!({
        "id": id, "plan": format!("plan {id}"), "slug": format!("p{id}"), "round": 1,
        "rank": 1, "schedule": {}, "verdict": verdict, "found": [], "seconds": 1.0,
        "ended": "quiet", "at": id as f64,
        "files": [format!("logs/trial-{id:03}.log"), format!("trials/trial-{id:03}.trace.jsonl")],
    });
    if let Some(f) = shrinking {
        t["shrinking"] = json!(f);
    }
    t
}

fn finding(number: usize, sig: &str, trial: usize, trials: &[usize], first_seen: f64) -> Value {
    let stem = format!("findings/{number:02}-p{trial}");
    json!({
        "number": number, "title": sig, "signatures": [sig],
        "found": [{"oracle": "convergence", "resource": "r", "namespace": "n", "name": sig,
                   "message": sig, "signature": sig}],
        "plan": format!("plan {trial}"), "trial": trial, "trials": trials,
        "scheduleFile": format!("{stem}.json"),
        "reproduce": ["stalemate", "run", "--schedule", format!("/shard/{stem}.json"), "--", "ctl"],
        "runExits1": true, "files": [format!("{stem}.json"), format!("{stem}.trace.jsonl")],
        "firstSeen": first_seen, "shrunk": true,
    })
}

fn shard(
    index: usize,
    trials: Vec<Value>,
    findings: Vec<Value>,
    weights: Vec<Weight>,
    seconds: f64,
) -> Input {
    let summary = json!({
        "schema": SCHEMA, "verdict": if findings.is_empty() { "clean" } else { "findings" },
        "controller": ["ctl"], "setup": ["setup.yaml"], "upstream": "sim",
        "shard": {"index": index, "count": 2, "seed": 1, "plans": 10, "taken": 5, "planDigest": "d"},
        "seconds": seconds, "referenceSeconds": 3.0, "trialsRun": trials.len(),
        "notExercised": 1, "trialsPerMinute": 1.0, "findings": findings, "trials": trials,
    });
    Input {
        dir: PathBuf::from(format!("/out/shard-{index}")),
        summary: serde_json::from_value(summary).unwrap(),
        weights,
    }
}

fn w(windows: usize, millis: u128) -> Weight {
    Weight {
        flaky: false,
        unshrunk: false,
        windows,
        millis,
    }
}

/// Two shards that both found A, and one of them B, merged (given in any order).
fn two_shards_merged() -> Merged {
    let s0 = shard(
        0,
        vec![
            trial(1, "fail", None),
            trial(2, "pass", None),
            trial(3, "pass", Some(1)),
        ],
        vec![finding(1, "A", 1, &[1], 20.0)],
        vec![w(2, 3000)],
        100.0,
    );
    let s1 = shard(
        1,
        vec![
            trial(1, "fail", None),
            trial(2, "fail", None),
            trial(3, "fail", Some(2)),
        ],
        vec![
            finding(1, "B", 1, &[1], 5.0),
            finding(2, "A", 2, &[2, 3], 30.0),
        ],
        vec![w(1, 500), w(1, 1500)],
        120.0,
    );
    // Given in any order: shard 0's trials come first.
    merge(vec![s1, s0], Path::new("/merged")).unwrap()
}

/// Trials concatenated (shard 0's first) and renumbered; counts summed; the verdict
/// recomputed.
#[test]
fn trials_are_concatenated_and_renumbered_and_counts_summed() {
    let m = two_shards_merged();
    let s = &m.summary;
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    assert_eq!(s.verdict, SummaryVerdict::Findings);
    assert_eq!(s.trials_run, 6);
    assert_eq!(s.not_exercised, 2);
    assert_eq!(s.seconds, 120.0);
    assert_eq!(s.trials_per_minute, 3.0);
    assert!(s.shard.is_none());
    assert_eq!(s.merged.len(), 2);
    assert!(
        s.merged[0].starts_with("shard 0/2: /out/shard-0"),
        "{:?}",
        s.merged
    );
    let ids: Vec<usize> = s.trials.iter().map(|t| t.id).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    assert_eq!(
        s.trials[3].plan, "plan 1",
        "shard 1's first trial is the 4th"
    );
    assert_eq!(s.trials[3].files[0], "logs/trial-004.log");
}

/// A once, with the simpler reproducer (one window, not two) and every failing trial of
/// both shards; B beside it.
#[test]
fn findings_with_the_same_signatures_are_one_with_the_best_reproducer() {
    let m = two_shards_merged();
    let s = &m.summary;
    // Numbered by when first seen: B (5 s) before A (20 s).
    assert_eq!(s.findings.len(), 2);
    let (b, a) = (&s.findings[0], &s.findings[1]);
    assert_eq!(
        (b.number, b.signatures.as_slice()),
        (1, &["B".to_string()][..])
    );
    assert_eq!(
        (a.number, a.signatures.as_slice()),
        (2, &["A".to_string()][..])
    );
    // A's reproducer is shard 1's (one window): its trial 2, now 5.
    assert_eq!(a.trial, 5);
    assert_eq!(a.trials, [1, 5, 6]);
    assert_eq!(a.first_seen, 20.0);
    assert_eq!(a.schedule_file, "findings/02-p2.json");
    assert_eq!(
        a.files,
        ["findings/02-p2.json", "findings/02-p2.trace.jsonl"]
    );
    assert_eq!(a.reproduce[3], "/merged/findings/02-p2.json");
    assert_eq!(s.first_finding_seconds, Some(5.0));
    // Shrinking trials name the merged findings: shard 0's #1 and shard 1's #2 are A.
    assert_eq!(s.trials[2].shrinking, Some(2));
    assert_eq!(s.trials[5].shrinking, Some(2));
    // Files are copied from the shard whose they are, renamed.
    assert!(m.copies.contains(&(
        PathBuf::from("/out/shard-1/findings/02-p2.trace.jsonl"),
        "findings/02-p2.trace.jsonl".into()
    )));
    assert!(m.copies.contains(&(
        PathBuf::from("/out/shard-1/trials/trial-003.trace.jsonl"),
        "trials/trial-006.trace.jsonl".into()
    )));
    assert!(
        !m.copies
            .iter()
            .any(|(from, _)| from.ends_with("findings/01-p1.json")
                && from.starts_with("/out/shard-0")),
        "the worse reproducer is not copied"
    );
}

/// Best is not flaky first, then fewer windows, then less time under a fault, then the
/// earlier shard.
#[test]
fn best_is_the_simplest_reproducer_that_came_back() {
    let pick = |a: Weight, b: Weight| {
        let s0 = shard(
            0,
            vec![trial(1, "fail", None)],
            vec![finding(1, "A", 1, &[1], 1.0)],
            vec![a],
            10.0,
        );
        let s1 = shard(
            1,
            vec![trial(1, "fail", None)],
            vec![finding(1, "A", 1, &[1], 1.0)],
            vec![b],
            10.0,
        );
        merge(vec![s0, s1], Path::new("/m"))
            .unwrap()
            .summary
            .findings[0]
            .trial
    };
    assert_eq!(pick(w(2, 100), w(1, 9000)), 2, "fewer windows");
    assert_eq!(pick(w(1, 1500), w(1, 500)), 2, "shorter");
    assert_eq!(pick(w(1, 500), w(1, 500)), 1, "a tie: the earlier shard");
    let flaky = Weight {
        flaky: true,
        ..w(1, 100)
    };
    assert_eq!(pick(flaky, w(3, 9000)), 2, "one that came back");
    let unshrunk = Weight {
        unshrunk: true,
        ..w(1, 100)
    };
    assert_eq!(pick(unshrunk, w(3, 9000)), 2, "one its shard shrank");
}

/// A finding no shard shrank is named, with the command that shrinks it once; one that
/// some shard shrank is that shard's, and not named.
#[test]
fn findings_no_shard_shrank_are_named() {
    let one = |i: usize, sig: &str, shrunk: bool| {
        let mut f = finding(1, sig, 1, &[1], 1.0);
        f["shrunk"] = json!(shrunk);
        let mut s = shard(i, vec![trial(1, "fail", None)], vec![f], vec![], 10.0);
        s.weights = vec![Weight {
            unshrunk: !shrunk,
            ..w(1, 100)
        }];
        s
    };
    let m = merge(vec![one(0, "A", false), one(1, "A", true)], Path::new("/m")).unwrap();
    assert!(m.summary.findings[0].shrunk);
    assert_eq!(m.summary.findings[0].trial, 2, "shard 1's, shrunk");
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    let m = merge(
        vec![one(0, "A", false), one(1, "B", false)],
        Path::new("/m"),
    )
    .unwrap();
    assert!(m.summary.findings.iter().all(|f| !f.shrunk));
    assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
    assert!(
        m.notes[0].starts_with("findings #1, #2 were not shrunk by any shard")
            && m.notes[0].contains("stalemate explore --shrink /m --out DIR"),
        "{:?}",
        m.notes
    );
}

#[test]
fn shards_that_do_not_belong_together_are_refused_and_gaps_said() {
    let clean = |i: usize| shard(i, vec![trial(1, "pass", None)], vec![], vec![], 10.0);
    let m = merge(vec![clean(1)], Path::new("/m")).unwrap();
    assert_eq!(m.summary.verdict, SummaryVerdict::Clean);
    assert!(m.notes[0].contains("shard 0 of 2 missing"), "{:?}", m.notes);
    let e = merge(vec![clean(1), clean(1)], Path::new("/m")).unwrap_err();
    assert!(e.to_string().contains("shard 1 is given twice"), "{e}");
    let mut other = clean(0);
    other.summary.controller = vec!["other".into()];
    let e = merge(vec![clean(1), other], Path::new("/m")).unwrap_err();
    assert!(e.to_string().contains("not shards of one explore"), "{e}");
    let mut seed = clean(0);
    if let Some(s) = seed.summary.shard.as_mut() {
        s.seed = 7;
    }
    let e = merge(vec![clean(1), seed], Path::new("/m")).unwrap_err();
    assert!(e.to_string().contains("--seed 7"), "{e}");
    let mut differs = clean(0);
    if let Some(s) = differs.summary.shard.as_mut() {
        s.plan_digest = "e".into();
    }
    let m = merge(vec![clean(1), differs], Path::new("/m")).unwrap();
    assert!(m.notes[0].contains("different plan lists"), "{:?}", m.notes);
    assert!(merge(vec![], Path::new("/m")).is_err());
}

/// What the references showed with no fault is reported once however many shards saw
/// it, and alone it makes the verdict.
#[test]
fn fault_free_findings_are_reported_once() {
    let with = |i: usize| {
        let mut s = shard(i, vec![], vec![], vec![], 10.0);
        s.summary.without_faults = vec![
            serde_json::from_value(json!({"oracle": "hotLoop", "resource": "r",
                "namespace": "n", "name": "x", "message": "m", "signature": "hot"}))
            .unwrap(),
        ];
        s.summary.reference_files = vec!["trials/reference-1.trace.jsonl".into()];
        s
    };
    let m = merge(vec![with(0), with(1)], Path::new("/m")).unwrap();
    assert_eq!(m.summary.verdict, SummaryVerdict::FailsWithoutFaults);
    assert_eq!(m.summary.without_faults.len(), 1);
    assert_eq!(
        m.summary.reference_files,
        [
            "trials/shard0-reference-1.trace.jsonl",
            "trials/shard1-reference-1.trace.jsonl"
        ]
    );
}

#[test]
fn renaming_touches_the_file_name_only() {
    assert_eq!(
        rename("trials/trial-007.trace.jsonl", "trial-007", "trial-012"),
        "trials/trial-012.trace.jsonl"
    );
    assert_eq!(rename("logs/other.log", "trial-007", "x"), "logs/other.log");
    assert_eq!(
        prefixed("logs/reference-1.log", "shard0-"),
        "logs/shard0-reference-1.log"
    );
}
