//! Relist plans (round 3): the controller's watches expired (410 Gone) at every anchor,
//! so it lists again — and sees the world at once rather than event by event.

use std::time::Duration;

use serde_json::json;

use super::anchors::{Anchor, whom};
use super::candidate::{Plan, window};
use super::family::{Context, Family, Placed};

pub(super) struct Relist;

impl Family for Relist {
    fn plans(&self, cx: &Context) -> Vec<Placed> {
        if cx.watched.is_empty() {
            return Vec::new();
        }
        (cx.order.iter().enumerate())
            .map(|(i, a)| Placed::at(i, relist(cx.me(), &cx.watched, a)))
            .collect()
    }
}

/// Expire the controller's watches (410) at `a`, so it lists again.
fn relist(me: &str, watched: &[String], a: &Anchor) -> Plan {
    Plan {
        label: format!(
            "expire {}'s watches (410, relist) at {}",
            whom(me),
            a.describe()
        ),
        slug: format!("relist-at-{}", a.slug()),
        round: 3,
        windows: vec![window(
            "relist",
            me,
            watched,
            json!({"relist": {"how": "expired"}}),
            a.trigger(me),
            Some(Duration::from_millis(500)),
        )],
        anchor: a.resource.clone(),
        targets: watched.to_vec(),
        rank: 0,
        phase: a.phase,
    }
}
