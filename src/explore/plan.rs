//! Plans: where to perturb, learnt from a fault-free reference run (Sieve's idea, on the
//! wire). Every plan is a plain schedule whose windows open on the controller's own
//! requests — "the 2nd patch of gitrepositories/status" — or on the workload's, so a plan
//! that finds a bug is already its reproducer.
//!
//! ```text
//!  reference trace ─► anchors (each write, by verb/resource/subresource/count)
//!                  ─► watched resources, event stretches
//!                  ─► round 1: freeze 1.5 s, restart, 409s        at every anchor
//!                      round 2: relist, rewind+restart, 500s, 429s, coalesce stretches
//!                      round 3: freeze 5 s and 0.5 s, 503s and 504s on creates
//!                  ─► drop plans that change nothing on the reference trace
//!                  ─► ranked by focus (focus.rs), breadth first within a rank
//! ```
//!
//! Rounds are breadth first — every anchor gets the likeliest faults before any anchor
//! gets the rest — so a small budget covers the whole run thinly rather than its start
//! thoroughly.
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

/// At most this many occurrences of one (client, verb, resource) are anchors: a
/// controller patching status fifty times is covered by its first few.
pub const MAX_PER_KIND: u64 = 4;

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
}

impl Plan {
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
    pub anchors: Vec<Anchor>,
    /// Resources the controller lists or watches.
    pub watched: BTreeSet<String>,
    /// Events delivered to the controller: (when, resource, namespace/name, resourceVersion).
    pub events: Vec<(SystemTime, String, String, String)>,
    /// (client, verb, resource as requested) of writes that carried a precondition.
    pub preconditioned: BTreeSet<(String, Verb, String)>,
}

/// Read a reference run's trace.
pub fn read(trace: &[Stamped]) -> Reference {
    let mut r = Reference::default();
    let mut counts: BTreeMap<(String, Verb, String), u64> = BTreeMap::new();
    for s in trace {
        match &s.record {
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
                if IGNORED.contains(&base.as_str()) || base.is_empty() {
                    continue;
                }
                if matches!(verb, Verb::List | Verb::Watch) && client == CONTROLLER {
                    r.watched.insert(base.clone());
                }
                if !verb.is_write() {
                    continue;
                }
                if *precondition {
                    r.preconditioned
                        .insert((client.clone(), verb, resource.clone()));
                }
                let n = counts
                    .entry((client.clone(), verb, resource.clone()))
                    .or_default();
                *n += 1;
                if *n > MAX_PER_KIND {
                    continue;
                }
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
pub fn plans(r: &Reference) -> Vec<Plan> {
    let mut out = Vec::new();
    let mut effects = BTreeSet::new();
    // The events a freeze of `resources` from `at` for `d` would hold on the reference
    // run: none, and it changes nothing; the same as another's, and it is that one.
    let held = |resources: &[String], at: SystemTime, d: Duration| -> Vec<String> {
        r.events
            .iter()
            .filter(|(t, res, _, _)| *t >= at && *t <= at + d && resources.iter().any(|x| x == res))
            .map(|(_, res, obj, rv)| format!("{res} {obj}@{rv}"))
            .collect()
    };
    let freeze = |out: &mut Vec<Plan>,
                  effects: &mut BTreeSet<String>,
                  a: &Anchor,
                  d: Duration,
                  round: u8| {
        for res in &r.watched {
            let resources = vec![res.clone()];
            let h = held(&resources, a.at, d);
            if h.is_empty() || !effects.insert(format!("freeze {res} {} {h:?}", d.as_millis())) {
                continue;
            }
            let short = res.split('.').next().unwrap_or(res);
            out.push(Plan {
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
                targets: resources.clone(),
                rank: 0,
            });
        }
    };
    let watched: Vec<String> = r.watched.iter().cloned().collect();
    // A restart is of the whole controller, whatever it watches.
    let everything = vec!["*".to_string()];
    // Round 1.
    for a in &r.anchors {
        freeze(&mut out, &mut effects, a, Duration::from_millis(1500), 1);
        if a.client == CONTROLLER {
            out.push(Plan {
                label: format!("restart the controller right after {}", a.describe()),
                slug: format!("restart-after-{}", a.slug()),
                round: 1,
                windows: vec![window(
                    "restart",
                    &everything,
                    json!({"restart": {}}),
                    a.trigger(),
                    None,
                )],
                anchor: a.resource.clone(),
                targets: vec![],
                rank: 0,
            });
            if a.preconditioned {
                out.push(errors(a, 409, 1));
            }
        }
    }
    // Round 2.
    for a in &r.anchors {
        if !watched.is_empty() {
            out.push(Plan {
                label: format!(
                    "expire the controller's watches (410, relist) at {}",
                    a.describe()
                ),
                slug: format!("relist-at-{}", a.slug()),
                round: 2,
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
            });
        }
        if a.client == CONTROLLER {
            if !watched.is_empty() {
                out.push(Plan {
                    label: format!("restart the controller right after {} and give it the cluster as it was then", a.describe()),
                    slug: format!("rewind-restart-after-{}", a.slug()),
                    round: 2,
                    windows: vec![
                        window("restart", &everything, json!({"restart": {}}), a.trigger(), None),
                        window("rewind", &watched, json!({"rewind": {"at": "restart"}}), a.trigger(), Some(Duration::from_secs(5))),
                    ],
                    anchor: a.resource.clone(),
                    targets: watched.clone(),
                    rank: 0,
                });
            }
            out.push(errors(a, 500, 2));
            out.push(errors(a, 429, 2));
        }
    }
    for p in coalesce_plans(r) {
        out.push(p);
    }
    // Round 3.
    for a in &r.anchors {
        freeze(&mut out, &mut effects, a, Duration::from_secs(5), 3);
        freeze(&mut out, &mut effects, a, Duration::from_millis(500), 3);
        if a.client == CONTROLLER && a.verb == Verb::Create {
            out.push(errors(a, 503, 3));
            out.push(errors(a, 504, 3));
        }
    }
    out
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
    }
}

/// Where an object the controller watches changed twice or more within 2 s: coalesce
/// from the first of those events until just after the last, so the controller never
/// sees the states in between.
fn coalesce_plans(r: &Reference) -> Vec<Plan> {
    let mut out = Vec::new();
    let mut index: BTreeMap<&str, u64> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for (i, (t, res, obj, _)) in r.events.iter().enumerate() {
        let n = {
            let c = index.entry(res.as_str()).or_default();
            *c += 1;
            *c
        };
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
        if !seen.insert((res.clone(), obj.clone())) || seen.len() > 16 {
            continue;
        }
        let span = last.duration_since(*t).unwrap_or_default() + Duration::from_millis(300);
        let short = res.split('.').next().unwrap_or(res);
        out.push(Plan {
            label: format!(
                "coalesce {res} over the {} changes of {obj} from event {n}",
                later.len() + 1
            ),
            slug: format!("coalesce-{short}-from-event-{n}"),
            round: 2,
            windows: vec![window(
                "coalesce",
                std::slice::from_ref(res),
                json!({"coalesce": {}}),
                json!({"afterEvents": {"resource": res, "count": n}}),
                Some(Duration::from_millis(
                    span.as_millis().div_ceil(10) as u64 * 10,
                )),
            )],
            anchor: res.clone(),
            targets: vec![res.clone()],
            rank: 0,
        });
    }
    out
}

#[cfg(test)]
mod tests;
