//! Random and mutated input through every parser the simulator exposes to clients: each
//! must answer with an error value, never panic. (Deterministic seeds: failures reproduce.)
//! Protobuf bodies have theirs in `proto_body/tests.rs`.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::negotiate;
use super::patch::{self, PatchType};
use super::selector::{FieldSelector, LabelSelector, supported_fields};

fn random_bytes(rng: &mut StdRng, alphabet: &[u8], max: usize) -> Vec<u8> {
    let n = rng.random_range(0..max);
    (0..n)
        .map(|_| alphabet[rng.random_range(0..alphabet.len())])
        .collect()
}

const JSONISH: &[u8] = br#"{}[]":,0123456789.-+eEtrufalsn \$patch/op"pathvalue"#;
const SELECTORISH: &[u8] = b"abc=!,() innotin<>.-_/ \t";

#[test]
fn random_patches_never_panic() {
    let mut rng = StdRng::seed_from_u64(7);
    let base = json!({"metadata": {"name": "x", "finalizers": ["a"]}, "spec": {"containers": [{"name": "c", "env": [{"name": "A"}]}]}});
    for _ in 0..20_000 {
        let body = random_bytes(&mut rng, JSONISH, 64);
        for pt in [
            PatchType::Merge,
            PatchType::Json,
            PatchType::Strategic,
            PatchType::Apply,
        ] {
            let mut doc = base.clone();
            let _ = patch::apply(&mut doc, pt, &body);
        }
    }
    // Structurally valid but hostile strategic patches.
    for p in [
        json!({"spec": {"containers": [1, 2]}}),
        json!({"spec": {"containers": [{"$patch": "delete"}]}}),
        json!({"$retainKeys": "nope"}),
        json!({"$patch": "bogus"}),
        json!({"spec": {"containers": [{"name": "c", "env": {"not": "a list"}}]}}),
    ] {
        let mut doc = base.clone();
        let _ = patch::apply(&mut doc, PatchType::Strategic, p.to_string().as_bytes());
    }
}

#[test]
fn random_selectors_and_accept_headers_never_panic() {
    let mut rng = StdRng::seed_from_u64(11);
    for _ in 0..50_000 {
        let s = String::from_utf8(random_bytes(&mut rng, SELECTORISH, 40)).unwrap_or_default();
        let _ = LabelSelector::parse(&s).map(|l| l.matches(&json!({"a": "b"})));
        let _ = FieldSelector::parse(&s, supported_fields("Secret")).map(|f| f.matches(&json!({})));
        let _ = negotiate::negotiate(Some(&s));
        let _ =
            stalemate_wire::k8s::request::classify(&http::Method::GET, &format!("/{s}"), Some(&s));
    }
}
