use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::*;
use crate::session::{CONTROLLER, WORKLOAD};
use crate::trace::{Record, Stamped};

const GR: &str = "gitrepositories.source.toolkit.fluxcd.io";

fn at(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000) + Duration::from_millis(ms)
}

fn request(ms: u64, client: &str, verb: &'static str, resource: &str) -> Stamped {
    sent(ms, client, verb, resource, false)
}

/// A write with a resourceVersion precondition (an optimistic-lock patch).
fn locked(ms: u64, verb: &'static str, resource: &str) -> Stamped {
    sent(ms, CONTROLLER, verb, resource, true)
}

fn sent(ms: u64, client: &str, verb: &'static str, resource: &str, precondition: bool) -> Stamped {
    Stamped {
        at: at(ms),
        record: Record::Request {
            client: client.into(),
            verb,
            resource: resource.into(),
            namespace: Some("demo".into()),
            name: Some("podinfo".into()),
            code: 200,
            latency_ms: 1.0,
            answer: "upstream",
            window: None,
            resource_version: None,
            note: None,
            precondition,
        },
    }
}

fn event(ms: u64, resource: &str, name: &str, rv: &str) -> Stamped {
    Stamped {
        at: at(ms),
        record: Record::Event {
            client: CONTROLLER.into(),
            resource: resource.into(),
            type_: "MODIFIED",
            namespace: "demo".into(),
            name: name.into(),
            resource_version: rv.into(),
            fate: "delivered",
            delay_ms: None,
        },
    }
}

/// The demo controller's reference run, as the proxy traces it.
fn reference() -> Vec<Stamped> {
    vec![
        request(0, CONTROLLER, "list", GR),
        request(10, CONTROLLER, "watch", GR),
        request(20, CONTROLLER, "watch", "configmaps"),
        request(100, CONTROLLER, "patch", &format!("{GR}/status")),
        event(110, GR, "podinfo", "5"),
        locked(200, "patch", &format!("{GR}/status")),
        event(210, GR, "podinfo", "6"),
        request(300, CONTROLLER, "get", GR),
        request(4000, WORKLOAD, "delete", "configmaps"),
        event(4010, "configmaps", "child", "9"),
        request(9000, CONTROLLER, "create", "events"),
    ]
}

#[test]
fn anchors_are_each_write_counted_by_kind() {
    let r = read(&reference(), &[], CONTROLLER);
    let got: Vec<String> = r.anchors.iter().map(Anchor::describe).collect();
    assert_eq!(
        got,
        [
            format!("the controller's 1st patch of {GR}/status"),
            format!("the controller's 2nd patch of {GR}/status"),
            "the workload's 1st delete of configmaps".to_string(),
        ],
        "reads and events (the resource) are not anchors"
    );
    assert_eq!(
        r.watched,
        BTreeSet::from([GR.to_string(), "configmaps".to_string()])
    );
}

/// The first plan is F1's schedule: freeze the GitRepository for 1.5 s right after the
/// first status patch. Every plan is a valid schedule window.
#[test]
fn the_first_plan_is_the_f1_window_and_every_plan_is_a_schedule() {
    let plans = plans(&read(&reference(), &[], CONTROLLER), &Options::default());
    let first = &plans[0];
    assert_eq!(
        first.label,
        format!("freeze {GR} for 1.5s after the controller's 1st patch of {GR}/status")
    );
    let w = serde_json::to_value(&first.windows[0]).unwrap();
    assert_eq!(w["fault"], json!({"freeze": {}}));
    assert_eq!(w["duration"], "1s500ms");
    assert_eq!(
        w["trigger"],
        json!({"afterRequests": {"verb": "patch", "resource": GR, "subresource": "status", "count": 1}})
    );
    let clients: BTreeMap<String, crate::schedule::ClientMatcher> = serde_json::from_value(json!({
        "controller": {"listener": "controller"}, "workload": {"listener": "workload"}
    }))
    .unwrap();
    for p in &plans {
        let s = crate::schedule::Schedule {
            clients: clients.clone(),
            windows: p.windows.clone(),
            ..Default::default()
        };
        assert!(
            s.check("plan").is_empty(),
            "{}: {:?}",
            p.label,
            s.check("plan")
        );
    }
    // Slugs name files: unique, plain.
    let slugs: BTreeSet<&str> = plans.iter().map(|p| p.slug.as_str()).collect();
    assert_eq!(slugs.len(), plans.len());
    assert!(plans.iter().all(|p| {
        p.slug
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    }));
}

