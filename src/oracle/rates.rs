//! The rate oracles' counting (`kinds/hot_loop.rs` writes, `kinds/conflicts.rs` 409s):
//! requests per (client, object) in a sliding minute, and when a rate passed its limit
//! (a hit). Each of the two oracles owns one [`Counter`].
//!
//! **Inside windows is not a violation.** A window holds a client's cache on purpose, and
//! a healthy client-go controller answers a held cache with conflicts and requeues —
//! real kube-controller-manager under `config/random-chaos.json` ran at 27–47 409s a
//! minute on its Deployments while its watches were held, and converged 5 s after the
//! load stopped. What a verdict judges is what outlives the faults: requests made while
//! no window is open and none closed within the oracle's `grace`, counted on their own.
//! Rates inside windows are counted too and reported as what was seen there, not as
//! violations (`Verdicts::inside_windows`); explore compares runs by the peaks of all.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, SystemTime};

use super::caps::cap;
use super::object_ref::ObjectRef;
use super::verdicts::{Violation, WindowSpan};

pub(super) const MINUTE: Duration = Duration::from_secs(60);

/// The rate oracles' default `grace`.
pub(super) fn default_grace() -> crate::k8s::duration::GoDuration {
    crate::k8s::duration::GoDuration(Duration::from_secs(10))
}

/// Whom a rate is of: a client, on one object.
pub(super) type Key = (String, ObjectRef);

/// A client's highest rates on one object: writes and 409s in one minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Peak {
    pub writes: usize,
    pub conflicts: usize,
    pub(super) last: Option<SystemTime>,
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

/// One rate oracle's counts.
#[derive(Debug, Default)]
pub(super) struct Counter {
    /// Requests outside windows (and their grace): what verdicts judge.
    pub(super) outside: BTreeMap<Key, VecDeque<SystemTime>>,
    pub(super) hits: BTreeMap<Key, Hit>,
    /// Every request, in windows or not: the peaks, and what was seen inside windows.
    all: BTreeMap<Key, VecDeque<SystemTime>>,
    pub(super) hits_inside: BTreeMap<Key, Hit>,
    /// The highest rate seen, over the limit or not, and when it was last counted
    /// (`explore` compares runs by them).
    pub(super) peaks: BTreeMap<Key, (usize, SystemTime)>,
}

impl Counter {
    /// Count one request at `at` (`inside`: in a window or its grace) against `limit`;
    /// returns how many entries the caps dropped.
    pub(super) fn count(&mut self, key: Key, at: SystemTime, inside: bool, limit: usize) -> u64 {
        let newest = |q: &VecDeque<SystemTime>| q.back().copied().unwrap_or(SystemTime::UNIX_EPOCH);
        let n_all = slide(self.all.entry(key.clone()).or_default(), at);
        let p = self.peaks.entry(key.clone()).or_insert((0, at));
        *p = (p.0.max(n_all), at);
        if inside {
            if n_all > limit {
                note_hit(&mut self.hits_inside, key, at, n_all);
            }
        } else {
            let n = slide(self.outside.entry(key.clone()).or_default(), at);
            if n > limit {
                note_hit(&mut self.hits, key, at, n);
            }
        }
        // Peaks and the all-requests counters are a comparison aid, not a verdict:
        // capped, not counted as lost.
        cap(&mut self.peaks, |p| p.1);
        cap(&mut self.all, newest);
        cap(&mut self.outside, newest)
            + cap(&mut self.hits, |h| h.last)
            + cap(&mut self.hits_inside, |h| h.last)
    }

    /// Forget an object (deleted).
    pub(super) fn forget(&mut self, key: &ObjectRef) {
        self.outside.retain(|(_, k), _| k != key);
        self.all.retain(|(_, k), _| k != key);
        self.hits.retain(|(_, k), _| k != key);
        self.hits_inside.retain(|(_, k), _| k != key);
    }

    /// Whether the rate is over its limit outside the windows after `last_close`.
    pub(super) fn violated_after(&self, last_close: Option<SystemTime>) -> bool {
        self.hits
            .values()
            .any(|h| last_close.is_none_or(|c| h.last > c))
    }

    /// The hits only inside windows (the key's rate did not also pass the limit outside
    /// them): notes, not violations.
    pub(super) fn inside_only(&self) -> impl Iterator<Item = (&Key, &Hit)> {
        self.hits_inside
            .iter()
            .filter(|(k, _)| !self.hits.contains_key(*k))
    }

    /// The hits only inside windows as `oracle`'s notes: "`peak` `what` inside windows (or
    /// within `grace` of one closing), limit `limit`; none over it outside them".
    pub(super) fn inside_notes(
        &self,
        oracle: super::name::OracleName,
        what: &str,
        grace: Duration,
        limit: impl std::fmt::Display,
    ) -> Vec<Violation> {
        let grace = humantime::format_duration(grace);
        (self.inside_only())
            .map(|(key, hit)| {
                let rule = format!(
                    "{} {what} inside windows (or within {grace} of one closing), limit {limit}; none over it outside them",
                    hit.peak
                );
                hit_violation(oracle, key, hit, rule)
            })
            .collect()
    }
}

/// A hit as a violation or a note of `oracle`, saying `rule`.
pub(super) fn hit_violation(
    oracle: super::name::OracleName,
    (client, k): &Key,
    hit: &Hit,
    rule: String,
) -> Violation {
    Violation {
        oracle,
        resource: k.resource.clone(),
        namespace: k.namespace.clone(),
        name: k.name.clone(),
        rule,
        since: hit.first,
        client: Some(client.clone()),
        until: Some(hit.last),
        peak: Some(hit.peak as u64),
        why: None,
    }
}

/// A client's rate on one object passed a limit.
#[derive(Debug, Clone)]
pub(super) struct Hit {
    pub(super) first: SystemTime,
    pub(super) last: SystemTime,
    pub(super) peak: usize,
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
