use std::time::{Duration, SystemTime};

use serde_json::json;

use super::kinds::HotLoop;
use super::oracles::State;
use super::*;
use crate::k8s::request::Verb;

const GR: &str = "gitrepositories.source.toolkit.fluxcd.io";

fn t(s: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000) + Duration::from_secs_f64(s)
}

/// The hot-loop oracle's own state, behind `dyn Oracle`.
fn hot_loop(s: &State) -> &HotLoop {
    (s.oracles.iter())
        .find_map(|o| (**o).as_any().downcast_ref::<HotLoop>())
        .expect("a hot-loop oracle")
}

fn config(json: serde_json::Value) -> OracleConfig {
    serde_json::from_value(json).unwrap()
}

fn gitrepo(generation: i64, observed: Option<i64>, ready: &str) -> serde_json::Value {
    let mut o = json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "podinfo", "namespace": "flux-system", "generation": generation, "resourceVersion": "1"},
        "spec": {"interval": "1m", "url": format!("https://example.com/podinfo-{generation}")},
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "Succeeded"}]}});
    if let Some(og) = observed {
        o["status"]["observedGeneration"] = json!(og);
    }
    o
}

/// The Flux F1 bug, as ground truth saw it: after the freeze the object keeps a valid
/// artifact (Ready=True) but `observedGeneration` never catches up.
#[test]
fn convergence_reports_the_flux_f1_object_stuck_after_settle() {
    let o = Oracles::new(
        config(json!({"convergence": {"resources": [GR], "settle": "30s"}})),
        t(0.0),
    );
    o.on_object(GR, &gitrepo(1, None, "Unknown"), t(0.1));
    o.on_object(GR, &gitrepo(1, Some(1), "True"), t(1.0));
    o.on_window("f1", "freeze", true, t(2.0));
    o.on_object(GR, &gitrepo(2, Some(1), "True"), t(2.5));
    let v = o.evaluate(t(3.0));
    assert!(!v.judged && v.pending.as_deref() == Some("window \"f1\" is still open"));
    o.on_window("f1", "freeze", false, t(3.5));
    let v = o.evaluate(t(20.0));
    assert!(!v.judged, "settle has not passed");
    assert!(v.violations.is_empty());
    let v = o.evaluate(t(40.0));
    assert!(v.judged);
    assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
    let x = &v.violations[0];
    assert_eq!(
        (x.oracle.as_str(), x.namespace.as_str(), x.name.as_str()),
        ("convergence", "flux-system", "podinfo")
    );
    assert_eq!(
        x.rule,
        "InProgress: status.observedGeneration (1) != metadata.generation (2)"
    );
    assert_eq!(
        x.since,
        t(2.5),
        "stuck since the spec change it never observed"
    );
    assert_eq!(v.recoveries.len(), 1);
    assert_eq!(v.recoveries[0].seconds, None, "never recovered");
    assert_eq!(
        o.violations_gauge.with_label_values(&["convergence"]).get(),
        1
    );
}

#[test]
fn recovery_time_is_measured_from_the_window_close() {
    let o = Oracles::new(
        config(json!({"convergence": {"resources": [GR], "settle": "5s"}})),
        t(0.0),
    );
    o.on_object(GR, &gitrepo(1, Some(1), "True"), t(0.0));
    o.on_window("w", "freeze", true, t(1.0));
    o.on_object(GR, &gitrepo(2, Some(1), "True"), t(1.5));
    o.on_window("w", "freeze", false, t(2.0));
    o.on_object(GR, &gitrepo(2, Some(2), "True"), t(5.25));
    let v = o.evaluate(t(10.0));
    assert!(v.judged && v.violations.is_empty(), "{:?}", v.violations);
    assert_eq!(v.recoveries[0].seconds, Some(3.25));
    assert_eq!(v.windows[0].closed_at, Some(t(2.0)));
    // Deleted objects are not judged.
    o.on_object(GR, &gitrepo(3, Some(2), "True"), t(11.0));
    o.on_delete(GR, "flux-system", "podinfo", t(12.0));
    assert!(o.evaluate(t(30.0)).violations.is_empty());
}

