//! WatchList (`sendInitialEvents=true`), the way client-go ≥ 1.35 informers list, through
//! the proxy in front of a real control plane: a lagging apiserver's watch cache may
//! answer one that names a resourceVersion from where it is (stale, but not older than
//! asked), and one without a resourceVersion only fresh (a consistent read). The proxy
//! answers the first from the client's view during a freeze and leaves the second to
//! the upstream — and client-go's own check of what a WatchList delivered
//! (`KUBE_WATCHLIST_INCONSISTENCY_DETECTOR`: an Exact LIST at the end marker's
//! resourceVersion, compared item for item, a panic if they differ) never fires.

#[path = "common/mod.rs"]
mod common;

use std::process::Command;

use common::envtest::{assets, output_in_group};
use common::{BIN, repo};
use serde_json::Value;

/// Freeze kube-controller-manager's pods for 8 s once its ReplicaSet controller has made
/// its 3 pods, and expire its pod watch then (410): the client lists again by WatchList
/// from the resourceVersion it had, while the freeze holds.
const SCHEDULE: &str = r#"{
  "clients": {"kcm": {"listener": "controller"}},
  "windows": [
    {"name": "freeze", "client": "kcm", "resources": ["pods"], "fault": {"freeze": {}},
     "duration": "8s", "trigger": {"afterRequests": {"verb": "create", "resource": "pods", "count": 3}}},
    {"name": "relist", "client": "kcm", "resources": ["pods"], "fault": {"relist": {"how": "expired"}},
     "duration": "500ms", "trigger": {"afterRequests": {"verb": "create", "resource": "pods", "count": 3}}}
  ]
}"#;

#[test]
fn a_watch_list_during_a_freeze_is_answered_from_the_view_and_client_go_finds_it_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("schedule.json");
    std::fs::write(&schedule, SCHEDULE).unwrap();
    let trace = dir.path().join("trace.jsonl");
    let assets = assets();
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "--envtest"])
        .arg(&assets)
        .args(["--with", "kwok", "--setup"])
        .arg(repo("examples/kcm-zoo/replicaset.yaml"))
        .args(["--quiet", "3s", "--max-run", "120s", "--trace"])
        .arg(&trace)
        .arg("--schedule")
        .arg(&schedule)
        .arg("--")
        .arg(repo("examples/kcm-zoo/kcm.sh"))
        .arg("replicaset")
        // client-go checks every WatchList against an Exact LIST, and panics on a
        // difference; its reflector says at -v=4 when it checks.
        .env("KUBE_WATCHLIST_INCONSISTENCY_DETECTOR", "true")
        .env("RUST_LOG", "warn,rustls=error");
    let out = output_in_group(&mut cmd);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !said.contains("data inconsistency detected"),
        "client-go found the WatchList inconsistent: {said}"
    );
    assert_eq!(out.status.code(), Some(0), "{said}");
    let records: Vec<Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let pods = |verb: &str| -> Vec<&Value> {
        records
            .iter()
            .filter(|r| {
                r["kind"] == "request"
                    && r["client"] == "kcm"
                    && r["verb"] == verb
                    && r["resource"] == "pods"
            })
            .collect()
    };
    // The first WatchList (no resourceVersion: a consistent read) went upstream; the one
    // after the 410 came from the view, at the resourceVersion the client had.
    let watches = pods("watch");
    assert!(
        watches.first().is_some_and(|w| w["answer"] == "upstream"),
        "{watches:#?}"
    );
    let from_view: Vec<&&Value> = watches
        .iter()
        .filter(|w| w["answer"] == "view" && w["window"] == "freeze")
        .collect();
    assert_eq!(from_view.len(), 1, "{watches:#?}");
    let rv = from_view[0]["resourceVersion"].as_str().unwrap_or_default();
    assert!(!rv.is_empty(), "{:#?}", from_view[0]);
    // client-go checked it: an Exact LIST at that resourceVersion, answered upstream.
    let lists = pods("list");
    assert!(
        lists
            .iter()
            .any(|l| l["answer"] == "upstream" && l["code"] == 200),
        "the inconsistency detector listed nothing: {lists:#?}"
    );
    // Nothing it was shown was lost: its 3 pods, and no more made.
    let created = records
        .iter()
        .filter(|r| {
            r["kind"] == "request"
                && r["verb"] == "create"
                && r["resource"] == "pods"
                && r["code"] == 201
        })
        .count();
    assert_eq!(created, 3, "{said}");
}
