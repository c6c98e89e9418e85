//! The oracles' state is bounded: records and maps kept within [`MAX_ENTRIES`], the
//! oldest or least recently active entry dropped at the cap.

use std::collections::{BTreeMap, VecDeque};
use std::time::SystemTime;

/// Objects, (client, object) rate counters, window spans and recoveries kept at most;
/// past a cap the least recently active entry is dropped and counted
/// (`stalemate_oracle_dropped_total`). A long chaos run over a churning cluster must not
/// grow without bound.
pub const MAX_ENTRIES: usize = 10_000;

/// Append to a record kept within [`MAX_ENTRIES`], the oldest entry dropped at the cap;
/// how many were dropped.
pub(super) fn push_capped<T>(q: &mut VecDeque<T>, item: T) -> u64 {
    let dropped = q.len() >= MAX_ENTRIES;
    if dropped {
        q.pop_front();
    }
    q.push_back(item);
    u64::from(dropped)
}

/// Keep `map` within [`MAX_ENTRIES`] by dropping the entry `last` says was active least
/// recently; returns how many were dropped.
pub(super) fn cap<K: Ord + Clone, V>(
    map: &mut BTreeMap<K, V>,
    last: impl Fn(&V) -> SystemTime,
) -> u64 {
    cap_keys(map, last).len() as u64
}

/// [`cap`], returning the keys it dropped (for what else is kept of them).
pub(super) fn cap_keys<K: Ord + Clone, V>(
    map: &mut BTreeMap<K, V>,
    last: impl Fn(&V) -> SystemTime,
) -> Vec<K> {
    let mut dropped = Vec::new();
    while map.len() > MAX_ENTRIES {
        let Some(k) = map
            .iter()
            .min_by_key(|(_, v)| last(v))
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        map.remove(&k);
        dropped.push(k);
    }
    dropped
}
