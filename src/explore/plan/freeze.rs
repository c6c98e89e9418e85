//! Freeze plans: one watched resource held still for a while after an anchor — 1.5 s in
//! round 1, 5 s and 0.5 s in round 4 — and round 2's freezes past the controller's
//! patience (`--long-window`) after its creates and deletes, the user's objects touched
//! just before they end. A freeze that would hold nothing on the reference run, or the
//! same as another, is not made.
//!
//! **Past the controller's patience.** A controller that waits to see its own creates and
//! deletes before acting again (client-go's workload controllers: five minutes of
//! "expectations", `pkg/controller/controller_utils.go`) gives up waiting at some point
//! and acts on what it has been shown. Informer lag that long happens (a partitioned
//! watch, an apiserver's cache stuck behind etcd), and what a controller does then is
//! what round 2 asks: the resource it made or removed frozen longer than such a timeout
//! (`--long-window`, 5m30s), and just before the freeze ends its user's objects touched
//! (`fault/touch.rs`), because a controller that gave up waiting acts only when something
//! it watches changes. These trials take minutes each, but there are few — one per kind
//! it creates or deletes in each phase — and the class is the best documented of all in
//! controllers nobody here wrote (kubernetes#129795: a ReplicaSet's extra pods), so they
//! come right after the short freezes, before the many relists and errors.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;

use super::anchors::{Anchor, to_whom};
use super::candidate::{Plan, secs, window};
use super::family::{Context, Family, Placed};
use crate::k8s::request::Verb;

/// How long before a long freeze ends the user's objects are touched: time for a
/// controller to act on the touch while the freeze still holds.
const TOUCH_BEFORE_END: Duration = Duration::from_secs(20);

pub(super) struct Freeze;

impl Family for Freeze {
    fn plans(&self, cx: &Context) -> Vec<Placed> {
        let mut f = Freezes {
            cx,
            out: Vec::new(),
            effects: BTreeSet::new(),
        };
        for (i, a) in cx.order.iter().enumerate() {
            f.each_watched(i, a, Duration::from_millis(1500), 1);
        }
        if let Some(long) = cx.opts.long_window {
            f.long(long);
        }
        for (i, a) in cx.order.iter().enumerate() {
            f.each_watched(i, a, Duration::from_secs(5), 4);
            f.each_watched(i, a, Duration::from_millis(500), 4);
        }
        f.out
    }
}

/// The freezes made so far, and what each would hold.
struct Freezes<'a, 'c> {
    cx: &'c Context<'a>,
    out: Vec<Placed>,
    /// What each freeze so far would hold: one that holds nothing, or the same as
    /// another, is not made.
    effects: BTreeSet<String>,
}

impl Freezes<'_, '_> {
    /// Freeze one watched resource for `d` after `a`, if that would hold something new.
    fn one(&mut self, a: &Anchor, res: &str, d: Duration, round: u8) -> Option<Plan> {
        let resources = vec![res.to_string()];
        let h = self.cx.held(&resources, a.at, d);
        if h.is_empty()
            || !self
                .effects
                .insert(format!("freeze {res} {} {h:?}", d.as_millis()))
        {
            return None;
        }
        let short = res.split('.').next().unwrap_or(res);
        let me = self.cx.me();
        let to = to_whom(me);
        Some(Plan {
            label: format!("freeze {res}{to} for {} after {}", secs(d), a.describe()),
            slug: format!("freeze-{short}-{}ms-after-{}", d.as_millis(), a.slug()),
            round,
            windows: vec![window(
                "freeze",
                me,
                &resources,
                json!({"freeze": {}}),
                a.trigger(me),
                Some(d),
            )],
            anchor: a.resource.clone(),
            targets: resources,
            rank: 0,
            phase: a.phase,
        })
    }

    /// Freeze each watched resource for `d` after `a` (the `i`th anchor in turn).
    fn each_watched(&mut self, i: usize, a: &Anchor, d: Duration, round: u8) {
        for res in &self.cx.watched {
            if let Some(p) = self.one(a, res, d, round) {
                self.out.push(Placed::at(i, p));
            }
        }
    }

    /// Past the controller's patience: after the first of each of its creates and
    /// deletes in every phase, what it made or removed frozen for `long`, and the
    /// user's objects touched just before the freeze ends.
    fn long(&mut self, long: Duration) {
        let r = self.cx.r;
        let mut done = BTreeSet::new();
        for (i, a) in self.cx.order.iter().enumerate() {
            let first = done.insert((a.phase, a.verb, a.resource.clone()));
            if a.client != r.controller
                || !matches!(a.verb, Verb::Create | Verb::Delete)
                || !first
                || !r.watched.contains(&a.resource)
            {
                continue;
            }
            let Some(mut p) = self.one(a, &a.resource, long, 2) else {
                continue;
            };
            if !r.touchable.is_empty() {
                let touch_at = long.saturating_sub(TOUCH_BEFORE_END).max(long / 2);
                let mut trigger = a.trigger(&r.controller);
                trigger["delay"] = json!(format!("{}ms", touch_at.as_millis()));
                p.windows.push(window(
                    "touch",
                    &r.controller,
                    &["*".to_string()],
                    json!({"touch": {"objects": r.touchable}}),
                    trigger,
                    None,
                ));
                p.label = format!(
                    "{}, the user's objects touched {} in",
                    p.label,
                    secs(touch_at)
                );
            }
            self.out.push(Placed::at(i, p));
        }
    }
}
