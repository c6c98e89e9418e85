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
//!                               every controller write in that phase), coalesce
//!                               stretches
//!                      round 4: freeze 5 s and 0.5 s, 503s and 504s on creates
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
//!
//! **Only what a real apiserver could answer.** An `errors` plan injects, for the request
//! it hits, a status a real kube-apiserver can return for it (`fault/errors.rs` cites
//! where each comes from): 409 `Conflict` only for writes carrying a resourceVersion
//! precondition, and only where the reference run shows the controller sending such
//! writes (the window is `preconditioned`, so a write without one passes); 429 with
//! `Retry-After`, 500, and for creates 503 and 504. The schedule language lets a user
//! ask for anything; the planner does not.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::k8s::request::Verb;
use crate::schedule::Window;
use crate::session::{CONTROLLER, WORKLOAD};

/// A lag plan's delay, and how long it lasts.
const LAG: Duration = Duration::from_secs(1);
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
const LEASES: &str = "leases.coordination.k8s.io";
const LAG_FOR: Duration = Duration::from_secs(10);

/// At most this many occurrences of one (client, verb, resource) in each phase are
/// anchors: a controller patching status fifty times is covered by its first few.
pub const MAX_PER_KIND: u64 = 4;

/// How long before a long freeze ends the user's objects are touched: time for a
/// controller to act on the touch while the freeze still holds.
const TOUCH_BEFORE_END: Duration = Duration::from_secs(20);

/// One candidate: windows to run a trial with.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What it does, for people.
    pub label: String,
    /// For file names.
    pub slug: String,
    pub round: u8,
    pub windows: Vec<Window>,
    /// The resource its windows open on (the anchor's, or the events').
    pub anchor: String,
    /// The resources its fault acts on (none: the whole controller, a restart).
    pub targets: Vec<String>,
    /// How close it is to what the user cares about (`focus.rs`; 1 is closest).
    pub rank: u8,
    /// The phase of the run it opens in (0: the start-up; N: after the workload's Nth
    /// write): plans in the start-up of a run with actions are those of the run without.
    pub phase: usize,
}

impl Plan {
    /// Whether it coalesces an event stretch (the staleness of a relist, or of a slow
    /// client, at the moment its first event lands).
    pub fn coalesces(&self) -> bool {
        self.windows
            .iter()
            .any(|w| matches!(w.fault, crate::fault::Fault::Coalesce(_)))
    }

    /// How much fault it injects (shorter, fewer windows: simpler).
    pub fn weight(&self) -> (usize, Duration) {
        (
            self.windows.len(),
            self.windows
                .iter()
                .filter_map(|w| w.duration.map(|d| d.0))
                .sum(),
        )
    }
}

/// What the planner is asked for besides the reference.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Round 2's freezes (`--long-window`); none: no round 2.
    pub long_window: Option<Duration>,
}

fn window(
    name: &str,
    client: &str,
    resources: &[String],
    fault: serde_json::Value,
    trigger: serde_json::Value,
    duration: Option<Duration>,
) -> Window {
    let mut w = json!({
        "name": name,
        "client": client,
        "resources": resources,
        "fault": fault,
        "trigger": trigger,
    });
    if let Some(d) = duration {
        w["duration"] = json!(format!("{}ms", d.as_millis()));
    }
    serde_json::from_value(w).expect("plans build valid windows")
}

