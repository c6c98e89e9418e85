//! The simulator against a REAL kube-apiserver (v1.37, `stalemate envtest`): one script
//! of API steps (`sim_differential/script.rs`) runs on both, and every step's observation
//! — status code, Status body, Warning, content type, whether generation and
//! resourceVersion moved, the defaulted spec, status, labels, annotations, finalizers,
//! owner references, managed fields, discovery, tables, watch event sequences — must be
//! the same, but for the differences listed in `ALLOWED` (each with why). A divergence
//! fails the test with every divergent step, each with both observations, so one run
//! tells the whole story. `SIM_DIFFERENTIAL_OUT=FILE` also writes both runs' raw
//! observations there, one step a line.
//!
//! Each side runs its own controllers for what the script does not do itself: the
//! simulator puts a `default` ServiceAccount and a `kube-root-ca.crt` ConfigMap in each new
//! namespace; the real side runs kube-controller-manager with just the two controllers that
//! do that (`serviceaccount`, `root-ca-cert-publisher`), and the script waits for both
//! before it goes on (so they come first in every watch). With all of
//! kube-controller-manager the Deployment, ReplicaSet, Job, endpoints, PV-binder and
//! garbage-collector controllers would write to the script's objects at moments of their
//! own choosing — neither deterministic nor anything the simulator claims to do.
//!
//! The real apiserver runs with its default feature gates (WatchList among them since
//! 1.34: `sendInitialEvents=true` and the initial-events-end bookmark, which the
//! simulator serves). Both report 1.37, so the machines' kubectl dispatcher runs its own
//! kubectl 1.32 against both (it bundles 1.27–1.33 and picks one only for those minors).

#[path = "common/mod.rs"]
mod common;
#[path = "sim_differential/script.rs"]
mod script;

use std::collections::HashMap;
use std::fs::File;
use std::process::{Command, Stdio};

use common::KillOnDrop;
use common::api_script::{
    Divergence, Endpoint, Observed, Run, Script, StepKind, compare, diff, report, seq,
};
use common::envtest::{RealApiserver, assets};
use serde_json::{Map, Value, json};

/// The namespace both runs work in.
const NS: &str = "differential";

/// (1) The script observes the same on the simulator as on the real apiserver, step by
/// step, but for `ALLOWED`. The script's own checks must all hold on the real apiserver:
/// they make sure each step does what it is there for.
#[test]
fn the_simulator_answers_as_the_real_apiserver() {
    let api = RealApiserver::start();
    let _kcm = account_controllers(&api);
    // kubectl picks its version by the server's /version: the same kubectl for both
    // (both report the default, 1.37).
    let sim = common::Sim::start();
    let (real_ep, sim_ep) = (Endpoint::direct(&api), Endpoint::sim(&sim));
    let script = Script {
        text: script::SCRIPT,
        collections: script::COLLECTIONS,
    };
    // The two runs touch different servers: side by side.
    let (real, simulated) = std::thread::scope(|s| {
        let real = s.spawn(|| Run::run(&real_ep, NS, &script));
        let simulated = s.spawn(|| Run::run(&sim_ep, NS, &script));
        (real.join().unwrap(), simulated.join().unwrap())
    });
    let wrong: Vec<String> = (real.iter())
        .filter(|o| !o.failed.is_empty())
        .map(|o| format!("step {:?}: {:?}\n{}", o.step, o.failed, o.value))
        .collect();
    assert!(
        wrong.is_empty(),
        "the script's checks fail on the REAL apiserver:\n{}",
        wrong.join("\n")
    );
    if let Some(out) = std::env::var_os("SIM_DIFFERENTIAL_OUT") {
        // Both runs' observations, step by step, for a closer look (one JSON per line).
        let lines: Vec<String> = (real.iter().zip(&simulated))
            .map(|(r, s)| {
                json!({"step": r.step, "request": r.request, "real": r.value,
                "realFailed": r.failed, "sim": s.value, "simFailed": s.failed})
                .to_string()
            })
            .collect();
        std::fs::write(out, lines.join("\n")).expect("write SIM_DIFFERENTIAL_OUT");
    }
    let divergences = differences(&real, &simulated);
    let (gaps, divergences): (Vec<Divergence>, Vec<Divergence>) = divergences
        .into_iter()
        .partition(|d| NOT_SIMULATED.iter().any(|(step, _)| *step == d.step));
    let names = ("real", "sim");
    assert!(
        divergences.is_empty(),
        "{}\n(Observations are clipped at 3000 characters: SIM_DIFFERENTIAL_OUT=FILE writes \
         them whole.)",
        report(names, real.len(), &divergences)
    );
    // What docs/simulator.md says the simulator does not do must still be so: a gap
    // that closed belongs in the script's comparison, and out of that list.
    for (step, why) in NOT_SIMULATED {
        assert!(
            gaps.iter().any(|d| d.step == *step),
            "step {step:?} no longer diverges ({why}): take it off NOT_SIMULATED and docs/simulator.md's 'Not simulated'"
        );
    }
}

