//! Lag plans (round 3): steady informer lag from an anchor on — every event of what the
//! controller watches a second late, in order, for ten seconds: the seed's "status stuck
//! after a second of informer lag". Made where it would delay something new.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;

use super::anchors::{Anchor, to_whom};
use super::candidate::{Plan, secs, window};
use super::family::{Context, Family, Placed};

/// A lag plan's delay, and how long it lasts.
const LAG: Duration = Duration::from_secs(1);
const LAG_FOR: Duration = Duration::from_secs(10);

pub(super) struct Lag;

impl Family for Lag {
    fn plans(&self, cx: &Context) -> Vec<Placed> {
        // What each lag so far would delay: the same as another's, and it is that one.
        let mut effects = BTreeSet::new();
        (cx.order.iter().enumerate())
            .filter_map(|(i, a)| Some(Placed::at(i, lag(cx, a, &mut effects)?)))
            .collect()
    }
}

/// Unlike a freeze, the controller keeps seeing the world move, just behind: its own
/// writes too.
fn lag(cx: &Context, a: &Anchor, effects: &mut BTreeSet<String>) -> Option<Plan> {
    if cx.watched.is_empty() {
        return None;
    }
    let watched = cx.watched.clone();
    let h = cx.held(&watched, a.at, LAG_FOR);
    if h.is_empty() || !effects.insert(format!("lag {h:?}")) {
        return None;
    }
    let me = cx.me();
    let to = to_whom(me);
    Some(Plan {
        label: format!(
            "every event{to} {} late for {} after {}",
            secs(LAG),
            secs(LAG_FOR),
            a.describe()
        ),
        slug: format!("lag-{}ms-after-{}", LAG.as_millis(), a.slug()),
        round: 3,
        windows: vec![window(
            "lag",
            me,
            &watched,
            json!({"lag": {"delay": format!("{}ms", LAG.as_millis())}}),
            a.trigger(me),
            Some(LAG_FOR),
        )],
        anchor: a.resource.clone(),
        targets: watched,
        rank: 0,
        phase: a.phase,
    })
}
