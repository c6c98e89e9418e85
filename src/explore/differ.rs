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

use serde_json::Value;

use crate::oracle::{ObjectRef, segment};
use crate::session::Snapshot;

/// An object's key for comparison: generated names (`generateName`) fold into one group
/// per prefix (`web-*`), counted rather than matched by name.
pub type Key = ObjectRef;

/// A run's end state, normalized.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    /// Objects with names of their own.
    pub named: BTreeMap<Key, Value>,
    /// Generated names: how many objects per prefix.
    pub generated: BTreeMap<Key, usize>,
}

/// What is ignored: per object, the field paths the references disagree on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Masks {
    pub fields: BTreeMap<Key, BTreeSet<String>>,
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
    let mut s = State::default();
    for (k, v) in snapshot {
        let mut v = v.clone();
        clean(&mut v, 0);
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for f in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "managedFields",
                "selfLink",
            ] {
                meta.remove(f);
            }
        }
        let prefix = v["metadata"]["generateName"]
            .as_str()
            .filter(|p| !p.is_empty() && k.name.starts_with(p))
            .map(str::to_string);
        match prefix {
            Some(p) => {
                *s.generated
                    .entry(ObjectRef {
                        name: format!("{p}*"),
                        ..k.clone()
                    })
                    .or_default() += 1;
            }
            None => {
                s.named.insert(k.clone(), v);
            }
        }
    }
    s
}

/// `uid`s anywhere (owner references) and timestamps become placeholders.
fn clean(v: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    match v {
        Value::Object(m) => {
            if let Some(u) = m.get_mut("uid") {
                *u = Value::String("<uid>".into());
            }
            for (_, x) in m.iter_mut() {
                clean(x, depth + 1);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| clean(x, depth + 1)),
        Value::String(s) if looks_like_time(s) => *s = "<time>".into(),
        _ => {}
    }
}

/// RFC 3339 (`2026-11-23T16:54:51Z`, with fractions or an offset).
fn looks_like_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && humantime::parse_rfc3339_weak(&s[..19]).is_ok()
}

/// Leaves that differ: (path, value in a, value in b). Arrays of the same length are
/// compared element by element, others as a whole.
pub fn differences(a: &Value, b: &Value) -> Vec<(String, Value, Value)> {
    fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, Value, Value)>, depth: usize) {
        if a == b {
            return;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) if depth < 64 => {
                for k in x.keys().chain(y.keys()).collect::<BTreeSet<_>>() {
                    let p = if path.is_empty() {
                        segment(k).trim_start_matches('.').to_string()
                    } else {
                        format!("{path}{}", segment(k))
                    };
                    walk(
                        &p,
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                        out,
                        depth + 1,
                    );
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() && depth < 64 => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    walk(&format!("{path}[{i}]"), p, q, out, depth + 1);
                }
            }
            _ => out.push((path.to_string(), a.clone(), b.clone())),
        }
    }
    let mut out = Vec::new();
    walk("", a, b, &mut out, 0);
    out
}

/// Two references: the fields they disagree on become masks; objects one has and the
/// other lacks make them no reference at all — unless the other did not look there (its
/// clients never touched that resource in that namespace): `covered(run, key)` says
/// whether run 0 (`a`) or 1 (`b`) read that object's place.
pub fn masks(
    a: &State,
    b: &State,
    covered: impl Fn(usize, &Key) -> bool,
) -> Result<Masks, Disagreement> {
    let mut m = Masks::default();
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

/// A faulted run's state against the reference, masks applied.
pub fn compare(reference: &State, masks: &Masks, run: &State) -> Vec<Difference> {
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

fn show(v: &Value) -> String {
    match v {
        Value::Null => "absent".into(),
        other => {
            let s = other.to_string();
            if s.len() > 80 {
                format!("{}…", s.chars().take(77).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// `resource namespace/name` (or `resource name`).
pub fn describe(k: &Key) -> String {
    if k.namespace.is_empty() {
        format!("{} {}", k.resource, k.name)
    } else {
        format!("{} {}/{}", k.resource, k.namespace, k.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn masks_cover_what_is_below_them() {
        assert!(covers("status.conditions", "status.conditions[0].status"));
        assert!(covers("data", "data.x"));
        assert!(!covers("data", "database"));
    }
}
