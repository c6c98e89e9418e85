//! Per-event cost of the watch codecs: splitting a stream into events and reading their
//! metadata (type, kind, namespace, name, resourceVersion, labels) without decoding the
//! objects — on the recorded real streams and on a large object.
//!
//!   cargo bench --bench codecs

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use stalemate::watch::json::JsonFramer;
use stalemate::watch::proto::ProtoFramer;

const JSON: &[u8] = include_bytes!("../fixtures/kube-apiserver-1.28/cr-watch-json.body");
const PROTO: &[u8] = include_bytes!("../fixtures/kube-apiserver-1.28/cm-watch-protobuf.body");

fn large_json_event() -> Vec<u8> {
    let blob = "x".repeat(1 << 20);
    let mut line = serde_json::to_vec(&serde_json::json!({"type": "MODIFIED", "object": {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": "default", "resourceVersion": "42", "labels": {"app": "bench"}},
        "data": {"blob": blob}}}))
    .unwrap_or_default();
    line.push(b'\n');
    line
}

fn codecs(c: &mut Criterion) {
    let mut g = c.benchmark_group("watch codecs");
    let json_events = JSON.iter().filter(|b| **b == b'\n').count() as u64;
    g.throughput(Throughput::Elements(json_events));
    g.bench_function("json: recorded CR stream (events)", |b| {
        b.iter(|| {
            JsonFramer::new(1 << 24)
                .push(std::hint::black_box(JSON))
                .map(|f| f.len())
        })
    });
    let proto_events = ProtoFramer::new(1 << 24)
        .push(PROTO)
        .map_or(1, |f| f.len() as u64);
    g.throughput(Throughput::Elements(proto_events));
    g.bench_function("protobuf: recorded ConfigMap stream (events)", |b| {
        b.iter(|| {
            ProtoFramer::new(1 << 24)
                .push(std::hint::black_box(PROTO))
                .map(|f| f.len())
        })
    });
    let large = large_json_event();
    g.throughput(Throughput::Bytes(large.len() as u64));
    g.bench_function("json: one 1 MiB event (bytes)", |b| {
        b.iter(|| {
            JsonFramer::new(1 << 24)
                .push(std::hint::black_box(&large))
                .map(|f| f.len())
        })
    });
    g.bench_function("json: one 1 MiB event in 16 KiB chunks (bytes)", |b| {
        b.iter(|| {
            let mut f = JsonFramer::new(1 << 24);
            let mut n = 0;
            for c in large.chunks(16 << 10) {
                n += f.push(c).map_or(0, |v| v.len());
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, codecs);
criterion_main!(benches);
