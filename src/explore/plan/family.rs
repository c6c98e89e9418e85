//! What a family of plans is: a [`Family`] proposes, from what one controller under test
//! was shown in the reference run (a [`Context`]), its plans, each tagged with its round
//! and where in that round it goes ([`At`]). `mod.rs` lists the families and merges what
//! they propose into the order to try them.

use std::time::{Duration, SystemTime};

use super::anchors::{Anchor, Reference};
use super::candidate::Plan;

/// One family of faults (freeze, restart, errors, …): the rule that proposes its plans.
pub(super) trait Family: Sync {
    /// Its plans on `cx`, in its own order: within one anchor of one round, they keep it.
    fn plans(&self, cx: &Context) -> Vec<Placed>;
}

/// What the planner is asked for besides the reference.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Round 2's freezes (`--long-window`); none: no round 2.
    pub long_window: Option<Duration>,
}

/// What every family plans from.
pub(super) struct Context<'a> {
    pub r: &'a Reference,
    pub opts: &'a Options,
    /// The anchors in the order they take turns: the first of every phase, then the
    /// second, … (`At::Anchor` is a place in it).
    pub order: Vec<&'a Anchor>,
    /// What the controller lists or watches, in order.
    pub watched: Vec<String>,
}

impl<'a> Context<'a> {
    pub(super) fn new(r: &'a Reference, opts: &'a Options) -> Context<'a> {
        let mut order: Vec<&Anchor> = r.anchors.iter().collect();
        order.sort_by_key(|a| (a.turn, a.phase));
        Context {
            r,
            opts,
            order,
            watched: r.watched.iter().cloned().collect(),
        }
    }

    /// The controller the plans are aimed at.
    pub(super) fn me(&self) -> &'a str {
        &self.r.controller
    }

    /// The events a freeze (or lag) of `resources` from `at` for `d` would hold on the
    /// reference run: none, and it changes nothing; the same as another's, and it is
    /// that one.
    pub(super) fn held(&self, resources: &[String], at: SystemTime, d: Duration) -> Vec<String> {
        self.r
            .events
            .iter()
            .filter(|(t, res, _, _)| *t >= at && *t <= at + d && resources.iter().any(|x| x == res))
            .map(|(_, res, obj, rv)| format!("{res} {obj}@{rv}"))
            .collect()
    }
}

/// Where in its round a plan goes: a round sweeps the anchors in turn (each anchor's
/// plans family by family, in the order of the list), with some plans before or after
/// the sweep as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum At {
    /// Before any anchor's (round 4's long partitions).
    Before,
    /// At the anchor this far into `Context::order`.
    Anchor(usize),
    /// After every anchor's (round 3's blips and coalesced stretches).
    After,
}

/// One plan a family proposes, and where it goes.
pub(super) struct Placed {
    pub plan: Plan,
    pub at: At,
}

impl Placed {
    pub(super) fn at(i: usize, plan: Plan) -> Placed {
        Placed {
            plan,
            at: At::Anchor(i),
        }
    }
}
