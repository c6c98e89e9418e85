//! Views fed from recorded LIST bodies and watch streams of a real kube-apiserver 1.28.

use super::*;
use crate::k8s::protobuf::unwrap_unknown;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/kube-apiserver-1.28/");

fn key(ns: Option<&str>) -> ViewKey {
    ViewKey {
        client: "c".into(),
        resource: "configmaps".into(),
        namespace: ns.map(str::to_string),
        label_selector: String::new(),
        field_selector: String::new(),
    }
}

fn read(ns: Option<&str>, name: Option<&'static str>) -> Read<'static> {
    Read {
        key: key(ns),
        name,
        accept_json: true,
        accept_protobuf: true,
    }
}

fn json_line(t: &str, name: &str, rv: u64) -> Vec<u8> {
    let (ns, name) = name.split_once('/').unwrap_or(("a", name));
    format!(
        "{{\"type\":\"{t}\",\"object\":{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"{ns}\",\"resourceVersion\":\"{rv}\"}},\"data\":{{\"v\":\"{rv}\"}}}}}}\n"
    )
    .into_bytes()
}

fn apply_line(v: &Views, k: &ViewKey, line: &[u8]) {
    let meta = crate::watch::json::parse_event(line).unwrap();
    v.apply(k, Encoding::Json, &meta, line);
}

#[test]
fn a_list_in_chunks_answers_as_the_whole_body_does() {
    let list = std::fs::read(format!("{FIX}cm-list-json-limit.body")).unwrap();
    let last = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"584"},"items":[{"metadata":{"name":"cm-9","namespace":"fixtures"},"data":{"x":"y"}}]}"#;
    let whole = Views::new(1 << 20);
    whole.feed_list(key(None), Encoding::Json, true, Bytes::from(list.clone()));
    whole.feed_list(key(None), Encoding::Json, false, Bytes::from_static(last));
    let want = whole.answer(&read(None, None)).unwrap();
    // Cuts inside the metadata (the first chunk cannot be scanned alone), right
    // after it, and through the items.
    for cuts in [
        vec![10],
        vec![list.len() / 3, list.len() / 2],
        vec![1, 2, 3, 700],
    ] {
        let mut chunks = Vec::new();
        let mut at = 0;
        for c in cuts.iter().chain([&list.len()]) {
            chunks.push(Bytes::copy_from_slice(&list[at..*c]));
            at = *c;
        }
        let v = Views::new(1 << 20);
        v.feed_list_chunks(key(None), Encoding::Json, true, chunks);
        let tail = vec![
            Bytes::from_static(&last[..40]),
            Bytes::from_static(&last[40..]),
        ];
        v.feed_list_chunks(key(None), Encoding::Json, false, tail);
        assert_eq!(v.answer(&read(None, None)).unwrap(), want, "cuts {cuts:?}");
        assert_eq!(v.bytes(), whole.bytes());
    }
}

#[test]
fn json_list_then_events_then_answers() {
    let v = Views::new(1 << 20);
    let k = key(None);
    let list = std::fs::read(format!("{FIX}cm-list-json-limit.body")).unwrap();
    // A paged list is not a view until its last page.
    v.feed_list(k.clone(), Encoding::Json, true, list.into());
    assert!(v.answer(&read(None, None)).is_none());
    let last = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"584"},"items":[{"metadata":{"name":"cm-9","namespace":"fixtures"},"data":{"x":"y"}}]}"#;
    v.feed_list(k.clone(), Encoding::Json, false, Bytes::from_static(last));
    let a = v.answer(&read(None, None)).unwrap();
    let body: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(body["kind"], "ConfigMapList");
    assert_eq!(body["metadata"]["resourceVersion"], "584");
    let names: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cm-0", "cm-9"], "both pages, in key order");
    // A GET gets kind/apiVersion even though list items lacked them.
    let g = v.answer(&read(Some("fixtures"), Some("cm-9"))).unwrap();
    let obj: serde_json::Value = serde_json::from_slice(&g.body).unwrap();
    assert_eq!(
        (obj["kind"].as_str(), obj["data"]["x"].as_str()),
        (Some("ConfigMap"), Some("y"))
    );
    assert_eq!(
        v.answer(&read(Some("fixtures"), Some("nope")))
            .unwrap()
            .code,
        404
    );
    // Delivered events move it forward; namespace filtering from the cluster view.
    apply_line(&v, &k, &json_line("ADDED", "x", 600));
    apply_line(&v, &k, &json_line("MODIFIED", "x", 601));
    apply_line(&v, &k, &json_line("DELETED", "fixtures/cm-0", 602));
    let all = v.answer(&read(None, None)).unwrap();
    let all: serde_json::Value = serde_json::from_slice(&all.body).unwrap();
    let names: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["x", "cm-9"], "a/x, fixtures/cm-9");
    let a = v.answer(&read(Some("a"), None)).unwrap();
    let body: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(body["metadata"]["resourceVersion"], "602");
    assert_eq!(body["items"].as_array().unwrap().len(), 1);
    assert_eq!(body["items"][0]["data"]["v"], "601");
    // JSON views answer only clients that accept JSON.
    let mut r = read(None, None);
    r.accept_json = false;
    assert!(v.answer(&r).is_none());
}