/// Breadth first: every anchor's round-1 plans come before any round-2 plan; freezes
/// that would hold nothing on the reference run, or the same as another, are dropped.
#[test]
fn rounds_are_breadth_first_and_useless_freezes_are_dropped() {
    let plans = plans(&read(&reference(), &[], CONTROLLER), &Options::default());
    let rounds: Vec<u8> = plans.iter().map(|p| p.round).collect();
    let mut sorted = rounds.clone();
    sorted.sort();
    assert_eq!(rounds, sorted);
    let labels: Vec<&str> = plans.iter().map(|p| p.label.as_str()).collect();
    // Nothing happens to configmaps in the 1.5 s after the status patches.
    assert!(
        !labels
            .iter()
            .any(|l| l.starts_with("freeze configmaps for 1.5s after the controller")),
        "{labels:#?}"
    );
    // After the workload's delete, the controller's configmaps view is worth freezing.
    assert!(
        labels
            .contains(&"freeze configmaps for 1.5s after the workload's 1st delete of configmaps")
    );
    let workload = plans
        .iter()
        .find(|p| p.label.ends_with("workload's 1st delete of configmaps"))
        .unwrap();
    let w = serde_json::to_value(&workload.windows[0]).unwrap();
    assert_eq!(
        w["client"], "controller",
        "windows are always on the controller"
    );
    assert_eq!(w["trigger"]["afterRequests"]["client"], "workload");
    // After the 1st patch a 1.5 s freeze holds rv 5 and 6; after the 2nd, rv 6 alone: a
    // different effect, so both stay.
    assert_eq!(
        labels
            .iter()
            .filter(|l| l.starts_with(&format!("freeze {GR} for 1.5s")))
            .count(),
        2
    );
    // A restart after each write, the controller's and the workload's, and one with a
    // rewind after each: the controller comes back to a world a user changed while it
    // was down.
    assert_eq!(
        labels
            .iter()
            .filter(|l| l.starts_with("restart the controller right after"))
            .count(),
        6,
        "{labels:#?}"
    );
    assert!(labels.contains(&"restart the controller right after the workload's 1st delete of configmaps and give it the cluster as it was then"));
    // Informer lag after the workload's write and where it delays something new.
    let lags: Vec<&&str> = labels
        .iter()
        .filter(|l| l.starts_with("every event 1s late"))
        .collect();
    assert!(
        lags.contains(
            &&"every event 1s late for 10s after the workload's 1st delete of configmaps"
        ),
        "{lags:#?}"
    );
    assert!(
        !lags.is_empty() && lags.len() < 4,
        "same effect, one plan: {lags:#?}"
    );
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("restart the controller right after the workload's"))
    );
    assert!(labels.iter().any(|l| l.starts_with("coalesce")));
}

/// The proxy traces a request when it has its answer, but a window it triggers opens
/// when it arrives: the child's ADDED, delivered between the two (the simulator and an
/// apiserver may notify watchers before the create's answer is written), is what a
/// freeze after the create holds.
#[test]
fn what_a_freeze_holds_is_counted_from_when_its_request_arrived() {
    let mut create = request(300, CONTROLLER, "create", "configmaps");
    if let Record::Request { latency_ms, .. } = &mut create.record {
        *latency_ms = 50.0;
    }
    let trace = vec![
        request(0, CONTROLLER, "watch", "configmaps"),
        event(280, "configmaps", "child", "7"),
        create,
    ];
    let r = read(&trace, &[], CONTROLLER);
    assert_eq!(r.anchors[0].at, at(250));
    let labels: Vec<String> = plans(&r, &Options::default())
        .into_iter()
        .map(|p| p.label)
        .collect();
    assert!(
        labels.contains(
            &"freeze configmaps for 1.5s after the controller's 1st create of configmaps"
                .to_string()
        ),
        "{labels:#?}"
    );
}