fn secs(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// Every plan, in the order to try them.
pub fn plans(r: &Reference, opts: &Options) -> Vec<Plan> {
    let mut p = Planner {
        r,
        out: Vec::new(),
        effects: BTreeSet::new(),
        watched: r.watched.iter().cloned().collect(),
    };
    let me = r.controller.as_str();
    // Anchors take turns by phase: the first of every phase, then the second, …
    let mut order: Vec<&Anchor> = r.anchors.iter().collect();
    order.sort_by_key(|a| (a.turn, a.phase));
    p.round_1(&order);
    if let Some(long) = opts.long_window {
        p.round_2(&order, long);
    }
    p.round_3(&order);
    p.out.extend(coalesce_plans(r));
    p.round_4(&order);
    // Whose plans: the controller after `--` has them as they always were; another's say
    // so in their label and file name.
    if me != CONTROLLER {
        for plan in &mut p.out {
            plan.slug = format!("{me}--{}", plan.slug);
        }
    }
    p.out
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

/// The plans made so far, and what they would do on the reference run.
struct Planner<'a> {
    r: &'a Reference,
    out: Vec<Plan>,
    /// What each freeze so far would hold: one that holds nothing, or the same as
    /// another, is not made.
    effects: BTreeSet<String>,
    watched: Vec<String>,
}

impl Planner<'_> {
    /// The events a freeze of `resources` from `at` for `d` would hold on the reference
    /// run: none, and it changes nothing; the same as another's, and it is that one.
    fn held(&self, resources: &[String], at: SystemTime, d: Duration) -> Vec<String> {
        self.r
            .events
            .iter()
            .filter(|(t, res, _, _)| *t >= at && *t <= at + d && resources.iter().any(|x| x == res))
            .map(|(_, res, obj, rv)| format!("{res} {obj}@{rv}"))
            .collect()
    }

    /// Freeze one watched resource for `d` after `a`, if that would hold something new.
    fn freeze_one(&mut self, a: &Anchor, res: &str, d: Duration, round: u8) -> Option<Plan> {
        let resources = vec![res.to_string()];
        let h = self.held(&resources, a.at, d);
        if h.is_empty()
            || !self
                .effects
                .insert(format!("freeze {res} {} {h:?}", d.as_millis()))
        {
            return None;
        }
        let short = res.split('.').next().unwrap_or(res);
        let me = &self.r.controller;
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

    /// Freeze each watched resource for `d` after `a`.
    fn freeze(&mut self, a: &Anchor, d: Duration, round: u8) {
        for res in self.watched.clone() {
            if let Some(p) = self.freeze_one(a, &res, d, round) {
                self.out.push(p);
            }
        }
    }

    /// Freeze 1.5 s, restart, 409s: the likeliest at every anchor.
    fn round_1(&mut self, order: &[&Anchor]) {
        for a in order {
            self.freeze(a, Duration::from_millis(1500), 1);
            // The controller restarted as a user's write lands, too: it comes back to
            // a world that changed while it was down.
            let me = &self.r.controller;
            self.out.push(restart(me, a));
            if a.client == *me && a.preconditioned {
                self.out.push(errors(me, a, 409, 1));
            }
        }
    }

    /// Relist, rewind + restart, 500s and 429s.
    fn round_3(&mut self, order: &[&Anchor]) {
        let watched = self.watched.clone();
        let me = self.r.controller.clone();
        for a in order {
            if !watched.is_empty() {
                self.out.push(relist(&me, &watched, a));
            }
            if let Some(p) = self.lag(a) {
                self.out.push(p);
            }
            // After a user's write too: the controller comes back to the cluster as it
            // was when the write landed, and learns of the write (and of its own
            // reaction) only as the rewind ends.
            let listed: Vec<String> = self.r.listed.iter().cloned().collect();
            if !listed.is_empty() {
                self.out.push(rewind_restart(&me, listed, a));
            }
            if a.client == WORKLOAD
                && let Some(p) = errors_after_action(self.r, a)
            {
                self.out.push(p);
            }
            if a.client != me {
                continue;
            }
            self.out.push(errors(&me, a, 500, 3));
            self.out.push(errors(&me, a, 429, 3));
        }
        self.partitions(order, PARTITION_BLIP, 3);
    }

    /// The apiserver unreachable from the controller for `d` (a whole `blackhole`
    /// partition, `fault/partition.rs`), from just after the first write of each kind in
    /// every phase — the controller's, or a user's it has not reacted to yet.
    fn partitions(&mut self, order: &[&Anchor], d: Duration, round: u8) {
        let mut done = BTreeSet::new();
        let me = self.r.controller.clone();
        for a in order {
            if !done.insert((a.phase, a.client.clone(), a.verb, a.resource.clone())) || a.count > 1
            {
                continue;
            }
            let mut trigger = a.trigger(&me);
            trigger["delay"] = json!(format!("{}ms", PARTITION_AFTER.as_millis()));
            self.out.push(Plan {
                label: format!(
                    "the apiserver unreachable from {} for {} (blackhole) right after {}",
                    whom(&me),
                    secs(d),
                    a.describe()
                ),
                slug: format!("partition-{}s-after-{}", d.as_secs(), a.slug()),
                round,
                windows: vec![window(
                    "partition",
                    &me,
                    &["*".to_string()],
                    json!({"partition": {"mode": "blackhole"}}),
                    trigger,
                    Some(d),
                )],
                anchor: a.resource.clone(),
                targets: vec![],
                rank: 0,
                phase: a.phase,
            });
        }
    }

    /// Steady informer lag from `a` on: every event of what the controller watches a
    /// second late, in order, for a while — the seed's "status stuck after a second of
    /// informer lag". Unlike a freeze, the controller keeps seeing the world move, just
    /// behind: its own writes too. Made where it would delay something new.
    fn lag(&mut self, a: &Anchor) -> Option<Plan> {
        if self.watched.is_empty() {
            return None;
        }
        let watched = self.watched.clone();
        let h = self.held(&watched, a.at, LAG_FOR);
        if h.is_empty() || !self.effects.insert(format!("lag {h:?}")) {
            return None;
        }
        let me = &self.r.controller;
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

    /// Freeze 5 s and 0.5 s; 503s and 504s on creates.
    fn round_4(&mut self, order: &[&Anchor]) {
        if self.r.leases {
            for d in partition_lengths(self.r.lease_duration) {
                self.partitions(order, d, 4);
            }
        }
        for a in order {
            self.freeze(a, Duration::from_secs(5), 4);
            self.freeze(a, Duration::from_millis(500), 4);
            let me = &self.r.controller;
            if a.client == *me && a.verb == Verb::Create {
                self.out.push(errors(me, a, 503, 4));
                self.out.push(errors(me, a, 504, 4));
            }
        }
    }

    /// Past the controller's patience: after the first of each of its creates and
    /// deletes in every phase, what it made or removed frozen for `long`, and the
    /// user's objects touched just before the freeze ends.
    fn round_2(&mut self, order: &[&Anchor], long: Duration) {
        let mut done = BTreeSet::new();
        for a in order {
            let first = done.insert((a.phase, a.verb, a.resource.clone()));
            if a.client != self.r.controller
                || !matches!(a.verb, Verb::Create | Verb::Delete)
                || !first
                || !self.r.watched.contains(&a.resource)
            {
                continue;
            }
            let Some(mut p) = self.freeze_one(a, &a.resource.clone(), long, 2) else {
                continue;
            };
            if !self.r.touchable.is_empty() {
                let touch_at = long.saturating_sub(TOUCH_BEFORE_END).max(long / 2);
                let mut trigger = a.trigger(&self.r.controller);
                trigger["delay"] = json!(format!("{}ms", touch_at.as_millis()));
                p.windows.push(window(
                    "touch",
                    &self.r.controller,
                    &["*".to_string()],
                    json!({"touch": {"objects": self.r.touchable}}),
                    trigger,
                    None,
                ));
                p.label = format!(
                    "{}, the user's objects touched {} in",
                    p.label,
                    secs(touch_at)
                );
            }
            self.out.push(p);
        }
    }
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

mod anchors;
mod coalesce;
pub use anchors::{Anchor, Reference, read, to_whom, whom};
use coalesce::coalesce_plans;

#[cfg(test)]
mod tests;
