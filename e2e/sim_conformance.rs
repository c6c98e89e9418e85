//! Conformance: replay the requests recorded from a real kube-apiserver 1.28
//! (`fixtures/kube-apiserver-1.28/`) against `stalemate sim`, in recorded order, and
//! compare status codes, Status reasons, body structure (names, uids, RVs and timestamps
//! aside) and watch framing.
//!
//! Resource versions and uids differ between the recording and the replay; each one the
//! simulator returns is mapped to the recorded one at the same place in the body, and
//! later requests are rewritten with the mapping. The few steps the recording does not
//! show (installing the CRD, the bulk objects behind the gzip LIST, the WatchList
//! namespace) are recreated before the exchange that needs them.

#[path = "common/mod.rs"]
mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Response, Sim, curl, install_gitrepo_crd};
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kube-apiserver-1.28")
}

struct Recorded {
    name: String,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    status: u16,
    resp_headers: Vec<(String, String)>,
    resp_body: Vec<u8>,
}

impl Recorded {
    fn load(name: &str) -> Recorded {
        let dir = fixtures();
        let req = std::fs::read(dir.join(format!("{name}.req"))).unwrap();
        let split = req
            .windows(2)
            .position(|w| w == b"\n\n")
            .unwrap_or(req.len());
        let head = String::from_utf8_lossy(&req[..split]).to_string();
        let body = req.get(split + 2..).unwrap_or_default().to_vec();
        let mut lines = head.lines();
        let first: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let rh = std::fs::read_to_string(dir.join(format!("{name}.headers"))).unwrap();
        let mut rl = rh.lines();
        let status = rl
            .next()
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let resp_headers = rl
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        Recorded {
            name: name.to_string(),
            method: first[0].to_string(),
            path: first[1].to_string(),
            headers,
            body,
            status,
            resp_headers,
            resp_body: std::fs::read(dir.join(format!("{name}.body"))).unwrap(),
        }
    }

    fn resp_header(&self, k: &str) -> Option<&str> {
        self.resp_headers
            .iter()
            .find(|(h, _)| h.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.as_str())
    }

    fn protobuf(&self) -> bool {
        self.resp_header("content-type")
            .is_some_and(|c| c.contains("protobuf"))
    }
}

/// The JSON structure of a value: keys and value types, no values.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                // 1.28 wrote a zero creationTimestamp as null; since 1.35 it is left out
                // (omitzero), as the simulator, which serves 1.37, does.
                .filter(|(k, v)| !(*k == "creationTimestamp" && v.is_null()))
                .map(|(k, v)| {
                    (
                        k.clone(),
                        if k == "managedFields" {
                            managed_shape(v)
                        } else {
                            shape(v)
                        },
                    )
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(shape).collect()),
        Value::String(_) => json!("string"),
        Value::Number(_) => json!("number"),
        Value::Bool(_) => json!("bool"),
        Value::Null => Value::Null,
    }
}

/// managedFields are ordered by their timestamps (seconds), so a replay that crosses a
/// second boundary the recording did not may order them differently: compare them by
/// manager, operation and subresource instead.
fn managed_shape(v: &Value) -> Value {
    let mut sorted = v.clone();
    common::api_script::sort_managed_fields(&mut sorted);
    shape(&sorted)
}

/// Learn recorded→replayed values of `resourceVersion` and `uid` at aligned places.
fn learn(ids: &mut HashMap<String, String>, recorded: &Value, ours: &Value) {
    match (recorded, ours) {
        (Value::Object(r), Value::Object(o)) => {
            for (k, rv) in r {
                let Some(ov) = o.get(k) else { continue };
                if matches!(k.as_str(), "resourceVersion" | "uid")
                    && let (Some(a), Some(b)) = (rv.as_str(), ov.as_str())
                {
                    ids.entry(a.to_string()).or_insert_with(|| b.to_string());
                }
                learn(ids, rv, ov);
            }
        }
        (Value::Array(r), Value::Array(o)) => r.iter().zip(o).for_each(|(a, b)| learn(ids, a, b)),
        _ => {}
    }
}