#[test]
fn the_rewind_plan_restarts_and_rewinds_to_the_restart() {
    let plans = plans(&read(&reference(), &[], CONTROLLER), &Options::default());
    let p = plans
        .iter()
        .find(|p| p.slug.starts_with("rewind-restart"))
        .unwrap();
    let w: Vec<serde_json::Value> = p
        .windows
        .iter()
        .map(|w| serde_json::to_value(w).unwrap())
        .collect();
    assert_eq!(w[0]["fault"], json!({"restart": {}}));
    assert_eq!(w[1]["fault"], json!({"rewind": {"at": "restart"}}));
    assert_eq!(w[0]["trigger"], w[1]["trigger"]);
}

/// Each errors plan injects what a real apiserver could answer that request: a 409 only
/// where the controller's writes carried a precondition (and the window spares those
/// that do not), never on a create; 429 and 503 with Retry-After; 503 and 504 on creates.
#[test]
fn errors_plans_are_what_a_real_apiserver_could_answer() {
    let mut trace = reference();
    trace.push(request(9100, CONTROLLER, "create", "configmaps"));
    let plans = plans(&read(&trace, &[], CONTROLLER), &Options::default());
    let errors: Vec<(String, serde_json::Value)> = plans
        .iter()
        .filter(|p| p.slug.starts_with("errors-"))
        .map(|p| {
            (
                p.slug.clone(),
                serde_json::to_value(&p.windows[0]).unwrap()["fault"]["errors"].clone(),
            )
        })
        .collect();
    let conflicts: Vec<&(String, serde_json::Value)> =
        errors.iter().filter(|(_, e)| e["status"] == 409).collect();
    // The 1st status patch is counted with the 2nd, which carried a resourceVersion: the
    // kind is preconditioned, both anchors get a 409 — answering only locked writes.
    assert_eq!(conflicts.len(), 2, "{errors:#?}");
    assert!(conflicts.iter().all(|(_, e)| e["preconditioned"] == true));
    assert!(
        !errors
            .iter()
            .any(|(_, e)| e["status"] == 409 && e["verbs"] == json!(["create"])),
        "a create never gets a 409 Conflict"
    );
    for (slug, e) in &errors {
        if e["status"] == 429 || e["status"] == 503 {
            assert_eq!(e["retryAfter"], "1s", "{slug}");
        }
        if e["status"] == 503 || e["status"] == 504 {
            assert_eq!(e["verbs"], json!(["create"]), "{slug}");
        }
    }
    for status in [429, 500, 503, 504] {
        assert!(
            errors
                .iter()
                .any(|(_, e)| e["status"] == status && e["verbs"] == json!(["create"])),
            "a create gets {status}: {errors:#?}"
        );
    }
    // Without any precondition in the reference, no 409 at all.
    let unlocked: Vec<Stamped> = reference()
        .into_iter()
        .map(|mut s| {
            if let Record::Request { precondition, .. } = &mut s.record {
                *precondition = false;
            }
            s
        })
        .collect();
    assert!(
        !plans_of(&unlocked)
            .iter()
            .any(|p| p.slug.starts_with("errors-409")),
        "no precondition, no conflict"
    );
}

fn plans_of(trace: &[Stamped]) -> Vec<Plan> {
    plans(&read(trace, &[], CONTROLLER), &Options::default())
}

