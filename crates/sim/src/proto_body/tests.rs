//! The decoder against Go: every vector `gen/` made (objects of every kind filled by
//! apimachinery's roundtrip fuzzer, as Go's protobuf and Go's JSON of the object decoded
//! from it) decodes to exactly Go's JSON; the encoder writes what decodes back the same;
//! and hostile bytes get an error, never a panic.

use std::io::Read;

use base64::Engine;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::table::TABLE;
use super::{DecodeError, ProtoError, decode, encode};

struct Vector {
    kind: String,
    protobuf: Vec<u8>,
    json: Option<Value>,
}

fn vectors() -> Vec<Vector> {
    let gz = include_bytes!("vectors.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .expect("vectors.json.gz");
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a vector");
            Vector {
                kind: v["kind"].as_str().unwrap_or_default().to_string(),
                protobuf: base64::engine::general_purpose::STANDARD
                    .decode(v["protobuf"].as_str().unwrap_or_default())
                    .expect("base64"),
                json: v.get("json").cloned(),
            }
        })
        .collect()
}

/// The first difference between two JSON values, as a path.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (v, w) = (x.get(k), y.get(k));
                match (v, w) {
                    (Some(v), Some(w)) => {
                        if let Some(d) = first_difference(v, w, &format!("{at}.{k}")) {
                            return Some(d);
                        }
                    }
                    _ => return Some(format!("{at}.{k}: {v:?} | {w:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => (x.iter().zip(y).enumerate())
            .find_map(|(i, (v, w))| first_difference(v, w, &format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{at}: {a} | {b}")),
    }
}

#[test]
fn every_kind_decodes_as_go_does() {
    let all = vectors();
    assert!(all.len() > 600, "{} vectors", all.len());
    let mut wrong = Vec::new();
    for v in &all {
        let got = decode(&v.protobuf, "", "");
        match (&v.json, got) {
            (Some(want), Ok(got)) => {
                if let Some(d) = first_difference(want, &got, "") {
                    wrong.push(format!("{}: {d}", v.kind));
                }
            }
            (None, Err(_)) => {}
            (want, got) => wrong.push(format!("{}: Go {want:?}, here {got:?}", v.kind)),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} vectors differ from Go:\n{}",
        wrong.len(),
        all.len(),
        wrong.join("\n")
    );
}

#[test]
fn every_served_kind_has_a_type() {
    let table = TABLE.as_ref().expect("types.json parses");
    assert!(
        table.version.starts_with("k8s.io/api v0."),
        "{}",
        table.version
    );
    for rt in crate::builtins::types() {
        let api_version = match rt.group.as_str() {
            "" => rt.version.clone(),
            g => format!("{g}/{}", rt.version),
        };
        assert!(
            table.kind(&api_version, &api_version, &rt.kind).is_some(),
            "{api_version} {}",
            rt.kind
        );
    }
}

#[test]
fn encoding_what_was_decoded_decodes_the_same() {
    let mut identical = 0;
    let all = vectors();
    for v in all.iter().filter(|v| v.json.is_some()) {
        let first = decode(&v.protobuf, "", "").expect("decodes");
        let again = encode(&first).unwrap_or_else(|e| panic!("{}: {e}", v.kind));
        identical += usize::from(again == v.protobuf);
        let second = decode(&again, "", "").expect("decodes again");
        if let Some(d) = first_difference(&first, &second, "") {
            panic!("{}: {d}", v.kind);
        }
    }
    // Byte for byte as gogo-protobuf wrote them, but where JSON forgets what protobuf
    // said (an empty []byte, a Time's nanoseconds, a zero value under omitempty that a
    // pointer held): most.
    assert!(
        identical * 10 > all.len() * 6,
        "{identical} of {}",
        all.len()
    );
}

#[test]
fn a_deployment_as_kubectl_sends_it() {
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "x", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx",
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}]}}}});
    let body = encode(&d).expect("encodes");
    let back = decode(&body, "apps/v1", "Deployment").expect("decodes");
    // Go's JSON of that object: zero values under omitempty gone, structs without it
    // shown, a template's zero creationTimestamp left out (omitzero).
    assert_eq!(
        back,
        json!({"kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": "web", "namespace": "x", "labels": {"app": "web"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx",
                        "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}]}},
                "strategy": {"rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"}}},
            "status": {}})
    );
}

#[test]
fn the_recorded_configmap_decodes() {
    // fixtures: a ConfigMap a real apiserver 1.28 served as protobuf.
    let body = include_bytes!("../../../../fixtures/kube-apiserver-1.28/cm-get-protobuf.body");
    let v = decode(body, "v1", "ConfigMap").expect("decodes");
    assert_eq!(v["kind"], "ConfigMap");
    assert_eq!(v["metadata"]["name"], "cm-0");
    assert_eq!(v["data"]["k"], "changed");
    assert_eq!(v["metadata"]["creationTimestamp"], "2026-11-22T05:30:26Z");
    assert_eq!(v["metadata"]["managedFields"][0]["manager"], "curl");
    assert_eq!(
        v["metadata"]["managedFields"][0]["fieldsV1"]["f:data"]["f:k"],
        json!({})
    );
}

