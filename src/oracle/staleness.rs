//! Staleness, drawn: for each object the oracles watch, what was true (ground truth's
//! resourceVersion, generation, observedGeneration and kstatus, as they changed) and what
//! each client was given (each watch event's fate: delivered, held, released, dropped).
//! The gap between the two is how stale the client was — the report shades it.
//!
//! Bounded: at most [`MAX_MARKS`] marks per object and lane (the oldest go), objects
//! capped with the oracles' other state.

use std::collections::{BTreeMap, VecDeque};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::object_ref::ObjectRef;
use super::time_format::millis as rfc3339;

/// Marks kept per object for ground truth, and per object and client for deliveries.
pub const MAX_MARKS: usize = 500;

/// Objects (or object and client pairs) kept; past it, the one quiet the longest goes.
pub const MAX_OBJECTS: usize = 10_000;

fn cap<K: Ord + Clone, T>(map: &mut BTreeMap<K, VecDeque<T>>, at: impl Fn(&T) -> SystemTime) {
    while map.len() > MAX_OBJECTS {
        let Some(k) = map
            .iter()
            .min_by_key(|(_, q)| q.back().map(&at))
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        map.remove(&k);
    }
}

/// Ground truth of one object from one moment on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TruthMark {
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub resource_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// kstatus: Current, InProgress, Failed, Terminating; `Deleted` when it went.
    pub status: String,
}

/// One watch event of one object, and what the proxy did with it for one client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryMark {
    #[serde(with = "rfc3339")]
    pub at: SystemTime,
    pub client: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub resource_version: String,
    #[serde(rename = "type")]
    pub type_: String,
    /// delivered | held | released | dropped
    pub fate: String,
}

/// The marks of one run.
#[derive(Debug, Default)]
pub struct Record {
    truth: BTreeMap<ObjectRef, VecDeque<TruthMark>>,
    deliveries: BTreeMap<(ObjectRef, String), VecDeque<DeliveryMark>>,
}

fn push<T>(q: &mut VecDeque<T>, m: T) {
    q.push_back(m);
    if q.len() > MAX_MARKS {
        q.pop_front();
    }
}

impl Record {
    /// A ground-truth change (kept when the resourceVersion or the status changed).
    pub fn truth(&mut self, key: &ObjectRef, m: TruthMark) {
        let q = self.truth.entry(key.clone()).or_default();
        if q.back()
            .is_some_and(|l| l.resource_version == m.resource_version && l.status == m.status)
        {
            return;
        }
        push(q, m);
        cap(&mut self.truth, |m| m.at);
    }

    pub fn delivery(&mut self, key: &ObjectRef, m: DeliveryMark) {
        push(
            self.deliveries
                .entry((key.clone(), m.client.clone()))
                .or_default(),
            m,
        );
        cap(&mut self.deliveries, |m| m.at);
    }

    /// Forget objects.
    pub fn retain(&mut self, keep: impl Fn(&ObjectRef) -> bool) {
        self.truth.retain(|k, _| keep(k));
        self.deliveries.retain(|(k, _), _| keep(k));
    }

    pub fn truth_marks(&self) -> Vec<TruthMark> {
        self.truth.values().flatten().cloned().collect()
    }

    pub fn delivery_marks(&self) -> Vec<DeliveryMark> {
        self.deliveries.values().flatten().cloned().collect()
    }
}

/// When a client was behind: intervals `[from, to)` in which the object's latest truth
/// had not reached the client (`to` None: still not at the end). A truth mark is caught up
/// by the first delivery (delivered or released) of its resourceVersion or of any later
/// one — a coalesce that skips states catches up all the same.
pub fn gaps(
    truth: &[&TruthMark],
    deliveries: &[&DeliveryMark],
) -> Vec<(SystemTime, Option<SystemTime>, String)> {
    let index: BTreeMap<&str, usize> = truth
        .iter()
        .enumerate()
        .map(|(i, t)| (t.resource_version.as_str(), i))
        .collect();
    // When the client first had state at least as new as truth mark i.
    let mut caught: Vec<Option<SystemTime>> = vec![None; truth.len()];
    for d in deliveries
        .iter()
        .filter(|d| d.fate == "delivered" || d.fate == "released")
    {
        let Some(&i) = index.get(d.resource_version.as_str()) else {
            continue;
        };
        for c in caught.iter_mut().take(i + 1) {
            if c.is_none_or(|t| d.at < t) {
                *c = Some(d.at);
            }
        }
    }
    let mut out: Vec<(SystemTime, Option<SystemTime>, String)> = Vec::new();
    for (i, t) in truth.iter().enumerate() {
        if t.status == "Deleted" {
            continue;
        }
        let to = caught[i];
        if to.is_some_and(|to| to <= t.at) {
            continue;
        }
        // Merge with the previous gap when they touch: one stretch of being behind.
        if let Some(last) = out.last_mut()
            && last.1.is_none_or(|e| e >= t.at)
        {
            last.1 = match (last.1, to) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
            last.2 = t.resource_version.clone();
            continue;
        }
        out.push((t.at, to, t.resource_version.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn truth(ms: u64, rv: &str) -> TruthMark {
        TruthMark {
            at: at(ms),
            resource: "configmaps".into(),
            namespace: "d".into(),
            name: "x".into(),
            resource_version: rv.into(),
            generation: None,
            observed_generation: None,
            status: "Current".into(),
        }
    }

    fn got(ms: u64, rv: &str, fate: &str) -> DeliveryMark {
        DeliveryMark {
            at: at(ms),
            client: "c".into(),
            resource: "configmaps".into(),
            namespace: "d".into(),
            name: "x".into(),
            resource_version: rv.into(),
            type_: "MODIFIED".into(),
            fate: fate.into(),
        }
    }

    /// Delivered at once: no gap worth drawing beyond the moment; held 1.5 s: a gap until
    /// the release; coalesced (2 and 3 dropped, 4 released): one gap until 4 arrives;
    /// never delivered: open to the end.
    #[test]
    fn gaps_run_from_a_change_to_the_client_catching_up() {
        let t = [
            truth(0, "1"),
            truth(1000, "2"),
            truth(1100, "3"),
            truth(1200, "4"),
            truth(5000, "5"),
        ];
        let d = [
            got(5, "1", "delivered"),
            got(1000, "2", "held"),
            got(1100, "3", "dropped"),
            got(1200, "4", "held"),
            got(2500, "4", "released"),
        ];
        let tr: Vec<&TruthMark> = t.iter().collect();
        let dr: Vec<&DeliveryMark> = d.iter().collect();
        let g = gaps(&tr, &dr);
        assert_eq!(
            g,
            [
                (at(0), Some(at(5)), "1".to_string()),
                (at(1000), Some(at(2500)), "4".to_string()),
                (at(5000), None, "5".to_string()),
            ]
        );
    }

    #[test]
    fn marks_are_kept_on_change_and_bounded() {
        let mut r = Record::default();
        let k = ObjectRef {
            resource: "configmaps".into(),
            namespace: "d".into(),
            name: "x".into(),
        };
        r.truth(&k, truth(0, "1"));
        r.truth(&k, truth(1, "1"));
        assert_eq!(r.truth_marks().len(), 1, "no change, no mark");
        for i in 0..(MAX_MARKS + 5) {
            r.delivery(&k, got(i as u64, &i.to_string(), "delivered"));
        }
        let d = r.delivery_marks();
        assert_eq!(d.len(), MAX_MARKS);
        assert_eq!(d[0].resource_version, "5", "the oldest went");
        r.retain(|_| false);
        assert!(r.truth_marks().is_empty() && r.delivery_marks().is_empty());
    }
}
