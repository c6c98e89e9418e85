//! The differential oracle (Sieve's): a faulted run's end state against the fault-free
//! reference runs'. A controller that recovered ends where it ends without faults; one
//! that did not leaves a field behind (`status.observedGeneration: 1 in reference, 0
//! here`), an object missing, one too many.
//!
//! What differs between two fault-free runs says nothing about faults: uids,
//! resourceVersions, timestamps, generated names. Those are removed before comparing
//! (`normalize`), and whatever still differs between the two references is masked
//! (`Masks`), as Sieve masks the fields its two reference runs disagree on.

use std::collections::{BTreeMap, BTreeSet};

use crate::session::Snapshot;

pub use crate::oracle::end_state::{Key, State, describe, differences, show};

/// What is ignored: per object, the field paths the references disagree on; and names
/// made per run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Masks {
    pub fields: BTreeMap<Key, BTreeSet<String>>,
    /// Names that differ between the references in their last part, as a hash of
    /// something each control plane has of its own does (kube-controller-manager's
    /// ClusterTrustBundle `kubernetes.io:kube-apiserver-serving:<hash of its CA>`): the
    /// stem they share, `stem*`. Objects named so are counted, as generated names are.
    pub per_run: BTreeSet<Key>,
}

impl Masks {
    /// `state` with the objects whose names are made per run counted by their stem.
    pub fn fold(&self, state: &State) -> State {
        if self.per_run.is_empty() {
            return state.clone();
        }
        let mut out = State {
            named: BTreeMap::new(),
            generated: state.generated.clone(),
        };
        for (k, v) in &state.named {
            let stem = self.per_run.iter().find(|s| {
                s.resource == k.resource
                    && s.namespace == k.namespace
                    && k.name.starts_with(s.name.trim_end_matches('*'))
            });
            match stem {
                Some(s) => *out.generated.entry(s.clone()).or_default() += 1,
                None => {
                    out.named.insert(k.clone(), v.clone());
                }
            }
        }
        out
    }
}

/// Why two fault-free runs cannot serve as a reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Disagreement(pub String);

/// One difference found.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub object: Key,
    /// The field path, or what is wrong with the object as a whole.
    pub what: String,
    /// The message a person reads.
    pub message: String,
}

/// Remove what always differs between runs, and key the objects.
pub fn normalize(snapshot: &Snapshot) -> State {
    crate::oracle::end_state::normalize(snapshot)
}

/// Two references: the fields they disagree on become masks; objects one has and the
/// other lacks make them no reference at all — unless the other did not look there (its
/// clients never touched that resource in that namespace): `covered(run, key)` says
/// whether run 0 (`a`) or 1 (`b`) read that object's place.
///
/// Objects each reference has and the other lacks, as many in each of the same resource
/// and namespace, whose names differ only after a stem they share (up to a `:`, `-`, `.`
/// or `_`), are named per run: counted by that stem (`Masks::per_run`).
pub fn masks(
    a: &State,
    b: &State,
    covered: impl Fn(usize, &Key) -> bool,
) -> Result<Masks, Disagreement> {
    let mut m = Masks {
        per_run: per_run(a, b, &covered),
        ..Masks::default()
    };
    let (a, b) = (&m.fold(a), &m.fold(b));
    for k in a.named.keys().chain(b.named.keys()) {
        match (a.named.get(k), b.named.get(k)) {
            (Some(_), None) if !covered(1, k) => {}
            (None, Some(_)) if !covered(0, k) => {}
            (Some(x), Some(y)) => {
                let paths: BTreeSet<String> =
                    differences(x, y).into_iter().map(|(p, _, _)| p).collect();
                if !paths.is_empty() {
                    m.fields.insert(k.clone(), paths);
                }
            }
            _ => {
                return Err(Disagreement(format!(
                    "{} exists at the end of one fault-free run and not the other",
                    describe(k)
                )));
            }
        }
    }
    if a.generated != b.generated {
        let k = a
            .generated
            .keys()
            .chain(b.generated.keys())
            .find(|k| a.generated.get(*k) != b.generated.get(*k));
        if let Some(k) = k {
            return Err(Disagreement(format!(
                "the fault-free runs end with {} and {} objects named {}",
                a.generated.get(k).unwrap_or(&0),
                b.generated.get(k).unwrap_or(&0),
                describe(k)
            )));
        }
    }
    Ok(m)
}

/// The stems of the names each reference made of its own (see [`masks`]).
fn per_run(a: &State, b: &State, covered: &impl Fn(usize, &Key) -> bool) -> BTreeSet<Key> {
    // Per resource and namespace: the names only one reference has, each side sorted.
    type Place = (String, String);
    let mut only: BTreeMap<Place, [Vec<&str>; 2]> = BTreeMap::new();
    for (side, (this, other)) in [(a, b), (b, a)].into_iter().enumerate() {
        for k in this.named.keys() {
            if !other.named.contains_key(k) && covered(1 - side, k) {
                let place = (k.resource.clone(), k.namespace.clone());
                only.entry(place).or_default()[side].push(&k.name);
            }
        }
    }
    let mut stems = BTreeSet::new();
    for ((resource, namespace), [mut x, mut y]) in only {
        if x.len() != y.len() {
            continue;
        }
        x.sort_unstable();
        y.sort_unstable();
        for (p, q) in x.iter().zip(&y) {
            if let Some(stem) = stem(p, q) {
                stems.insert(Key {
                    resource: resource.clone(),
                    namespace: namespace.clone(),
                    name: format!("{stem}*"),
                });
            }
        }
    }
    stems
}