/// A controller manager's start-up writes (a dozen kinds) and a workload's: the start-up
/// and each workload write are phases, anchors are counted per kind within a phase, and
/// round 1 takes the phases in turn — so a budget of a few plans already reaches what
/// the controller did about the workload.
#[test]
fn anchors_take_turns_by_phase() {
    let mut trace = vec![request(0, CONTROLLER, "watch", "pods")];
    // Start-up: 6 creates of pods (4 are anchors), then 3 of secrets.
    for i in 0..6 {
        trace.push(request(10 + i * 2000, CONTROLLER, "create", "pods"));
        trace.push(event(
            11 + i * 2000,
            "pods",
            &format!("p{i}"),
            &format!("{}", 10 + i),
        ));
    }
    for i in 0..3 {
        trace.push(request(20_000 + i, CONTROLLER, "create", "secrets"));
    }
    // The workload scales; the controller creates 2 more pods.
    trace.push(request(30_000, WORKLOAD, "patch", "replicasets.apps"));
    trace.push(request(30_010, CONTROLLER, "create", "pods"));
    trace.push(event(30_011, "pods", "p6", "30"));
    trace.push(request(32_010, CONTROLLER, "create", "pods"));
    trace.push(event(32_011, "pods", "p7", "31"));
    let r = read(&trace, &[], CONTROLLER);
    let got: Vec<(usize, usize, String)> = r
        .anchors
        .iter()
        .map(|a| (a.phase, a.turn, a.describe()))
        .collect();
    assert_eq!(
        got[..4]
            .iter()
            .map(|(p, t, _)| (*p, *t))
            .collect::<Vec<_>>(),
        [(0, 0), (0, 1), (0, 2), (0, 3)]
    );
    assert_eq!(
        got[got.len() - 3..],
        [
            (
                1,
                0,
                "the workload's 1st patch of replicasets.apps".to_string()
            ),
            (1, 1, "the controller's 7th create of pods".to_string()),
            (1, 2, "the controller's 8th create of pods".to_string()),
        ],
        "counted from the run's start (the trigger's count), capped per phase"
    );
    let first: Vec<String> = plans(&r, &Options::default())
        .into_iter()
        .filter(|p| p.round == 1)
        .take(4)
        .map(|p| p.label)
        .collect();
    assert_eq!(
        first,
        [
            "freeze pods for 1.5s after the controller's 1st create of pods",
            "restart the controller right after the controller's 1st create of pods",
            "freeze pods for 1.5s after the workload's 1st patch of replicasets.apps",
            "restart the controller right after the workload's 1st patch of replicasets.apps",
        ]
    );
}

/// Round 2: only with a long window; after the first create of each kind in each phase,
/// the created resource frozen that long, and the user's objects touched 20 s before it
/// ends (a delayed trigger on the same request).
#[test]
fn long_freezes_touch_the_users_objects_before_they_end() {
    let trace = vec![
        request(0, CONTROLLER, "watch", "pods"),
        request(10, CONTROLLER, "create", "pods"),
        event(11, "pods", "p0", "10"),
        request(20, CONTROLLER, "create", "pods"),
        event(21, "pods", "p1", "11"),
    ];
    let setup = [crate::setup::Applied {
        resource: "replicasets.apps".into(),
        namespace: Some("demo".into()),
        name: "web".into(),
    }];
    let r = read(&trace, &setup, CONTROLLER);
    assert!(!plans(&r, &Options::default()).iter().any(|p| p.round == 2));
    let long = plans(
        &r,
        &Options {
            long_window: Some(Duration::from_secs(330)),
        },
    );
    let long: Vec<&Plan> = long.iter().filter(|p| p.round == 2).collect();
    assert_eq!(long.len(), 1, "the first create of pods in the one phase");
    let p = long[0];
    assert_eq!(
        p.label,
        "freeze pods for 330s after the controller's 1st create of pods, the user's objects touched 310s in"
    );
    let w: Vec<serde_json::Value> = p
        .windows
        .iter()
        .map(|w| serde_json::to_value(w).unwrap())
        .collect();
    assert_eq!(w[0]["duration"], "5m30s");
    assert_eq!(
        w[1]["fault"],
        json!({"touch": {"objects": [{"resource": "replicasets.apps", "namespace": "demo", "name": "web"}]}})
    );
    assert_eq!(w[1]["trigger"]["delay"], "5m10s");
    assert_eq!(
        w[1]["trigger"]["afterRequests"],
        w[0]["trigger"]["afterRequests"]
    );
}

