//! Random and mutated input through every parser the simulator exposes to clients: each
//! must answer with an error value, never panic. (Deterministic seeds: failures reproduce.)

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::patch::{self, PatchType};
use super::selector::{FieldSelector, LabelSelector, supported_fields};
use super::{negotiate, proto_body};

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
        let _ = crate::request::classify(&http::Method::GET, &format!("/{s}"), Some(&s));
    }
}

#[test]
fn random_and_mutated_protobuf_never_panics() {
    let mut rng = StdRng::seed_from_u64(13);
    let recorded = include_bytes!("../../fixtures/kube-apiserver-1.28/cm-get-protobuf.body");
    for _ in 0..20_000 {
        let mut b = recorded.to_vec();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..b.len());
            b[i] = rng.random();
        }
        b.truncate(rng.random_range(0..=b.len()));
        let _ = proto_body::decode(&b, "ConfigMap");
        let mut noise = crate::protobuf::MAGIC.to_vec();
        noise.extend(random_bytes(&mut rng, &(0..=255).collect::<Vec<u8>>(), 64));
        for kind in [
            "Lease",
            "Event",
            "Secret",
            "Namespace",
            "ServiceAccount",
            "DeleteOptions",
        ] {
            let _ = proto_body::decode(&noise, kind);
        }
    }
}
