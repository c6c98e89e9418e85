//! Property tests of the gate: for random upstream event sequences (creates, updates,
//! deletes, re-creates of a name, bookmarks, end of stream) under random windows of every
//! mode, the delivered stream keeps invariants 1 and 2, and after the last window the
//! client's view equals the upstream state.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use bytes::Bytes;
use proptest::prelude::*;

use super::event::{EventMeta, EventType};
use super::frame::Frame;
use super::gate::{Gate, HoldMode, Output};

#[derive(Debug, Clone)]
enum Op {
    Write(u8),
    Delete(u8),
    Bookmark,
    Open(u8),
    Close,
    Tick(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..4).prop_map(Op::Write),
        2 => (0u8..4).prop_map(Op::Delete),
        2 => Just(Op::Bookmark),
        1 => (0u8..3).prop_map(Op::Open),
        1 => Just(Op::Close),
        2 => (0u16..500).prop_map(Op::Tick),
    ]
}

fn frame(t: EventType, name: &str, rv: u64) -> Frame {
    Frame {
        // `-` stands for the empty name of a bookmark, so the line always has three fields.
        bytes: Bytes::from(format!(
            "{} {} {rv}\n",
            t.as_str(),
            if name.is_empty() { "-" } else { name }
        )),
        meta: EventMeta {
            type_: Some(t),
            name: name.into(),
            resource_version: rv.to_string(),
            ..Default::default()
        },
    }
}

fn parse(b: &Bytes) -> (String, String, u64) {
    let s = String::from_utf8_lossy(b);
    let mut it = s.split_whitespace();
    let t = it.next().unwrap_or_default().to_string();
    let n = it
        .next()
        .map(|n| if n == "-" { "" } else { n })
        .unwrap_or_default()
        .to_string();
    let rv = it.next().and_then(|r| r.parse().ok()).unwrap_or(0);
    (t, n, rv)
}

struct Client {
    view: BTreeMap<String, u64>,
    delivered: Vec<(String, String, u64)>,
    ended_expired: bool,
    ended: bool,
}

