use super::*;
use crate::fault::HoldMode;

fn hold_of(windows: &[Active]) -> Option<HoldMode> {
    crate::fault::combined_hold(windows.iter().filter_map(|a| a.hold))
}

fn window(json: &str) -> Window {
    Window::parse(json).unwrap()
}

#[tokio::test(start_paused = true)]
async fn windows_open_and_close_on_paused_time() {
    let s = Schedule::parse(
        r#"{"clients": {"sc": {"userAgent": "^source-controller/"}},
            "windows": [{"name": "later", "client": "sc", "resources": ["configmaps"], "fault": {"freeze": {}}, "trigger": {"at": "10s"}, "duration": "1500ms"},
                        {"name": "on-patch", "client": "sc", "resources": ["secrets"], "fault": {"freeze": {}}, "trigger": {"afterRequests": {"verb": "patch", "subresource": "status", "count": 2}}},
                        {"name": "tick", "resources": ["leases.coordination.k8s.io"], "fault": {"freeze": {}}, "trigger": {"every": "30s", "count": 2}, "duration": "1s"},
                        {"name": "manual", "resources": ["*"], "fault": {"coalesce": {}}, "trigger": {"manual": {}}}]}"#,
        "t",
    )
    .unwrap();
    let e = Engine::new(&s, Audience::default());
    e.start(&s);
    let mut changes = e.changes();
    assert!(e.windows_for("sc", "configmaps", Some("a")).is_empty());
    tokio::time::sleep(Duration::from_secs(10)).await;
    changes.changed().await.unwrap();
    let w = e.windows_for("sc", "configmaps", Some("a"));
    assert_eq!(hold_of(&w), Some(HoldMode::Freeze));
    assert!(
        e.windows_for("other", "configmaps", Some("a")).is_empty(),
        "only its client"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    changes.changed().await.unwrap();
    assert!(
        e.windows_for("sc", "configmaps", Some("a")).is_empty(),
        "closed after its duration"
    );
    // afterRequests: the 2nd matching request opens it, at once.
    e.on_request("sc", Verb::Patch, "secrets", Some("status"));
    e.on_request("other", Verb::Patch, "secrets", Some("status"));
    e.on_request("sc", Verb::Patch, "secrets", None);
    assert!(e.windows_for("sc", "secrets", None).is_empty());
    e.on_request("sc", Verb::Patch, "secrets", Some("status"));
    assert_eq!(e.windows_for("sc", "secrets", None).len(), 1);
    // every 30 s, twice, 1 s each.
    let opened = e.metrics.opened_total.get();
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(e.metrics.opened_total.get(), opened + 2);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(e.metrics.opened_total.get(), opened + 2, "count: 2");
    e.open(s.windows[3].clone()).unwrap();
    assert_eq!(
        hold_of(&e.windows_for("x", "secrets", None)),
        Some(HoldMode::Coalesce)
    );
    assert!(e.close("manual"));
    assert!(!e.close("manual"));
    assert!(
        e.open(window(
            r#"{"name": "w", "client": "ghost", "fault": {"freeze": {}}}"#
        ))
        .is_err()
    );
}

#[tokio::test(start_paused = true)]
async fn armed_windows_can_be_disarmed() {
    let s = Schedule::parse(
        r#"{"windows": [{"name": "later", "resources": ["configmaps"], "fault": {"freeze": {}}, "trigger": {"at": "10s"}, "duration": "1s"},
                        {"name": "tick", "resources": ["secrets"], "fault": {"freeze": {}}, "trigger": {"every": "30s"}, "duration": "1s"},
                        {"name": "on-create", "resources": ["secrets"], "fault": {"freeze": {}}, "trigger": {"afterRequests": {"verb": "create", "count": 2}}}]}"#,
        "t",
    )
    .unwrap();
    let e = Engine::new(&s, Audience::default());
    e.start(&s);
    let armed = |e: &Engine| -> Vec<String> {
        e.describe()["armed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["window"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(armed(&e), ["later", "tick", "on-create"]);
    e.on_request("x", Verb::Create, "secrets", None);
    assert_eq!(e.describe()["armed"][2]["seen"], 1);
    assert!(e.disarm("later") && e.disarm("on-create") && e.disarm("tick"));
    assert!(!e.disarm("later"), "nothing left to disarm");
    assert!(armed(&e).is_empty());
    e.on_request("x", Verb::Create, "secrets", None);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(e.metrics.opened_total.get(), 0, "no disarmed window opened");
    // An `at` window that fired is no longer armed.
    e.submit(window(
        r#"{"name": "soon", "resources": ["*"], "fault": {"freeze": {}}, "trigger": {"at": "1s"}}"#,
    ))
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(armed(&e).is_empty());
    assert_eq!(e.active_names(), ["soon"]);
}

/// A window on the controller opened by what another client — a workload — does.
#[tokio::test(start_paused = true)]
async fn a_trigger_may_count_another_clients_requests() {
    let s = Schedule::parse(
        r#"{"clients": {"controller": {"listener": "controller"}, "workload": {"listener": "workload"}},
            "windows": [{"name": "after-workload-delete", "client": "controller", "resources": ["pods"], "fault": {"freeze": {}},
                         "trigger": {"afterRequests": {"client": "workload", "verb": "delete", "resource": "pods"}}, "duration": "1s"}]}"#,
        "t",
    )
    .unwrap();
    let e = Engine::new(&s, Audience::default());
    e.start(&s);
    e.on_request("controller", Verb::Delete, "pods", None);
    assert!(
        e.active_names().is_empty(),
        "the controller's own delete does not count"
    );
    e.on_request("workload", Verb::Delete, "pods", None);
    assert_eq!(e.active_names(), ["after-workload-delete"]);
    assert_eq!(
        hold_of(&e.windows_for("controller", "pods", None)),
        Some(HoldMode::Freeze)
    );
    assert!(
        e.windows_for("workload", "pods", None).is_empty(),
        "it targets the controller"
    );
    let bad = Schedule::parse(
        r#"{"windows": [{"name": "w", "fault": {"freeze": {}}, "trigger": {"afterRequests": {"client": "ghost"}}}]}"#,
        "t",
    )
    .unwrap_err();
    assert_eq!(bad[0].path, "windows[0].trigger.afterRequests.client");
}

