//! The `expected` oracle: what fault-free runs of the same controller showed, carried
//! by a schedule, held against this run's end.
//!
//! Explore's differential oracle needs its two reference runs beside every trial, so a
//! finding only it sees used to make a reproducer that `stalemate run` passed: nothing
//! to compare with. A reproducer now carries what the references showed for exactly
//! what its finding is about — the end-state fields (`status.succeeded: 6`), the objects
//! there or not, the creates and deletes by the controller (`pods created: 10`) — and
//! `run` judges it alone: exit 1 where the bug is, 0 where it is not, on any version of
//! the controller, with no fault-free run.
//!
//! ```json
//! "expected": {
//!   "from": "2 fault-free reference runs (stalemate explore)",
//!   "objects": [{"resource": "jobs.batch", "namespace": "demo", "name": "pi",
//!                "fields": {"status.succeeded": 6}}],
//!   "writes": [{"resource": "pods", "created": 10}]
//! }
//! ```
//!
//! Fields are compared after the same normalisation explore applies (`end_state.rs`:
//! timestamps, uids and resourceVersions out); a field path is what the differential
//! oracle prints; `null` means absent. A name ending in `*` is a group of generated
//! names (`web-*`) and carries a `count`. Counts allow for requests the controller gave
//! up on before their answer (killed by a `restart`): those may or may not have been
//! done, as in explore.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::k8s::request::Verb;
use crate::oracle::end_state::{self, State, describe, show};
use crate::oracle::hooks::{Answered, Oracle};
use crate::oracle::name::OracleName;
use crate::oracle::object_ref::ObjectRef;
use crate::oracle::state::Shared;
use crate::oracle::verdicts::Violation;

/// The `expected` section of a schedule's oracles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedConfig {
    /// Where the expectations come from, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from: String,
    /// Which client's creates and deletes `writes` counts (default: `controller`, the
    /// client `run` and `explore` name the controller under test).
    #[serde(default = "controller", skip_serializing_if = "is_controller")]
    pub client: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ExpectedObject>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<ExpectedWrites>,
}

fn controller() -> String {
    "controller".into()
}

fn is_controller(c: &str) -> bool {
    c == "controller"
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// One object as the references ended with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedObject {
    /// As kubectl names it (`plural.group`).
    pub resource: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Its name, or a generated-name group (`web-*`).
    pub name: String,
    /// Whether it exists at the end (false: it must not).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub exists: bool,
    /// For a generated-name group: how many there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
    /// Field paths and their values (`null`: absent).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, Value>,
}

