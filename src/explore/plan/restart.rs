//! Restart plans (round 1): the controller restarted right after every anchor — its own
//! writes, and a user's too: it comes back to a world that changed while it was down.

use serde_json::json;

use super::anchors::{Anchor, whom};
use super::candidate::{Plan, window};
use super::family::{Context, Family, Placed};

pub(super) struct Restart;

impl Family for Restart {
    fn plans(&self, cx: &Context) -> Vec<Placed> {
        (cx.order.iter().enumerate())
            .map(|(i, a)| Placed::at(i, restart(cx.me(), a)))
            .collect()
    }
}

/// Restart controller `me` right after `a` (a controller's write, or a user's).
fn restart(me: &str, a: &Anchor) -> Plan {
    Plan {
        label: format!("restart {} right after {}", whom(me), a.describe()),
        slug: format!("restart-after-{}", a.slug()),
        round: 1,
        windows: vec![window(
            "restart",
            me,
            &["*".to_string()],
            json!({"restart": {}}),
            a.trigger(me),
            None,
        )],
        anchor: a.resource.clone(),
        targets: vec![],
        rank: 0,
        phase: a.phase,
    }
}
