use super::*;

const GR: &str = "gitrepositories.source.toolkit.fluxcd.io";

fn at(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000) + Duration::from_millis(ms)
}

fn request(ms: u64, client: &str, verb: &'static str, resource: &str) -> Stamped {
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
        request(200, CONTROLLER, "patch", &format!("{GR}/status")),
        event(210, GR, "podinfo", "6"),
        request(300, CONTROLLER, "get", GR),
        request(4000, WORKLOAD, "delete", "configmaps"),
        event(4010, "configmaps", "child", "9"),
        request(9000, CONTROLLER, "create", "events"),
    ]
}

#[test]
fn anchors_are_each_write_counted_by_kind() {
    let r = read(&reference());
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
    let plans = plans(&read(&reference()));
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
    let clients: BTreeMap<String, crate::identity::ClientMatcher> = serde_json::from_value(json!({
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
    let plans = plans(&read(&reference()));
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
    // A restart after each controller write (and one with a rewind); none on the
    // workload's.
    assert_eq!(
        labels
            .iter()
            .filter(|l| l.starts_with("restart the controller right after"))
            .count(),
        4
    );
    assert!(labels.iter().any(|l| l.starts_with("coalesce")));
}

#[test]
fn the_rewind_plan_restarts_and_rewinds_to_the_restart() {
    let plans = plans(&read(&reference()));
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
