use super::*;

/// Creates are POSTs and server-side applies answered 201; a patch answered 200
/// changed an object that was there.
#[test]
fn a_server_side_apply_that_made_an_object_counts_as_a_create() {
    let request = |verb: &'static str, code: u16| crate::trace::Stamped {
        at: SystemTime::UNIX_EPOCH,
        record: Record::Request {
            client: CONTROLLER.into(),
            verb,
            resource: "secrets".into(),
            namespace: Some("demo".into()),
            name: Some("tls".into()),
            code,
            latency_ms: 1.0,
            answer: "upstream",
            window: None,
            resource_version: None,
            note: None,
            precondition: false,
        },
    };
    let trace = [
        request("create", 201),
        request("patch", 201),
        request("patch", 200),
        request("delete", 200),
    ];
    let c = count_where(&trace, |code| (200..300).contains(&code));
    assert_eq!(c.get(&("secrets".to_string(), "created")), Some(&2));
    assert_eq!(c.get(&("secrets".to_string(), "deleted")), Some(&1));
}

/// A baseline that only counts: the references' creates and deletes, and their
/// start-up's.
fn counted(
    counts: BTreeMap<(String, &'static str), Option<usize>>,
    startup: BTreeMap<(String, &'static str), usize>,
) -> Baseline {
    Baseline {
        state: Default::default(),
        all: Default::default(),
        judged: Default::default(),
        masks: Default::default(),
        counts,
        startup,
        peaks: Default::default(),
        workload_exit: None,
        seconds: 1.0,
        without_faults: Default::default(),
    }
}

/// After a rewind and a restart, each restart may redo what the references'
/// start-up did (Kyverno's new UpdateRequest per policy, deleted again); a create
/// beyond that, of what the start-up never made, or one that stays (a second Node
/// for one NodeClaim) is still a finding.
#[test]
fn a_restart_may_redo_its_start_up() {
    let key = |r: &str, w: &'static str| (r.to_string(), w);
    let base = counted(
        [
            (key("updaterequests", "created"), Some(1)),
            (key("updaterequests", "deleted"), Some(1)),
            (key("networkpolicies", "created"), Some(2)),
            (key("nodes", "created"), Some(1)),
        ]
        .into(),
        [
            (key("updaterequests", "created"), 1),
            (key("updaterequests", "deleted"), 1),
            (key("nodes", "created"), 1),
        ]
        .into(),
    );
    let here = [
        (key("updaterequests", "created"), 2),
        (key("updaterequests", "deleted"), 2),
        (key("networkpolicies", "created"), 3),
        (key("nodes", "created"), 2),
    ]
    .into();
    let found = |count| {
        let restarts = Restarts {
            count,
            rewound: true,
        };
        beyond(&here, &base, restarts)
            .into_iter()
            .map(|(k, h, n, allowed)| (k.0.clone(), h, n, allowed))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        found(0),
        vec![
            ("networkpolicies".into(), 3, Some(2), 2),
            ("nodes".into(), 2, Some(1), 1),
            ("updaterequests".into(), 2, Some(1), 1),
            ("updaterequests".into(), 2, Some(1), 1)
        ]
    );
    // The UpdateRequest made again was deleted again; the second Node stays.
    assert_eq!(
        found(1),
        vec![
            ("networkpolicies".into(), 3, Some(2), 2),
            ("nodes".into(), 2, Some(1), 1)
        ]
    );
}

/// After a plain restart, what the new process made and deleted again is allowed
/// however much it was (it started on a consistent list); what it left behind is
/// not, and after a rewind the start-up's count is the limit.
#[test]
fn a_plain_restart_may_undo_any_amount() {
    let key = |r: &str, w: &'static str| (r.to_string(), w);
    let base = counted(
        [
            (key("updaterequests", "created"), Some(1)),
            (key("updaterequests", "deleted"), Some(1)),
            (key("nodes", "created"), Some(1)),
        ]
        .into(),
        [
            (key("updaterequests", "created"), 1),
            (key("updaterequests", "deleted"), 1),
            (key("nodes", "created"), 1),
        ]
        .into(),
    );
    // Kyverno after the fixes, trial 6: two URs at the restart's start-up, both
    // deleted; and a second Node that stays.
    let here = [
        (key("updaterequests", "created"), 3),
        (key("updaterequests", "deleted"), 3),
        (key("nodes", "created"), 2),
    ]
    .into();
    let found = |count, rewound| {
        beyond(&here, &base, Restarts { count, rewound })
            .into_iter()
            .map(|(k, h, n, allowed)| (k.0.clone(), k.1, h, n, allowed))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        found(1, false),
        vec![("nodes".into(), "created", 2, Some(1), 1)]
    );
    assert_eq!(
        found(1, true),
        vec![
            ("nodes".into(), "created", 2, Some(1), 1),
            ("updaterequests".into(), "created", 3, Some(1), 2),
            ("updaterequests".into(), "deleted", 3, Some(1), 2)
        ]
    );
    // Without a restart, a create made and deleted again is the stale view's.
    assert_eq!(found(0, false).len(), 3);
}

/// A run that touched the user's objects does not compare generations.
#[test]
fn a_touch_is_seen_in_the_trace() {
    let window = |fault: &str| crate::trace::Stamped {
        at: SystemTime::UNIX_EPOCH,
        record: Record::Window {
            window: "w".into(),
            action: "open",
            fault: fault.into(),
        },
    };
    assert!(touched(&[window("freeze"), window("touch")]));
    assert!(!touched(&[window("freeze")]));
}

#[test]
fn digits_are_masked_once_per_run() {
    assert_eq!(
        mask_digits("status.conditions[12].status"),
        "status.conditions[N].status"
    );
    assert_eq!(
        mask_digits("InProgress: status.observedGeneration (0) != metadata.generation (1)"),
        "InProgress: status.observedGeneration (N) != metadata.generation (N)"
    );
}