/// Steps whose divergence docs/simulator.md's "Not simulated" documents: each must
/// still diverge (so that list stays true), and nothing else may.
const NOT_SIMULATED: &[(&str, &str)] = &[
    (
        "server-side apply by another manager",
        "field-ownership conflicts of server-side apply: apply is merged",
    ),
    (
        "server-side apply, forced",
        "the forced apply after the conflict the simulator did not see changes nothing there",
    ),
];

/// kube-controller-manager with only the controllers the simulator plays: the `default`
/// ServiceAccount and the `kube-root-ca.crt` ConfigMap in every namespace.
fn account_controllers(api: &RealApiserver) -> KillOnDrop {
    let log = File::create(api.dir.path().join("kube-controller-manager.log")).unwrap();
    let child = Command::new(assets().join("kube-controller-manager"))
        .arg(format!("--kubeconfig={}", api.kubeconfig.display()))
        .arg(format!("--root-ca-file={}", api.ca().display()))
        .args([
            "--controllers=serviceaccount,root-ca-cert-publisher",
            "--leader-elect=false",
            "--secure-port=0",
        ])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start kube-controller-manager");
    KillOnDrop(child)
}

/// The divergent steps of two runs (real first), each run projected by its own
/// [`Projector`].
fn differences(real: &[Observed], sim: &[Observed]) -> Vec<Divergence> {
    let (mut a, mut b) = (Projector::default(), Projector::default());
    compare(real, sim, |o| a.project(o), |o| b.project(o))
}

// ---------------------------------------------------------------------------------------
// What is compared.

/// What a step's observation shows a client, for the comparison: the status code,
/// Warning and content type; the body — a Status whole (kind, status, reason, code,
/// message, details with name/group/kind/causes), an object whole but for its
/// resourceVersion and generation, which become whether they moved since the run last
/// saw the object (`first`, `unchanged`, `moved`; generation `=N` when first seen, then
/// `+N`), lists item by item, tables' columns and rows, discovery keyed by
/// group/version/resource; a watch's events as `TYPE name`; kubectl's success, output and
/// errors; the placeholders an earlier answer could not fill. Then `ALLOWED` takes out
/// what may differ. The script's own checks are not in it: they are asserted on the real
/// apiserver, everything they look at is here, and their absolute values (generation 5)
/// would repeat one divergence in every later step.
#[derive(Default)]
struct Projector {
    /// Each object's generation and resourceVersion when the run last saw it, by uid.
    seen: HashMap<String, (Value, Value)>,
    /// Each uid (`uid#N`, by order of appearance) as whose it is (`uid of Kind/name`):
    /// one extra object on one side must not renumber every uid after it.
    owners: HashMap<String, String>,
}

