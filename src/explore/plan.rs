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

use crate::request::Verb;
use crate::schedule::{Subresource, Window};
use crate::session::snapshot::{IGNORED, base_resource};
use crate::session::{CONTROLLER, WORKLOAD};
use crate::trace::{Record, Stamped};

/// A lag plan's delay, and how long it lasts.
const LAG: Duration = Duration::from_secs(1);
/// Partitions: a blip shorter than any client timeout or lease, and one past the renew
/// deadlines of the leader elections in the field — controller-runtime's and
/// kube-controller-manager's 10 s, Flux's 30 s — and client-go's HTTP/2 health check
/// (30 s unanswered, then a 15 s PING timeout): made only for a controller that holds a
/// Lease, which it then loses.
const PARTITION_BLIP: Duration = Duration::from_secs(5);
const PARTITION_PAST_LEASE: Duration = Duration::from_secs(50);
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

/// A request of the reference run a window can open on.
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    pub client: &'static str,
    pub verb: Verb,
    /// The resource (`plural.group`), without subresource.
    pub resource: String,
    pub subresource: Option<Subresource>,
    /// The how-manyth such request it was.
    pub count: u64,
    /// When it reached the proxy in the reference run: where a window it triggers opens.
    pub at: SystemTime,
    /// Whether the reference run's requests of this kind carried a resourceVersion
    /// precondition (so a 409 `Conflict` is one a real apiserver could answer).
    pub preconditioned: bool,
    /// Which phase of the run it is in: 0 the start-up, N after the workload's Nth write.
    pub phase: usize,
    /// Its place among its phase's anchors (0: the first).
    pub turn: usize,
}

impl Anchor {
    fn trigger(&self) -> serde_json::Value {
        let mut m = json!({"verb": self.verb, "resource": self.resource, "count": self.count});
        if let Some(s) = self.subresource {
            m["subresource"] = json!(s);
        }
        if self.client != CONTROLLER {
            m["client"] = json!(self.client);
        }
        json!({"afterRequests": m})
    }

    /// `the controller's 1st patch of gitrepositories.source.toolkit.fluxcd.io/status`
    pub fn describe(&self) -> String {
        let sub = self
            .subresource
            .map(|s| format!("/{}", s.as_str()))
            .unwrap_or_default();
        format!(
            "the {}'s {} {} of {}{sub}",
            self.client,
            ordinal(self.count),
            self.verb,
            self.resource
        )
    }

    fn slug(&self) -> String {
        let short = self.resource.split('.').next().unwrap_or(&self.resource);
        let sub = self
            .subresource
            .map(|s| format!("-{}", s.as_str()))
            .unwrap_or_default();
        let who = if self.client == CONTROLLER {
            String::new()
        } else {
            format!("{}-", self.client)
        };
        format!("{who}{}-{short}{sub}-{}", self.verb, self.count)
    }
}

fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

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

/// What the reference run shows.
#[derive(Debug, Clone, Default)]
pub struct Reference {
    /// In time order.
    pub anchors: Vec<Anchor>,
    /// Resources the controller lists or watches.
    pub watched: BTreeSet<String>,
    /// Resources the controller LISTs (rather than only watching, as client-go ≥ 1.35
    /// informers do, whose initial state comes by a WatchList): what a rewind can send
    /// back in time (`proxy/reads.rs` `watch_list`: a restarted client's WatchList is a
    /// consistent read).
    pub listed: BTreeSet<String>,
    /// Events delivered to the controller: (when, resource, namespace/name, resourceVersion).
    pub events: Vec<(SystemTime, String, String, String)>,
    /// (client, verb, resource as requested) of writes that carried a precondition.
    pub preconditioned: BTreeSet<(String, Verb, String)>,
    /// The user's objects — the setup's, and those the workload created — which a long
    /// freeze's `touch` touches.
    pub touchable: Vec<crate::fault::touch::Object>,
    /// When each of the workload's writes reached the proxy: where phases begin.
    pub phase_starts: Vec<SystemTime>,
    /// The controller holds a leader-election Lease (it wrote one): a partition longer
    /// than its renew deadline makes it lose leadership.
    pub leases: bool,
}