/// `settle` is what a controller gets to recover, not a wait imposed on one that has:
/// once everything judged is Current the oracle can judge (a quiet run may end), while an
/// object not Current yet — a controller backing off after errors — keeps it waiting;
/// with nothing to judge yet, it waits for `settle` as before.
#[test]
fn convergence_judges_before_settle_once_everything_is_current() {
    let o = Oracles::new(
        config(json!({"convergence": {"resources": [GR], "settle": "30s"}})),
        t(0.0),
    );
    let v = o.evaluate(t(1.0));
    assert!(!v.judged, "no object yet: {:?}", v.pending);
    assert!(
        v.pending
            .as_deref()
            .is_some_and(|p| p.contains("none of its objects exists yet")),
        "{:?}",
        v.pending
    );
    o.on_object(GR, &gitrepo(1, Some(1), "True"), t(1.5));
    o.on_window("w", "freeze", true, t(2.0));
    o.on_object(GR, &gitrepo(2, Some(1), "True"), t(2.5));
    o.on_window("w", "freeze", false, t(4.0));
    // Backing off: not Current 6 s after the window, within settle.
    let v = o.evaluate(t(10.0));
    assert!(!v.judged && v.violations.is_empty(), "{v:?}");
    assert_eq!(
        v.pending.as_deref(),
        Some(
            "settle (30s) has not passed since the last window closed, and flux-system/podinfo is not Current yet"
        )
    );
    assert!(!o.can_judge(t(10.0)));
    // Its retry comes 12 s after the window: Current, judged at once, no violation.
    o.on_object(GR, &gitrepo(2, Some(2), "True"), t(16.0));
    let v = o.evaluate(t(17.0));
    assert!(v.judged && v.violations.is_empty(), "{v:?}");
    assert!(o.can_judge(t(17.0)));
    assert_eq!(v.recoveries[0].seconds, Some(12.0));
}

/// An object expected to end with a Ready condition (explore: both references did) is
/// not Current with `observedGeneration` written and its conditions not yet: the oracle
/// does not judge early on kstatus's fallback rule, and a run that ends so is reported.
#[test]
fn convergence_waits_for_the_conditions_the_references_ended_with() {
    let o = Oracles::new(
        config(
            json!({"convergence": {"resources": [GR], "settle": "30s", "conditions": [
            {"resource": GR, "namespace": "flux-system", "name": "podinfo", "types": ["Ready"]}]}}),
        ),
        t(0.0),
    );
    let mut half = gitrepo(1, Some(1), "True");
    half["status"]["conditions"] = json!([]);
    o.on_object(GR, &half, t(1.0));
    let v = o.evaluate(t(2.0));
    assert!(!v.judged, "kstatus alone calls it Current: {v:?}");
    let v = o.evaluate(t(40.0));
    assert_eq!(v.violations.len(), 1, "{v:?}");
    assert_eq!(
        v.violations[0].rule,
        "InProgress: condition Ready is absent (the fault-free runs end with it)"
    );
    o.on_object(GR, &gitrepo(1, Some(1), "True"), t(41.0));
    let v = o.evaluate(t(42.0));
    assert!(v.judged && v.violations.is_empty(), "{v:?}");
    // Without the expectation, the same half-written status is kstatus's Current.
    let plain = Oracles::new(
        config(json!({"convergence": {"resources": [GR], "settle": "30s"}})),
        t(0.0),
    );
    plain.on_object(GR, &half, t(1.0));
    assert!(plain.evaluate(t(2.0)).judged);
}

/// kstatus calls an object with no status Current; it is no sign its controller is done,
/// so it does not end the wait. Objects all deleted since leave nothing to wait for. A
/// window opened again while open leaves no span open forever (a quiet run would wait
/// for it).
#[test]
fn settle_waits_for_a_status_not_for_deleted_objects_nor_for_reopened_windows() {
    let o = Oracles::new(
        config(json!({"convergence": {"resources": [GR], "settle": "30s"}})),
        t(0.0),
    );
    let mut fresh = gitrepo(1, None, "True");
    fresh["status"] = json!({});
    o.on_object(GR, &fresh, t(0.5));
    let v = o.evaluate(t(1.0));
    assert!(!v.judged, "{v:?}");
    assert!(
        v.pending
            .as_deref()
            .is_some_and(|p| p.ends_with("flux-system/podinfo has no status yet")),
        "{:?}",
        v.pending
    );
    o.on_delete(GR, "flux-system", "podinfo", t(2.0));
    let v = o.evaluate(t(3.0));
    assert!(v.judged && v.violations.is_empty(), "{v:?}");

    o.on_window("w", "freeze", true, t(4.0));
    o.on_window("w", "freeze", true, t(5.0));
    o.on_window("w", "freeze", false, t(6.0));
    let v = o.evaluate(t(40.0));
    assert!(v.judged, "{v:?}");
    assert!(
        v.windows.iter().all(|w| w.closed_at.is_some()),
        "{:?}",
        v.windows
    );
}