impl Projector {
    fn project(&mut self, o: &Observed) -> Value {
        let v = &o.value;
        let mut p = match o.kind {
            StepKind::Request => json!({
                "code": v["answer"]["code"],
                "warning": v["answer"]["warning"],
                "contentType": v["answer"]["contentType"],
                "body": self.body(&v["body"]),
            }),
            StepKind::Watch => {
                let events = v["events"].as_array().cloned().unwrap_or_default();
                json!({"code": v["code"], "contentType": v["contentType"],
                    "events": seq(&events), "body": self.body(&v["body"])})
            }
            StepKind::Kubectl => json!({"ok": v["ok"], "stdout": self.body(&v["stdout"]),
                "stderr": v["stderr"]}),
        };
        if let Some(missing) = v.get("missing") {
            p["missing"] = missing.clone();
        }
        for rule in ALLOWED {
            if let Some(apply) = rule.apply {
                apply(o, &mut p);
            }
        }
        let uid = regex::Regex::new(r"uid#\d+").unwrap();
        each(&mut p, &mut |_, x| {
            if let Value::String(s) = x {
                let owner = |c: &regex::Captures| {
                    let owner = self.owners.get(&c[0]);
                    owner.map_or_else(|| c[0].to_string(), |o| format!("uid of {o}"))
                };
                *s = uid.replace_all(s, owner).into_owned();
            }
        });
        p
    }

    fn body(&mut self, v: &Value) -> Value {
        let kind = v["kind"].as_str().unwrap_or_default();
        match kind {
            "Status" => v.clone(),
            "APIGroupDiscoveryList" => aggregated(v),
            "APIResourceList" => resource_list(v),
            "APIGroupList" => group_list(v),
            "Table" => {
                let mut t = v.clone();
                let rows = t.get_mut("rows").and_then(Value::as_array_mut);
                for row in rows.into_iter().flatten().filter_map(Value::as_object_mut) {
                    if let Some(object) = row.get_mut("object") {
                        *object = self.object(object);
                    }
                }
                t
            }
            _ if kind.ends_with("List") && v["items"].is_array() => {
                let mut list = v.clone();
                let items = v["items"].as_array().unwrap();
                let kind = kind.trim_end_matches("List");
                list["items"] = items.iter().map(|i| self.item(i, kind)).collect();
                list
            }
            _ if v["metadata"].is_object() => self.object(v),
            _ => v.clone(),
        }
    }

    /// A list's item, whose kind only the list says.
    fn item(&mut self, v: &Value, kind: &str) -> Value {
        let kind = v["kind"].as_str().unwrap_or(kind).to_string();
        self.learn(v, &kind);
        self.object(v)
    }

    /// Whose uid `v`'s is.
    fn learn(&mut self, v: &Value, kind: &str) {
        let (uid, name) = (&v["metadata"]["uid"], &v["metadata"]["name"]);
        if let (Some(uid), Some(name), false) = (uid.as_str(), name.as_str(), kind.is_empty()) {
            let owner = format!("{kind}/{name}");
            self.owners.entry(uid.into()).or_insert(owner);
        }
    }

    /// An object, its generation and resourceVersion as movements since last seen.
    fn object(&mut self, v: &Value) -> Value {
        let kind = v["kind"].as_str().filter(|k| *k != "PartialObjectMetadata");
        self.learn(v, kind.unwrap_or_default());
        let mut o = v.clone();
        let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) else {
            return o;
        };
        let Some(uid) = meta.get("uid").and_then(Value::as_str).map(str::to_string) else {
            return o;
        };
        let before = self.seen.get(&uid).cloned();
        let now = (
            meta.get("generation").cloned().unwrap_or(Value::Null),
            meta.get("resourceVersion").cloned().unwrap_or(Value::Null),
        );
        // A view without a generation (a Scale) keeps the object's last one.
        let keep = match (&now.0, &before) {
            (Value::Null, Some(b)) => b.0.clone(),
            (g, _) => g.clone(),
        };
        self.seen.insert(uid, (keep, now.1.clone()));
        let (generation, rv) = match before {
            None => (
                now.0.as_i64().map(|g| format!("={g}")),
                Some("first".into()),
            ),
            Some(b) => (
                (now.0.as_i64().zip(b.0.as_i64())).map(|(n, b)| format!("{:+}", n - b)),
                Some(if now.1 == b.1 { "unchanged" } else { "moved" }.to_string()),
            ),
        };
        if let Some(g) = generation {
            meta.insert("generation".into(), json!(g));
        }
        if !now.1.is_null() {
            meta.insert("resourceVersion".into(), json!(rv));
        }
        o
    }
}

