//! Plans: where to perturb, learnt from a fault-free reference run (Sieve's idea, on the
//! wire). Every plan is a plain schedule whose windows open on the controller's own
//! requests — "the 2nd patch of gitrepositories/status" — or on the workload's, so a plan
//! that finds a bug is already its reproducer.
//!
//! ```text
//!  reference trace ─► phases: start-up, then one from each workload write
//!                  ─► anchors (each write, by verb/resource/subresource/count; the
//!                     first few of a kind in each phase)
//!                  ─► watched resources, event stretches
//!                  ─► round 1: freeze 1.5 s, restart, 409s        at every anchor
//!                      round 2: freeze past the controller's patience (--long-window)
//!                               after its creates and deletes, the user's objects
//!                               touched just before it ends
//!                      round 3: relist, lag 1 s for 10 s, rewind+restart (of what it
//!                               LISTs; after the user's writes too), 500s, 429s
//!                               (the controller's writes; after the user's: 500s to
//!                               every controller write in that phase), a 5 s
//!                               partition, coalesce stretches
//!                      round 4: partitions around a Lease it holds, freeze 5 s and
//!                               0.5 s, 503s and 504s on creates
//!                  ─► drop plans that change nothing on the reference trace
//!                  ─► ranked by focus (focus.rs), breadth first within a rank
//! ```
//!
//! Rounds are breadth first — every anchor gets the likeliest faults before any anchor
//! gets the rest — so a small budget covers the whole run thinly rather than its start
//! thoroughly. Within a round, anchors take turns by phase: the first anchor of every
//! phase, then the second of every phase, … A controller's start-up writes (a controller
//! manager makes dozens) would otherwise use up a budget before any plan reached what the
//! workload made it do — where most staleness bugs are (Sieve's workloads, Acto's
//! actions).
//!
//! **Families.** Each fault's plans are one `Family`, in a file of its
//! own, proposing its plans each with its round and its place in it (`family.rs`); the
//! list below, `FAMILIES`, merges them: by round, then before / at each anchor in turn /
//! after the anchors, then in the list's order.
//!
//! | family | file | rounds |
//! |---|---|---|
//! | freeze 1.5 s; past the patience + touch; 5 s, 0.5 s | `freeze.rs` | 1, 2, 4 |
//! | restart | `restart.rs` | 1 |
//! | relist (410) | `relist.rs` | 3 |
//! | lag 1 s for 10 s | `lag.rs` | 3 |
//! | rewind + restart | `rewind.rs` | 3 |
//! | errors: 409; 500, 429, 500s after the user's writes; 503, 504 | `errors.rs` | 1, 3, 4 |
//! | partition: 5 s blip; around the Lease | `partition.rs` | 3, 4 |
//! | coalesce event stretches | `coalesce.rs` | 3 |
//!
//! Besides them: `anchors.rs` (the [`Reference`] a trace gives, its anchors and phases),
//! `candidate.rs` (the [`Plan`] and the window builder), `family.rs` (what a family is
//! given and gives back). Adding a family: its file, a line in `FAMILIES` (where its
//! plans go among the others' at one anchor), and its row above.

mod anchors;
mod candidate;
mod coalesce;
mod errors;
mod family;
mod freeze;
mod lag;
mod partition;
mod relist;
mod restart;
mod rewind;
#[cfg(test)]
mod tests;

pub use anchors::{Anchor, Reference, read, to_whom, whom};
pub use candidate::Plan;
pub use family::Options;

use crate::session::CONTROLLER;
use family::{Context, Family};

/// Every family, in the order their plans go at one anchor of one round (round 1 at an
/// anchor: its freezes, a restart, a 409; round 3: a relist, lag, a rewind, errors).
const FAMILIES: &[&dyn Family] = &[
    &freeze::Freeze,
    &restart::Restart,
    &relist::Relist,
    &lag::Lag,
    &rewind::Rewind,
    &errors::Errors,
    &partition::Partition,
    &coalesce::Coalesce,
];

/// Every plan, in the order to try them.
pub fn plans(r: &Reference, opts: &Options) -> Vec<Plan> {
    let cx = Context::new(r, opts);
    let mut placed: Vec<(u8, family::At, usize, Plan)> = (FAMILIES.iter().enumerate())
        .flat_map(|(f, family)| family.plans(&cx).into_iter().map(move |p| (f, p)))
        .map(|(f, p)| (p.plan.round, p.at, f, p.plan))
        .collect();
    // Stable: each family's plans at one place keep the family's own order.
    placed.sort_by_key(|(round, at, family, _)| (*round, *at, *family));
    let mut out: Vec<Plan> = placed.into_iter().map(|(.., p)| p).collect();
    // Whose plans: the controller after `--` has them as they always were; another's say
    // so in their label and file name.
    if r.controller != CONTROLLER {
        for plan in &mut out {
            plan.slug = format!("{}--{}", r.controller, plan.slug);
        }
    }
    out
}

/// Every plan for every controller under test (`views`: what the reference showed each;
/// the controller after `--` first), round by round: each controller's likeliest
/// faults before anyone's less likely ones.
pub fn plans_for_all(views: &[&Reference], opts: &Options) -> Vec<Plan> {
    let mut all: Vec<Plan> = views.iter().flat_map(|r| plans(r, opts)).collect();
    // Stable: within a round, each controller's plans in its own order.
    all.sort_by_key(|p| p.round);
    all
}
