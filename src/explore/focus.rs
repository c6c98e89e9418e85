//! Focus: which plans to try first. A real controller manager writes a great deal that
//! has nothing to do with what the user is testing — kube-controller-manager makes
//! service accounts, tokens and root-CA config maps in every namespace at start — and a
//! breadth-first search over all of it reaches the Deployment the user cares about after
//! hours. So plans are ranked by how close they come to the user's objects:
//!
//! - **the focus**: the resources of the setup's objects and of the workload's writes,
//!   of the objects they own (followed through `ownerReferences` in the reference run's
//!   end state, transitively: a Deployment's ReplicaSets, their Pods), and those the
//!   convergence oracle judges — or exactly the resources `--focus` names;
//! - rank 1: the plan's windows open on a focused resource and act on focused ones
//!   only (or on the whole controller: a restart);
//! - rank 2: one of the two is focused;
//! - rank 3: neither (start-up writes elsewhere, another controller's objects).
//!
//! Within a rank, plans keep their round order (breadth first).

use std::collections::BTreeSet;

use serde_json::Value;

use super::plan::Plan;
use crate::k8s::request::Verb;
use crate::session::snapshot::{Snapshot, base_resource};
use crate::session::{Outcome, WORKLOAD};
use crate::setup::SCAFFOLDING;
use crate::trace::Record;

/// The resources the user cares about, and why.
#[derive(Debug, Clone, Default)]
pub struct Focus {
    pub resources: BTreeSet<String>,
    /// Named with `--focus` rather than derived.
    pub explicit: bool,
}

impl Focus {
    /// `--focus`: resources as `plural.group` or a plural alone (any group).
    pub fn named(names: &[String]) -> Focus {
        Focus {
            resources: names.iter().map(|n| n.trim().to_string()).collect(),
            explicit: true,
        }
    }

    /// Derived from a reference run: the setup's and the workload's objects, what they
    /// own, and the resources the convergence oracle judges.
    pub fn derive(reference: &Outcome, converge: &[String]) -> Focus {
        let mut resources: BTreeSet<String> = converge.iter().cloned().collect();
        let mut seeds: BTreeSet<(String, String, String)> = BTreeSet::new();
        for a in &reference.setup {
            if !SCAFFOLDING.contains(&a.resource.as_str()) {
                let ns = a.namespace.clone().unwrap_or_default();
                seeds.insert((a.resource.clone(), ns, a.name.clone()));
            }
        }
        for s in &reference.trace {
            if let Record::Request {
                client,
                verb,
                resource,
                namespace,
                name,
                ..
            } = &s.record
                && client == WORKLOAD
                && Verb::from_name(verb).is_some_and(Verb::is_write)
            {
                let base = base_resource(resource).to_string();
                if SCAFFOLDING.contains(&base.as_str()) {
                    continue;
                }
                resources.insert(base.clone());
                if let Some(n) = name {
                    seeds.insert((base, namespace.clone().unwrap_or_default(), n.clone()));
                }
            }
        }
        resources.extend(seeds.iter().map(|(r, ..)| r.clone()));
        resources.extend(owned(&reference.snapshot, &seeds));
        Focus {
            resources,
            explicit: false,
        }
    }

    /// Whether `resource` (`plural.group`) is in focus.
    pub fn has(&self, resource: &str) -> bool {
        let resource = base_resource(resource);
        self.resources.iter().any(|f| {
            f == resource || (!f.contains('.') && resource.split('.').next() == Some(f.as_str()))
        })
    }

    /// A plan's rank: 1 on the focus, 2 near it, 3 elsewhere.
    pub fn rank(&self, p: &Plan) -> u8 {
        let anchor = self.has(&p.anchor);
        let targets = p.targets.iter().all(|t| self.has(t));
        let any_target = p.targets.iter().any(|t| self.has(t));
        match (anchor, targets, any_target) {
            (true, true, _) => 1,
            (true, false, _) | (false, _, true) => 2,
            (false, _, false) => 3,
        }
    }

    /// Rank the plans and order them: by rank, then by round (stable, so breadth first
    /// within a round as the planner made them). Returns how many each rank holds.
    pub fn order(&self, plans: &mut [Plan]) -> [usize; 3] {
        for p in plans.iter_mut() {
            p.rank = self.rank(p);
        }
        plans.sort_by_key(|p| (p.rank, p.round));
        let mut counts = [0; 3];
        for p in plans.iter() {
            counts[usize::from(p.rank.clamp(1, 3) - 1)] += 1;
        }
        counts
    }