/// `/api` and `/apis` aggregated: `group/version/resource` → scope, kind, verbs,
/// shortNames, categories, singular, subresources (each: kind, verbs); and each group's
/// versions in order.
fn aggregated(v: &Value) -> Value {
    let (mut resources, mut groups) = (Map::new(), Map::new());
    for g in v["items"].as_array().into_iter().flatten() {
        let group = g["metadata"]["name"].as_str().unwrap_or_default();
        let versions = g["versions"].as_array().into_iter().flatten();
        let mut names = Vec::new();
        for ver in versions {
            let version = ver["version"].as_str().unwrap_or_default();
            names.push(json!({"version": version, "freshness": ver["freshness"]}));
            for r in ver["resources"].as_array().into_iter().flatten() {
                let mut r = r.clone();
                let name = r["resource"].as_str().unwrap_or_default().to_string();
                let mut subs = Map::new();
                for s in r["subresources"].as_array().into_iter().flatten() {
                    let mut s = s.clone();
                    let sub = s["subresource"].as_str().unwrap_or_default().to_string();
                    s.as_object_mut().unwrap().remove("subresource");
                    subs.insert(sub, s);
                }
                r["subresources"] = Value::Object(subs);
                r.as_object_mut().unwrap().remove("resource");
                resources.insert(format!("{group}/{version}/{name}"), r);
            }
        }
        groups.insert(group.into(), json!(names));
    }
    json!({"kind": v["kind"], "groups": groups, "resources": resources})
}

/// A group version's resources (`/api/v1`, `/apis/apps/v1`), by name.
fn resource_list(v: &Value) -> Value {
    let mut resources = Map::new();
    for r in v["resources"].as_array().into_iter().flatten() {
        let mut r = r.clone();
        let name = r["name"].as_str().unwrap_or_default().to_string();
        r.as_object_mut().unwrap().remove("name");
        resources.insert(name, r);
    }
    json!({"kind": v["kind"], "groupVersion": v["groupVersion"], "resources": resources})
}

/// `/apis`: each group's versions and preferred version, by group.
fn group_list(v: &Value) -> Value {
    let mut groups = Map::new();
    for g in v["groups"].as_array().into_iter().flatten() {
        let mut g = g.clone();
        let name = g["name"].as_str().unwrap_or_default().to_string();
        g.as_object_mut().unwrap().remove("name");
        groups.insert(name, g);
    }
    json!({"kind": v["kind"], "groups": groups})
}

// ---------------------------------------------------------------------------------------
// What may differ.

/// A difference the comparison does not count, and why.
struct Allowed {
    what: &'static str,
    why: &'static str,
    /// How it is taken out of a step's projection (None: done before, where `what` says).
    apply: Option<fn(&Observed, &mut Value)>,
}