/// An operator stamping a timestamp annotation on every reconcile: 300 writes/s in the
/// seed report; here 40 in a minute against a limit of 30.
#[test]
fn hot_loop_names_the_field_that_changes_on_every_write() {
    let o = Oracles::new(
        config(
            json!({"hotLoop": {"maxWritesPerObjectPerMinute": 30, "resources": ["widgets.example.com"]}}),
        ),
        t(0.0),
    );
    for i in 0..40 {
        let at = t(f64::from(i));
        o.on_request(
            "operator",
            Verb::Patch,
            "widgets.example.com",
            Some("default"),
            Some("w1"),
            200,
            at,
        );
        // The first write adds the annotations (the diff names `metadata.annotations`
        // whole), the others change one key in them: the key is what churns.
        let mut obj = json!({"metadata": {"name": "w1", "namespace": "default", "resourceVersion": i.to_string(),
            "annotations": {"example.com/last-reconciled": format!("2026-11-22T10:00:{i:02}Z"), "stable": "x"},
            "managedFields": [{"time": format!("{i}")}]},
            "spec": {"size": 3}});
        if i == 0 {
            obj["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("annotations");
        }
        o.on_object("widgets.example.com", &obj, at);
        // A different client's reads and an unnamed write do not count.
        o.on_request(
            "operator",
            Verb::Get,
            "widgets.example.com",
            Some("default"),
            Some("w1"),
            200,
            at,
        );
        o.on_request(
            "operator",
            Verb::Create,
            "widgets.example.com",
            Some("default"),
            None,
            201,
            at,
        );
    }
    let v = o.evaluate(t(45.0));
    assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
    let x = &v.violations[0];
    assert_eq!(
        (x.oracle.as_str(), x.client.as_deref()),
        ("hotLoop", Some("operator"))
    );
    assert!(
        x.rule.starts_with("metadata.annotations[\"example.com/last-reconciled\"] (changed on every write; 40 writes within a minute, limit 30)"),
        "{}",
        x.rule
    );
    assert_eq!(x.since, t(30.0), "the 31st write in a minute");
    assert_eq!(
        v.timeline.len(),
        40,
        "writes are on the timeline; reads are not"
    );
}

#[test]
fn writes_that_change_the_spec_are_work_not_a_hot_loop() {
    let o = Oracles::new(
        config(
            json!({"hotLoop": {"maxWritesPerObjectPerMinute": 5, "resources": ["widgets.example.com"]}}),
        ),
        t(0.0),
    );
    for i in 0..10 {
        let at = t(f64::from(i));
        o.on_request(
            "scaler",
            Verb::Update,
            "widgets.example.com",
            Some("default"),
            Some("w1"),
            200,
            at,
        );
        o.on_object(
            "widgets.example.com",
            &json!({"metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": i}}),
            at,
        );
    }
    assert!(o.evaluate(t(20.0)).violations.is_empty());
    // Slow writes never pass the limit, whatever they change.
    let o = Oracles::new(
        config(json!({"hotLoop": {"maxWritesPerObjectPerMinute": 5}})),
        t(0.0),
    );
    for i in 0..20 {
        o.on_request(
            "c",
            Verb::Patch,
            "configmaps",
            Some("d"),
            Some("x"),
            200,
            t(f64::from(i) * 15.0),
        );
    }
    assert!(o.evaluate(t(400.0)).violations.is_empty());
}

