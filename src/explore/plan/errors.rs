//! Errors plans: the apiserver answering an error to the controller's writes for 1.5 s
//! from an anchor — 409s in round 1, 500s and 429s in round 3 (and, after a user's write,
//! 500s to every write the controller makes in that phase), 503s and 504s on creates in
//! round 4.
//!
//! **Only what a real apiserver could answer.** An `errors` plan injects, for the request
//! it hits, a status a real kube-apiserver can return for it (`fault/errors.rs` cites
//! where each comes from): 409 `Conflict` only for writes carrying a resourceVersion
//! precondition, and only where the reference run shows the controller sending such
//! writes (the window is `preconditioned`, so a write without one passes); 429 with
//! `Retry-After`, 500, and for creates 503 and 504. The schedule language lets a user
//! ask for anything; the planner does not.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;

use super::anchors::{Anchor, Reference, whom};
use super::candidate::{Plan, window};
use super::family::{Context, Family, Placed};
use crate::k8s::request::Verb;
use crate::session::WORKLOAD;

pub(super) struct Errors;

impl Family for Errors {
    fn plans(&self, cx: &Context) -> Vec<Placed> {
        let me = cx.me();
        let mut out = Vec::new();
        for (i, a) in cx.order.iter().enumerate() {
            let mut at = |p| out.push(Placed::at(i, p));
            if a.client == me && a.preconditioned {
                at(errors(me, a, 409, 1));
            }
            if a.client == WORKLOAD
                && let Some(p) = errors_after_action(cx.r, a)
            {
                at(p);
            }
            if a.client != me {
                continue;
            }
            at(errors(me, a, 500, 3));
            at(errors(me, a, 429, 3));
            if a.verb == Verb::Create {
                at(errors(me, a, 503, 4));
                at(errors(me, a, 504, 4));
            }
        }
        out
    }
}

/// Answer `status` to the anchor's kind of request for 1.5 s from it, as a real
/// apiserver would (`fault/errors.rs`): a 409 only to writes with a precondition, 429
/// and 503 with `Retry-After: 1`.
fn errors(me: &str, a: &Anchor, status: u16, round: u8) -> Plan {
    let mut fault = json!({"verbs": [a.verb], "status": status});
    match status {
        409 => fault["preconditioned"] = json!(true),
        429 | 503 => fault["retryAfter"] = json!("1s"),
        _ => {}
    }
    Plan {
        label: format!(
            "answer {status}{} to {}'s {} of {} for 1.5s from {}",
            if status == 409 {
                " (its precondition)"
            } else {
                ""
            },
            whom(me),
            a.verb,
            a.resource,
            a.describe()
        ),
        slug: format!("errors-{status}-at-{}", a.slug()),
        round,
        windows: vec![window(
            "errors",
            me,
            std::slice::from_ref(&a.resource),
            json!({"errors": fault}),
            a.trigger(me),
            Some(Duration::from_millis(1500)),
        )],
        anchor: a.resource.clone(),
        targets: vec![a.resource.clone()],
        rank: 0,
        phase: a.phase,
    }
}

/// 500s to every write the controller makes in the phase a user's write `a` starts,
/// for 1.5 s from it: the controller's reaction to an action failing as a whole (its
/// first status patch after an action is rarely one of the run's first few).
fn errors_after_action(r: &Reference, a: &Anchor) -> Option<Plan> {
    let written: BTreeSet<String> = r
        .anchors
        .iter()
        .filter(|b| b.client == r.controller && b.phase == a.phase)
        .map(|b| b.resource.clone())
        .collect();
    if written.is_empty() {
        return None;
    }
    let resources: Vec<String> = written.into_iter().collect();
    Some(Plan {
        label: format!(
            "answer 500 to {}'s writes of {} for 1.5s from {}",
            whom(&r.controller),
            resources.join(", "),
            a.describe()
        ),
        slug: format!("errors-500-writes-after-{}", a.slug()),
        round: 3,
        windows: vec![window(
            "errors",
            &r.controller,
            &resources,
            json!({"errors": {"verbs": [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete], "status": 500}}),
            a.trigger(&r.controller),
            Some(Duration::from_millis(1500)),
        )],
        anchor: a.resource.clone(),
        targets: resources,
        rank: 0,
        phase: a.phase,
    })
}