/// Every difference between the real apiserver and the simulator that is not a
/// divergence, in one place.
const ALLOWED: &[Allowed] = &[
    Allowed {
        what: "uids, creation/deletion timestamps, managedFields times, the namespace's \
               name, generated names, resourceVersion values (common::api_script::Normaliser)",
        why: "random or clock values, different in any two runs, even on one server",
        apply: None,
    },
    Allowed {
        what: "resourceVersion and generation values become movements (Projector::object)",
        why: "each server counts its own writes (the real one also the control plane's); \
              what a client relies on is whether they moved, and that they only grow",
        apply: None,
    },
    Allowed {
        what: "uid values become whose they are (`uid of Deployment/web`), wherever quoted \
               (Projector::project)",
        why: "ranks would shift after one object more or less on one side, and make every \
              later step differ",
        apply: None,
    },
    Allowed {
        what: "the media type of steps that accept protobuf or JSON, and their bodies \
               reduced to what the protobuf decoder here reads (kind, metadata's names, \
               uid, resourceVersion, generation, timestamps, labels, annotations, \
               finalizers; a Status's reason, code, message)",
        why: "the simulator serves no protobuf (docs/simulator.md, 'Not simulated'); a \
              client that also accepts JSON gets JSON from it, and the same object",
        apply: Some(protobuf_or_json),
    },
    Allowed {
        what: "BOOKMARK events other than the one ending sendInitialEvents",
        why: "periodic bookmarks come on a timer (about a minute on the real apiserver)",
        apply: Some(periodic_bookmarks),
    },
    Allowed {
        what: "the cells of a table's Age column and other date columns",
        why: "a duration since creation: the clock",
        apply: Some(table_ages),
    },
    Allowed {
        what: "a Service's clusterIP/clusterIPs values, and a table's Cluster-IP cells \
               (\"None\" stays)",
        why: "allocated at random from the service CIDR",
        apply: Some(cluster_ips),
    },
    Allowed {
        what: "the random suffix of a pod's kube-api-access-XXXXX volume",
        why: "the ServiceAccount admission plugin draws it",
        apply: Some(api_access_volume),
    },
    Allowed {
        what: "PEM certificates (kube-root-ca.crt's ca.crt)",
        why: "each server has its own CA",
        apply: Some(certificates),
    },
    Allowed {
        what: "a TokenRequest's token, expirationTimestamp and default audiences",
        why: "a signed token, a time, and the apiserver's --service-account-issuer (the \
              envtest apiserver's own URL; kubeadm's is the simulator's \
              https://kubernetes.default.svc.cluster.local)",
        apply: Some(tokens),
    },
    Allowed {
        what: "the oldest resourceVersion in a 410's message (\"too old resource version: \
               1 (N)\")",
        why: "where each server's watch history starts",
        apply: Some(too_old_message),
    },
    Allowed {
        what: "/version but for major and minor",
        why: "build facts: patch release, commit, build date, Go version, platform",
        apply: Some(version),
    },
    Allowed {
        what: "/api's serverAddressByClientCIDRs address",
        why: "each server's own host and port",
        apply: Some(server_address),
    },
    Allowed {
        what: "managedFields (whether there is one, and its entries)",
        why: "docs/simulator.md, 'Not simulated': managedFields are approximated (one \
              entry per manager and operation, lists tracked whole, an entry even where \
              the real one records none); no controller reads them — what ownership \
              decides, a server-side apply's conflicts, is compared by its answers",
        apply: Some(field_sets),
    },
    Allowed {
        what: "the text of a Status's message and of each cause's message (kind, status, \
               reason, code, details' name, group and kind, and each cause's reason and \
               field are compared)",
        why: "clients act on the reason, the code and the causes (apierrors.IsInvalid, \
              IsConflict, the field that is wrong); the texts are for people, and quote Go \
              values (`v1.LabelSelector{...}`, a pod spec's diff) the simulator does not \
              render",
        apply: Some(status_messages),
    },
    Allowed {
        what: "discovery's storageVersionHash, and the order of verbs",
        why: "the hash is an opaque token for the storage-version migrator, no client \
              compares it across clusters; verbs are a set",
        apply: Some(discovery_details),
    },
];

/// Apply `f` to every value in `v`, with its key (`""` for array elements).
fn each(v: &mut Value, f: &mut dyn FnMut(&str, &mut Value)) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                f(k, x);
                each(x, f);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| {
            f("", x);
            each(x, f);
        }),
        _ => {}
    }
}

fn protobuf_or_json(o: &Observed, p: &mut Value) {
    if o.value["accept"] != common::api_script::PROTOBUF_OR_JSON {
        return;
    }
    let ctype = p["contentType"].as_str().unwrap_or_default();
    if ctype.starts_with("application/json") || ctype.contains("protobuf") {
        p["contentType"] = json!("protobuf or JSON");
    }
    // What `api_script::protobuf_object` reads of a protobuf object, from either.
    let read = [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "labels",
        "annotations",
        "finalizers",
    ];
    let b = &p["body"];
    if b["kind"] == "Status" {
        let status = json!({"apiVersion": b["apiVersion"], "kind": b["kind"],
            "reason": b["reason"], "code": b["code"], "message": b["message"]});
        p["body"] = status;
    } else if let Some(meta) = b["metadata"].as_object() {
        let mut meta = meta.clone();
        meta.retain(|k, _| read.contains(&k.as_str()));
        p["body"] = json!({"apiVersion": b["apiVersion"], "kind": b["kind"], "metadata": meta});
    }
}