fn rewrite_json(ids: &HashMap<String, String>, v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if matches!(k.as_str(), "resourceVersion" | "uid")
                    && let Some(s) = x.as_str().and_then(|s| ids.get(s))
                {
                    *x = json!(s);
                } else {
                    rewrite_json(ids, x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rewrite_json(ids, x)),
        _ => {}
    }
}

fn rewrite_path(ids: &HashMap<String, String>, path: &str) -> String {
    let Some((p, q)) = path.split_once('?') else {
        return path.to_string();
    };
    let q: Vec<String> = q
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some(("resourceVersion", v)) => format!(
                "resourceVersion={}",
                ids.get(v).map(String::as_str).unwrap_or(v)
            ),
            _ => kv.to_string(),
        })
        .collect();
    format!("{p}?{}", q.join("&"))
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b)
        .read_to_end(&mut out)
        .expect("gzip body");
    out
}

/// The recording is of kube-apiserver 1.28, the simulator serves 1.37's built-ins (checked
/// resource for resource against a live 1.37 by `sim_builtins.rs`): what both serve must
/// have the same structure; a group's versions may differ (flowcontrol's v1beta3 is gone).
fn check_discovery_subset(name: &str, recorded: &Value, ours: &Value) {
    let mut recorded = recorded.clone();
    // Opaque digest of the storage version; not computed by the simulator.
    for r in recorded["resources"].as_array_mut().into_iter().flatten() {
        if let Some(m) = r.as_object_mut() {
            m.remove("storageVersionHash");
        }
    }
    let (list_key, id_key) = match ours["kind"].as_str() {
        Some("APIResourceList") => ("resources", "name"),
        Some("APIGroupList") => ("groups", "name"),
        Some("APIGroupDiscoveryList") => ("items", "metadata"),
        k => panic!("{name}: unexpected discovery kind {k:?}"),
    };
    let id = |v: &Value| {
        if id_key == "metadata" {
            v["metadata"]["name"].clone()
        } else {
            v[id_key].clone()
        }
    };
    let mut compared = 0;
    for item in ours[list_key].as_array().unwrap() {
        let Some(rec) = recorded[list_key]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| id(r) == id(item))
        else {
            continue; // groups the recorded cluster lacked (the simulator's own reviews are all there)
        };
        if id_key == "metadata" {
            // Aggregated: per version, per resource.
            for v in item["versions"].as_array().unwrap() {
                // A version 1.28 did not serve yet (flowcontrol v1 then was; others moved).
                let Some(rv) = rec["versions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["version"] == v["version"])
                else {
                    continue;
                };
                for r in v["resources"].as_array().unwrap() {
                    let rr = rv["resources"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|x| x["resource"] == r["resource"]);
                    let Some(rr) = rr else { continue };
                    // Subresources: ours must be among the recorded ones (the simulator
                    // does not serve e.g. deployments/scale).
                    let (mut r, mut rr) = (r.clone(), rr.clone());
                    let ours_sub = r.as_object_mut().unwrap().remove("subresources");
                    let rec_sub = rr.as_object_mut().unwrap().remove("subresources");
                    for s in ours_sub
                        .as_ref()
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let found = rec_sub
                            .as_ref()
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .any(|x| x == s);
                        // Subresources added after 1.28 (csinodes/status: 1.37).
                        let newer = [("csinodes", "status")]
                            .iter()
                            .any(|(res, sub)| r["resource"] == *res && s["subresource"] == *sub);
                        assert!(
                            found || newer,
                            "{name}: subresource {s} of {}",
                            r["resource"]
                        );
                    }
                    assert_eq!(shape(&r), shape(&rr), "{name}: resource {}", r["resource"]);
                    assert_eq!(
                        r["verbs"], rr["verbs"],
                        "{name}: verbs of {}",
                        r["resource"]
                    );
                    compared += 1;
                }
            }
        } else {
            let without_versions = |v: &Value| {
                let mut v = v.clone();
                if let Some(m) = v.as_object_mut() {
                    m.remove("versions");
                }
                v
            };
            assert_eq!(
                shape(&without_versions(item)),
                shape(&without_versions(rec)),
                "{name}: {}",
                id(item)
            );
            if id_key == "name" && item.get("verbs").is_some() {
                assert_eq!(item["verbs"], rec["verbs"], "{name}: verbs of {}", id(item));
            }
            compared += 1;
        }
    }
    assert!(compared >= 2, "{name}: compared only {compared} entries");
}