#[test]
fn protobuf_list_round_trips() {
    let v = Views::new(1 << 20);
    let body = std::fs::read(format!("{FIX}cm-list-protobuf.body")).unwrap();
    let body = Bytes::from(body);
    let original = parse_proto_list(&body, true).unwrap();
    v.feed_list(key(None), Encoding::Protobuf, true, body.clone());
    let a = v.answer(&read(None, None)).unwrap();
    assert_eq!(a.encoding, Encoding::Protobuf);
    let again = parse_proto_list(&a.body.clone(), true).unwrap();
    assert_eq!(
        (
            again.api_version.as_str(),
            again.kind.as_str(),
            again.rv.as_str()
        ),
        ("v1", "ConfigMap", original.rv.as_str())
    );
    let mut want = original.items.clone();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(again.items, want);
    // A GET is the typed object in its envelope, like the recorded GET.
    let (ns, name) = want[0].0.clone();
    let g = v
        .answer(&Read {
            key: key(Some(Box::leak(ns.into_boxed_str()))),
            name: Some(Box::leak(name.into_boxed_str())),
            accept_json: false,
            accept_protobuf: true,
        })
        .unwrap();
    let (av, kind, raw) = unwrap_unknown(&g.body).unwrap();
    assert_eq!(
        (av.as_str(), kind.as_str(), raw),
        ("v1", "ConfigMap", &want[0].1[..])
    );
}

#[test]
fn protobuf_watch_frames_feed_the_view() {
    let v = Views::new(1 << 20);
    let k = key(None);
    v.start_watch_list(&k, Encoding::Protobuf);
    assert!(v.answer(&read(None, None)).is_none(), "filling");
    let stream = std::fs::read(format!("{FIX}cm-watchlist-protobuf.body")).unwrap();
    let frames = crate::watch::proto::ProtoFramer::new(1 << 24)
        .push(&stream)
        .unwrap();
    for f in &frames {
        v.apply(&k, Encoding::Protobuf, &f.meta, &f.bytes);
    }
    let a = v.answer(&read(None, None)).unwrap();
    let page = parse_proto_list(&a.body.clone(), true).unwrap();
    let added = frames
        .iter()
        .filter(|f| f.meta.type_ == Some(EventType::Added))
        .count();
    assert!(added > 0);
    assert_eq!(page.items.len(), added);
    assert_eq!(page.rv, frames.last().unwrap().meta.resource_version);
}

#[test]
fn a_restarted_watch_list_replaces_the_view_only_at_its_end_marker() {
    let v = Views::new(1 << 20);
    let k = key(None);
    v.start_watch_list(&k, Encoding::Json);
    apply_line(&v, &k, &json_line("ADDED", "old", 1));
    apply_line(&v, &k, &json_line("ADDED", "gone", 2));
    let end = |rv: u64| {
        format!(r#"{{"type":"BOOKMARK","object":{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}}"#).into_bytes()
    };
    apply_line(&v, &k, &end(2));
    let names = |v: &Views| -> Vec<String> {
        let a = v.answer(&read(None, None)).unwrap();
        let body: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&v), ["gone", "old"]);
    // The client re-watches (its initial events may be held by a window): the old
    // view answers until the new one is complete, then the new one replaces it.
    v.start_watch_list(&k, Encoding::Json);
    apply_line(&v, &k, &json_line("ADDED", "old", 5));
    assert_eq!(names(&v), ["gone", "old"]);
    apply_line(&v, &k, &end(5));
    assert_eq!(
        names(&v),
        ["old"],
        "no ghost of the object deleted in between"
    );
}