fn periodic_bookmarks(_: &Observed, p: &mut Value) {
    if let Some(events) = p.get_mut("events").and_then(Value::as_array_mut) {
        events.retain(|e| e != "BOOKMARK");
    }
}

fn table_ages(_: &Observed, p: &mut Value) {
    each(p, &mut |_, t| {
        let columns = t.get("columnDefinitions").and_then(Value::as_array);
        let dates: Vec<usize> = (columns.into_iter().flatten().enumerate())
            .filter(|(_, c)| c["type"] == "date" || c["name"] == "Age")
            .map(|(i, _)| i)
            .collect();
        let rows = t.get_mut("rows").and_then(Value::as_array_mut);
        for row in rows.into_iter().flatten() {
            let cells = row.get_mut("cells").and_then(Value::as_array_mut);
            for (i, cell) in cells.into_iter().flatten().enumerate() {
                if dates.contains(&i) {
                    *cell = json!("<age>");
                }
            }
        }
    });
}

fn cluster_ips(_: &Observed, p: &mut Value) {
    let ip = |x: &mut Value| {
        if x.as_str().is_some_and(|s| s != "None" && !s.is_empty()) {
            *x = json!("<cluster IP>");
        }
    };
    each(p, &mut |k, x| match (k, x) {
        ("clusterIP", x) => ip(x),
        ("clusterIPs", Value::Array(a)) => a.iter_mut().for_each(ip),
        _ => {}
    });
    // And a table's Cluster-IP cells.
    let Some(body) = p.get_mut("body").filter(|b| b.is_object()) else {
        return;
    };
    let column = body["columnDefinitions"]
        .as_array()
        .and_then(|cols| cols.iter().position(|c| c["name"] == "Cluster-IP"));
    if let (Some(i), Some(rows)) = (column, body.get_mut("rows").and_then(Value::as_array_mut)) {
        for row in rows {
            if let Some(cell) = row["cells"].get_mut(i) {
                ip(cell);
            }
        }
    }
}

fn replace_in_strings(p: &mut Value, re: &regex::Regex, with: &str) {
    each(p, &mut |_, x| {
        if let Value::String(s) = x {
            *s = re.replace_all(s, with).into_owned();
        }
    });
}

fn api_access_volume(_: &Observed, p: &mut Value) {
    let re = regex::Regex::new(r"kube-api-access-[a-z0-9]{5}").unwrap();
    replace_in_strings(p, &re, "kube-api-access-<random>");
}

fn certificates(_: &Observed, p: &mut Value) {
    let re =
        regex::Regex::new(r"(?s)-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----").unwrap();
    replace_in_strings(p, &re, "<certificate>");
}

fn tokens(_: &Observed, p: &mut Value) {
    if p["body"]["kind"] == "TokenRequest" && p["body"]["status"].is_object() {
        let status = &mut p["body"]["status"];
        for k in ["token", "expirationTimestamp"] {
            if status[k].is_string() {
                status[k] = json!("<set>");
            }
        }
        if p["body"]["spec"]["audiences"].is_array() {
            p["body"]["spec"]["audiences"] = json!(["<the issuer>"]);
        }
    }
}

fn too_old_message(_: &Observed, p: &mut Value) {
    let re = regex::Regex::new(r"(too old resource version: \d+) \(\d+\)").unwrap();
    replace_in_strings(p, &re, "$1 (<oldest>)");
}

fn version(o: &Observed, p: &mut Value) {
    if o.request == "GET /version" {
        let b = &p["body"];
        p["body"] = json!({"major": b["major"], "minor": b["minor"]});
    }
}

fn server_address(_: &Observed, p: &mut Value) {
    each(p, &mut |k, x| {
        if k == "serverAddress" {
            *x = json!("<host:port>");
        }
    });
}