/// One draw per decision: a `lag` window's jitter is drawn when it opens, so other
/// windows opening and closing meanwhile change nothing, and the same seed gives the
/// same delays.
#[tokio::test(start_paused = true)]
async fn lag_jitter_is_drawn_once_per_opening() {
    let run = || async {
        let s = Schedule::parse(r#"{"seed": 42, "windows": []}"#, "t").unwrap();
        let e = Engine::new(&s, Audience::default());
        let lag = window(
            r#"{"name": "lag", "resources": ["configmaps"], "fault": {"lag": {"delay": "2s", "jitter": "1s"}}}"#,
        );
        let other = window(r#"{"name": "o", "resources": ["secrets"], "fault": {"freeze": {}}}"#);
        let mut delays = Vec::new();
        for _ in 0..3 {
            e.open(lag.clone()).unwrap();
            let first = hold_of(&e.windows_for("c", "configmaps", None));
            for _ in 0..5 {
                e.open(other.clone()).unwrap();
                e.close("o");
            }
            let again = hold_of(&e.windows_for("c", "configmaps", None));
            assert_eq!(first, again, "unchanged while open");
            let Some(HoldMode::Lag(d)) = first else {
                panic!("{first:?}")
            };
            assert!(d >= Duration::from_secs(1) && d <= Duration::from_secs(3));
            delays.push(d);
            e.close("lag");
        }
        delays
    };
    let a = run().await;
    assert_eq!(a, run().await, "same seed, same delays");
    assert!(
        a.windows(2).any(|w| w[0] != w[1]),
        "drawn per opening: {a:?}"
    );
}

/// A trigger with a `delay` opens its window that long after it fires, and the engine is
/// not idle meanwhile (a run does not end quiet with a window still to come); a delay
/// without a request or event trigger is refused.
#[tokio::test(start_paused = true)]
async fn a_delayed_trigger_opens_its_window_later() {
    let s = Schedule::parse(
        r#"{"windows": [{"name": "later", "resources": ["pods"], "fault": {"freeze": {}}, "duration": "2s",
                         "trigger": {"afterRequests": {"verb": "create", "resource": "pods"}, "delay": "10s"}}]}"#,
        "t",
    )
    .unwrap();
    let e = Engine::new(&s, Audience::default());
    e.start(&s);
    assert!(e.idle());
    let deferred = e.on_request("c", Verb::Create, "pods", None);
    assert!(
        deferred.is_empty(),
        "nothing to do once the request is answered"
    );
    assert!(e.active_names().is_empty(), "not yet");
    assert!(!e.idle(), "a window is still to come");
    tokio::time::sleep(Duration::from_millis(9_900)).await;
    assert!(e.active_names().is_empty());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(e.active_names(), ["later"]);
    assert!(!e.idle());
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    assert!(e.active_names().is_empty() && e.idle());
    let bad = Schedule::parse(
        r#"{"windows": [{"name": "w", "fault": {"freeze": {}}, "trigger": {"at": "1s", "delay": "1s"}}]}"#,
        "t",
    )
    .unwrap_err();
    assert_eq!(bad[0].path, "windows[0].trigger.delay");
}