#[test]
fn conflict_storms_are_counted_per_client_and_object_per_minute() {
    let o = Oracles::new(
        config(json!({"conflicts": {"maxPerObjectPerMinute": 20}})),
        t(0.0),
    );
    for i in 0..25 {
        o.on_request(
            "source-controller",
            Verb::Patch,
            &format!("{GR}/status"),
            Some("flux-system"),
            Some("podinfo"),
            409,
            t(f64::from(i) * 2.0),
        );
        // Another client's conflicts on the same object are its own.
        o.on_request(
            "kubectl",
            Verb::Patch,
            GR,
            Some("flux-system"),
            Some("podinfo"),
            409,
            t(f64::from(i) * 20.0),
        );
    }
    let v = o.evaluate(t(100.0));
    assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
    let x = &v.violations[0];
    assert_eq!(
        (
            x.oracle.as_str(),
            x.resource.as_str(),
            x.client.as_deref(),
            x.rule.as_str()
        ),
        (
            "conflicts",
            GR,
            Some("source-controller"),
            "25 conflicts (409) in a minute, limit 20"
        )
    );
}

#[test]
fn readiness_race_flags_objects_current_before_any_status() {
    let o = Oracles::new(
        config(json!({"readinessRace": {"resources": [GR]}})),
        t(0.0),
    );
    // Defaulted observedGeneration: -1 makes kstatus say InProgress. Not a race.
    let mut defaulted = gitrepo(1, Some(-1), "Unknown");
    defaulted["metadata"]["name"] = json!("defaulted");
    defaulted["status"]["conditions"] = json!([]);
    o.on_object(GR, &defaulted, t(0.5));
    let mut bare = gitrepo(1, None, "True");
    bare["status"] = json!({});
    o.on_object(GR, &bare, t(1.0));
    o.on_object(GR, &gitrepo(1, Some(1), "True"), t(2.0));
    let v = o.evaluate(t(3.0));
    assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
    assert_eq!(
        (v.violations[0].name.as_str(), v.violations[0].since),
        ("podinfo", t(1.0))
    );
}

#[test]
fn changed_paths_name_leaves_and_skip_bookkeeping() {
    let a = json!({"metadata": {"resourceVersion": "1", "managedFields": [1], "annotations": {"a.b/c": "1", "k": "v"}}, "status": {"x": [1, 2]}});
    let b = json!({"metadata": {"resourceVersion": "2", "managedFields": [2], "annotations": {"a.b/c": "2", "k": "v", "new": "n"}}, "status": {"x": [1, 3]}});
    let got: Vec<String> = changed_paths(&a, &b).into_iter().collect();
    assert_eq!(
        got,
        [
            "metadata.annotations.new",
            "metadata.annotations[\"a.b/c\"]",
            "status.x"
        ]
    );
}

#[test]
fn the_config_rejects_unknown_fields_and_defaults_settle() {
    let c = config(json!({"convergence": {"resources": [GR]}}));
    assert_eq!(c.convergence.unwrap().settle.0, Duration::from_secs(30));
    assert!(serde_json::from_value::<OracleConfig>(json!({"convergance": {}})).is_err());
}

/// Deleted objects are judged, then forgotten: their hot loop stays reported, their
/// state goes. Everything else is capped, and what a cap drops is counted.
#[test]
fn deleted_objects_are_pruned_and_the_rest_is_capped() {
    let o = Oracles::new(
        config(
            json!({"hotLoop": {"maxWritesPerObjectPerMinute": 3, "resources": [GR]}, "conflicts": {"maxPerObjectPerMinute": 100}}),
        ),
        t(0.0),
    );
    for i in 0..5 {
        let mut g = gitrepo(1, Some(1), "True");
        g["metadata"]["annotations"] = json!({"at": i.to_string()});
        o.on_object(GR, &g, t(i as f64));
        o.on_request(
            "ctl",
            Verb::Patch,
            GR,
            Some("flux-system"),
            Some("podinfo"),
            200,
            t(i as f64),
        );
    }
    let before = o.evaluate(t(6.0)).violations;
    assert_eq!(before.len(), 1, "{before:?}");
    o.on_delete(GR, "flux-system", "podinfo", t(7.0));
    let after = o.evaluate(t(8.0)).violations;
    assert_eq!(after, before, "judged before it was forgotten");
    {
        let s = o.lock();
        let hot = &hot_loop(&s).counter;
        assert!(s.shared.objects.is_empty() && hot.outside.is_empty() && hot.hits.is_empty());
    }
    // Many objects: at most MAX_ENTRIES are tracked; the rest is dropped and counted.
    for i in 0..(MAX_ENTRIES + 10) {
        let mut g = gitrepo(1, Some(1), "True");
        g["metadata"]["name"] = json!(format!("o{i}"));
        o.on_object(GR, &g, t(10.0 + i as f64));
        o.on_request(
            "ctl",
            Verb::Create,
            GR,
            Some("flux-system"),
            Some(&format!("o{i}")),
            201,
            t(10.0 + i as f64),
        );
    }
    let s = o.lock();
    assert_eq!(s.shared.objects.len(), MAX_ENTRIES);
    assert_eq!(hot_loop(&s).counter.outside.len(), MAX_ENTRIES);
    assert!(
        s.shared.objects.keys().all(|k| k.name != "o0"),
        "the least recent went"
    );
    assert_eq!(o.dropped_counter.get(), 20);
}