    /// Where each round of the focus (rank 1) starts in the order `order` made: a budget
    /// that stops before round 2 tries no long freeze, and a user choosing `--budget`
    /// wants to know. `rank 1: round 1 trials 1–120, round 2 121–130, …`.
    pub fn rounds(plans: &[Plan]) -> String {
        let mut spans: Vec<(u8, usize, usize)> = Vec::new();
        for (i, p) in plans.iter().enumerate().filter(|(_, p)| p.rank == 1) {
            match spans.last_mut() {
                Some((round, _, last)) if *round == p.round => *last = i + 1,
                _ => spans.push((p.round, i + 1, i + 1)),
            }
        }
        if spans.is_empty() {
            return "nothing on the focus".into();
        }
        spans
            .iter()
            .map(|(round, first, last)| format!("round {round} trials {first}–{last}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `deployments.apps, pods, replicasets.apps`
    pub fn describe(&self) -> String {
        if self.resources.is_empty() {
            return "nothing".into();
        }
        self.resources
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The resources of objects owned, directly or through others, by the seed objects
/// (resource, namespace, name), as the end state's `ownerReferences` say.
fn owned(snapshot: &Snapshot, seeds: &BTreeSet<(String, String, String)>) -> BTreeSet<String> {
    let uid = |v: &Value| v["metadata"]["uid"].as_str().map(str::to_string);
    let mut owners: BTreeSet<String> = snapshot
        .iter()
        .filter(|(k, _)| seeds.contains(&(k.resource.clone(), k.namespace.clone(), k.name.clone())))
        .filter_map(|(_, v)| uid(v))
        .collect();
    let mut resources = BTreeSet::new();
    loop {
        let before = owners.len();
        for (k, v) in snapshot {
            let owned_by_one = v["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r["uid"].as_str().is_some_and(|u| owners.contains(u)))
                });
            if owned_by_one && let Some(u) = uid(v) {
                resources.insert(k.resource.clone());
                owners.insert(u);
            }
        }
        if owners.len() == before {
            return resources;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::ObjectRef;
    use serde_json::json;

    fn obj(resource: &str, name: &str, uid: &str, owner: Option<&str>) -> (ObjectRef, Value) {
        let mut v = json!({"metadata": {"name": name, "namespace": "demo", "uid": uid}});
        if let Some(o) = owner {
            v["metadata"]["ownerReferences"] = json!([{"uid": o, "kind": "X", "name": "x"}]);
        }
        (
            ObjectRef {
                resource: resource.into(),
                namespace: "demo".into(),
                name: name.into(),
            },
            v,
        )
    }

    #[test]
    fn ownership_is_followed_through_generations() {
        let snapshot: Snapshot = [
            obj("deployments.apps", "web", "d1", None),
            obj("replicasets.apps", "web-1", "r1", Some("d1")),
            obj("pods", "web-1-a", "p1", Some("r1")),
            obj("serviceaccounts", "default", "s1", None),
            obj("secrets", "token", "t1", Some("s1")),
        ]
        .into_iter()
        .collect();
        let seeds = BTreeSet::from([("deployments.apps".into(), "demo".into(), "web".into())]);
        assert_eq!(
            owned(&snapshot, &seeds),
            BTreeSet::from(["replicasets.apps".to_string(), "pods".to_string()])
        );
    }

    fn plan(anchor: &str, targets: &[&str], round: u8) -> Plan {
        Plan {
            label: format!("{anchor} {targets:?} {round}"),
            slug: String::new(),
            round,
            windows: vec![],
            anchor: anchor.into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            rank: 0,
            phase: 0,
        }
    }

    #[test]
    fn plans_on_the_focus_come_first_breadth_first_within_a_rank() {
        let f = Focus::named(&["deployments.apps".into(), "pods".into()]);
        assert!(f.has("pods/status") && f.has("deployments.apps") && !f.has("replicasets.apps"));
        let mut plans = vec![
            plan("serviceaccounts", &[], 1),
            plan("pods", &["serviceaccounts"], 1),
            plan("pods", &["deployments.apps"], 2),
            plan("deployments.apps", &[], 1),
            plan("secrets", &["pods"], 3),
            plan("pods", &["pods"], 3),
        ];
        let counts = f.order(&mut plans);
        assert_eq!(counts, [3, 2, 1]);
        assert_eq!(
            Focus::rounds(&plans),
            "round 1 trials 1–1, round 2 trials 2–2, round 3 trials 3–3"
        );
        let order: Vec<(u8, u8, &str)> = plans
            .iter()
            .map(|p| (p.rank, p.round, p.anchor.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                (1, 1, "deployments.apps"),
                (1, 2, "pods"),
                (1, 3, "pods"),
                (2, 1, "pods"),
                (2, 3, "secrets"),
                (3, 1, "serviceaccounts"),
            ]
        );
    }

    #[test]
    fn a_plural_alone_names_any_group() {
        let f = Focus::named(&["deployments".into()]);
        assert!(f.has("deployments.apps") && !f.has("daemonsets.apps"));
    }
}