fn field_sets(_: &Observed, p: &mut Value) {
    each(p, &mut |_, x| {
        if let Some(m) = x.as_object_mut() {
            m.remove("managedFields");
        }
    });
}

fn status_messages(_: &Observed, p: &mut Value) {
    each(p, &mut |_, x| {
        let Some(m) = x.as_object_mut() else { return };
        if m.get("kind").and_then(Value::as_str) == Some("Status") {
            m.insert("message".into(), json!("<message>"));
        }
        if let Some(Value::Array(causes)) = m.get_mut("causes") {
            for c in causes.iter_mut().filter_map(Value::as_object_mut) {
                c.insert("message".into(), json!("<message>"));
            }
        }
    });
}

fn discovery_details(_: &Observed, p: &mut Value) {
    each(p, &mut |_, x| {
        if let Some(m) = x.as_object_mut() {
            m.remove("storageVersionHash");
            if let Some(Value::Array(verbs)) = m.get_mut("verbs") {
                verbs.sort_by_key(|v| v.to_string());
            }
        }
    });
}

// ---------------------------------------------------------------------------------------
// The comparison itself, without servers.

// Answers the real apiserver gave in a run of the script, normalised (managedFields and
// column descriptions left out).

const UPDATE_WEB_STATUS: &str = r#"{"kind": "Deployment", "apiVersion": "apps/v1",
  "metadata": {"name": "web", "namespace": "<ns>", "uid": "uid#8", "resourceVersion": "rv#19",
    "generation": 5, "creationTimestamp": "<set>", "labels": {"app": "web", "tier": "frontend"}},
  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}},
      "spec": {"containers": [{"name": "app", "image": "busybox:2",
        "ports": [{"containerPort": 8080, "protocol": "TCP"}], "resources": {},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"}],
      "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
      "securityContext": {}, "schedulerName": "default-scheduler"}},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
    "minReadySeconds": 5, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
  "status": {"observedGeneration": 5, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
    "availableReplicas": 2}}"#;

const STALE_SCALE: &str = r#"{"kind": "Status", "apiVersion": "v1", "metadata": {},
  "status": "Failure", "message": "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again",
  "reason": "Conflict", "details": {"name": "web", "group": "apps", "kind": "deployments"},
  "code": 409}"#;

const CREATE_SERVICE: &str = r#"{"kind": "Service", "apiVersion": "v1",
  "metadata": {"name": "web", "namespace": "<ns>", "uid": "uid#13", "resourceVersion": "rv#36",
    "creationTimestamp": "<set>"},
  "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}],
    "selector": {"app": "web"}, "clusterIP": "10.0.0.79", "clusterIPs": ["10.0.0.79"],
    "type": "ClusterIP", "sessionAffinity": "None", "ipFamilies": ["IPv4"],
    "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"},
  "status": {"loadBalancer": {}}}"#;

const CONFIGMAP_TABLE: &str = r#"{"kind": "Table", "apiVersion": "meta.k8s.io/v1",
  "metadata": {"resourceVersion": "<list>"},
  "columnDefinitions": [{"name": "Name", "type": "string", "format": "name", "priority": 0},
    {"name": "Data", "type": "string", "format": "", "priority": 0},
    {"name": "Age", "type": "string", "format": "", "priority": 0}],
  "rows": [{"cells": ["c1", 4, "1s"], "object": {"kind": "PartialObjectMetadata",
    "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "c1", "namespace": "<ns>",
      "uid": "uid#3", "resourceVersion": "rv#7", "creationTimestamp": "<set>",
      "labels": {"app": "e2e", "tier": "x"}}}}]}"#;

/// A request step that got `body` (JSON text), with `change` made to it.
fn answered(step: &str, code: u16, body: &str, change: impl FnOnce(&mut Value)) -> Observed {
    let mut body: Value = serde_json::from_str(body).expect("a recorded answer");
    change(&mut body);
    Observed {
        step: step.into(),
        request: format!("the request of {step:?}"),
        kind: StepKind::Request,
        value: json!({"accept": "application/json",
            "answer": {"code": code, "warning": null, "contentType": "application/json"},
            "body": body}),
        failed: Vec::new(),
    }
}