/// Events delivered before a LIST's items are parsed wait in the view, and are
/// applied after the items, in order.
#[test]
fn events_before_the_parse_are_applied_after_it() {
    let v = Views::new(1 << 20);
    let k = key(None);
    let list = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a","namespace":"a","resourceVersion":"4"},"data":{"v":"4"}}]}"#;
    v.feed_list(k.clone(), Encoding::Json, true, Bytes::from_static(list));
    let slot = v.slot(&k).unwrap();
    assert_eq!(
        slot.lock().raw_pages.len(),
        1,
        "no runtime here: not parsed yet"
    );
    apply_line(&v, &k, &json_line("MODIFIED", "a", 6));
    apply_line(&v, &k, &json_line("ADDED", "b", 7));
    apply_line(&v, &k, &json_line("DELETED", "b", 8));
    assert_eq!(
        slot.lock().pending.len(),
        3,
        "queued, not parsed on this thread"
    );
    let a = v.answer(&read(None, None)).unwrap();
    let body: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(body["metadata"]["resourceVersion"], "8");
    assert_eq!(body["items"].as_array().unwrap().len(), 1);
    assert_eq!(body["items"][0]["data"]["v"], "6");
    let s = slot.lock();
    assert!(s.pending.is_empty() && s.raw_pages.is_empty());
    assert_eq!(v.bytes(), s.size(), "the running total follows");
}

/// Inside a runtime the items are parsed by a blocking-pool thread, not the caller.
#[tokio::test]
async fn lists_are_parsed_off_the_calling_thread() {
    let v = Views::new(1 << 20);
    let k = key(None);
    let list = std::fs::read(format!("{FIX}cm-list-protobuf.body")).unwrap();
    v.feed_list(k.clone(), Encoding::Protobuf, true, Bytes::from(list));
    let slot = v.slot(&k).unwrap();
    for _ in 0..200 {
        if slot.lock().raw_pages.is_empty() && !slot.lock().parsing {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let s = slot.lock();
    assert!(
        s.raw_pages.is_empty() && !s.objects.is_empty(),
        "parsed in the background"
    );
    assert_eq!(v.bytes(), s.size());
}

#[test]
fn views_off_keep_nothing() {
    for v in [Views::with_mode(1 << 20, ViewsMode::Off), Views::new(0)] {
        assert!(!v.enabled());
        v.feed_list(key(None), Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}"#));
        assert!(v.answer(&read(None, None)).is_none());
        assert_eq!(v.bytes(), 0);
    }
}

/// A view of configmaps that keeps its past: listed at resourceVersion 10 (x at 9), then
/// x modified (11) after `t0`, and y added (12) and x modified (13) after `t1`.
fn three_changes() -> (Views, ViewKey, Instant, Instant) {
    let v = Views::new(1 << 20);
    v.keep_history_for(|r| r == "configmaps");
    let k = key(None);
    v.feed_list(k.clone(), Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"x","namespace":"a","resourceVersion":"9"},"data":{"v":"9"}}]}"#));
    assert!(v.answer(&read(None, None)).is_some(), "parsed");
    let t0 = Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(20));
    apply_line(&v, &k, &json_line("MODIFIED", "x", 11));
    let t1 = Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(20));
    apply_line(&v, &k, &json_line("ADDED", "y", 12));
    apply_line(&v, &k, &json_line("MODIFIED", "x", 13));
    (v, k, t0, t1)
}

