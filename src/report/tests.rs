use std::time::{Duration, SystemTime};

use serde_json::json;

use super::*;
use crate::k8s::request::Verb;
use crate::oracle::{OracleConfig, Oracles};

const GR: &str = "gitrepositories.source.toolkit.fluxcd.io";

fn t(s: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000) + Duration::from_secs_f64(s)
}

fn stuck_run() -> Report {
    let cfg: OracleConfig = serde_json::from_value(json!({
        "convergence": {"resources": [GR], "settle": "5s"},
        "conflicts": {"maxPerObjectPerMinute": 3}
    }))
    .unwrap();
    let o = Oracles::new(cfg, t(0.0));
    let obj = |g: i64, og: i64| {
        json!({"metadata": {"name": "podinfo", "namespace": "demo", "generation": g},
               "status": {"observedGeneration": og, "conditions": [{"type": "Ready", "status": "True"}]}})
    };
    o.on_object(GR, &obj(1, 1), t(0.5));
    o.on_request(
        "sc",
        Verb::Patch,
        &format!("{GR}/status"),
        Some("demo"),
        Some("podinfo"),
        200,
        t(1.0),
    );
    o.on_window("f1", "freeze", true, t(1.0));
    o.on_object(GR, &obj(2, 1), t(1.2));
    for i in 0..5 {
        o.on_request(
            "sc",
            Verb::Patch,
            &format!("{GR}/status"),
            Some("demo"),
            Some("podinfo"),
            409,
            t(1.3 + f64::from(i) * 0.15),
        );
    }
    o.on_window("f1", "freeze", false, t(3.0));
    Report::now(&o, t(10.0))
}

#[test]
fn json_report_has_the_documented_top_level() {
    let r = stuck_run();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["schema"], SCHEMA);
    assert_eq!(v["verdict"], "fail");
    assert_eq!(v["judged"], true);
    let kinds: Vec<&str> = v["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["oracle"].as_str().unwrap())
        .collect();
    // The 409s came while the window held the cache: seen there, not a violation.
    assert_eq!(kinds, ["convergence"]);
    assert_eq!(v["insideWindows"][0]["oracle"], "conflicts");
    assert_eq!(v["insideWindows"][0]["peak"], 5);
    let c = &v["violations"][0];
    for k in ["oracle", "resource", "namespace", "name", "rule", "since"] {
        assert!(c[k].is_string(), "{k} in {c}");
    }
    assert_eq!(v["windows"][0]["name"], "f1");
    assert!(v["windows"][0]["closedAt"].is_string());
    assert_eq!(v["recoveries"][0]["seconds"], serde_json::Value::Null);
    assert_eq!(v["timeline"].as_array().unwrap().len(), 6);
    // And it reads back.
    let back: Report = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}

#[test]
fn terminal_summary_reads_well() {
    let text = stuck_run().terminal();
    assert!(
        text.contains("  f1                           freeze    +1.0s → +3.0s\n"),
        "{text}"
    );
    assert!(text.contains("writes: 1, conflicts (409): 5\n"), "{text}");
    assert!(
        text.contains(&format!("  convergence   {GR} demo/podinfo since +1.2s: InProgress: status.observedGeneration (1) != metadata.generation (2)\n")),
        "{text}"
    );
    assert!(
        text.contains("seen inside windows, not violations (1):\n  conflicts     "),
        "{text}"
    );
    assert!(text.ends_with("verdict: FAIL (1 violation(s))\n"), "{text}");
}

#[test]
fn html_is_self_contained_with_lanes_windows_and_marks() {
    let html = html::render(&stuck_run());
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("http://").count(), 1, "only the SVG namespace");
    assert!(
        !html.contains("<script") && !html.contains("https://"),
        "nothing fetched, nothing run"
    );
    assert_eq!(html.matches("class=\"lane violated\"").count(), 1);
    assert_eq!(html.matches("class=\"window\"").count(), 1);
    assert_eq!(html.matches("class=\"conflict\"").count(), 5);
    assert_eq!(html.matches("class=\"write\"").count(), 1);
    assert_eq!(html.matches("class=\"violation\"").count(), 1);
    assert_eq!(html.matches("class=\"inside\"").count(), 1);
    // Names are escaped.
    let mut r = stuck_run();
    r.verdicts.violations[0].name = "<img src=x>".into();
    assert!(!html::render(&r).contains("<img"));
}