/// (2) The comparison fails when it should, naming each divergent step with both
/// observations: recorded real answers against a deliberately wrong simulator — the
/// generation moved on a status update, 200 instead of 409 — while what `ALLOWED` lists
/// (another cluster IP, another Age) does not count.
#[test]
fn the_comparison_reports_every_divergent_step() {
    let (status, stale) = (
        "update web/status",
        "update web/scale with a stale resourceVersion",
    );
    let same = |_: &mut Value| {};
    let real = [
        answered("get web", 200, UPDATE_WEB_STATUS, |d| {
            d["metadata"]["resourceVersion"] = json!("rv#18");
        }),
        answered(status, 200, UPDATE_WEB_STATUS, same),
        answered(stale, 409, STALE_SCALE, same),
        answered("create service web", 201, CREATE_SERVICE, same),
        answered("table of configmaps", 200, CONFIGMAP_TABLE, same),
    ];
    let mut sim = real.clone();
    sim[1] = answered(status, 200, UPDATE_WEB_STATUS, |d| {
        d["metadata"]["generation"] = json!(6);
    });
    sim[2] = answered(stale, 200, UPDATE_WEB_STATUS, |d| {
        d["metadata"]["resourceVersion"] = json!("rv#20");
    });
    sim[3] = answered("create service web", 201, CREATE_SERVICE, |s| {
        s["spec"]["clusterIP"] = json!("10.0.0.200");
        s["spec"]["clusterIPs"] = json!(["10.0.0.200"]);
    });
    sim[4] = answered("table of configmaps", 200, CONFIGMAP_TABLE, |t| {
        t["rows"][0]["cells"][2] = json!("3s");
    });

    let divergences = differences(&real, &sim);
    let steps: Vec<&str> = divergences.iter().map(|d| d.step.as_str()).collect();
    assert_eq!(steps, [status, stale]);
    let text = report(("real", "sim"), real.len(), &divergences);
    assert!(text.starts_with("2 of 5 steps diverge"), "{text}");
    let generation = "/body/metadata/generation: \"+0\" | \"+1\"";
    assert!(text.contains(generation), "{text}");
    assert!(text.contains("/code: 409 | 200"), "{text}");
    for d in &divergences {
        assert!(text.contains(&format!("== step {:?}", d.step)), "{text}");
        assert!(text.contains(&d.a.to_string()) && text.contains(&d.b.to_string()));
    }
    // The same runs against themselves: nothing.
    assert!(differences(&real, &real).is_empty());
    assert!(diff(&json!({"a": [1, 2]}), &json!({"a": [1, 3]})) == ["/a/1: 2 | 3"]);
}

/// (3) The script is well formed: every placeholder names a collection or an earlier
/// step, and every `ALLOWED` entry says why — so a typo fails here, not as a divergence.
#[test]
fn the_script_and_the_allowed_list_are_well_formed() {
    let steps = common::api_script::parse(script::SCRIPT);
    assert!(steps.len() > 100, "{} steps", steps.len());
    let earlier = regex::Regex::new(r"\{(rv|continue|name|uid)@([^}]+)\}").unwrap();
    let collection = regex::Regex::new(r"\{[a-z]+\}").unwrap();
    for (i, step) in steps.iter().enumerate() {
        let text = [&step.expect, &step.request, &step.body]
            .map(|s| s.as_str())
            .join(" ");
        for c in earlier.captures_iter(&text) {
            let found = steps[..i].iter().any(|s| s.name == c[2]);
            assert!(found, "step {:?}: no earlier step {:?}", step.name, &c[2]);
        }
        for c in collection.find_iter(&text) {
            let known =
                c.as_str() == "{ns}" || script::COLLECTIONS.iter().any(|k| k.0 == c.as_str());
            assert!(known, "step {:?}: no collection {}", step.name, c.as_str());
        }
    }
    for rule in ALLOWED {
        assert!(!rule.what.is_empty() && !rule.why.is_empty());
    }
}
