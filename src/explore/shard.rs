//! `--shard I/N`: one of N explores that share one search. Every shard runs the same
//! references and makes the same plan list (same seed, same order), then tries only the
//! plans whose key hashes to it; `explore merge` puts the shards' outputs back together.
//!
//! **Why a hash of the plan, not its index.** Plans come from a reference run's trace:
//! the controller's writes, counted per kind ("the 3rd patch of gitrepositories/status").
//! Two shards run their references separately, and a controller that patched its status
//! three times in one and four in the other gives one more plan in the middle of the
//! list. Taking every Nth index would then shift every plan after it to another shard —
//! half of them tried twice, half never. A plan's key (its slug, which names its fault
//! and its anchor, and for a sequence of user actions that sequence's class) stays put:
//! one extra plan in one shard's list is the only difference it makes.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::plan::Plan;

/// Which share of the plans this explore tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based, below `count`.
    pub index: usize,
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) = s.split_once('/').ok_or_else(|| {
            format!("--shard {s:?}: give I/N, this shard's index (from 0) and how many shards there are, e.g. 0/4")
        })?;
        let index: usize = i.trim().parse().map_err(|_| {
            format!("--shard {s:?}: the index {i:?} is not a whole number (shards count from 0)")
        })?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("--shard {s:?}: the count {n:?} is not a whole number"))?;
        if count == 0 {
            return Err(format!("--shard {s:?}: there must be at least 1 shard"));
        }
        if index >= count {
            return Err(format!(
                "--shard {s:?}: the index must be below the count ({count} shards are numbered 0 to {})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether the plan with this key is this shard's.
    pub fn takes(&self, key: &str) -> bool {
        (fnv1a(key.as_bytes()) % self.count as u64) as usize == self.index
    }

    /// Keep this shard's plans of a track (`class`: its sequence's, none for track 0),
    /// in their order.
    pub fn retain(&self, plans: &mut Vec<Plan>, class: Option<&str>) {
        plans.retain(|p| self.takes(&key(class, &p.slug)));
    }
}

/// What a plan is known by across shards: its slug, after its sequence's class (the
/// class, not the track number: equivalent sequences' plans are tried once, and must
/// land in the same shard for that).
pub fn key(class: Option<&str>, slug: &str) -> String {
    match class {
        None => slug.to_string(),
        Some(c) => format!("{c}\u{1f}{slug}"),
    }
}

/// FNV-1a, 64 bits: written out rather than `std`'s hasher, whose algorithm may change
/// between Rust releases — shards built by two toolchains must still agree.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A shard as `summary.json` records it, for `explore merge` to check the shards belong
/// together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub index: usize,
    pub count: usize,
    pub seed: u64,
    /// Plans in the whole list without actions (track 0), and how many were this shard's.
    pub plans: usize,
    pub taken: usize,
    /// A digest of that whole list: shards whose references led to different lists say
    /// so when merged.
    pub plan_digest: String,
}

impl Record {
    pub fn new(shard: Shard, seed: u64) -> Record {
        Record {
            index: shard.index,
            count: shard.count,
            seed,
            plans: 0,
            taken: 0,
            plan_digest: String::new(),
        }
    }
}

/// The digest of a plan list: its keys, in order.
pub fn digest(plans: &[Plan]) -> String {
    let all: Vec<&str> = plans.iter().map(|p| p.slug.as_str()).collect();
    format!("{:016x}", fnv1a(all.join("\n").as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_i_of_n_and_says_what_is_wrong() {
        assert_eq!("1/4".parse::<Shard>(), Ok(Shard { index: 1, count: 4 }));
        assert_eq!("0/1".parse::<Shard>(), Ok(Shard { index: 0, count: 1 }));
        let err = |s: &str| s.parse::<Shard>().unwrap_err();
        assert!(err("4/4").contains("below the count"), "{}", err("4/4"));
        assert!(err("0/0").contains("at least 1"), "{}", err("0/0"));
        assert!(err("3").contains("give I/N"), "{}", err("3"));
        assert!(
            err("-1/2").contains("not a whole number"),
            "{}",
            err("-1/2")
        );
        assert!(err("a/2").contains("\"a\""), "{}", err("a/2"));
        assert!(err("1/x").contains("count \"x\""), "{}", err("1/x"));
        assert_eq!(Shard { index: 2, count: 3 }.to_string(), "2/3");
    }

    /// Every key is in exactly one shard, the shares are near even, and a key's shard
    /// does not depend on what else is in the list.
    #[test]
    fn every_plan_is_in_exactly_one_share() {
        let keys: Vec<String> = (0..300)
            .map(|i| key(None, &format!("freeze-x-1500ms-after-{i}th-patch")))
            .collect();
        for n in [1, 2, 3, 7] {
            let shards: Vec<Shard> = (0..n).map(|index| Shard { index, count: n }).collect();
            let mut sizes = vec![0; n];
            for k in &keys {
                let owners: Vec<usize> = shards
                    .iter()
                    .filter(|s| s.takes(k))
                    .map(|s| s.index)
                    .collect();
                assert_eq!(owners.len(), 1, "{k} in {owners:?} of {n}");
                sizes[owners[0]] += 1;
            }
            let even = keys.len() / n;
            assert!(
                sizes.iter().all(|s| *s > even / 2 && *s < even * 2),
                "{sizes:?}"
            );
        }
        // A sequence's plans are keyed by its class too.
        assert_ne!(key(Some("patch spec"), "x"), key(None, "x"));
        // Pinned: shards built by another toolchain agree.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_plan_more_in_one_list_moves_no_other() {
        let plan = |slug: &str| Plan {
            label: slug.into(),
            slug: slug.into(),
            round: 1,
            windows: vec![],
            anchor: String::new(),
            targets: vec![],
            rank: 1,
            phase: 0,
        };
        let a: Vec<Plan> = ["p1", "p2", "p4", "p5", "p6"].map(plan).to_vec();
        let mut b = a.clone();
        b.insert(2, plan("p3"));
        let s = Shard { index: 0, count: 2 };
        let (mut ta, mut tb) = (a.clone(), b.clone());
        s.retain(&mut ta, None);
        s.retain(&mut tb, None);
        tb.retain(|p| p.slug != "p3");
        assert_eq!(ta, tb);
        assert_ne!(digest(&a), digest(&b));
    }
}
