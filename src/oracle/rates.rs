//! The rate oracles' counting: writes and 409s per (client, object) in a sliding
//! minute, and when a rate passed its limit (a hit).
//!
//! **Inside windows is not a violation.** A window holds a client's cache on purpose, and
//! a healthy client-go controller answers a held cache with conflicts and requeues —
//! real kube-controller-manager under `config/random-chaos.json` ran at 27–47 409s a
//! minute on its Deployments while its watches were held, and converged 5 s after the
//! load stopped. What a verdict judges is what outlives the faults: requests made while
//! no window is open and none closed within the oracle's `grace`, counted on their own.
//! Rates inside windows are counted too and reported as what was seen there, not as
//! violations (`Verdicts::inside_windows`); explore compares runs by the peaks of all.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, SystemTime};

use super::caps::cap;
use super::config::{ConflictsConfig, HotLoopConfig};
use super::object_ref::ObjectRef;
use super::tracked::Obj;
use super::verdicts::{Violation, WindowSpan};

const MINUTE: Duration = Duration::from_secs(60);

type Key = (String, ObjectRef);

/// A client's highest rates on one object: writes and 409s in one minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Peak {
    pub writes: usize,
    pub conflicts: usize,
    last: Option<SystemTime>,
}

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Counted {
    Write,
    Conflict,
}

/// Whether `at` falls in a window or within `grace` after one closed.
pub(super) fn inside_windows<'a>(
    windows: impl IntoIterator<Item = &'a WindowSpan>,
    at: SystemTime,
    grace: Duration,
) -> bool {
    windows
        .into_iter()
        .any(|w| w.opened_at <= at && w.closed_at.is_none_or(|c| at <= c + grace))
}

/// The rate oracles' state.
#[derive(Debug, Default)]
pub(super) struct Rates {
    /// Requests outside windows (and their grace): what verdicts judge.
    pub(super) writes: BTreeMap<Key, VecDeque<SystemTime>>,
    pub(super) conflicts: BTreeMap<Key, VecDeque<SystemTime>>,
    pub hot: BTreeMap<Key, Hit>,
    pub storms: BTreeMap<Key, Hit>,
    /// Every request, in windows or not: the peaks, and what was seen inside windows.
    all_writes: BTreeMap<Key, VecDeque<SystemTime>>,
    all_conflicts: BTreeMap<Key, VecDeque<SystemTime>>,
    pub hot_inside: BTreeMap<Key, Hit>,
    pub storms_inside: BTreeMap<Key, Hit>,
    /// The highest rates seen, over the limit or not (`explore` compares runs by them).
    pub peaks: BTreeMap<Key, Peak>,
}

impl Rates {
    /// Count one request at `at` (`inside`: in a window or its grace) against `limit`;
    /// returns how many entries the caps dropped.
    pub fn count(
        &mut self,
        what: Counted,
        key: Key,
        at: SystemTime,
        inside: bool,
        limit: usize,
    ) -> u64 {
        let newest = |q: &VecDeque<SystemTime>| q.back().copied().unwrap_or(SystemTime::UNIX_EPOCH);
        let (all, outside, hits, hits_inside) = match what {
            Counted::Write => (
                &mut self.all_writes,
                &mut self.writes,
                &mut self.hot,
                &mut self.hot_inside,
            ),
            Counted::Conflict => (
                &mut self.all_conflicts,
                &mut self.conflicts,
                &mut self.storms,
                &mut self.storms_inside,
            ),
        };
        let n_all = slide(all.entry(key.clone()).or_default(), at);
        let p = self.peaks.entry(key.clone()).or_default();
        match what {
            Counted::Write => p.writes = p.writes.max(n_all),
            Counted::Conflict => p.conflicts = p.conflicts.max(n_all),
        }
        p.last = Some(at);
        if inside {
            if n_all > limit {
                note_hit(hits_inside, key, at, n_all);
            }
        } else {
            let n = slide(outside.entry(key.clone()).or_default(), at);
            if n > limit {
                note_hit(hits, key, at, n);
            }
        }
        // Peaks and the all-requests counters are a comparison aid, not a verdict:
        // capped, not counted as lost.
        cap(&mut self.peaks, |p| {
            p.last.unwrap_or(SystemTime::UNIX_EPOCH)
        });
        cap(all, newest);
        cap(outside, newest) + cap(hits, |h| h.last) + cap(hits_inside, |h| h.last)
    }

    /// Forget an object (deleted).
    pub fn forget(&mut self, key: &ObjectRef) {
        for m in [
            &mut self.writes,
            &mut self.conflicts,
            &mut self.all_writes,
            &mut self.all_conflicts,
        ] {
            m.retain(|(_, k), _| k != key);
        }
        for m in [
            &mut self.hot,
            &mut self.storms,
            &mut self.hot_inside,
            &mut self.storms_inside,
        ] {
            m.retain(|(_, k), _| k != key);
        }
    }

    /// Whether a rate is over its limit outside the windows after `last_close`.
    pub fn violated_after(&self, last_close: Option<SystemTime>) -> bool {
        self.hot
            .values()
            .chain(self.storms.values())
            .any(|h| last_close.is_none_or(|c| h.last > c))
    }