#[test]
fn bad_bodies_say_what_is_wrong() {
    let cm = include_bytes!("../../../../fixtures/kube-apiserver-1.28/cm-get-protobuf.body");
    let malformed = |b: &[u8]| match decode(b, "v1", "ConfigMap") {
        Err(ProtoError::Malformed(e)) => e.to_string(),
        other => panic!("{other:?}"),
    };
    assert!(malformed(b"nope").contains("k8s"));
    assert!(malformed(&cm[..cm.len() - 7]).contains("past the end"));
    // A ConfigMap whose metadata (field 1) is a varint.
    let body = stalemate_wire::k8s::protobuf::envelope("v1", "ConfigMap", &[0x08, 0x01]);
    assert_eq!(
        malformed(&body),
        "field api/core/v1.ConfigMap.metadata has the wrong wire type (varint)"
    );
    // An IntOrString of type 7.
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"strategy":
        {"rollingUpdate": {"maxSurge": 1}}}});
    let mut body = encode(&d).expect("encodes");
    // IntOrString{type: 0, intVal: 1, strVal: ""}
    let at = (body.windows(6))
        .position(|w| w == [0x08, 0x00, 0x10, 0x01, 0x1a, 0x00])
        .expect("maxSurge");
    body[at + 1] = 7;
    assert_eq!(malformed(&body), "IntOrString of type 7");
    // Nested beyond reason (JSONSchemaProps.not, 100 deep).
    let mut schema = json!({"type": "object"});
    for _ in 0..100 {
        schema = json!({"not": schema});
    }
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}});
    let body = encode(&crd).expect("encodes");
    assert!(matches!(
        decode(&body, "", ""),
        Err(ProtoError::Malformed(DecodeError::TooDeep(_)))
    ));
    let unknown = stalemate_wire::k8s::protobuf::envelope("example.com/v1", "Widget", &[]);
    assert!(matches!(
        decode(&unknown, "", ""),
        Err(ProtoError::Unsupported(_))
    ));
}

/// Mutated and truncated vectors of every kind, and noise: an error or a value, never a
/// panic (deterministic seed: a failure reproduces).
#[test]
fn hostile_bytes_never_panic() {
    let all = vectors();
    let mut rng = StdRng::seed_from_u64(17);
    let mut errors = 0;
    for round in 0..20_000 {
        let v = &all[rng.random_range(0..all.len())];
        let mut b = v.protobuf.clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..b.len());
            b[i] = rng.random();
        }
        if round % 2 == 0 {
            b.truncate(rng.random_range(0..=b.len()));
        }
        errors += usize::from(decode(&b, "v1", "Pod").is_err());
        let mut noise = stalemate_wire::k8s::protobuf::MAGIC.to_vec();
        noise.extend((0..rng.random_range(0..64)).map(|_| rng.random::<u8>()));
        let _ = decode(&noise, "apps/v1", "Deployment");
    }
    // Most damage is caught; what is not still decodes to some value.
    assert!(errors > 5_000, "{errors}");
}

/// A random message that frames correctly: fields 1-30 of every wire type, bytes fields
/// holding nested messages, text or noise, up to `depth` deep.
fn random_message(rng: &mut StdRng, depth: u32) -> Vec<u8> {
    let mut w = stalemate_wire::k8s::protobuf::Writer::default();
    for _ in 0..rng.random_range(0..8) {
        let num = rng.random_range(1..31);
        match rng.random_range(0..6) {
            0 => {
                w.uint(num, rng.random::<u64>() >> rng.random_range(0..64));
            }
            1 if depth > 0 => {
                let inner = random_message(rng, depth - 1);
                w.bytes(num, &inner);
            }
            2 => {
                let text = [
                    "",
                    "a",
                    "25%",
                    "1Gi",
                    "2024-01-01T00:00:00Z",
                    "{}",
                    "[1]",
                    "\u{fffd}",
                ];
                w.string(num, text[rng.random_range(0..text.len())]);
            }
            3 => {
                key(&mut w.buf, num, 1);
                w.buf.extend_from_slice(&rng.random::<u64>().to_le_bytes());
            }
            4 => {
                key(&mut w.buf, num, 5);
                w.buf.extend_from_slice(&rng.random::<u32>().to_le_bytes());
            }
            _ => {
                let noise: Vec<u8> = (0..rng.random_range(0..16)).map(|_| rng.random()).collect();
                w.bytes(num, &noise);
            }
        }
    }
    w.buf
}

/// A field key: its number and wire type, as a varint.
fn key(buf: &mut Vec<u8>, num: u32, wire: u32) {
    let mut k = (num << 3) | wire;
    while k >= 0x80 {
        buf.push((k as u8) | 0x80);
        k >>= 7;
    }
    buf.push(k as u8);
}

/// Well-framed random messages of every kind, nested up to 6 deep: the decoder walks
/// every type's fields with wrong and right wire types, and only ever returns.
#[test]
fn random_well_framed_messages_of_every_kind_never_panic() {
    let table = TABLE.as_ref().expect("types.json parses");
    let mut kinds: Vec<(String, String)> = Vec::new();
    for rt in crate::builtins::types() {
        kinds.push((rt.api_version(), rt.kind.clone()));
    }
    assert!(!table.types.is_empty());
    let mut rng = StdRng::seed_from_u64(23);
    let (mut ok, mut err) = (0, 0);
    for _ in 0..20_000 {
        let (api_version, kind) = &kinds[rng.random_range(0..kinds.len())];
        let raw = random_message(&mut rng, 6);
        let body = stalemate_wire::k8s::protobuf::envelope(api_version, kind, &raw);
        match decode(&body, "", "") {
            Ok(v) => {
                ok += 1;
                // Whatever decodes is JSON the simulator can store and encode back.
                let _ = encode(&v);
            }
            Err(_) => err += 1,
        }
    }
    assert!(ok > 1_000 && err > 1_000, "{ok} decoded, {err} refused");
}
