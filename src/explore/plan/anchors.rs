//! What a fault-free reference run shows one controller under test: the requests a
//! window can open on (anchors: every write by any controller under test or the
//! workload, by verb, resource and count), and what that controller watched, listed,
//! was sent and held.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::k8s::request::Verb;
use crate::schedule::Subresource;
use crate::session::snapshot::{IGNORED, base_resource};
use crate::session::{CONTROLLER, WORKLOAD};
use crate::trace::{Record, Stamped};

/// At most this many occurrences of one (client, verb, resource) in each phase are
/// anchors: a controller patching status fifty times is covered by its first few.
pub const MAX_PER_KIND: u64 = 4;

/// What a controller that holds a leader-election Lease writes.
const LEASES: &str = "leases.coordination.k8s.io";

/// A request of the reference run a window can open on.
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    /// Whose request: the workload's, or a controller under test's (`controller`, or an
    /// other's name).
    pub client: String,
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
    /// What opens a window of `viewer`'s on this request (a trigger's client is the
    /// window's unless it says otherwise).
    pub(super) fn trigger(&self, viewer: &str) -> serde_json::Value {
        let mut m = json!({"verb": self.verb, "resource": self.resource, "count": self.count});
        if let Some(s) = self.subresource {
            m["subresource"] = json!(s);
        }
        if self.client != viewer {
            m["client"] = json!(self.client);
        }
        json!({"afterRequests": m})
    }

    /// `the controller's 1st patch of gitrepositories.source.toolkit.fluxcd.io/status`,
    /// `controller kustomize's 2nd create of configmaps`
    pub fn describe(&self) -> String {
        let sub = self
            .subresource
            .map(|s| format!("/{}", s.as_str()))
            .unwrap_or_default();
        let who = if self.client == WORKLOAD {
            "the workload".to_string()
        } else {
            whom(&self.client)
        };
        format!(
            "{who}'s {} {} of {}{sub}",
            ordinal(self.count),
            self.verb,
            self.resource
        )
    }

    pub(super) fn slug(&self) -> String {
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

/// `the controller` (the one after `--`), `controller kustomize` (an other).
pub fn whom(controller: &str) -> String {
    if controller == CONTROLLER {
        "the controller".to_string()
    } else {
        format!("controller {controller}")
    }
}

/// What a label adds for whom a plan's windows are aimed at: nothing for the controller
/// after `--` (its labels read as they always did), ` to controller NAME` for another.
pub fn to_whom(controller: &str) -> String {
    if controller == CONTROLLER {
        String::new()
    } else {
        format!(" to {}", whom(controller))
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

/// What the reference run shows one controller under test (`controller`): every
/// controller's writes and the workload's are its anchors; what it watched and was sent,
/// its own.
#[derive(Debug, Clone, Default)]
pub struct Reference {
    /// Whose view: the controller its plans' windows are aimed at.
    pub controller: String,
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
    /// How long its Lease lasts unrenewed (`spec.leaseDurationSeconds`), when known.
    pub lease_duration: Option<Duration>,
}

impl Reference {
    /// The phase of the run at `t`.
    pub fn phase_at(&self, t: SystemTime) -> usize {
        self.phase_starts.iter().filter(|s| **s <= t).count()
    }
}

/// Read a reference run's trace as `viewer` saw it; `setup` is what its setup created.
pub fn read(trace: &[Stamped], setup: &[crate::setup::Applied], viewer: &str) -> Reference {
    let mut rd = Reader::new(viewer, setup);
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
                rd.r.touchable.push(crate::fault::touch::Object {
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
            } if client != crate::schedule::OTHER => {
                rd.request(
                    client,
                    verb,
                    resource,
                    *precondition,
                    sent_at(s.at, *latency_ms),
                );
            }
            Record::Event {
                client,
                resource,
                type_,
                namespace,
                name,
                resource_version,
                ..
            } if client == viewer && *type_ != "BOOKMARK" && *type_ != "ERROR" => {
                rd.r.events.push((
                    s.at,
                    resource.clone(),
                    format!("{namespace}/{name}"),
                    resource_version.clone(),
                ));
            }
            _ => {}
        }
    }
    rd.finish()
}

/// A reference being read from a trace, and the counts that number its anchors.
struct Reader<'a> {
    r: Reference,
    viewer: &'a str,
    /// How many of each (client, verb, resource as requested) so far.
    counts: BTreeMap<(String, Verb, String), u64>,
    // Per phase: how many of each kind were anchors, and how many anchors it has.
    in_phase: BTreeMap<(usize, String, Verb, String), u64>,
    turns: BTreeMap<usize, usize>,
    phase: usize,
}

impl Reader<'_> {
    /// Nothing read yet: the user's objects are the setup's (its scaffolding aside).
    fn new<'a>(viewer: &'a str, setup: &[crate::setup::Applied]) -> Reader<'a> {
        Reader {
            r: Reference {
                controller: viewer.to_string(),
                touchable: setup
                    .iter()
                    .filter(|a| !crate::setup::SCAFFOLDING.contains(&a.resource.as_str()))
                    .map(|a| crate::fault::touch::Object {
                        resource: a.resource.clone(),
                        namespace: a.namespace.clone().unwrap_or_default(),
                        name: a.name.clone(),
                    })
                    .collect(),
                ..Reference::default()
            },
            viewer,
            counts: BTreeMap::new(),
            in_phase: BTreeMap::new(),
            turns: BTreeMap::new(),
            phase: 0,
        }
    }

    /// The reference read, each anchor marked preconditioned where its kind's writes were.
    fn finish(self) -> Reference {
        let mut r = self.r;
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

    /// A request of the run (`sent`: when it reached the proxy): what the viewer
    /// watched, listed and holds, and an anchor for a write (up to `MAX_PER_KIND` of a
    /// kind per phase).
    fn request(
        &mut self,
        client: &str,
        verb: &str,
        resource: &str,
        precondition: bool,
        sent: SystemTime,
    ) {
        let r = &mut self.r;
        let Some(verb) = Verb::from_name(verb) else {
            return;
        };
        let base = base_resource(resource).to_string();
        if base == LEASES && client == self.viewer && verb.is_write() {
            r.leases = true;
        }
        if IGNORED.contains(&base.as_str()) || base.is_empty() {
            return;
        }
        if matches!(verb, Verb::List | Verb::Watch) && client == self.viewer {
            r.watched.insert(base.clone());
            if verb == Verb::List {
                r.listed.insert(base.clone());
            }
        }
        if !verb.is_write() {
            return;
        }
        if precondition {
            r.preconditioned
                .insert((client.to_string(), verb, resource.to_string()));
        }
        // Each write by the workload starts a phase: what the controller does
        // about it.
        if client == WORKLOAD {
            self.phase += 1;
            r.phase_starts.push(sent);
        }
        let phase = self.phase;
        let n = self
            .counts
            .entry((client.to_string(), verb, resource.to_string()))
            .or_default();
        *n += 1;
        let m = self
            .in_phase
            .entry((phase, client.to_string(), verb, resource.to_string()))
            .or_default();
        *m += 1;
        if *m > MAX_PER_KIND {
            return;
        }
        let turn = self.turns.entry(phase).or_default();
        *turn += 1;
        let subresource = resource
            .split_once('/')
            .and_then(|(_, s)| serde_json::from_value(json!(s)).ok());
        r.anchors.push(Anchor {
            client: client.to_string(),
            verb,
            resource: base,
            subresource,
            count: *n,
            at: sent,
            preconditioned: false,
            phase,
            turn: *turn - 1,
        });
    }
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