/// What two names share before the part that differs, cut back to just after a
/// separator (`:`, `-`, `.`, `_`): `serving:3f2a` and `serving:9c1e` share `serving:`;
/// names that share no such stem, none.
fn stem<'a>(p: &'a str, q: &str) -> Option<&'a str> {
    let common = p
        .char_indices()
        .zip(q.chars())
        .find(|((_, x), y)| x != y)
        .map_or(p.len().min(q.len()), |((i, _), _)| i);
    let cut = p[..common].rfind([':', '-', '.', '_'])? + 1;
    Some(&p[..cut])
}

/// A faulted run's state against the reference, masks applied.
pub fn compare(reference: &State, masks: &Masks, run: &State) -> Vec<Difference> {
    let (reference, run) = (&masks.fold(reference), &masks.fold(run));
    let mut out = Vec::new();
    for (k, want) in &reference.named {
        match run.named.get(k) {
            None => out.push(Difference {
                object: k.clone(),
                what: "missing".into(),
                message: format!(
                    "{} is missing (it exists in the reference runs)",
                    describe(k)
                ),
            }),
            Some(got) => {
                let masked = masks.fields.get(k);
                for (path, r, h) in differences(want, got) {
                    if masked.is_some_and(|m| m.iter().any(|p| covers(p, &path))) {
                        continue;
                    }
                    out.push(Difference {
                        object: k.clone(),
                        message: format!("{path}: {} in reference, {} here", show(&r), show(&h)),
                        what: path,
                    });
                }
            }
        }
    }
    for k in run
        .named
        .keys()
        .filter(|k| !reference.named.contains_key(*k))
    {
        out.push(Difference {
            object: k.clone(),
            what: "extra".into(),
            message: format!("{} exists here and not in the reference runs", describe(k)),
        });
    }
    for k in reference.generated.keys().chain(run.generated.keys()) {
        let (r, h) = (
            reference.generated.get(k).copied().unwrap_or(0),
            run.generated.get(k).copied().unwrap_or(0),
        );
        if r != h && !out.iter().any(|d| d.object == *k) {
            out.push(Difference {
                object: k.clone(),
                what: "count".into(),
                message: format!("objects named {}: {r} in reference, {h} here", describe(k)),
            });
        }
    }
    out
}