/// Partitions: a 5 s blackhole after the first write of each kind in every phase, for
/// every controller; one past the field's lease renew deadlines (50 s) only for a
/// controller that holds a Lease. Each opens just after its write (the write is answered
/// first) and is whole: it acts on the controller's connections.
#[test]
fn partitions_follow_first_writes_and_the_long_one_needs_a_lease() {
    let none = Options { long_window: None };
    let slugs = |trace: &[Stamped]| -> Vec<(String, u8)> {
        plans(&read(trace, &[], CONTROLLER), &none)
            .into_iter()
            .filter(|p| p.slug.starts_with("partition-"))
            .map(|p| (p.slug, p.round))
            .collect()
    };
    assert_eq!(
        slugs(&reference()),
        [
            (
                "partition-5s-after-patch-gitrepositories-status-1".to_string(),
                3
            ),
            (
                "partition-5s-after-workload-delete-configmaps-1".to_string(),
                3
            ),
        ]
    );
    let mut leader = reference();
    leader.insert(
        1,
        request(5, CONTROLLER, "update", "leases.coordination.k8s.io"),
    );
    let got = slugs(&leader);
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got.contains(&(
        "partition-50s-after-patch-gitrepositories-status-1".to_string(),
        4
    )));
    let p = plans(&read(&leader, &[], CONTROLLER), &none)
        .into_iter()
        .find(|p| p.slug == "partition-50s-after-patch-gitrepositories-status-1")
        .unwrap();
    let w = &p.windows[0];
    assert_eq!(w.resources, ["*"]);
    assert_eq!(w.duration.map(|d| d.0), Some(Duration::from_secs(50)));
    let t = serde_json::to_value(&w.trigger).unwrap();
    assert_eq!(t["delay"], "100ms", "{t}");
    assert_eq!(t["afterRequests"]["verb"], "patch");
    // Its Lease's own duration known (Flux's 35 s): half of it (kept) and past it (lost).
    let mut r = read(&leader, &[], CONTROLLER);
    r.lease_duration = Some(Duration::from_secs(35));
    let long: Vec<String> = plans(&r, &none)
        .into_iter()
        .filter(|p| p.round == 4 && p.slug.starts_with("partition-"))
        .map(|p| p.slug)
        .collect();
    assert_eq!(
        long,
        [
            "partition-17s-after-patch-gitrepositories-status-1",
            "partition-17s-after-workload-delete-configmaps-1",
            "partition-40s-after-patch-gitrepositories-status-1",
            "partition-40s-after-workload-delete-configmaps-1",
        ]
    );
}

const KS: &str = "kustomizations.kustomize.toolkit.fluxcd.io";

/// The reference as the controller after `--` and a second one, `kustomize`, were shown
/// it: the second watches GitRepositories and Kustomizations and patches the latter's
/// status.
fn two_controllers() -> (Reference, Reference) {
    let mut trace = reference();
    let mut ks_event = event(120, GR, "podinfo", "5");
    if let Record::Event { client, .. } = &mut ks_event.record {
        *client = "kustomize".into();
    }
    trace.extend([
        request(5, "kustomize", "watch", GR),
        request(6, "kustomize", "watch", KS),
        ks_event,
        sent(150, "kustomize", "patch", &format!("{KS}/status"), true),
        request(160, "kustomize", "update", "leases.coordination.k8s.io"),
    ]);
    trace.sort_by_key(|s| s.at);
    let main = read(&trace, &[], CONTROLLER);
    let ks = read(&trace, &[], "kustomize");
    (main, ks)
}

/// Several controllers under test (`--controller NAME=CMD`): each is shown its own
/// watches and Lease, and anyone's writes are everyone's anchors.
#[test]
fn anyone_s_writes_are_every_controller_s_anchors() {
    let (main, ks) = two_controllers();
    assert_eq!(
        main.anchors
            .iter()
            .map(Anchor::describe)
            .collect::<Vec<_>>(),
        ks.anchors.iter().map(Anchor::describe).collect::<Vec<_>>(),
        "anyone's writes are everyone's anchors"
    );
    assert!(
        main.anchors
            .iter()
            .any(|a| a.describe() == format!("controller kustomize's 1st patch of {KS}/status"))
    );
    assert_eq!(ks.watched, BTreeSet::from([GR.to_string(), KS.to_string()]));
    assert!(ks.leases && !main.leases, "whose Lease it is");
}

