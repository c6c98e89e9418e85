//! A run's end state as runs are compared: what always differs between two runs of the
//! same controller (uids, resourceVersions, timestamps, generated names) taken out, each
//! object keyed by what names it. Explore's differential oracle compares two of these;
//! the `expected` oracle (`expected.rs`) holds one against what a reproducer carries.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::object_ref::ObjectRef;
use super::paths::segment;

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

/// Remove what always differs between runs, and key the objects.
pub fn normalize<'a>(objects: impl IntoIterator<Item = (&'a ObjectRef, &'a Value)>) -> State {
    let mut s = State::default();
    for (k, v) in objects {
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
            // A `touch` leaves nothing behind, but a controller may have copied its
            // annotation while it was there (a Deployment's onto its ReplicaSet).
            let annotations = meta.get_mut("annotations").and_then(Value::as_object_mut);
            if let Some(a) = annotations {
                a.remove(crate::fault::touch::ANNOTATION);
                if a.is_empty() {
                    meta.remove("annotations");
                }
            }
        }
        match generated_prefix(k, &v) {
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

/// The `generateName` an object's name was made from, if it was.
fn generated_prefix(k: &ObjectRef, v: &Value) -> Option<String> {
    v["metadata"]["generateName"]
        .as_str()
        .filter(|p| !p.is_empty() && k.name.starts_with(p))
        .map(str::to_string)
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
            if let Some(Value::Array(c)) = m.get_mut("conditions") {
                by_type(c);
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

/// `conditions` are a map keyed by `type` (the API conventions' `+listType=map`,
/// `+listMapKey=type`), not a sequence: in type order, so that two runs that set the
/// same conditions in another order compare equal. Karpenter's NodePool keeps its
/// conditions in the order of their `lastTransitionTime`, to the second — two set in the
/// same second come in the order their writes landed. A list whose items are not all
/// objects with a string `type` is left as it is.
fn by_type(c: &mut [Value]) {
    if c.iter()
        .all(|x| x.get("type").and_then(Value::as_str).is_some())
    {
        c.sort_by(|a, b| {
            let t = |x: &Value| {
                x.get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            t(a).cmp(&t(b))
        });
    }
}

/// A time or a date, as Kubernetes and its controllers write them: RFC 3339
/// (`2026-11-23T16:54:51Z`, with fractions or an offset), Go's `time.Time.String()`
/// (`2026-11-23 16:54:51.5 +0000 UTC`), or a calendar date alone (`2026-11-23`: what
/// kube-apiserver keeps in `kube-apiserver-legacy-service-account-token-tracking`'s
/// `data.since`). Two runs a midnight apart differ in the date, as two runs a second
/// apart differ in the time: neither says anything about a fault.
fn looks_like_time(s: &str) -> bool {
    let b = s.as_bytes();
    let date = b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && humantime::parse_rfc3339_weak(&format!("{}T00:00:00", &s[..10])).is_ok();
    if !date {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    b.len() >= 19
        && (b[10] == b'T' || b[10] == b' ')
        && b[13] == b':'
        && b[16] == b':'
        && s.is_char_boundary(19)
        && humantime::parse_rfc3339_weak(&format!("{}T{}", &s[..10], &s[11..19])).is_ok()
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

/// The value at a path as [`differences`] writes it (`status.conditions[0].type`,
/// `metadata.labels["app.kubernetes.io/name"]`); `Null` where there is none (absent and
/// null are one to the comparison).
pub fn lookup<'a>(v: &'a Value, path: &str) -> &'a Value {
    const NULL: Value = Value::Null;
    let mut at = v;
    let mut rest = path;
    while !rest.is_empty() {
        rest = rest.strip_prefix('.').unwrap_or(rest);
        let (next, tail) = if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = closing(r) else { return &NULL };
            let inside = &r[..end];
            let tail = &r[end + 1..];
            if let Ok(i) = inside.parse::<usize>() {
                at = at.get(i).unwrap_or(&NULL);
                rest = tail;
                continue;
            }
            match serde_json::from_str::<String>(inside) {
                Ok(key) => (key, tail),
                Err(_) => return &NULL,
            }
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            (rest[..end].to_string(), &rest[end..])
        };
        at = at.get(next.as_str()).unwrap_or(&NULL);
        rest = tail;
    }
    at
}

/// Where the `]` closing a bracket segment is: after a quoted key's closing quote.
fn closing(r: &str) -> Option<usize> {
    if !r.starts_with('"') {
        return r.find(']');
    }
    let mut escaped = false;
    for (i, c) in r.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return r[i..].find(']').map(|j| i + j),
            _ => {}
        }
    }
    None
}

/// A value as a message shows it: `absent` for none, long ones cut.
pub fn show(v: &Value) -> String {
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

    /// The same conditions in another order are the same end state.
    #[test]
    fn conditions_compare_by_type_not_position() {
        let k = ObjectRef {
            resource: "nodepools.karpenter.sh".into(),
            namespace: String::new(),
            name: "default".into(),
        };
        let a = json!({"status": {"conditions": [
            {"type": "ValidationSucceeded", "status": "True", "reason": "ValidationSucceeded"},
            {"type": "NodeClassReady", "status": "True", "reason": "NodeClassReady"},
            {"type": "Ready", "status": "True", "reason": "Ready"}]}});
        let b = json!({"status": {"conditions": [
            {"type": "NodeClassReady", "status": "True", "reason": "NodeClassReady"},
            {"type": "ValidationSucceeded", "status": "True", "reason": "ValidationSucceeded"},
            {"type": "Ready", "status": "True", "reason": "Ready"}]}});
        let (sa, sb) = (normalize([(&k, &a)]), normalize([(&k, &b)]));
        assert_eq!(sa.named.get(&k), sb.named.get(&k));
        let c = json!({"status": {"conditions": [
            {"type": "NodeClassReady", "status": "False", "reason": "NotFound"},
            {"type": "ValidationSucceeded", "status": "True", "reason": "ValidationSucceeded"},
            {"type": "Ready", "status": "True", "reason": "Ready"}]}});
        assert_ne!(sa.named.get(&k), normalize([(&k, &c)]).named.get(&k));
    }
    use super::*;
    use serde_json::json;

    /// Every path `differences` writes leads `lookup` back to the value it found.
    #[test]
    fn lookup_follows_the_paths_differences_writes() {
        let a = json!({"status": {"succeeded": 6, "conditions": [{"type": "Complete"}]},
                       "metadata": {"labels": {"app.kubernetes.io/name": "web", "x": "1"}}});
        let b = json!({"status": {"succeeded": 8, "conditions": [{"type": "Failed"}]},
                       "metadata": {"labels": {"app.kubernetes.io/name": "db", "y]\"[": "2"}}});
        let d = differences(&a, &b);
        assert_eq!(d.len(), 5, "{d:?}");
        for (path, va, vb) in d {
            assert_eq!(lookup(&a, &path), &va, "{path}");
            assert_eq!(lookup(&b, &path), &vb, "{path}");
        }
        assert_eq!(lookup(&a, "status.nothing.here"), &Value::Null);
        assert_eq!(lookup(&a, "status.conditions[7]"), &Value::Null);
        assert_eq!(lookup(&a, "metadata.labels[\"unclosed"), &Value::Null);
        assert_eq!(lookup(&a, ""), &a);
    }

    /// Times and dates, however written, are masked; what only looks like one is not.
    #[test]
    fn dates_are_times_too() {
        for t in [
            "2026-11-23T16:54:51Z",
            "2026-11-23T16:54:51.123456+01:00",
            "2026-11-23 16:54:51.5 +0000 UTC",
            "2026-12-06",
            "2026-12-07",
        ] {
            assert!(looks_like_time(t), "{t}");
        }
        for not in [
            "2026-13-06",
            "2026-12-06-rc1",
            "v2026-12-06",
            "20261206",
            "2026-12-06Tlate",
            "2026-02-30",
        ] {
            assert!(!looks_like_time(not), "{not}");
        }
        let mut a = json!({"data": {"since": "2026-12-06"}});
        clean(&mut a, 0);
        assert_eq!(a, json!({"data": {"since": "<time>"}}));
    }
}