impl Reference {
    /// The phase of the run at `t`.
    pub fn phase_at(&self, t: SystemTime) -> usize {
        self.phase_starts.iter().filter(|s| **s <= t).count()
    }
}

/// What the planner is asked for besides the reference.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Round 4's freezes (`--long-window`); none: no round 4.
    pub long_window: Option<Duration>,
}

/// Read a reference run's trace; `setup` is what its setup created.
pub fn read(trace: &[Stamped], setup: &[crate::setup::Applied]) -> Reference {
    let mut r = Reference {
        touchable: setup
            .iter()
            .filter(|a| !super::focus::SCAFFOLDING.contains(&a.resource.as_str()))
            .map(|a| crate::fault::touch::Object {
                resource: a.resource.clone(),
                namespace: a.namespace.clone().unwrap_or_default(),
                name: a.name.clone(),
            })
            .collect(),
        ..Reference::default()
    };
    let mut counts: BTreeMap<(String, Verb, String), u64> = BTreeMap::new();
    // Per phase: how many of each kind were anchors, and how many anchors it has.
    let mut in_phase: BTreeMap<(usize, String, Verb, String), u64> = BTreeMap::new();
    let mut turns: BTreeMap<usize, usize> = BTreeMap::new();
    let mut phase = 0;
    for s in trace {
        match &s.record {
            // What the workload created is the user's too (a create's name is in its
            // answer, not its request).
            Record::Created {
                client,
                resource,
                namespace,
                name,
                ..
            } if client == WORKLOAD && !resource.contains('/') => {
                r.touchable.push(crate::fault::touch::Object {
                    resource: resource.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                });
            }
            Record::Request {
                client,
                verb,
                resource,
                precondition,
                latency_ms,
                ..
            } if client == CONTROLLER || client == WORKLOAD => {
                let Some(verb) = Verb::from_name(verb) else {
                    continue;
                };
                let base = base_resource(resource).to_string();
                if base == LEASES && client == CONTROLLER && verb.is_write() {
                    r.leases = true;
                }
                if IGNORED.contains(&base.as_str()) || base.is_empty() {
                    continue;
                }
                if matches!(verb, Verb::List | Verb::Watch) && client == CONTROLLER {
                    r.watched.insert(base.clone());
                    if verb == Verb::List {
                        r.listed.insert(base.clone());
                    }
                }
                if !verb.is_write() {
                    continue;
                }
                if *precondition {
                    r.preconditioned
                        .insert((client.clone(), verb, resource.clone()));
                }
                // Each write by the workload starts a phase: what the controller does
                // about it.
                if client == WORKLOAD {
                    phase += 1;
                    r.phase_starts.push(sent_at(s.at, *latency_ms));
                }
                let n = counts
                    .entry((client.clone(), verb, resource.clone()))
                    .or_default();
                *n += 1;
                let m = in_phase
                    .entry((phase, client.clone(), verb, resource.clone()))
                    .or_default();
                *m += 1;
                if *m > MAX_PER_KIND {
                    continue;
                }
                let turn = turns.entry(phase).or_default();
                *turn += 1;
                let subresource = resource
                    .split_once('/')
                    .and_then(|(_, s)| serde_json::from_value(json!(s)).ok());
                r.anchors.push(Anchor {
                    client: if client == CONTROLLER {
                        CONTROLLER
                    } else {
                        WORKLOAD
                    },
                    verb,
                    resource: base,
                    subresource,
                    count: *n,
                    at: sent_at(s.at, *latency_ms),
                    preconditioned: false,
                    phase,
                    turn: *turn - 1,
                });
            }
            Record::Event {
                client,
                resource,
                type_,
                namespace,
                name,
                resource_version,
                ..
            } if client == CONTROLLER && *type_ != "BOOKMARK" && *type_ != "ERROR" => {
                r.events.push((
                    s.at,
                    resource.clone(),
                    format!("{namespace}/{name}"),
                    resource_version.clone(),
                ));
            }
            _ => {}
        }
    }
    for a in &mut r.anchors {
        let sub = a
            .subresource
            .map(|s| format!("/{}", s.as_str()))
            .unwrap_or_default();
        a.preconditioned = r.preconditioned.contains(&(
            a.client.to_string(),
            a.verb,
            format!("{}{sub}", a.resource),
        ));
    }
    r
}