fn apply(gate: &Gate, c: &mut Client, outs: Vec<Output>) -> Result<(), TestCaseError> {
    for o in outs {
        match o {
            Output::Deliver(f) => {
                prop_assert!(!c.ended, "nothing after the end");
                let (t, n, rv) = parse(&f.bytes);
                if t == "BOOKMARK" {
                    // Invariant 2: no bookmark at or past an event still held.
                    for held in gate.held_rvs() {
                        let held: u64 = held.parse().unwrap_or(0);
                        prop_assert!(
                            held > rv,
                            "bookmark {rv} delivered while event {held} is held"
                        );
                    }
                } else {
                    match t.as_str() {
                        "DELETED" => {
                            c.view.remove(&n);
                        }
                        _ => {
                            c.view.insert(n.clone(), rv);
                        }
                    }
                }
                c.delivered.push((t, n, rv));
            }
            Output::EndExpired { .. } => {
                c.ended = true;
                c.ended_expired = true;
            }
            Output::EndClean | Output::Abort => c.ended = true,
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn invariants_hold(ops in proptest::collection::vec(op(), 0..80), end_upstream in any::<bool>(), cap in prop_oneof![Just(usize::MAX), 20usize..200]) {
        let t0 = Instant::now();
        let mut now = t0;
        let mut gate = Gate::new(cap);
        let mut upstream: BTreeMap<String, u64> = BTreeMap::new();
        let mut sent: Vec<(String, String, u64)> = Vec::new();
        let mut rv = 0u64;
        let mut coalesced_any = false;
        let mut c = Client { view: BTreeMap::new(), delivered: vec![], ended_expired: false, ended: false };
        for op in ops {
            let outs = match op {
                Op::Write(i) | Op::Delete(i) => {
                    let name = format!("o{i}");
                    rv += 1;
                    let t = match (&op, upstream.contains_key(&name)) {
                        (Op::Delete(_), true) => { upstream.remove(&name); EventType::Deleted }
                        (Op::Delete(_), false) => { rv -= 1; continue; }
                        (_, true) => { upstream.insert(name.clone(), rv); EventType::Modified }
                        (_, false) => { upstream.insert(name.clone(), rv); EventType::Added }
                    };
                    sent.push((t.as_str().to_string(), name.clone(), rv));
                    gate.on_frame(frame(t, &name, rv), now)
                }
                Op::Bookmark => gate.on_frame(frame(EventType::Bookmark, "", rv), now),
                Op::Open(m) => {
                    let mode = match m { 0 => HoldMode::Freeze, 1 => { coalesced_any = true; HoldMode::Coalesce }, _ => HoldMode::Lag(Duration::from_millis(300)) };
                    gate.open(mode, now)
                }
                Op::Close => gate.close(now),
                Op::Tick(ms) => { now += Duration::from_millis(u64::from(ms)); gate.tick(now) }
            };
            apply(&gate, &mut c, outs)?;
        }
        // The last window ends and time passes.
        let outs = gate.close(now);
        apply(&gate, &mut c, outs)?;
        let outs = gate.tick(now + Duration::from_secs(3600));
        apply(&gate, &mut c, outs)?;
        if end_upstream {
            let outs = gate.on_upstream_end();
            apply(&gate, &mut c, outs)?;
        }
        let events: Vec<_> = c.delivered.iter().filter(|(t, _, _)| t != "BOOKMARK").cloned().collect();
        // Delivered events are always in upstream order (a subsequence of what was sent).
        let mut it = sent.iter();
        for e in &events {
            prop_assert!(it.any(|s| s == e), "{e:?} out of order or invented");
        }
        if !c.ended_expired {
            // Invariant 1: nothing silently lost...
            if !coalesced_any {
                prop_assert_eq!(&events, &sent);
            }
            // ...and the client's view equals the upstream state after the last window.
            prop_assert_eq!(&c.view, &upstream);
            prop_assert_eq!(gate.held_len(), 0);
        }
    }
}

#[test]
fn freeze_holds_then_releases_in_order_and_drops_bookmarks() {
    let now = Instant::now();
    let mut g = Gate::new(usize::MAX);
    assert_eq!(g.on_frame(frame(EventType::Added, "a", 1), now).len(), 1);
    g.open(HoldMode::Freeze, now);
    assert!(
        g.on_frame(frame(EventType::Modified, "a", 2), now)
            .is_empty()
    );
    assert!(
        g.on_frame(frame(EventType::Bookmark, "", 2), now)
            .is_empty(),
        "bookmark dropped while holding"
    );
    assert!(
        g.on_frame(frame(EventType::Modified, "a", 3), now)
            .is_empty()
    );
    assert_eq!(g.stats.dropped_bookmarks, 1);
    let out = g.close(now);
    let rvs: Vec<u64> = out
        .iter()
        .map(|o| match o {
            Output::Deliver(f) => parse(&f.bytes).2,
            _ => 0,
        })
        .collect();
    assert_eq!(rvs, [2, 3]);
    // Upstream end while holding: ERROR 410, never a clean close.
    g.open(HoldMode::Freeze, now);
    g.on_frame(frame(EventType::Modified, "a", 4), now);
    assert!(matches!(
        g.on_upstream_end()[..],
        [Output::EndExpired { .. }]
    ));
}

#[test]
fn coalesce_keeps_the_latest_state_per_object_and_the_initial_events_end() {
    let now = Instant::now();
    let mut g = Gate::new(usize::MAX);
    g.open(HoldMode::Coalesce, now);
    for (t, n, rv) in [
        (EventType::Modified, "a", 1),
        (EventType::Modified, "b", 2),
        (EventType::Modified, "a", 3),
        (EventType::Deleted, "b", 4),
    ] {
        g.on_frame(frame(t, n, rv), now);
    }
    let mut end = frame(EventType::Bookmark, "", 4);
    end.meta.initial_events_end = true;
    g.on_frame(end, now);
    let out: Vec<(String, String, u64)> = g
        .close(now)
        .iter()
        .map(|o| match o {
            Output::Deliver(f) => parse(&f.bytes),
            _ => Default::default(),
        })
        .collect();
    assert_eq!(
        out,
        [
            ("MODIFIED".into(), "a".into(), 3),
            ("DELETED".into(), "b".into(), 4),
            ("BOOKMARK".into(), "".into(), 4)
        ]
    );
    assert_eq!(g.stats.coalesced, 2);
}

#[test]
fn lag_delays_in_order_with_paused_time() {
    let t0 = Instant::now();
    let mut g = Gate::new(usize::MAX);
    g.open(HoldMode::Lag(Duration::from_secs(2)), t0);
    g.on_frame(frame(EventType::Added, "a", 1), t0);
    g.on_frame(
        frame(EventType::Bookmark, "", 1),
        t0 + Duration::from_millis(100),
    );
    g.on_frame(
        frame(EventType::Modified, "a", 2),
        t0 + Duration::from_secs(1),
    );
    assert!(g.tick(t0 + Duration::from_millis(1999)).is_empty());
    assert_eq!(g.next_due(), Some(t0 + Duration::from_secs(2)));
    let out = g.tick(t0 + Duration::from_millis(2100));
    assert_eq!(
        out.len(),
        2,
        "the event, then the bookmark queued behind it"
    );
    assert_eq!(g.tick(t0 + Duration::from_secs(3)).len(), 1);
}

#[test]
fn memory_cap_ends_the_stream_with_410() {
    let now = Instant::now();
    let mut g = Gate::new(15);
    g.open(HoldMode::Freeze, now);
    assert!(g.on_frame(frame(EventType::Added, "a", 1), now).is_empty());
    assert!(matches!(
        g.on_frame(frame(EventType::Modified, "a", 2), now)[..],
        [Output::EndExpired { .. }]
    ));
    assert!(g.is_ended());
    assert_eq!(g.held_bytes(), 0);
}

#[test]
fn the_global_budget_is_shared_and_given_back() {
    use crate::watch::gate::HeldBudget;
    let now = Instant::now();
    let size = |t, n, rv| frame(t, n, rv).bytes.len();
    let (a1, a2, b3) = (
        size(EventType::Added, "a", 1),
        size(EventType::Modified, "a", 2),
        size(EventType::Added, "b", 3),
    );
    let budget = HeldBudget::new(a1 + a2 + b3);
    let mut a = Gate::new(usize::MAX).with_budget(budget.clone());
    let mut b = Gate::new(usize::MAX).with_budget(budget.clone());
    a.open(HoldMode::Freeze, now);
    b.open(HoldMode::Freeze, now);
    assert!(a.on_frame(frame(EventType::Added, "a", 1), now).is_empty());
    assert!(
        a.on_frame(frame(EventType::Modified, "a", 2), now)
            .is_empty()
    );
    assert!(b.on_frame(frame(EventType::Added, "b", 3), now).is_empty());
    assert_eq!(budget.used(), a1 + a2 + b3);
    // The fourth held event, on either stream, passes the global cap: that stream ends
    // with 410 and gives its bytes back; the other keeps holding.
    assert!(matches!(
        b.on_frame(frame(EventType::Modified, "b", 4), now)[..],
        [Output::EndExpired { .. }]
    ));
    assert_eq!(b.stats.cap_hits, 1);
    assert_eq!(budget.used(), a1 + a2);
    assert_eq!(a.close(now).len(), 2);
    assert_eq!(budget.used(), 0);
    // A dropped gate gives back what it held.
    let mut c = Gate::new(usize::MAX).with_budget(budget.clone());
    c.open(HoldMode::Freeze, now);
    c.on_frame(frame(EventType::Added, "c", 5), now);
    drop(c);
    assert_eq!(budget.used(), 0);
}

#[test]
fn notes_record_each_fate_with_the_release_delay() {
    use crate::watch::gate::Fate;
    let t0 = Instant::now();
    let mut g = Gate::new(usize::MAX);
    g.record = true;
    g.on_frame(frame(EventType::Added, "a", 1), t0);
    g.open(HoldMode::Freeze, t0);
    g.on_frame(frame(EventType::Modified, "a", 2), t0);
    g.on_frame(frame(EventType::Bookmark, "", 2), t0);
    g.close(t0 + Duration::from_millis(1500));
    let fates: Vec<Fate> = g.take_notes().into_iter().map(|n| n.fate).collect();
    assert_eq!(
        fates,
        [
            Fate::Delivered,
            Fate::Held,
            Fate::Dropped,
            Fate::Released(Duration::from_millis(1500))
        ]
    );
    assert!(g.take_notes().is_empty());
}

/// A delay that does not fit the clock never panics: the event is held as long as the
/// clock goes (schedules cap delays at 24 h; this is the gate's own guard).
#[test]
fn an_enormous_lag_does_not_overflow_the_clock() {
    let now = Instant::now();
    let mut g = Gate::new(usize::MAX);
    g.open(HoldMode::Lag(Duration::MAX), now);
    assert!(g.on_frame(frame(EventType::Added, "a", 1), now).is_empty());
    assert!(g.next_due().is_some_and(|d| d > now));
    assert!(g.tick(now + Duration::from_secs(3600)).is_empty());
    assert_eq!(g.close(now).len(), 1, "released when the window ends");
}