/// A masked path covers itself and what is below it.
fn covers(mask: &str, path: &str) -> bool {
    path == mask
        || path
            .strip_prefix(mask)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::ObjectRef;
    use serde_json::{Value, json};

    fn key(resource: &str, name: &str) -> Key {
        ObjectRef {
            resource: resource.into(),
            namespace: "demo".into(),
            name: name.into(),
        }
    }

    fn snapshot(objects: &[(&str, &str, Value)]) -> Snapshot {
        objects
            .iter()
            .map(|(r, n, v)| (key(r, n), v.clone()))
            .collect()
    }

    fn gitrepo(observed: i64, uid: &str, at: &str) -> Value {
        json!({
            "metadata": {"name": "podinfo", "namespace": "demo", "uid": uid, "resourceVersion": "17",
                         "creationTimestamp": at, "generation": 1,
                         "ownerReferences": [{"kind": "X", "name": "x", "uid": uid}]},
            "spec": {"url": "https://a"},
            "status": {"observedGeneration": observed, "artifact": {"revision": "main@sha1:abc", "lastUpdateTime": at}}
        })
    }

    /// What differs between any two runs never counts; what differs between the two
    /// references is masked; what differs only in the faulted run is named with both
    /// values.
    #[test]
    fn a_field_left_behind_is_named_with_both_values() {
        let a = normalize(&snapshot(&[
            (
                "gitrepositories",
                "podinfo",
                gitrepo(1, "u1", "2026-11-23T10:00:00Z"),
            ),
            (
                "configmaps",
                "c",
                json!({"metadata": {"name": "c"}, "data": {"nonce": "1"}}),
            ),
        ]));
        let b = normalize(&snapshot(&[
            (
                "gitrepositories",
                "podinfo",
                gitrepo(1, "u2", "2026-11-23T10:00:07.5Z"),
            ),
            (
                "configmaps",
                "c",
                json!({"metadata": {"name": "c"}, "data": {"nonce": "2"}}),
            ),
        ]));
        let m = masks(&a, &b, |_, _| true).unwrap();
        assert_eq!(
            m.fields.get(&key("configmaps", "c")),
            Some(&BTreeSet::from(["data.nonce".to_string()]))
        );
        assert!(!m.fields.contains_key(&key("gitrepositories", "podinfo")));
        assert!(compare(&a, &m, &b).is_empty());

        let stuck = normalize(&snapshot(&[
            (
                "gitrepositories",
                "podinfo",
                gitrepo(0, "u3", "2026-11-23T11:00:00Z"),
            ),
            (
                "configmaps",
                "c",
                json!({"metadata": {"name": "c"}, "data": {"nonce": "3"}}),
            ),
        ]));
        let d = compare(&a, &m, &stuck);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].what, "status.observedGeneration");
        assert_eq!(
            d[0].message,
            "status.observedGeneration: 1 in reference, 0 here"
        );
    }

    #[test]
    fn missing_extra_and_generated_objects() {
        let child = |name: &str| json!({"metadata": {"name": name, "generateName": "child-"}});
        let reference = normalize(&snapshot(&[
            ("configmaps", "child-abcde", child("child-abcde")),
            ("configmaps", "keep", json!({"metadata": {"name": "keep"}})),
        ]));
        assert_eq!(
            reference.generated.get(&key("configmaps", "child-*")),
            Some(&1)
        );
        let run = normalize(&snapshot(&[
            ("configmaps", "child-abcde", child("child-abcde")),
            ("configmaps", "child-fghij", child("child-fghij")),
            (
                "configmaps",
                "surprise",
                json!({"metadata": {"name": "surprise"}}),
            ),
        ]));
        let d = compare(&reference, &Masks::default(), &run);
        let messages: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "configmaps demo/keep is missing (it exists in the reference runs)",
                "configmaps demo/surprise exists here and not in the reference runs",
                "objects named configmaps demo/child-*: 1 in reference, 2 here",
            ]
        );
    }

    #[test]
    fn references_that_disagree_on_objects_are_no_reference() {
        let a = normalize(&snapshot(&[(
            "configmaps",
            "x",
            json!({"metadata": {"name": "x"}}),
        )]));
        let b = normalize(&Snapshot::new());
        let e = masks(&a, &b, |_, _| true).unwrap_err();
        assert_eq!(
            e.0,
            "configmaps demo/x exists at the end of one fault-free run and not the other"
        );
        // Unless the other run never looked there.
        assert!(masks(&a, &b, |run, _| run == 0).is_ok());
    }

    /// Each control plane has a CA of its own, and kube-controller-manager publishes it
    /// as a ClusterTrustBundle named after its hash: the references each have one, named
    /// differently. They are counted by the stem of their names — and so is a trial's,
    /// named differently again; one too many is still a difference. Names that share no
    /// stem are still no reference.
    #[test]
    fn names_made_per_run_are_counted_by_their_stem() {
        let bundle = |hash: &str| {
            let name = format!("kubernetes.io:kube-apiserver-serving:{hash}");
            (
                name.clone(),
                json!({"metadata": {"name": name}, "spec": {"trustBundle": hash}}),
            )
        };
        let state = |hashes: &[&str]| {
            let objects: Vec<(String, Value)> = hashes.iter().map(|h| bundle(h)).collect();
            let mut s = Snapshot::new();
            for (name, v) in objects {
                s.insert(
                    ObjectRef {
                        resource: "clustertrustbundles.certificates.k8s.io".into(),
                        namespace: String::new(),
                        name,
                    },
                    v,
                );
            }
            s.insert(
                key("configmaps", "keep"),
                json!({"metadata": {"name": "keep"}}),
            );
            normalize(&s)
        };
        let (a, b) = (state(&["3f2a"]), state(&["9c1e"]));
        let m = masks(&a, &b, |_, _| true).unwrap();
        assert_eq!(
            m.per_run
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>(),
            ["kubernetes.io:kube-apiserver-serving:*"]
        );
        assert!(compare(&a, &m, &b).is_empty());
        assert!(compare(&a, &m, &state(&["77d0"])).is_empty());
        let d = compare(&a, &m, &state(&["77d0", "5b5b"]));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            d[0].message,
            "objects named clustertrustbundles.certificates.k8s.io kubernetes.io:kube-apiserver-serving:*: 1 in reference, 2 here"
        );
        let gone = compare(&a, &m, &state(&[]));
        assert_eq!(gone.len(), 1, "{gone:?}");

        let other = normalize(&snapshot(&[(
            "configmaps",
            "y",
            json!({"metadata": {"name": "y"}}),
        )]));
        let mine = normalize(&snapshot(&[(
            "configmaps",
            "x",
            json!({"metadata": {"name": "x"}}),
        )]));
        assert!(masks(&mine, &other, |_, _| true).is_err());
        assert_eq!(stem("web:1", "web:2"), Some("web:"));
        assert_eq!(stem("serving:a1b2", "serving:a1c3"), Some("serving:"));
        assert_eq!(stem("ab", "ac"), None);
    }

    #[test]
    fn masks_cover_what_is_below_them() {
        assert!(covers("status.conditions", "status.conditions[0].status"));
        assert!(covers("data", "data.x"));
        assert!(!covers("data", "database"));
    }
}