impl ExpectedObject {
    fn key(&self) -> ObjectRef {
        ObjectRef {
            resource: self.resource.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// How many objects of a resource the controller created and deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedWrites {
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<usize>,
}

/// Creates and deletes the controller certainly did (answered 2xx), per (resource,
/// `created` | `deleted`). One it gave up on before its answer (killed by a `restart`)
/// may or may not have been done, and only more than expected is a violation: it does
/// not count.
pub type WriteCounts = BTreeMap<(String, &'static str), usize>;

/// The oracle: counts the controller's creates and deletes while the run goes, judges
/// the end state once it is over.
pub(super) struct Expected {
    config: ExpectedConfig,
    writes: WriteCounts,
}

impl Expected {
    pub(super) fn new(config: ExpectedConfig) -> Expected {
        Expected {
            config,
            writes: WriteCounts::new(),
        }
    }
}

impl Oracle for Expected {
    fn name(&self) -> OracleName {
        OracleName::Expected
    }

    /// A create or delete it counts: done (2xx) only (see [`WriteCounts`]).
    fn on_request(&mut self, r: &Answered<'_>, _shared: &Shared) -> u64 {
        let what = match r.verb {
            Verb::Create => "created",
            Verb::Delete => "deleted",
            _ => return 0,
        };
        let e = &self.config;
        if r.client != e.client || !e.writes.iter().any(|w| w.resource == r.resource) {
            return 0;
        }
        if (200..300).contains(&r.code) {
            *self
                .writes
                .entry((r.resource.to_string(), what))
                .or_default() += 1;
        }
        0
    }

    fn judge_end(&self, end: &State, at: SystemTime) -> Vec<Violation> {
        judge(&self.config, end, &self.writes, at)
    }
}

/// The resources and namespaces the end state must be read from to judge `config`.
pub fn extent(config: &ExpectedConfig) -> (Vec<String>, Vec<String>) {
    let resources = config.objects.iter().map(|o| o.resource.clone()).collect();
    let namespaces = config
        .objects
        .iter()
        .filter(|o| !o.namespace.is_empty())
        .map(|o| o.namespace.clone())
        .collect();
    (resources, namespaces)
}

/// Judge the end state and the controller's writes against what was expected.
pub fn judge(
    config: &ExpectedConfig,
    end: &State,
    writes: &WriteCounts,
    at: SystemTime,
) -> Vec<Violation> {
    let from = if config.from.is_empty() {
        "expected"
    } else {
        "in the fault-free references"
    };
    let mut found = Vec::new();
    for o in &config.objects {
        object_differences(o, end, from, &mut found);
    }
    write_differences(config, writes, from, &mut found);
    found
        .into_iter()
        .map(|(k, rule)| Violation {
            oracle: OracleName::Expected,
            resource: k.resource,
            namespace: k.namespace,
            name: k.name,
            rule,
            since: at,
            client: None,
            until: None,
            peak: None,
            why: None,
        })
        .collect()
}

/// How the end state differs from one expected object: its count of generated names,
/// its being there or not, or its fields.
fn object_differences(
    o: &ExpectedObject,
    end: &State,
    from: &str,
    found: &mut Vec<(ObjectRef, String)>,
) {
    let k = o.key();
    if let Some(want) = o.count {
        let got = end.generated.get(&k).copied().unwrap_or(0);
        if got != want {
            let rule = format!("objects named {}: {want} {from}, {got} here", describe(&k));
            found.push((k, rule));
        }
        return;
    }
    match (end.named.get(&k), o.exists) {
        (None, true) => {
            let rule = format!("{} is missing (it exists {from})", describe(&k));
            found.push((k, rule));
        }
        (Some(_), false) => {
            let rule = format!("{} exists here and not {from}", describe(&k));
            found.push((k, rule));
        }
        (Some(v), true) => {
            for (path, want) in &o.fields {
                let got = end_state::lookup(v, path);
                if got != want {
                    let rule = format!("{path}: {} {from}, {} here", show(want), show(got));
                    found.push((k.clone(), rule));
                }
            }
        }
        (None, false) => {}
    }
}

/// The controller's creates and deletes past what the references did, per resource.
fn write_differences(
    config: &ExpectedConfig,
    writes: &WriteCounts,
    from: &str,
    found: &mut Vec<(ObjectRef, String)>,
) {
    for w in &config.writes {
        for (what, want) in [("created", w.created), ("deleted", w.deleted)] {
            let Some(want) = want else { continue };
            let done = writes
                .get(&(w.resource.clone(), what))
                .copied()
                .unwrap_or_default();
            // At most what the references did (explore/judge.rs says why fewer is no
            // violation).
            if done > want {
                let k = ObjectRef {
                    resource: w.resource.clone(),
                    namespace: String::new(),
                    name: String::new(),
                };
                let rule = format!(
                    "the {} {what} {} {} ({want} {from})",
                    config.client, done, w.resource
                );
                found.push((k, rule));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn end(objects: &[(&str, &str, Value)]) -> State {
        let snapshot: Vec<(ObjectRef, Value)> = objects
            .iter()
            .map(|(r, n, v)| {
                (
                    ObjectRef {
                        resource: r.to_string(),
                        namespace: "demo".into(),
                        name: n.to_string(),
                    },
                    v.clone(),
                )
            })
            .collect();
        end_state::normalize(snapshot.iter().map(|(k, v)| (k, v)))
    }

    fn config() -> ExpectedConfig {
        serde_json::from_value(json!({
            "from": "2 fault-free reference runs",
            "objects": [
                {"resource": "jobs.batch", "namespace": "demo", "name": "pi",
                 "fields": {"status.succeeded": 6, "status.failed": null}},
                {"resource": "configmaps", "namespace": "demo", "name": "gone", "exists": false},
                {"resource": "pods", "namespace": "demo", "name": "pi-*", "count": 6}
            ],
            "writes": [{"resource": "pods", "created": 6}]
        }))
        .unwrap()
    }

    fn pod(name: &str) -> (&'static str, String, Value) {
        (
            "pods",
            name.to_string(),
            json!({"metadata": {"name": name, "generateName": "pi-"}}),
        )
    }

    #[test]
    fn what_the_references_showed_passes_and_anything_else_is_named() {
        let c = config();
        let pods: Vec<_> = (0..6).map(|i| pod(&format!("pi-{i}"))).collect();
        let mut objects: Vec<(&str, &str, Value)> = pods
            .iter()
            .map(|(r, n, v)| (*r, n.as_str(), v.clone()))
            .collect();
        objects.push((
            "jobs.batch",
            "pi",
            json!({"metadata": {"name": "pi", "uid": "u1"}, "status": {"succeeded": 6}}),
        ));
        let writes = WriteCounts::from([(("pods".to_string(), "created"), 5)]);
        assert_eq!(judge(&c, &end(&objects), &writes, SystemTime::now()), []);
        // Fewer than the references is no violation: work folded together.
        let fewer = WriteCounts::from([(("pods".to_string(), "created"), 3)]);
        assert_eq!(judge(&c, &end(&objects), &fewer, SystemTime::now()), []);

        let pods: Vec<_> = (0..8).map(|i| pod(&format!("pi-{i}"))).collect();
        let mut objects: Vec<(&str, &str, Value)> = pods
            .iter()
            .map(|(r, n, v)| (*r, n.as_str(), v.clone()))
            .collect();
        objects.push((
            "jobs.batch",
            "pi",
            json!({"metadata": {"name": "pi"}, "status": {"succeeded": 8, "failed": 1}}),
        ));
        objects.push(("configmaps", "gone", json!({"metadata": {"name": "gone"}})));
        let writes = WriteCounts::from([(("pods".to_string(), "created"), 8)]);
        let rules: Vec<String> = judge(&c, &end(&objects), &writes, SystemTime::now())
            .into_iter()
            .map(|v| v.rule)
            .collect();
        assert_eq!(
            rules,
            [
                "status.failed: absent in the fault-free references, 1 here",
                "status.succeeded: 6 in the fault-free references, 8 here",
                "configmaps demo/gone exists here and not in the fault-free references",
                "objects named pods demo/pi-*: 6 in the fault-free references, 8 here",
                "the controller created 8 pods (6 in the fault-free references)",
            ]
        );
        assert_eq!(
            judge(&c, &end(&[]), &WriteCounts::new(), SystemTime::now())[0].rule,
            "jobs.batch demo/pi is missing (it exists in the fault-free references)"
        );
    }

    #[test]
    fn the_section_reads_back_as_written() {
        let c = config();
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ExpectedConfig>(&text).unwrap(), c);
        let e = serde_json::from_value::<ExpectedConfig>(
            json!({"writes": [{"resource": "pods", "made": 1}]}),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown field `made`"), "{e}");
    }
}