    /// What was seen inside windows, as notes (not violations): those keys whose rate did
    /// not also pass the limit outside them.
    pub fn inside_notes(
        &self,
        hot: Option<&HotLoopConfig>,
        conflicts: Option<&ConflictsConfig>,
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        let note = |oracle: &str, (client, k): &Key, hit: &Hit, rule: String| Violation {
            oracle: oracle.into(),
            resource: k.resource.clone(),
            namespace: k.namespace.clone(),
            name: k.name.clone(),
            rule,
            since: hit.first,
            client: Some(client.clone()),
            until: Some(hit.last),
            peak: Some(hit.peak as u64),
            why: None,
        };
        if let Some(h) = hot {
            for (key, hit) in self
                .hot_inside
                .iter()
                .filter(|(k, _)| !self.hot.contains_key(*k))
            {
                out.push(note(
                    "hotLoop",
                    key,
                    hit,
                    format!(
                        "{} writes within a minute inside windows (or within {} of one closing), limit {}; none over it outside them",
                        hit.peak,
                        humantime::format_duration(h.grace.0),
                        h.max_writes_per_object_per_minute
                    ),
                ));
            }
        }
        if let Some(c) = conflicts {
            for (key, hit) in self
                .storms_inside
                .iter()
                .filter(|(k, _)| !self.storms.contains_key(*k))
            {
                out.push(note(
                    "conflicts",
                    key,
                    hit,
                    format!(
                        "{} conflicts (409) in a minute inside windows (or within {} of one closing), limit {}; none over it outside them",
                        hit.peak,
                        humantime::format_duration(c.grace.0),
                        c.max_per_object_per_minute
                    ),
                ));
            }
        }
        out
    }
}

/// A client's rate on one object passed a limit.
#[derive(Debug, Clone)]
pub(super) struct Hit {
    first: SystemTime,
    last: SystemTime,
    peak: usize,
}

/// Count `at` in a one-minute sliding window; returns the count.
fn slide(q: &mut VecDeque<SystemTime>, at: SystemTime) -> usize {
    q.push_back(at);
    while q
        .front()
        .is_some_and(|t| at.duration_since(*t).unwrap_or_default() >= MINUTE)
    {
        q.pop_front();
    }
    q.len()
}

fn note_hit(
    hits: &mut BTreeMap<(String, ObjectRef), Hit>,
    key: (String, ObjectRef),
    at: SystemTime,
    n: usize,
) {
    let h = hits.entry(key).or_insert(Hit {
        first: at,
        last: at,
        peak: n,
    });
    h.last = at;
    h.peak = h.peak.max(n);
}

pub(super) fn storm_violation(
    c: &ConflictsConfig,
    client: &str,
    k: &ObjectRef,
    hit: &Hit,
) -> Violation {
    Violation {
        oracle: "conflicts".into(),
        resource: k.resource.clone(),
        namespace: k.namespace.clone(),
        name: k.name.clone(),
        rule: format!(
            "{} conflicts (409) in a minute, limit {}",
            hit.peak, c.max_per_object_per_minute
        ),
        since: hit.first,
        client: Some(client.to_string()),
        until: Some(hit.last),
        peak: Some(hit.peak as u64),
        why: None,
    }
}

/// A hot loop on `k` by `client`, unless the spec changed in that stretch (then the
/// writes were work); the rule names the fields every write changed.
pub(super) fn hot_violation(
    objects: &BTreeMap<ObjectRef, Obj>,
    h: &HotLoopConfig,
    client: &str,
    k: &ObjectRef,
    hit: &Hit,
) -> Option<Violation> {
    // Only churn counts: if the spec changed in that stretch, the writes were work.
    let diffs: Vec<&BTreeSet<String>> = objects
        .get(k)
        .map(|o| {
            o.diffs
                .iter()
                .filter(|(t, _)| {
                    *t + MINUTE >= hit.first && *t <= hit.last + Duration::from_secs(5)
                })
                .map(|(_, d)| d)
                .collect()
        })
        .unwrap_or_default();
    if diffs.iter().any(|d| {
        d.iter()
            .any(|p| p == "spec" || p.starts_with("spec.") || p.starts_with("spec["))
    }) {
        return None;
    }
    // A field churns when every write changed it — or changed a whole object above it
    // (the first stamp adds `metadata.annotations` itself, the next ones one key in it).
    let covers = |q: &str, p: &str| {
        p == q
            || p.strip_prefix(q)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    };
    let churn: BTreeSet<String> = diffs
        .iter()
        .flat_map(|d| d.iter())
        .filter(|p| diffs.iter().all(|d| d.iter().any(|q| covers(q, p))))
        .cloned()
        .collect();
    // Name the deepest: drop a path another churning one is below.
    let churn: BTreeSet<String> = churn
        .iter()
        .filter(|p| !churn.iter().any(|c| c != *p && covers(p, c)))
        .cloned()
        .collect();
    let fields = if churn.is_empty() {
        "(fields unknown: the object is not watched; add its resource to hotLoop.resources)"
            .to_string()
    } else {
        churn.into_iter().collect::<Vec<_>>().join(", ")
    };
    Some(Violation {
        oracle: "hotLoop".into(),
        resource: k.resource.clone(),
        namespace: k.namespace.clone(),
        name: k.name.clone(),
        rule: format!(
            "{fields} (changed on every write; {} writes within a minute, limit {})",
            hit.peak, h.max_writes_per_object_per_minute
        ),
        since: hit.first,
        client: Some(client.to_string()),
        until: Some(hit.last),
        peak: Some(hit.peak as u64),
        why: None,
    })
}
