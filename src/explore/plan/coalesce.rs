//! Coalesce plans: where an object the controller watches changed twice or more in a
//! short stretch, the controller shown only the stretch's last state — what a client
//! that relisted, or was just slow, sees of a user's action and its reaction.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::anchors::{Reference, to_whom};
use super::candidate::{Plan, window};
use super::family::{At, Context, Family, Placed};
use crate::session::WORKLOAD;

/// Coalesced stretches come in round 3, after every anchor's other plans: they open on
/// events rather than anchors.
pub(super) struct Coalesce;

impl Family for Coalesce {
    fn plans(&self, cx: &Context) -> Vec<Placed> {
        (coalesce_plans(cx.r).into_iter())
            .map(|plan| Placed {
                plan,
                at: At::After,
            })
            .collect()
    }
}

/// Where an object the controller watches changed twice or more within 2 s: coalesce
/// from the first of those events until just after the last, so the controller never
/// sees the states in between.
fn coalesce_plans(r: &Reference) -> Vec<Plan> {
    let mut out = Vec::new();
    let mut index: BTreeMap<&str, u64> = BTreeMap::new();
    // The last event of each resource so far: an `afterEvents` window opens once its
    // Nth event has gone through, so one that is to hold event N opens on event N-1.
    let mut previous: BTreeMap<&str, SystemTime> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for (i, (t, res, obj, _)) in r.events.iter().enumerate() {
        let n = {
            let c = index.entry(res.as_str()).or_default();
            *c += 1;
            *c
        };
        let before = previous.insert(res.as_str(), *t);
        let later: Vec<&SystemTime> = r.events[i + 1..]
            .iter()
            .filter(|(u, r2, o2, _)| {
                r2 == res
                    && o2 == obj
                    && u.duration_since(*t).unwrap_or_default() <= Duration::from_secs(2)
            })
            .map(|(u, ..)| u)
            .collect();
        let Some(last) = later.last() else { continue };
        // One stretch per object in each phase: the start-up's and what each of the
        // user's writes causes are different moments.
        let phase = r.phase_at(*t);
        if !seen.insert((res.clone(), obj.clone(), phase)) || seen.len() > 16 {
            continue;
        }
        // The window must open before the stretch's first event goes through. After a
        // user's write, on that write (a request opens a window before it is
        // forwarded); otherwise on the event before the first if it is close enough
        // (within PREVIOUS_EVENT), or else on the first.
        let cause = r
            .anchors
            .iter()
            .find(|a| a.client == WORKLOAD && a.phase == phase && phase > 0 && a.at <= *t);
        let (trigger, from) = match (cause, before) {
            (Some(a), _) => (a.trigger(&r.controller), a.at),
            (None, Some(b))
                if n > 1 && t.duration_since(b).unwrap_or_default() <= PREVIOUS_EVENT =>
            {
                (json!({"afterEvents": {"resource": res, "count": n - 1}}), b)
            }
            _ => (json!({"afterEvents": {"resource": res, "count": n}}), *t),
        };
        let span = last.duration_since(from).unwrap_or_default() + Duration::from_millis(300);
        let short = res.split('.').next().unwrap_or(res);
        let to = to_whom(&r.controller);
        out.push(Plan {
            label: format!(
                "coalesce {res}{to} over the {} changes of {obj} from event {n}",
                later.len() + 1
            ),
            slug: format!("coalesce-{short}-from-event-{n}"),
            round: 3,
            windows: vec![window(
                "coalesce",
                &r.controller,
                std::slice::from_ref(res),
                json!({"coalesce": {}}),
                trigger,
                Some(Duration::from_millis(
                    span.as_millis().div_ceil(10) as u64 * 10,
                )),
            )],
            anchor: res.clone(),
            targets: vec![res.clone()],
            rank: 0,
            phase: r.phase_at(*t),
        });
    }
    out
}

/// How far back the event before a coalesced stretch may be for the window to open on
/// it (and so hold the stretch's first event too): further, and the window would hold
/// a long quiet time for nothing.
const PREVIOUS_EVENT: Duration = Duration::from_secs(5);