/// Rates are judged on what outlives the windows: requests in a window or within its
/// grace after it closed are reported as seen there, never a violation, and never end a
/// run early; the same rate after the grace is a violation.
#[test]
fn rates_count_only_what_outlives_the_windows() {
    let o = Oracles::new(
        config(json!({"hotLoop": {"maxWritesPerObjectPerMinute": 3, "grace": "5s"}})),
        t(0.0),
    );
    o.on_window("w", "errors", true, t(0.0));
    let write = |at: f64| {
        o.on_request(
            "ctl",
            Verb::Patch,
            GR,
            Some("flux-system"),
            Some("podinfo"),
            200,
            t(at),
        )
    };
    for i in 0..5 {
        write(i as f64 * 0.1);
    }
    assert!(!o.rate_violated(), "a window is open");
    o.on_window("w", "errors", false, t(1.0));
    write(1.5);
    write(5.9);
    assert!(!o.rate_violated(), "inside the window or its grace");
    let v = o.evaluate(t(7.0));
    assert!(v.violations.is_empty(), "{:?}", v.violations);
    assert_eq!(v.inside_windows.len(), 1);
    assert_eq!(v.inside_windows[0].peak, Some(7));
    assert!(
        v.inside_windows[0]
            .rule
            .contains("inside windows (or within 5s of one closing)"),
        "{}",
        v.inside_windows[0].rule
    );
    // After the grace the count starts afresh: four writes are over the limit of 3.
    for i in 0..4 {
        write(6.5 + i as f64 * 0.1);
    }
    assert!(o.rate_violated(), "still over the limit after the window");
    let v = o.evaluate(t(8.0));
    assert_eq!(v.violations.len(), 1);
    assert_eq!(v.violations[0].peak, Some(4));
    assert!(
        v.inside_windows.is_empty(),
        "it is a violation now, not a note"
    );

    // No window at all (a reference run): any rate over the limit.
    let r = Oracles::new(
        config(json!({"hotLoop": {"maxWritesPerObjectPerMinute": 3}})),
        t(0.0),
    );
    for i in 0..5 {
        r.on_request(
            "ctl",
            Verb::Patch,
            GR,
            Some("a"),
            Some("b"),
            200,
            t(i as f64),
        );
    }
    assert!(r.rate_violated());
}

/// The race is not only an empty status: a status with other fields but no
/// `observedGeneration` and no condition kstatus reads is Current by its fallback rule
/// too. Once the controller writes its status, the race has an end.
#[test]
fn readiness_race_flags_a_fallback_current_and_says_when_it_ended() {
    let o = Oracles::new(
        config(json!({"readinessRace": {"resources": [GR]}})),
        t(0.0),
    );
    let mut partial = gitrepo(1, None, "True");
    partial["status"] = json!({"artifact": {"revision": "main@sha1:1"}, "conditions": [{"type": "ArtifactInStorage", "status": "True"}]});
    o.on_object(GR, &partial, t(1.0));
    o.on_object(GR, &gitrepo(1, Some(1), "True"), t(2.5));
    let v = o.evaluate(t(3.0));
    assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
    let race = &v.violations[0];
    assert_eq!((race.since, race.until), (t(1.0), Some(t(2.5))));
    assert!(race.rule.contains("fallback"), "{}", race.rule);
    // A Ready=True without observedGeneration is the controller's own word: no race.
    let o = Oracles::new(
        config(json!({"readinessRace": {"resources": [GR]}})),
        t(0.0),
    );
    o.on_object(GR, &gitrepo(1, None, "True"), t(1.0));
    assert!(o.evaluate(t(2.0)).violations.is_empty());
}