/// Each controller's plans come from what it was shown, are aimed at it, and open on
/// anyone's writes — its own, the other controller's, the workload's — naming whose in
/// the trigger, the label and the slug.
#[test]
fn each_controller_under_test_has_plans_aimed_at_it() {
    let (main, ks) = two_controllers();
    let opts = Options::default();
    let theirs = plans(&ks, &opts);
    assert!(theirs.iter().all(|p| p.slug.starts_with("kustomize--")));
    assert!(
        theirs
            .iter()
            .flat_map(|p| &p.windows)
            .all(|w| w.client == "kustomize")
    );
    let restart = theirs
        .iter()
        .find(|p| p.slug == "kustomize--restart-after-patch-gitrepositories-status-1")
        .expect("restart it after the other controller's write");
    assert_eq!(
        restart.label,
        format!(
            "restart controller kustomize right after the controller's 1st patch of {GR}/status"
        )
    );
    let t = serde_json::to_value(&restart.windows[0].trigger).unwrap();
    assert_eq!(t["afterRequests"]["client"], "controller", "{t}");
    // Errors only on its own writes; a 409 only where it sent a precondition.
    let errors: Vec<&str> = theirs
        .iter()
        .filter(|p| p.slug.contains("errors-"))
        .map(|p| p.slug.as_str())
        .collect();
    assert!(
        errors
            .iter()
            .all(|s| s.contains("kustomize-patch-kustomizations-status")
                || s.contains("errors-500-writes-after-workload")),
        "{errors:?}"
    );
    assert!(errors.contains(&"kustomize--errors-409-at-kustomize-patch-kustomizations-status-1"));
    let own = theirs
        .iter()
        .find(|p| p.slug == "kustomize--restart-after-kustomize-patch-kustomizations-status-1")
        .unwrap();
    let t = serde_json::to_value(&own.windows[0].trigger).unwrap();
    assert!(t["afterRequests"].get("client").is_none(), "{t}");
    // The controller after `--` keeps its plans as they were, and opens some on the
    // other's writes, saying whose.
    let mine = plans(&main, &opts);
    let on_theirs = mine
        .iter()
        .find(|p| p.slug == "restart-after-kustomize-patch-kustomizations-status-1")
        .unwrap();
    assert_eq!(on_theirs.windows[0].client, CONTROLLER);
    let t = serde_json::to_value(&on_theirs.windows[0].trigger).unwrap();
    assert_eq!(t["afterRequests"]["client"], "kustomize", "{t}");
}

/// Several controllers' plans together: all of each one's, round by round, every slug
/// unique, every plan a valid schedule.
#[test]
fn several_controllers_plans_together_are_valid_schedules() {
    let (main, ks) = two_controllers();
    let opts = Options::default();
    let (mine, theirs) = (plans(&main, &opts), plans(&ks, &opts));
    let all = plans_for_all(&[&main, &ks], &opts);
    assert_eq!(all.len(), mine.len() + theirs.len());
    assert!(all.windows(2).all(|w| w[0].round <= w[1].round));
    let slugs: BTreeSet<&str> = all.iter().map(|p| p.slug.as_str()).collect();
    assert_eq!(slugs.len(), all.len());
    let clients: BTreeMap<String, crate::schedule::ClientMatcher> = serde_json::from_value(json!({
        "controller": {"listener": "controller"}, "workload": {"listener": "workload"},
        "kustomize": {"listener": "kustomize"}
    }))
    .unwrap();
    for p in &all {
        let s = crate::schedule::Schedule {
            clients: clients.clone(),
            windows: p.windows.clone(),
            ..Default::default()
        };
        assert!(
            s.check("plan").is_empty(),
            "{}: {:?}",
            p.label,
            s.check("plan")
        );
    }
}

/// A reference that every family plans on: the demo controller's, with a Lease it
/// renews (35 s), a create of what it watches after the workload's delete, and a user's
/// object to touch — planned with a long window.
fn every_family() -> Vec<Plan> {
    let mut trace = reference();
    trace.insert(
        1,
        request(5, CONTROLLER, "update", "leases.coordination.k8s.io"),
    );
    trace.extend([
        request(4100, CONTROLLER, "create", "configmaps"),
        event(4110, "configmaps", "child", "10"),
        event(4300, "configmaps", "child", "11"),
    ]);
    trace.sort_by_key(|s| s.at);
    let setup = [crate::setup::Applied {
        resource: GR.into(),
        namespace: Some("demo".into()),
        name: "podinfo".into(),
    }];
    let mut r = read(&trace, &setup, CONTROLLER);
    r.lease_duration = Some(Duration::from_secs(35));
    plans(
        &r,
        &Options {
            long_window: Some(Duration::from_secs(330)),
        },
    )
}