fn watch_lines(name: &str, body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8(body.to_vec()).unwrap_or_else(|_| panic!("{name}: not UTF-8"));
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{name}: every event ends with a newline"
    );
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{name}: line is not JSON ({e}): {l}"));
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                l,
                "{name}: one compact event per line"
            );
            assert_eq!(
                v.as_object().unwrap().keys().collect::<Vec<_>>(),
                ["type", "object"],
                "{name}"
            );
            v
        })
        .collect()
}

struct Replay {
    sim: Sim,
    ids: HashMap<String, String>,
    report: BTreeMap<String, String>,
}

impl Replay {
    fn send(&self, rec: &Recorded, watch: bool) -> Response {
        let mut path = rewrite_path(&self.ids, &rec.path);
        if watch && !path.contains("timeoutSeconds") {
            // Long enough for the live event the WatchList replay makes after 700 ms.
            let t = if rec.name.starts_with("cm-watchlist") {
                2
            } else {
                1
            };
            path.push_str(&format!("&timeoutSeconds={t}"));
        }
        let body = if rec.body.is_empty() {
            None
        } else {
            match serde_json::from_slice::<Value>(&rec.body) {
                Ok(mut v) => {
                    rewrite_json(&self.ids, &mut v);
                    Some(serde_json::to_vec(&v).unwrap())
                }
                Err(_) => Some(rec.body.clone()),
            }
        };
        let headers: Vec<(&str, &str)> = rec
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let extra: &[&str] = if watch { &["--max-time", "4"] } else { &[] };
        curl(
            &self.sim.ca(),
            &self.sim.url,
            &rec.method,
            &path,
            &headers,
            body.as_deref(),
            extra,
        )
    }

    fn create(&self, path: &str, obj: Value, user_agent: &str) {
        let headers = [
            ("Content-Type", "application/json"),
            ("User-Agent", user_agent),
        ];
        let r = self
            .sim
            .curl("POST", path, &headers, Some(obj.to_string().as_bytes()));
        assert!(
            r.status == 201 || r.status == 409,
            "setup {path}: {} {}",
            r.status,
            r.text()
        );
    }