/// The recovery oracle: a recovery later than `recoverWithin` is a finding of its own,
/// saying how long it took and what kept it (the controller's exit and back-off); the
/// comeback says when clients were answered again and when everything was Current.
#[test]
fn a_late_recovery_is_a_finding_that_names_the_back_off() {
    let o = Oracles::new(
        config(
            json!({"convergence": {"resources": [GR], "settle": "60s", "recoverWithin": "10s"}}),
        ),
        t(0.0),
    );
    o.on_object(GR, &gitrepo(1, Some(1), "True"), t(0.0));
    o.on_window("p", "partition", true, t(1.0));
    o.on_object(GR, &gitrepo(2, Some(1), "True"), t(1.5));
    // Its lease lost inside the partition: it exits, kubelet backs it off 10 s, then 20 s.
    o.on_exit(
        "controller",
        t(20.0),
        "exit status: 1",
        Duration::from_secs(19),
        Some(Duration::from_secs(10)),
    );
    o.on_exit(
        "controller",
        t(31.0),
        "exit status: 1",
        Duration::from_secs(1),
        Some(Duration::from_secs(20)),
    );
    o.on_window("p", "partition", false, t(32.0));
    assert_eq!(o.backoff_gauge.get(), 20.0);
    assert_eq!(o.exits_counter.get(), 2);
    o.on_request("controller", Verb::List, GR, None, None, 200, t(31.5));
    o.on_request("controller", Verb::List, GR, None, None, 200, t(51.5));
    o.on_request("controller", Verb::List, GR, None, None, 200, t(52.0));
    o.on_object(GR, &gitrepo(2, Some(2), "True"), t(53.0));
    let v = o.evaluate(t(54.0));
    assert!(v.judged, "{:?}", v.pending);
    assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
    let x = &v.violations[0];
    assert_eq!(x.oracle, "recovery");
    assert_eq!(
        x.rule,
        "Current again only 21.0s after the last window (\"p\") closed; allowed 10s"
    );
    assert_eq!(
        x.why.as_deref(),
        Some(
            "controller exited (exit status: 1) at +31.0s, was started again at +51.0s, and did not make it Current since"
        )
    );
    assert_eq!(v.exits.len(), 2);
    assert_eq!(v.exits[1].back_at(), Some(t(51.0)));
    let c = v.comeback.expect("a window closed");
    assert_eq!(c.window_closed_at, t(32.0));
    assert_eq!(
        c.answered.get("controller").map(|t| t.0),
        Some(t(51.5)),
        "answered again once its back-off was over, not before"
    );
    assert_eq!(c.current_at, Some(t(53.0)));
}

/// Never Current again: the convergence finding says why — still backing off, or
/// nothing written to it since the window closed.
#[test]
fn a_recovery_that_never_came_says_why() {
    let stuck = |exit: bool| {
        let o = Oracles::new(
            config(json!({"convergence": {"resources": [GR], "settle": "30s"}})),
            t(0.0),
        );
        o.on_object(GR, &gitrepo(1, Some(1), "True"), t(0.0));
        o.on_window("p", "partition", true, t(1.0));
        o.on_object(GR, &gitrepo(2, Some(1), "True"), t(1.5));
        o.on_window("p", "partition", false, t(5.0));
        if exit {
            o.on_exit(
                "controller",
                t(20.0),
                "exit status: 1",
                Duration::from_secs(19),
                Some(Duration::from_secs(40)),
            );
        }
        let v = o.evaluate(t(40.0));
        assert!(v.judged);
        assert_eq!(v.violations.len(), 1, "{:?}", v.violations);
        assert_eq!(v.violations[0].oracle, "convergence");
        v.violations[0].why.clone().unwrap_or_default()
    };
    assert_eq!(
        stuck(false),
        "not Current again 35.0s after the last window closed: no reconcile: nothing wrote to it after the window closed"
    );
    assert_eq!(
        stuck(true),
        "not Current again 35.0s after the last window closed: controller was still backing off: it exited (exit status: 1) at +20.0s and its back-off of 40s starts it again at +60.0s"
    );
}