/// The whole order, pinned: the e2e tests and docs/zoo.md's results depend on which plan
/// is tried when, so moving the families about must not move their plans.
#[test]
fn the_order_of_every_family_s_plans_is_pinned() {
    let got: Vec<String> = every_family()
        .iter()
        .map(|p| format!("{} {}", p.round, p.slug))
        .collect();
    assert_eq!(got, EVERY_FAMILY);
}

const EVERY_FAMILY: &[&str] = &[
    "1 freeze-gitrepositories-1500ms-after-patch-gitrepositories-status-1",
    "1 restart-after-patch-gitrepositories-status-1",
    "1 errors-409-at-patch-gitrepositories-status-1",
    "1 freeze-configmaps-1500ms-after-workload-delete-configmaps-1",
    "1 restart-after-workload-delete-configmaps-1",
    "1 freeze-gitrepositories-1500ms-after-patch-gitrepositories-status-2",
    "1 restart-after-patch-gitrepositories-status-2",
    "1 errors-409-at-patch-gitrepositories-status-2",
    "1 freeze-configmaps-1500ms-after-create-configmaps-1",
    "1 restart-after-create-configmaps-1",
    "2 freeze-configmaps-330000ms-after-create-configmaps-1",
    "3 relist-at-patch-gitrepositories-status-1",
    "3 lag-1000ms-after-patch-gitrepositories-status-1",
    "3 rewind-restart-after-patch-gitrepositories-status-1",
    "3 errors-500-at-patch-gitrepositories-status-1",
    "3 errors-429-at-patch-gitrepositories-status-1",
    "3 relist-at-workload-delete-configmaps-1",
    "3 lag-1000ms-after-workload-delete-configmaps-1",
    "3 rewind-restart-after-workload-delete-configmaps-1",
    "3 errors-500-writes-after-workload-delete-configmaps-1",
    "3 relist-at-patch-gitrepositories-status-2",
    "3 lag-1000ms-after-patch-gitrepositories-status-2",
    "3 rewind-restart-after-patch-gitrepositories-status-2",
    "3 errors-500-at-patch-gitrepositories-status-2",
    "3 errors-429-at-patch-gitrepositories-status-2",
    "3 relist-at-create-configmaps-1",
    "3 lag-1000ms-after-create-configmaps-1",
    "3 rewind-restart-after-create-configmaps-1",
    "3 errors-500-at-create-configmaps-1",
    "3 errors-429-at-create-configmaps-1",
    "3 partition-5s-after-patch-gitrepositories-status-1",
    "3 partition-5s-after-workload-delete-configmaps-1",
    "3 partition-5s-after-create-configmaps-1",
    "3 coalesce-gitrepositories-from-event-1",
    "3 coalesce-configmaps-from-event-1",
    "4 partition-17s-after-patch-gitrepositories-status-1",
    "4 partition-17s-after-workload-delete-configmaps-1",
    "4 partition-17s-after-create-configmaps-1",
    "4 partition-40s-after-patch-gitrepositories-status-1",
    "4 partition-40s-after-workload-delete-configmaps-1",
    "4 partition-40s-after-create-configmaps-1",
    "4 freeze-configmaps-5000ms-after-patch-gitrepositories-status-1",
    "4 freeze-gitrepositories-5000ms-after-patch-gitrepositories-status-1",
    "4 freeze-gitrepositories-500ms-after-patch-gitrepositories-status-1",
    "4 freeze-configmaps-500ms-after-workload-delete-configmaps-1",
    "4 freeze-gitrepositories-5000ms-after-patch-gitrepositories-status-2",
    "4 freeze-gitrepositories-500ms-after-patch-gitrepositories-status-2",
    "4 freeze-configmaps-5000ms-after-create-configmaps-1",
    "4 freeze-configmaps-500ms-after-create-configmaps-1",
    "4 errors-503-at-create-configmaps-1",
    "4 errors-504-at-create-configmaps-1",
];