/// When a request traced at `answered` (the proxy records a request once it has its
/// answer) arrived. A window triggered by the request opens then, before the request is
/// forwarded, so what it would hold is counted from then: the watch event of a create
/// can reach the controller before the create's answer does, and counted from the
/// answer it would look like nothing a freeze after the create could hold.
fn sent_at(answered: SystemTime, latency_ms: f64) -> SystemTime {
    let latency = Duration::try_from_secs_f64(latency_ms / 1000.0).unwrap_or_default();
    answered.checked_sub(latency).unwrap_or(answered)
}

fn window(
    name: &str,
    resources: &[String],
    fault: serde_json::Value,
    trigger: serde_json::Value,
    duration: Option<Duration>,
) -> Window {
    let mut w = json!({
        "name": name,
        "client": CONTROLLER,
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
    p.out
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
        Some(Plan {
            label: format!("freeze {res} for {} after {}", secs(d), a.describe()),
            slug: format!("freeze-{short}-{}ms-after-{}", d.as_millis(), a.slug()),
            round,
            windows: vec![window(
                "freeze",
                &resources,
                json!({"freeze": {}}),
                a.trigger(),
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
            self.out.push(restart(a));
            if a.client == CONTROLLER && a.preconditioned {
                self.out.push(errors(a, 409, 1));
            }
        }
    }

    /// Relist, rewind + restart, 500s and 429s.
    fn round_3(&mut self, order: &[&Anchor]) {
        let watched = self.watched.clone();
        // A restart is of the whole controller, whatever it watches.
        let everything = vec!["*".to_string()];
        for a in order {
            if !watched.is_empty() {
                self.out.push(Plan {
                    label: format!(
                        "expire the controller's watches (410, relist) at {}",
                        a.describe()
                    ),
                    slug: format!("relist-at-{}", a.slug()),
                    round: 3,
                    windows: vec![window(
                        "relist",
                        &watched,
                        json!({"relist": {"how": "expired"}}),
                        a.trigger(),
                        Some(Duration::from_millis(500)),
                    )],
                    anchor: a.resource.clone(),
                    targets: watched.clone(),
                    rank: 0,
                    phase: a.phase,
                });
            }
            if let Some(p) = self.lag(a) {
                self.out.push(p);
            }
            // After a user's write too: the controller comes back to the cluster as it
            // was when the write landed, and learns of the write (and of its own
            // reaction) only as the rewind ends.
            let listed: Vec<String> = self.r.listed.iter().cloned().collect();
            if !listed.is_empty() {
                self.out.push(Plan {
                    label: format!("restart the controller right after {} and give it the cluster as it was then", a.describe()),
                    slug: format!("rewind-restart-after-{}", a.slug()),
                    round: 3,
                    windows: vec![
                        window("restart", &everything, json!({"restart": {}}), a.trigger(), None),
                        window("rewind", &listed, json!({"rewind": {"at": "restart"}}), a.trigger(), Some(Duration::from_secs(5))),
                    ],
                    anchor: a.resource.clone(),
                    targets: listed,
                    rank: 0,
                    phase: a.phase,
                });
            }
            if a.client != CONTROLLER {
                if let Some(p) = errors_after_action(self.r, a) {
                    self.out.push(p);
                }
                continue;
            }
            self.out.push(errors(a, 500, 3));
            self.out.push(errors(a, 429, 3));
        }
        self.partitions(order, PARTITION_BLIP, 3);
    }

    /// The apiserver unreachable from the controller for `d` (a whole `blackhole`
    /// partition, `fault/partition.rs`), from just after the first write of each kind in
    /// every phase — the controller's, or a user's it has not reacted to yet.
    fn partitions(&mut self, order: &[&Anchor], d: Duration, round: u8) {
        let mut done = BTreeSet::new();
        for a in order {
            if !done.insert((a.phase, a.client, a.verb, a.resource.clone())) || a.count > 1 {
                continue;
            }
            let mut trigger = a.trigger();
            trigger["delay"] = json!(format!("{}ms", PARTITION_AFTER.as_millis()));
            self.out.push(Plan {
                label: format!(
                    "the apiserver unreachable from the controller for {} (blackhole) right after {}",
                    secs(d),
                    a.describe()
                ),
                slug: format!("partition-{}s-after-{}", d.as_secs(), a.slug()),
                round,
                windows: vec![window(
                    "partition",
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
        Some(Plan {
            label: format!(
                "every event {} late for {} after {}",
                secs(LAG),
                secs(LAG_FOR),
                a.describe()
            ),
            slug: format!("lag-{}ms-after-{}", LAG.as_millis(), a.slug()),
            round: 3,
            windows: vec![window(
                "lag",
                &watched,
                json!({"lag": {"delay": format!("{}ms", LAG.as_millis())}}),
                a.trigger(),
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
            self.partitions(order, PARTITION_PAST_LEASE, 4);
        }
        for a in order {
            self.freeze(a, Duration::from_secs(5), 4);
            self.freeze(a, Duration::from_millis(500), 4);
            if a.client == CONTROLLER && a.verb == Verb::Create {
                self.out.push(errors(a, 503, 4));
                self.out.push(errors(a, 504, 4));
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
            if a.client != CONTROLLER
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
                let mut trigger = a.trigger();
                trigger["delay"] = json!(format!("{}ms", touch_at.as_millis()));
                p.windows.push(window(
                    "touch",
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

/// Restart the controller right after `a` (the controller's write, or a user's).
fn restart(a: &Anchor) -> Plan {
    Plan {
        label: format!("restart the controller right after {}", a.describe()),
        slug: format!("restart-after-{}", a.slug()),
        round: 1,
        windows: vec![window(
            "restart",
            &["*".to_string()],
            json!({"restart": {}}),
            a.trigger(),
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
fn errors(a: &Anchor, status: u16, round: u8) -> Plan {
    let mut fault = json!({"verbs": [a.verb], "status": status});
    match status {
        409 => fault["preconditioned"] = json!(true),
        429 | 503 => fault["retryAfter"] = json!("1s"),
        _ => {}
    }
    Plan {
        label: format!(
            "answer {status}{} to the controller's {} of {} for 1.5s from {}",
            if status == 409 {
                " (its precondition)"
            } else {
                ""
            },
            a.verb,
            a.resource,
            a.describe()
        ),
        slug: format!("errors-{status}-at-{}", a.slug()),
        round,
        windows: vec![window(
            "errors",
            std::slice::from_ref(&a.resource),
            json!({"errors": fault}),
            a.trigger(),
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
        .filter(|b| b.client == CONTROLLER && b.phase == a.phase)
        .map(|b| b.resource.clone())
        .collect();
    if written.is_empty() {
        return None;
    }
    let resources: Vec<String> = written.into_iter().collect();
    Some(Plan {
        label: format!(
            "answer 500 to the controller's writes of {} for 1.5s from {}",
            resources.join(", "),
            a.describe()
        ),
        slug: format!("errors-500-writes-after-{}", a.slug()),
        round: 3,
        windows: vec![window(
            "errors",
            &resources,
            json!({"errors": {"verbs": [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete], "status": 500}}),
            a.trigger(),
            Some(Duration::from_millis(1500)),
        )],
        anchor: a.resource.clone(),
        targets: resources,
        rank: 0,
        phase: a.phase,
    })
}

mod coalesce;
use coalesce::coalesce_plans;

#[cfg(test)]
mod tests;
