//! Which objects the differential oracle judges: what the clients under test and the
//! workload wrote, the setup's objects, and what those own.
//!
//! A run's end state holds whatever its extent covers, and much of it nobody under test
//! touched: kube-apiserver keeps a date in
//! `kube-system/kube-apiserver-legacy-service-account-token-tracking`, kube-controller-
//! manager (as the cluster, `--with`) writes what it writes. A difference there says
//! nothing about the controller: two runs a midnight apart differ in that date whatever
//! the fault. So the differential judges only objects a client under test or the workload
//! wrote (created, updated, patched or deleted, in any of the runs compared), the
//! setup's, and, following `ownerReferences`, what those own (a Deployment the controller
//! made owns the ReplicaSets the cluster made for it: the controller's doing too).

use std::collections::BTreeSet;

use crate::oracle::ObjectRef;
use crate::oracle::end_state::{Key, State, normalize};
use crate::session::snapshot::base_resource;
use crate::session::{Outcome, Snapshot};
use crate::trace::Record;

/// The objects judged, by the key they have in a snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judged {
    objects: BTreeSet<ObjectRef>,
}

impl Judged {
    /// What run `o` judges: what its clients under test and workload wrote, its setup's
    /// objects, and what they own at its end.
    pub fn of(o: &Outcome) -> Judged {
        let mut j = Judged::default();
        j.add_run(o);
        j
    }

    /// These, and what run `o` judges of its own.
    pub fn and(&self, o: &Outcome) -> Judged {
        let mut j = self.clone();
        j.add_run(o);
        j
    }

    /// These, and what they own in `snapshot`.
    pub fn in_snapshot(&self, snapshot: &Snapshot) -> Judged {
        let mut j = self.clone();
        j.own(snapshot);
        j
    }

    pub fn contains(&self, k: &ObjectRef) -> bool {
        self.objects.contains(k)
    }

    /// The judged part of `snapshot`, normalized (`end_state::normalize`).
    pub fn state(&self, snapshot: &Snapshot) -> State {
        normalize(snapshot.iter().filter(|(k, _)| self.objects.contains(k)))
    }

    /// The keys the judged objects of `snapshot` have once normalized: their name, or
    /// the stem of a generated one (`child-*`).
    pub fn keys(&self, snapshot: &Snapshot) -> BTreeSet<Key> {
        let s = self.state(snapshot);
        s.named.into_keys().chain(s.generated.into_keys()).collect()
    }

    fn add_run(&mut self, o: &Outcome) {
        self.add_trace(&o.trace);
        self.objects.extend(o.setup.iter().map(|a| ObjectRef {
            resource: a.resource.clone(),
            namespace: a.namespace.clone().unwrap_or_default(),
            name: a.name.clone(),
        }));
        self.own(&o.snapshot);
    }

    /// What the clients under test and the workload wrote (and were answered 2xx) or
    /// created in `trace`.
    fn add_trace(&mut self, trace: &[crate::trace::Stamped]) {
        for s in trace {
            match &s.record {
                Record::Request {
                    client,
                    verb,
                    resource,
                    namespace,
                    name: Some(name),
                    code,
                    ..
                } if judged_client(client)
                    && matches!(*verb, "create" | "update" | "patch" | "delete")
                    && (200..300).contains(code) =>
                {
                    self.objects.insert(ObjectRef {
                        resource: base_resource(resource).to_string(),
                        namespace: namespace.clone().unwrap_or_default(),
                        name: name.clone(),
                    });
                }
                Record::Created {
                    client,
                    resource,
                    namespace,
                    name,
                    ..
                } if judged_client(client) => {
                    self.objects.insert(ObjectRef {
                        resource: base_resource(resource).to_string(),
                        namespace: namespace.clone(),
                        name: name.clone(),
                    });
                }
                _ => {}
            }
        }
    }