    /// What the recording does not show, recreated before the exchange that needs it.
    fn prepare(&self, name: &str) -> Option<std::thread::JoinHandle<()>> {
        match name {
            "cm-list-gzip" => {
                for i in 0..80 {
                    self.create(
                        "/api/v1/namespaces/fixtures/configmaps",
                        json!({"metadata": {"name": format!("bulk-{i}")}, "data": {"k": "x".repeat(2048)}}),
                        "curl/8",
                    );
                }
                None
            }
            "cm-watch-expired" => {
                self.sim.admin("/_sim/compact");
                None
            }
            "cm-watchlist-json" | "cm-watchlist-protobuf" => {
                self.create(
                    "/api/v1/namespaces",
                    json!({"metadata": {"name": "wl"}}),
                    "kubectl-create/v1.28.7",
                );
                for i in 1..=3 {
                    self.create(
                        "/api/v1/namespaces/wl/configmaps",
                        json!({"metadata": {"name": format!("wl-{i}")}, "data": {"k": format!("v{i}")}}),
                        "kubectl-create/v1.28.7",
                    );
                }
                // The recording shows one live event after the initial ones.
                let (ca, url) = (self.sim.ca(), self.sim.url.clone());
                Some(std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(700));
                    let v = format!("changed-{}", std::process::id());
                    let body = json!({"data": {"k": v}}).to_string();
                    curl(
                        &ca,
                        &url,
                        "PATCH",
                        "/api/v1/namespaces/wl/configmaps/wl-1",
                        &[
                            ("Content-Type", "application/merge-patch+json"),
                            ("User-Agent", "kubectl-patch/v1.28.7"),
                        ],
                        Some(body.as_bytes()),
                        &[],
                    );
                }))
            }
            _ => None,
        }
    }

    fn check(&mut self, rec: &Recorded) {
        let watch = rec.path.contains("watch=true") || rec.path.contains("/watch/");
        let helper = self.prepare(&rec.name);
        let got = self.send(rec, watch);
        if let Some(h) = helper {
            h.join().unwrap();
        }
        let name = &rec.name;
        assert_eq!(
            got.status,
            rec.status,
            "{name}: status code; body: {}",
            got.text()
        );

        if rec.protobuf() {
            // Protobuf serving is not simulated: the client also accepted JSON, which is
            // what it got. Framing of the recorded protobuf streams is tested by the codecs.
            assert!(
                got.header("content-type")
                    .unwrap_or("")
                    .starts_with("application/json"),
                "{name}"
            );
            self.report.insert(
                name.clone(),
                "status only (recorded as protobuf; served as JSON)".into(),
            );
            return;
        }
        let (rec_body, got_body) = if rec.resp_header("content-encoding") == Some("gzip") {
            assert_eq!(
                got.header("content-encoding"),
                Some("gzip"),
                "{name}: large responses are gzipped"
            );
            (gunzip(&rec.resp_body), gunzip(&got.body))
        } else {
            assert!(
                got.header("content-encoding").is_none(),
                "{name}: unexpected encoding"
            );
            (rec.resp_body.clone(), got.body.clone())
        };
        if watch {
            let mut r = watch_lines(name, &rec_body);
            let mut g = watch_lines(name, &got_body);
            // Synthetic initial events come from the watch cache's unordered store
            // (`cm-watchlist-json` shows wl-2, wl-3, wl-1): compare them as a set.
            let synthetic = rec.path.contains("resourceVersion=0")
                || rec.path.contains("sendInitialEvents=true");
            if synthetic {
                for evs in [&mut r, &mut g] {
                    let n = evs.iter().take_while(|e| e["type"] == "ADDED").count();
                    evs[..n].sort_by_key(|e| {
                        e["object"]["metadata"]["name"]
                            .as_str()
                            .unwrap_or("")
                            .to_string()
                    });
                }
            }
            let types = |v: &[Value]| {
                v.iter()
                    .map(|e| e["type"].as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            };
            assert_eq!(types(&g), types(&r), "{name}: event types in order");
            for (a, b) in r.iter().zip(&g) {
                learn(&mut self.ids, a, b);
                assert_eq!(
                    shape(&b["object"]),
                    shape(&a["object"]),
                    "{name}: structure of a {} event",
                    a["type"]
                );
            }
            self.report.insert(
                name.clone(),
                format!("{} events: types, order, framing and structure", r.len()),
            );
            return;
        }
        let rv: Value = serde_json::from_slice(&rec_body)
            .unwrap_or_else(|e| panic!("{name}: recorded body ({e})"));
        let gv: Value = serde_json::from_slice(&got_body)
            .unwrap_or_else(|e| panic!("{name}: our body is not JSON ({e}): {}", got.text()));
        learn(&mut self.ids, &rv, &gv);
        if rv["kind"] == "Status" {
            assert_eq!(gv["reason"], rv["reason"], "{name}: Status reason");
            assert_eq!(gv["code"], rv["code"], "{name}: Status code");
        }
        if name.starts_with("discovery-")
            && !matches!(name.as_str(), "discovery-version" | "discovery-api")
        {
            check_discovery_subset(name, &rv, &gv);
            self.report.insert(
                name.clone(),
                "status, and structure of every served entry".into(),
            );
            return;
        }
        assert_eq!(
            shape(&gv),
            shape(&rv),
            "{name}: body structure\n ours: {gv}\n real: {rv}"
        );
        self.report
            .insert(name.clone(), "status, reason and body structure".into());
    }
}

#[test]
fn replays_the_recorded_exchanges() {
    let sim = Sim::start_with(&["--kube-version", "1.28"]);
    install_gitrepo_crd(&sim);
    let index: Vec<Value> =
        serde_json::from_slice(&std::fs::read(fixtures().join("INDEX.json")).unwrap()).unwrap();
    let mut replay = Replay {
        sim,
        ids: HashMap::new(),
        report: BTreeMap::new(),
    };
    for entry in &index {
        let rec = Recorded::load(entry["name"].as_str().unwrap());
        replay.check(&rec);
    }
    assert_eq!(replay.report.len(), index.len());
    for (k, v) in &replay.report {
        println!("{k:40} {v}");
    }
}

