//! Partition plans: the apiserver unreachable from the controller (a whole `blackhole`
//! partition, `fault/partition.rs`) from just after the first write of each kind in every
//! phase — a 5 s blip in round 3, after every anchor's other plans; and for a controller
//! that holds a Lease, round 4 opens with two around its lease.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;

use super::anchors::whom;
use super::candidate::{Plan, secs, window};
use super::family::{At, Context, Family, Placed};

/// Partitions: a blip shorter than any client timeout or lease, for every controller;
/// for one that holds a Lease, two around it — half its lease duration (it keeps its
/// leadership: client-go's renew deadline is past that in every default in the field)
/// and its lease duration and `PARTITION_MARGIN` more (it has lost it, and under
/// client-go's `leaderelection` exits). Its lease duration is read from the Lease it
/// left (`session/leases.rs`); unknown, the long one is `PARTITION_PAST_LEASE`, past the
/// renew deadlines in the field — controller-runtime's and kube-controller-manager's
/// 10 s, Flux's 30 s — and client-go's HTTP/2 health check (30 s unanswered, then a 15 s
/// PING timeout).
const PARTITION_BLIP: Duration = Duration::from_secs(5);
const PARTITION_PAST_LEASE: Duration = Duration::from_secs(50);
const PARTITION_MARGIN: Duration = Duration::from_secs(5);
/// A partition opens this long after the write it follows, so that the write is
/// answered first (its window opens on the request, before it is forwarded).
const PARTITION_AFTER: Duration = Duration::from_millis(100);

pub(super) struct Partition;

impl Family for Partition {
    fn plans(&self, cx: &Context) -> Vec<Placed> {
        let mut out = partitions(cx, PARTITION_BLIP, 3, At::After);
        if cx.r.leases {
            for d in partition_lengths(cx.r.lease_duration) {
                out.extend(partitions(cx, d, 4, At::Before));
            }
        }
        out
    }
}

/// The apiserver unreachable from the controller for `d` from just after the first
/// write of each kind in every phase — the controller's, or a user's it has not reacted
/// to yet.
fn partitions(cx: &Context, d: Duration, round: u8, at: At) -> Vec<Placed> {
    let mut done = BTreeSet::new();
    let me = cx.me();
    let mut out = Vec::new();
    for a in &cx.order {
        if !done.insert((a.phase, a.client.clone(), a.verb, a.resource.clone())) || a.count > 1 {
            continue;
        }
        let mut trigger = a.trigger(me);
        trigger["delay"] = json!(format!("{}ms", PARTITION_AFTER.as_millis()));
        let plan = Plan {
            label: format!(
                "the apiserver unreachable from {} for {} (blackhole) right after {}",
                whom(me),
                secs(d),
                a.describe()
            ),
            slug: format!("partition-{}s-after-{}", d.as_secs(), a.slug()),
            round,
            windows: vec![window(
                "partition",
                me,
                &["*".to_string()],
                json!({"partition": {"mode": "blackhole"}}),
                trigger,
                Some(d),
            )],
            anchor: a.resource.clone(),
            targets: vec![],
            rank: 0,
            phase: a.phase,
        };
        out.push(Placed { plan, at });
    }
    out
}

/// Round 4's partitions for a controller holding a Lease that lasts `lease` unrenewed
/// (see `PARTITION_BLIP`).
fn partition_lengths(lease: Option<Duration>) -> Vec<Duration> {
    match lease {
        Some(l) if l > PARTITION_BLIP * 2 => {
            vec![Duration::from_secs(l.as_secs() / 2), l + PARTITION_MARGIN]
        }
        Some(l) => vec![l + PARTITION_MARGIN],
        None => vec![PARTITION_PAST_LEASE],
    }
}