    /// Add what the judged objects own in `snapshot`, and what that owns, and so on.
    fn own(&mut self, snapshot: &Snapshot) {
        loop {
            let uids: BTreeSet<&str> = snapshot
                .iter()
                .filter(|(k, _)| self.objects.contains(k))
                .filter_map(|(_, v)| v["metadata"]["uid"].as_str())
                .collect();
            let owned: Vec<ObjectRef> = snapshot
                .iter()
                .filter(|(k, _)| !self.objects.contains(k))
                .filter(|(_, v)| {
                    v["metadata"]["ownerReferences"]
                        .as_array()
                        .is_some_and(|refs| {
                            refs.iter()
                                .any(|r| r["uid"].as_str().is_some_and(|u| uids.contains(u)))
                        })
                })
                .map(|(k, _)| k.clone())
                .collect();
            if owned.is_empty() {
                return;
            }
            self.objects.extend(owned);
        }
    }
}

/// Whose writes make an object judged: the controllers under test and the workload —
/// every client of an explore run but `other` (`judge::under_test`, and the workload).
fn judged_client(client: &str) -> bool {
    client != crate::schedule::OTHER
}

/// `state` with only the objects (or generated groups) named in `keys`.
pub fn only(state: &State, keys: &BTreeSet<Key>) -> State {
    State {
        named: state
            .named
            .iter()
            .filter(|(k, _)| keys.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        generated: state
            .generated
            .iter()
            .filter(|(k, _)| keys.contains(*k))
            .map(|(k, v)| (k.clone(), *v))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Stamped;
    use serde_json::json;
    use std::time::{Duration, SystemTime};

    fn key(resource: &str, namespace: &str, name: &str) -> ObjectRef {
        ObjectRef {
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn write(client: &str, verb: &'static str, k: &ObjectRef, code: u16) -> Stamped {
        Stamped {
            at: SystemTime::UNIX_EPOCH + Duration::from_millis(1),
            record: Record::Request {
                client: client.into(),
                verb,
                resource: format!("{}/status", k.resource),
                namespace: Some(k.namespace.clone()).filter(|n| !n.is_empty()),
                name: Some(k.name.clone()),
                code,
                latency_ms: 1.0,
                answer: "upstream",
                window: None,
                resource_version: None,
                note: None,
                precondition: false,
            },
        }
    }

    /// The controller's objects, the workload's, the setup's and what they own are
    /// judged; what only kube-apiserver (or a failed write) touched is not.
    #[test]
    fn what_clients_under_test_wrote_or_own_is_judged_and_nothing_else() {
        let mine = key("widgets.x", "demo", "w1");
        let child = key("configmaps", "demo", "w1-config");
        let grandchild = key("secrets", "demo", "w1-secret");
        let users = key("configmaps", "demo", "user");
        let apiservers = key(
            "configmaps",
            "kube-system",
            "kube-apiserver-legacy-service-account-token-tracking",
        );
        let refused = key("configmaps", "demo", "refused");
        let setup = key("widgets.x", "demo", "from-setup");
        let mut snapshot = Snapshot::new();
        snapshot.insert(mine.clone(), json!({"metadata": {"uid": "u-w1"}}));
        snapshot.insert(
            child.clone(),
            json!({"metadata": {"uid": "u-c", "ownerReferences": [{"uid": "u-w1"}]}}),
        );
        snapshot.insert(
            grandchild.clone(),
            json!({"metadata": {"uid": "u-g", "ownerReferences": [{"uid": "u-c"}]}}),
        );
        snapshot.insert(users.clone(), json!({"metadata": {"uid": "u-u"}}));
        snapshot.insert(
            apiservers.clone(),
            json!({"metadata": {"uid": "u-a"}, "data": {"since": "2026-12-06"}}),
        );
        snapshot.insert(refused.clone(), json!({"metadata": {"uid": "u-r"}}));
        snapshot.insert(setup.clone(), json!({"metadata": {"uid": "u-s"}}));
        let trace = vec![
            write("controller", "patch", &mine, 200),
            write("workload", "update", &users, 200),
            write("controller", "create", &refused, 409),
            write("other", "patch", &apiservers, 200),
        ];
        let mut j = Judged::default();
        j.add_trace(&trace);
        j.objects.insert(setup.clone());
        let j = j.in_snapshot(&snapshot);
        for k in [&mine, &child, &grandchild, &users, &setup] {
            assert!(j.contains(k), "{k:?}");
        }
        for k in [&apiservers, &refused] {
            assert!(!j.contains(k), "{k:?}");
        }
        assert_eq!(j.state(&snapshot).named.len(), 5);
    }
}