/// An answer's resourceVersion, and its items' names and `data.v`.
fn names_values(a: &Answer) -> (String, Vec<(String, String)>) {
    let b: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
    let items = b["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_string(),
                i["data"]["v"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (
        b["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string(),
        items,
    )
}

/// A view keeps its past (when asked to): it answers as it was at an earlier time,
/// with that point's resourceVersion.
#[test]
fn rewinds_rebuild_the_view_as_it_was() {
    let (v, _, t0, t1) = three_changes();
    let at0 = v.answer_at(&read(None, None), t0).unwrap();
    assert_eq!(
        names_values(&at0),
        ("10".into(), vec![("x".into(), "9".into())])
    );
    let at1 = v.answer_at(&read(None, None), t1).unwrap();
    assert_eq!(
        names_values(&at1),
        ("11".into(), vec![("x".into(), "11".into())])
    );
    // Now it is as it is.
    assert_eq!(
        names_values(&v.answer(&read(None, None)).unwrap()).1,
        [("x".into(), "13".into()), ("y".into(), "12".into())]
    );
    // Before the view existed: it cannot say, and says so.
    let before = t0
        .checked_sub(std::time::Duration::from_secs(3600))
        .unwrap();
    assert!(
        v.answer_at(&read(None, None), before)
            .unwrap_err()
            .contains("reaches back")
    );
}

/// A watch from a rewound point (a list answered as it was, at resourceVersion 10) gets
/// the changes since, from the view's own record, and the upstream from where the view is
/// now.
#[test]
fn a_watch_from_a_rewound_point_gets_the_changes_since() {
    let (v, k, t0, t1) = three_changes();
    let listed = v.answer_at(&read(None, None), t0).unwrap();
    assert_eq!(names_values(&listed).0, "10");
    let w = v.rewound_watch(&k, "10", t0).unwrap();
    assert_eq!(w.upstream_rv, "13");
    let rvs: Vec<u64> = w
        .replay
        .iter()
        .map(|f| {
            crate::watch::json::parse_event(f)
                .unwrap()
                .resource_version
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(rvs, [11, 12, 13]);
    // From resourceVersion 0: the past as ADDED events, then the changes since.
    let w = v.rewound_watch(&k, "0", t1).unwrap();
    let evs: Vec<(String, String)> = w
        .replay
        .iter()
        .map(|f| {
            let m = crate::watch::json::parse_event(f).unwrap();
            (m.type_.unwrap().as_str().to_string(), m.resource_version)
        })
        .collect();
    assert_eq!(
        evs,
        [
            ("ADDED".into(), "11".into()),
            ("ADDED".into(), "12".into()),
            ("MODIFIED".into(), "13".into())
        ]
    );
}

/// Views of resources no rewind names keep no past: never the present passed off as
/// the past.
#[test]
fn views_of_resources_no_rewind_names_keep_no_past() {
    let k = key(None);
    let plain = Views::new(1 << 20);
    plain.feed_list(k.clone(), Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[]}"#));
    assert!(plain.answer(&read(None, None)).is_some());
    let later = Instant::now();
    apply_line(&plain, &k, &json_line("ADDED", "x", 11));
    assert!(
        plain
            .answer_at(&read(None, None), later)
            .unwrap_err()
            .contains("keeps no past"),
        "never the present passed off as the past"
    );
}

#[test]
fn the_cap_drops_views_instead_of_growing() {
    let v = Views::new(300);
    let k = key(None);
    v.feed_list(k.clone(), Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}"#));
    assert!(v.answer(&read(None, None)).is_some());
    for i in 0..5 {
        apply_line(&v, &k, &json_line("ADDED", &format!("o{i}"), 2 + i));
    }
    assert!(v.answer(&read(None, None)).is_none());
    assert!(v.bytes() <= 300);
    // Disabled views hold nothing.
    let off = Views::new(0);
    off.feed_list(k, Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}"#));
    assert!(off.answer(&read(None, None)).is_none());
}

#[test]
fn list_metadata_is_scanned_without_parsing_items() {
    let body = br#" { "kind" : "ConfigMapList", "apiVersion":"v1", "metadata": {"resourceVersion": "9", "continue": "c\"x"}, "items": [{"metadata": {"name": "a\"}b"}}, [1, {"x": "]"}]] } "#;
    let p = json_list_meta(body).unwrap();
    assert_eq!(
        (
            p.kind.as_str(),
            p.api_version.as_str(),
            p.rv.as_str(),
            p.continue_.as_str()
        ),
        ("ConfigMap", "v1", "9", "c\"x")
    );
    // The recorded list, pretty-printed as the apiserver sends it to curl.
    let rec = std::fs::read(format!("{FIX}cm-list-json-limit.body")).unwrap();
    let p = json_list_meta(&rec).unwrap();
    assert_eq!(p.rv, "584");
    assert!(p.continue_.starts_with("eyJ2Ijoi"));
    for bad in [
        &b"{\"items\": [1"[..],
        b"{\"kind\": \"x\"}",
        b"{1: 2}",
        b"{\"a\" 1}",
    ] {
        assert!(
            json_list_meta(bad).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn malformed_bodies_leave_no_view_and_do_not_panic() {
    let v = Views::new(1 << 20);
    for body in [&b"{"[..], b"[]", b"{\"items\":[1]}", b"k8s\0\xff", b""] {
        v.feed_list(key(None), Encoding::Json, true, Bytes::from_static(body));
        v.feed_list(
            key(None),
            Encoding::Protobuf,
            true,
            Bytes::from_static(body),
        );
        assert!(v.answer(&read(None, None)).is_none());
    }
    // Metadata first, then broken items: accepted on the way through (the items are
    // not scanned then), refused when a read needs the view.
    let broken = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"}},{"#;
    assert!(json_list_meta(broken).is_ok());
    v.feed_list(key(None), Encoding::Json, true, Bytes::from_static(broken));
    assert!(v.answer(&read(None, None)).is_none());
    assert_eq!(v.bytes(), 0);
}

/// A WatchList answered from a view is what a watch cache at the view's resourceVersion
/// sends: every object an ADDED event, then the end marker at that resourceVersion — and
/// fed to a fresh view it rebuilds the same view (a client's informer gets exactly what
/// it was shown). In both framings, from a real apiserver's recorded WatchList.
#[test]
fn a_watch_list_from_a_view_is_the_view() {
    for (encoding, file) in [
        (Encoding::Protobuf, "cm-watchlist-protobuf.body"),
        (Encoding::Json, "cm-watchlist-json.body"),
    ] {
        let v = Views::new(1 << 20);
        let k = key(None);
        v.start_watch_list(&k, encoding);
        let stream = std::fs::read(format!("{FIX}{file}")).unwrap();
        let frames = match encoding {
            Encoding::Protobuf => crate::watch::proto::ProtoFramer::new(1 << 24).push(&stream),
            Encoding::Json => crate::watch::json::JsonFramer::new(1 << 24).push(&stream),
        }
        .unwrap();
        for f in &frames {
            v.apply(&k, encoding, &f.meta, &f.bytes);
        }
        let before = v.answer(&read(None, None)).unwrap();
        let wl = v.watch_list(&read(None, None), None).unwrap();
        assert_eq!(wl.rv, before.rv, "{file}");
        assert_eq!(wl.rewind.upstream_rv, before.rv);
        assert!(wl.rewind.replay.is_empty());
        let replayed = match encoding {
            Encoding::Protobuf => {
                crate::watch::proto::ProtoFramer::new(1 << 24).push(&wl.initial.concat())
            }
            Encoding::Json => {
                crate::watch::json::JsonFramer::new(1 << 24).push(&wl.initial.concat())
            }
        }
        .unwrap();
        let last = replayed.last().unwrap();
        assert!(
            last.meta.initial_events_end,
            "{file}: ends with the end marker"
        );
        assert_eq!(last.meta.resource_version, before.rv);
        assert!(
            replayed[..replayed.len() - 1]
                .iter()
                .all(|f| f.meta.type_ == Some(EventType::Added))
        );
        // A client given it is shown the same objects.
        let again = Views::new(1 << 20);
        again.start_watch_list(&k, encoding);
        for f in &replayed {
            again.apply(&k, encoding, &f.meta, &f.bytes);
        }
        assert_eq!(again.answer(&read(None, None)).unwrap(), before, "{file}");
        // A client that asks for another framing than the view's is not answered from it.
        let other = Read {
            accept_json: encoding == Encoding::Protobuf,
            accept_protobuf: encoding == Encoding::Json,
            ..read(None, None)
        };
        assert!(v.watch_list(&other, None).is_err());
    }
}