/// Violations and recoveries name objects as kubectl does: `namespace/name`, and a
/// cluster-scoped one by its name alone (not `/name`).
#[test]
fn html_names_cluster_scoped_objects_without_a_slash() {
    let mut r = stuck_run();
    let html = html::render(&r);
    assert!(html.contains(&format!("</b> {GR} demo/podinfo")), "{html}");
    r.verdicts.violations[0].namespace = String::new();
    r.verdicts.violations[0].name = "cluster-wide".into();
    let html = html::render(&r);
    assert!(html.contains(&format!("</b> {GR} cluster-wide")), "{html}");
    assert!(!html.contains(" /cluster-wide"), "{html}");
}

#[test]
fn a_trace_renders_into_the_same_timeline_and_verdicts() {
    let r = stuck_run();
    let ts = |s: f64| humantime::format_rfc3339_millis(t(s)).to_string();
    let mut lines = vec![
        json!({"ts": ts(0.0), "kind": "request", "client": "sc", "verb": "list", "resource": GR, "code": 200, "latencyMs": 1.0, "answer": "upstream"}),
        json!({"ts": ts(1.0), "kind": "request", "client": "sc", "verb": "patch", "resource": format!("{GR}/status"), "namespace": "demo", "name": "podinfo", "code": 200, "latencyMs": 1.0, "answer": "upstream"}),
        json!({"ts": ts(1.0), "kind": "window", "window": "f1", "action": "open", "fault": "freeze"}),
        json!({"ts": ts(1.1), "kind": "event", "client": "sc", "resource": GR, "type": "MODIFIED", "namespace": "demo", "name": "podinfo", "resourceVersion": "5", "fate": "held"}),
        json!({"ts": ts(3.0), "kind": "window", "window": "f1", "action": "close", "fault": "freeze"}),
    ];
    for rec in r.trace_records() {
        let mut v = serde_json::to_value(&rec).unwrap();
        v["ts"] = json!(ts(10.0));
        lines.push(v);
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let back = Report::from_trace(&text).unwrap();
    assert_eq!(back.verdict, "fail");
    assert_eq!(back.verdicts.violations, r.verdicts.violations);
    assert_eq!(back.verdicts.windows, r.verdicts.windows);
    assert_eq!(
        back.verdicts.timeline.len(),
        1,
        "the write; the list is not a mark"
    );
    assert_eq!(back.verdicts.timeline[0].resource, GR);
    // Bad lines are named.
    assert_eq!(
        Report::from_trace("{\"kind\":\"window\"}\n").unwrap_err(),
        "line 1: no valid \"ts\""
    );
    assert!(
        Report::from_trace("x\n")
            .unwrap_err()
            .starts_with("line 1: not a JSON trace record")
    );
    assert_eq!(Report::from_trace("").unwrap_err(), "the trace is empty");
    // A trace without verdicts (the run was killed) is not judged.
    let cut: String = lines[..5].iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(Report::from_trace(&cut).unwrap().verdict, "not judged");
}

/// A run whose schedule had windows that never opened: a pass, said to have tested
/// nothing, in the terminal, the JSON and the HTML.
#[test]
fn a_pass_with_no_window_opened_says_so() {
    let o = Oracles::new(OracleConfig::default(), t(0.0));
    let mut r = Report::now(&o, t(10.0));
    assert_eq!(r.verdict, "pass");
    r.note_unopened(["f1", "f2"]);
    assert!(r.no_window_opened);
    assert_eq!(r.windows_never_opened, ["f1", "f2"]);
    let text = r.terminal();
    assert!(
        text.contains("windows: none opened (scheduled: f1, f2)"),
        "{text}"
    );
    assert!(text.contains(NO_WINDOW_OPENED), "{text}");
    assert!(
        text.contains("verdict: PASS, but nothing was tested"),
        "{text}"
    );
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["noWindowOpened"], true);
    assert_eq!(v["windowsNeverOpened"], json!(["f1", "f2"]));
    assert_eq!(v["verdict"], "pass");
    assert!(html::render(&r).contains("nothing was tested"));
}

/// Some windows opened: the others are listed, and the run is not said to have tested
/// nothing. No windows scheduled: nothing is said either.
#[test]
fn windows_that_never_opened_are_listed_beside_those_that_did() {
    let mut r = stuck_run();
    r.note_unopened(["f1", "later"]);
    assert!(!r.no_window_opened);
    assert_eq!(r.windows_never_opened, ["later"]);
    let text = r.terminal();
    assert!(text.contains("  never opened: later"), "{text}");
    assert!(!text.contains(NO_WINDOW_OPENED), "{text}");
    let v = serde_json::to_value(&r).unwrap();
    assert!(v.get("noWindowOpened").is_none());

    let o = Oracles::new(OracleConfig::default(), t(0.0));
    let mut none = Report::now(&o, t(10.0));
    none.note_unopened([]);
    assert!(!none.no_window_opened && none.windows_never_opened.is_empty());
    assert!(none.terminal().contains("verdict: PASS\n"));
}