// Differences found by a differential script against a real kube-apiserver 1.28 (not in
// the recordings): what the real server does is asserted here.

/// The events of a watch of `path` that ends after `timeoutSeconds`, one JSON per line.
fn watch_events(sim: &Sim, path: &str) -> Vec<Value> {
    let r = sim.curl("GET", path, &[], None);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    watch_lines(path, &r.body)
}

/// Removing the last finalizer of an object that is being deleted: one DELETED event
/// (carrying the object without its finalizers), no MODIFIED before it — the apiserver
/// deletes within that update.
#[test]
fn last_finalizer_removed_is_a_single_deleted_event() {
    let sim = Sim::start();
    install_gitrepo_crd(&sim);
    let path = "/apis/source.testbed.example.com/v1/namespaces/default/gitrepositories";
    let r = sim.curl(
        "POST",
        path,
        &[("Content-Type", "application/json")],
        Some(br#"{"apiVersion":"source.testbed.example.com/v1","kind":"GitRepository","metadata":{"name":"f","finalizers":["example.com/keep"]},"spec":{"url":"x"}}"#),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let rv = r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let r = sim.curl("DELETE", &format!("{path}/f"), &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = sim.curl(
        "PATCH",
        &format!("{path}/f"),
        &[("Content-Type", "application/merge-patch+json")],
        Some(br#"{"metadata":{"finalizers":null}}"#),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(sim.curl("GET", &format!("{path}/f"), &[], None).status, 404);
    let events = watch_events(
        &sim,
        &format!("{path}?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
    );
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["MODIFIED", "DELETED"],
        "deletionTimestamp set, then gone"
    );
    let gone = &events[1]["object"]["metadata"];
    assert!(gone["deletionTimestamp"].is_string());
    assert!(gone.get("finalizers").is_none_or(|f| f.is_null()), "{gone}");
}

/// Each resource's watch history starts when it is first served: a watch of a custom
/// resource from a resourceVersion older than its CRD is 200 + ERROR 410 Expired, while
/// a built-in served from the start resumes from there, or from its very first
/// resourceVersion (as a 1.37 apiserver's watch caches, started on the empty etcd).
#[test]
fn a_crd_watch_history_starts_when_the_crd_is_served() {
    let sim = Sim::start();
    let list = sim.curl("GET", "/api/v1/namespaces/default/configmaps", &[], None);
    let before = list.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let cm = sim.curl(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/json")],
        Some(br#"{"metadata":{"name":"before-the-crd"}}"#),
    );
    assert_eq!(cm.status, 201);
    install_gitrepo_crd(&sim);
    let events = watch_events(
        &sim,
        "/apis/source.testbed.example.com/v1/namespaces/default/gitrepositories?watch=true&resourceVersion=1&timeoutSeconds=1",
    );
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(
        (&events[0]["object"]["code"], &events[0]["object"]["reason"]),
        (&json!(410), &json!("Expired"))
    );
    let events = watch_events(
        &sim,
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={before}&timeoutSeconds=1"
        ),
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "before-the-crd"),
        "{events:?}"
    );
    // A built-in's history starts before the bootstrap objects, as a 1.37 apiserver's
    // watch caches start from the empty etcd: resourceVersion=1 replays them.
    let events = watch_events(
        &sim,
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&timeoutSeconds=1",
    );
    assert!(events.iter().all(|e| e["type"] == "ADDED"), "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| e["object"]["metadata"]["name"] == "before-the-crd"),
        "{events:?}"
    );
}

/// A path no API serves: Go's plain `404 page not found`, not a `Status`.
#[test]
fn unknown_paths_are_a_plain_404() {
    let sim = Sim::start();
    for path in [
        "/apis/nope.example.com/v1/things",
        "/api/v1/namespaces/default/widgets",
        "/apis/nope.example.com/v1",
    ] {
        let r = sim.curl("GET", path, &[], None);
        assert_eq!(
            (r.status, r.text().as_str(), r.header("content-type")),
            (
                404,
                "404 page not found\n",
                Some("text/plain; charset=utf-8")
            ),
            "{path}"
        );
    }
}
