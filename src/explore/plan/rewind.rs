//! Rewind plans (round 3): the controller restarted right after an anchor and given what
//! it LISTs as it was then — after a user's write too: it comes back to the cluster as it
//! was when the write landed, and learns of the write (and of its own reaction) only as
//! the rewind ends.

use std::time::Duration;

use serde_json::json;

use super::anchors::{Anchor, whom};
use super::candidate::{Plan, window};
use super::family::{Context, Family, Placed};

pub(super) struct Rewind;

impl Family for Rewind {
    fn plans(&self, cx: &Context) -> Vec<Placed> {
        let listed: Vec<String> = cx.r.listed.iter().cloned().collect();
        if listed.is_empty() {
            return Vec::new();
        }
        (cx.order.iter().enumerate())
            .map(|(i, a)| Placed::at(i, rewind_restart(cx.me(), listed.clone(), a)))
            .collect()
    }
}

/// Restart the controller right after `a` and give it what it lists as it was then.
fn rewind_restart(me: &str, listed: Vec<String>, a: &Anchor) -> Plan {
    // A restart is of the whole controller, whatever it watches.
    let everything = vec!["*".to_string()];
    Plan {
        label: format!(
            "restart {} right after {} and give it the cluster as it was then",
            whom(me),
            a.describe()
        ),
        slug: format!("rewind-restart-after-{}", a.slug()),
        round: 3,
        windows: vec![
            window(
                "restart",
                me,
                &everything,
                json!({"restart": {}}),
                a.trigger(me),
                None,
            ),
            window(
                "rewind",
                me,
                &listed,
                json!({"rewind": {"at": "restart"}}),
                a.trigger(me),
                Some(Duration::from_secs(5)),
            ),
        ],
        anchor: a.resource.clone(),
        targets: listed,
        rank: 0,
        phase: a.phase,
    }
}
