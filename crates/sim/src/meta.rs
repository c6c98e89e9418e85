//! Object metadata rules: key order, names, timestamps, generation and managedFields.
//!
//! Key order is cosmetic to clients but not to people diffing bodies against a real
//! server: built-in types serialize in Go struct order (`kind`, `apiVersion`, `metadata`
//! with `name`, `namespace`, `uid`, ...), custom resources are unstructured maps that Go
//! encodes with sorted keys (see `fixtures/.../cr-create.body` vs `ns-create.body`).

use serde_json::{Map, Value};

use super::resource_type::ResourceType;

/// ObjectMeta fields in Go struct order (`k8s.io/apimachinery/pkg/apis/meta/v1/types.go`).
pub(crate) const META_ORDER: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// ManagedFieldsEntry fields in Go struct order.
pub(crate) const MANAGED_ORDER: &[&str] = &[
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

/// Top-level fields after `metadata`, per built-in kind, in Go struct order.
fn body_order(kind: &str) -> &'static [&'static str] {
    match kind {
        "ConfigMap" | "Secret" => &["immutable", "data", "stringData", "binaryData", "type"],
        "ServiceAccount" => &[
            "secrets",
            "imagePullSecrets",
            "automountServiceAccountToken",
        ],
        "Event" => &[
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
        ],
        _ => &["spec", "status"],
    }
}

/// Move the keys in `order` to the front, in that order; others keep theirs after them.
pub(crate) fn reorder(map: &mut Map<String, Value>, order: &[&str]) {
    let mut out = Map::with_capacity(map.len());
    for k in order {
        if let Some(v) = map.shift_remove(*k) {
            out.insert((*k).to_string(), v);
        }
    }
    let rest = std::mem::take(map);
    out.extend(rest);
    *map = out;
}

/// Sort map keys recursively, as Go's `encoding/json` does for `map[string]interface{}`.
pub(crate) fn sort_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.sort_keys();
            m.values_mut().for_each(sort_keys);
        }
        Value::Array(a) => a.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// Put an object's keys in the order the real apiserver writes them.
pub(crate) fn canonicalize(rt: &ResourceType, obj: &mut Value) {
    if rt.custom {
        sort_keys(obj);
        return;
    }
    let Some(m) = obj.as_object_mut() else { return };
    let mut order = vec!["kind", "apiVersion", "metadata"];
    order.extend_from_slice(body_order(&rt.kind));
    reorder(m, &order);
    if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
        reorder(meta, META_ORDER);
        for k in ["labels", "annotations"] {
            if let Some(Value::Object(x)) = meta.get_mut(k) {
                x.sort_keys();
            }
        }
        if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
            for e in entries.iter_mut().filter_map(Value::as_object_mut) {
                reorder(e, MANAGED_ORDER);
            }
        }
    }
    for k in ["data", "binaryData"] {
        if let Some(Value::Object(x)) = m.get_mut(k) {
            x.sort_keys();
        }
    }
}

/// RFC 3339 at second precision, as `metav1.Time` marshals.
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Five characters from the alphabet `names.SimpleNameGenerator` uses (no vowels, no
/// look-alikes), so generated names look like the real ones.
pub(crate) fn generate_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Why `name` is not a valid DNS-1123 subdomain (or label, for namespaces), in the words
/// of apimachinery's `validation.IsDNS1123Subdomain`.
pub(crate) fn name_problem(name: &str, label: bool) -> Option<String> {
    let max = if label { 63 } else { 253 };
    if name.len() > max {
        return Some(format!("must be no more than {max} characters"));
    }
    let ok_char =
        |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (!label && c == '.');
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if name.is_empty()
        || !name.chars().all(ok_char)
        || !alnum(name.chars().next())
        || !alnum(name.chars().last())
    {
        return Some(if label {
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".into()
        } else {
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into()
        });
    }
    None
}

/// Whether anything the generation tracks differs: everything outside `metadata`, and
/// outside `status` when status is a subresource
/// (`apiextensions registry/customresource/strategy.go PrepareForUpdate`). A kind may
/// track more (`Strategy::spec_changed`: a Deployment's annotations).
pub(crate) fn spec_changed(rt: &ResourceType, old: &Value, new: &Value) -> bool {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return old != new;
    };
    let ignored = |k: &str| {
        matches!(k, "metadata" | "apiVersion" | "kind") || (rt.status_subresource && k == "status")
    };
    let mut keys = o.keys().chain(n.keys()).filter(|k| !ignored(k));
    keys.any(|k| o.get(k) != n.get(k))
}

/// `new`'s `metadata[key]` as `old` has it (absent when it is absent there): what a
/// status write may not change.
pub(crate) fn keep_old(old: &Value, new: &mut Value, key: &str) {
    match old["metadata"].get(key) {
        Some(v) => new["metadata"][key] = v.clone(),
        None => {
            if let Some(m) = new["metadata"].as_object_mut() {
                m.shift_remove(key);
            }
        }
    }
}

/// Add the finalizer `f` to `obj`, unless it has it.
pub(crate) fn add_finalizer(obj: &mut Value, f: &str) {
    match obj["metadata"]
        .get_mut("finalizers")
        .and_then(Value::as_array_mut)
    {
        Some(fs) if fs.iter().any(|x| x == f) => {}
        Some(fs) => fs.push(f.into()),
        None => obj["metadata"]["finalizers"] = serde_json::json!([f]),
    }
}

/// Objects equal apart from what the server alone maintains on a write
/// (resourceVersion, managedFields): such a write is a no-op — no RV bump, no event
/// (`etcd3/store.go GuaranteedUpdate`, kubernetes#67562).
pub(crate) fn same_content(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v["metadata"].as_object_mut() {
            m.shift_remove("resourceVersion");
            m.shift_remove("managedFields");
        }
        if let Some(m) = v.as_object_mut() {
            m.shift_remove("apiVersion");
        }
        v
    };
    strip(old) == strip(new)
}

// ---- managedFields -------------------------------------------------------------------
//
// An approximation of server-side field management, enough for `kubectl get
// --show-managed-fields` and the shape of recorded bodies: one entry per (manager,
// operation, subresource); a write adds the fields it changed to its manager's entry and
// takes them away from every other entry. Lists are owned as a whole (the real server
// tracks list items by key: `k:{...}`, `v:...`); conflicts are not detected for apply.

/// Which part of the object a write may touch, and so which fields it can own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Main resource: everything but status when status is a subresource.
    Main {
        status_subresource: bool,
    },
    Status,
}

fn in_scope(scope: Scope, key: &str) -> bool {
    match scope {
        Scope::Status => key == "status",
        Scope::Main { status_subresource } => {
            !(matches!(key, "apiVersion" | "kind" | "metadata")
                || (status_subresource && key == "status"))
        }
    }
}

const OWNED_META: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];

/// The field set of `v` (as in `fieldsV1`): `f:<key>` per map key, `.` marking a map
/// the manager owns as a whole when `dot` is set.
fn fields_of(v: &Value, dot: bool) -> Value {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let mut out = Map::new();
            if dot {
                out.insert(".".into(), Value::Object(Map::new()));
            }
            for (k, c) in m {
                out.insert(format!("f:{k}"), fields_of(c, dot));
            }
            Value::Object(out)
        }
        _ => Value::Object(Map::new()),
    }
}

/// Fields set in `new` that are absent from or different in `old`.
fn changed_fields(old: Option<&Value>, new: &Value, dot: bool) -> Option<Value> {
    match (old, new) {
        (Some(o), n) if o == n => None,
        (Some(Value::Object(o)), Value::Object(n)) if !n.is_empty() => {
            let mut out = Map::new();
            for (k, c) in n {
                if let Some(f) = changed_fields(o.get(k), c, dot) {
                    out.insert(format!("f:{k}"), f);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (_, n) => Some(fields_of(n, dot)),
    }
}

/// The top-level field set of an object restricted to `scope` (metadata: only the
/// user-owned maps).
fn object_fields(
    old: Option<&Value>,
    new: &Value,
    scope: Scope,
    dot: bool,
    only_changed: bool,
) -> Value {
    let mut out = Map::new();
    let Some(n) = new.as_object() else {
        return Value::Object(out);
    };
    let get_old = |k: &str| old.and_then(|o| o.get(k));
    for (k, c) in n {
        if k == "metadata" {
            if scope == Scope::Status {
                continue;
            }
            let mut meta = Map::new();
            for mk in OWNED_META {
                if let Some(mv) = c.get(*mk) {
                    let f = if only_changed {
                        changed_fields(get_old("metadata").and_then(|m| m.get(*mk)), mv, dot)
                    } else {
                        Some(fields_of(mv, dot))
                    };
                    if let Some(f) = f {
                        meta.insert(format!("f:{mk}"), f);
                    }
                }
            }
            if !meta.is_empty() {
                out.insert("f:metadata".into(), Value::Object(meta));
            }
        } else if in_scope(scope, k) {
            let f = if only_changed {
                changed_fields(get_old(k), c, dot)
            } else {
                Some(fields_of(c, dot))
            };
            if let Some(f) = f {
                out.insert(format!("f:{k}"), f);
            }
        }
    }
    Value::Object(out)
}

fn union(a: &mut Value, b: &Value) {
    if let (Value::Object(am), Value::Object(bm)) = (a, b) {
        for (k, v) in bm {
            union(
                am.entry(k.clone())
                    .or_insert_with(|| Value::Object(Map::new())),
                v,
            );
        }
    }
}

/// Remove from `a` every leaf of `b` (a leaf in `b` removes the whole subtree in `a`).
fn subtract(a: &mut Value, b: &Value) {
    let (Value::Object(am), Value::Object(bm)) = (a, b) else {
        return;
    };
    for (k, bv) in bm {
        if k == "." {
            continue;
        }
        let leaf = bv.as_object().is_some_and(|m| m.is_empty());
        if leaf {
            am.shift_remove(k);
        } else if let Some(av) = am.get_mut(k) {
            let owned_itself = av.get(".").is_some();
            subtract(av, bv);
            if av.as_object().is_some_and(|m| m.keys().all(|k| k == ".")) {
                if owned_itself {
                    // A node owned with no owned children serializes as `{}`
                    // (`fixtures/.../cm-watchlist-json.body`: `"f:data":{}`).
                    *av = Value::Object(Map::new());
                } else {
                    am.shift_remove(k);
                }
            }
        }
    }
}

/// Keep only the fields that still exist in `obj`.
fn prune(fields: &mut Value, obj: &Value) {
    let Value::Object(fm) = fields else { return };
    fm.retain(|k, sub| {
        if k == "." {
            return true;
        }
        let Some(name) = k.strip_prefix("f:") else {
            return true;
        };
        match obj.get(name) {
            None => false,
            Some(child) => {
                prune(sub, child);
                true
            }
        }
    });
}

/// How a write is recorded in managedFields.
pub(crate) struct Write<'a> {
    pub manager: &'a str,
    /// `Update` or `Apply`.
    pub operation: &'a str,
    pub scope: Scope,
    pub api_version: &'a str,
    /// For `Apply`: the applied configuration, which the manager then owns exactly.
    pub applied: Option<&'a Value>,
}

/// Update `new.metadata.managedFields` for a write that turned `old` into `new`.
pub(crate) fn update_managed_fields(old: Option<&Value>, new: &mut Value, w: &Write<'_>) {
    let mut entries: Vec<Value> = old
        .and_then(|o| o["metadata"]["managedFields"].as_array().cloned())
        .unwrap_or_default();
    let subresource = match w.scope {
        Scope::Status => Some("status"),
        Scope::Main { .. } => None,
    };
    let (owned, changed) = match w.applied {
        Some(applied) => {
            let f = object_fields(None, applied, w.scope, false, false);
            (f.clone(), f)
        }
        None => {
            let f = object_fields(old, new, w.scope, true, true);
            (f.clone(), f)
        }
    };
    let is_mine = |e: &Value| {
        e["manager"].as_str() == Some(w.manager)
            && e["operation"].as_str() == Some(w.operation)
            && e["subresource"].as_str() == subresource
    };
    let mut mine = entries.iter().position(is_mine).map(|i| entries.remove(i));
    for e in entries.iter_mut() {
        subtract(&mut e["fieldsV1"], &changed);
    }
    let mut fields = match (&mut mine, w.applied) {
        (Some(e), None) => {
            let mut f = e["fieldsV1"].take();
            union(&mut f, &owned);
            f
        }
        _ => owned,
    };
    prune(&mut fields, new);
    if fields.as_object().is_some_and(|m| !m.is_empty()) {
        let mut e = Map::new();
        e.insert("manager".into(), w.manager.into());
        e.insert("operation".into(), w.operation.into());
        e.insert("apiVersion".into(), w.api_version.into());
        e.insert("time".into(), now_rfc3339().into());
        e.insert("fieldsType".into(), "FieldsV1".into());
        e.insert("fieldsV1".into(), fields);
        if let Some(s) = subresource {
            e.insert("subresource".into(), s.into());
        }
        entries.push(Value::Object(e));
    }
    for e in entries.iter_mut() {
        let mut f = e["fieldsV1"].take();
        prune(&mut f, new);
        e["fieldsV1"] = f;
    }
    entries.retain(|e| e["fieldsV1"].as_object().is_some_and(|m| !m.is_empty()));
    // The order the field manager keeps (`managedfields/internal/managedfields.go
    // sortEncodedManagedFields`): operation, time, manager, subresource, apiVersion.
    entries.sort_by(|a, b| {
        let k = |e: &Value| {
            ["operation", "time", "manager", "subresource", "apiVersion"]
                .map(|f| e[f].as_str().unwrap_or("").to_string())
        };
        k(a).cmp(&k(b))
    });
    new["metadata"]["managedFields"] = if entries.is_empty() {
        Value::Null
    } else {
        Value::Array(entries)
    };
    if new["metadata"]["managedFields"].is_null()
        && let Some(m) = new["metadata"].as_object_mut()
    {
        m.shift_remove("managedFields");
    }
}

/// The manager name for a write: `?fieldManager=`, else the User-Agent up to its first
/// `/` (`handlers/rest.go managerOrUserAgent`).
pub(crate) fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let ua = user_agent.unwrap_or("unknown");
    let prefix = ua.split('/').next().unwrap_or(ua);
    prefix.chars().take(128).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cr() -> ResourceType {
        super::super::registry::from_crd(
            &json!({"spec": {"group": "g.example", "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "subresources": {"status": {}}}]}}),
        )
        .remove(0)
    }

    #[test]
    fn managed_fields_follow_the_recorded_sequence() {
        // fixtures: cr-create → cr-patch-status → cr-json-patch → cr-apply-ssa
        let upd = |scope| Write {
            manager: "curl",
            operation: "Update",
            scope,
            api_version: "g.example/v1",
            applied: None,
        };
        let main = Scope::Main {
            status_subresource: true,
        };
        let mut v1 = json!({"metadata": {"name": "p", "labels": {"app": "p"}}, "spec": {"interval": "1m", "ref": {"branch": "main"}, "url": "u"}});
        update_managed_fields(None, &mut v1, &upd(main));
        assert_eq!(
            v1["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {".": {}, "f:interval": {}, "f:ref": {".": {}, "f:branch": {}}, "f:url": {}}})
        );
        let mut v2 = v1.clone();
        v2["status"] = json!({"observedGeneration": 2, "artifact": {"revision": "r"}});
        update_managed_fields(Some(&v1), &mut v2, &upd(Scope::Status));
        let mf = v2["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(mf.len(), 2);
        // Sorted as the field manager keeps them: the main-resource entry first.
        assert!(mf[0].get("subresource").is_none());
        assert_eq!(mf[1]["subresource"], "status");
        assert_eq!(
            mf[1]["fieldsV1"],
            json!({"f:status": {".": {}, "f:artifact": {".": {}, "f:revision": {}}, "f:observedGeneration": {}}})
        );

        let mut v3 = v2.clone();
        v3["spec"]["interval"] = "2m".into();
        let applied = json!({"apiVersion": "g.example/v1", "kind": "Thing", "metadata": {"name": "p"}, "spec": {"interval": "2m"}});
        update_managed_fields(
            Some(&v2),
            &mut v3,
            &Write {
                manager: "fixture",
                operation: "Apply",
                scope: main,
                api_version: "g.example/v1",
                applied: Some(&applied),
            },
        );
        let mf = v3["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(mf[0]["manager"], "fixture");
        assert_eq!(mf[0]["fieldsV1"], json!({"f:spec": {"f:interval": {}}}));
        let curl_main = mf
            .iter()
            .find(|e| e["manager"] == "curl" && e.get("subresource").is_none())
            .unwrap();
        assert_eq!(
            curl_main["fieldsV1"]["f:spec"],
            json!({".": {}, "f:ref": {".": {}, "f:branch": {}}, "f:url": {}})
        );
    }

    #[test]
    fn generation_ignores_metadata_and_subresource_status() {
        let rt = cr();
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let mut b = a.clone();
        b["metadata"]["labels"]["a"] = "2".into();
        b["status"]["s"] = 2.into();
        assert!(!spec_changed(&rt, &a, &b));
        b["spec"]["x"] = 2.into();
        assert!(spec_changed(&rt, &a, &b));
    }

    #[test]
    fn names() {
        assert!(name_problem("cm-0", false).is_none());
        assert!(name_problem("a.b", false).is_none());
        assert!(name_problem("a.b", true).is_some());
        assert!(name_problem("Bad_Name", false).is_some());
        assert!(name_problem("-x", false).is_some());
        assert_eq!(
            manager_name(None, Some("kubectl-create/v1.28.7 (linux/amd64)")),
            "kubectl-create"
        );
        assert_eq!(manager_name(Some("flux"), Some("x/1")), "flux");
    }

    #[test]
    fn builtin_key_order() {
        let rt = super::super::registry::builtins().remove(0); // configmaps
        let mut v = json!({"data": {"b": "1", "a": "2"}, "metadata": {"uid": "u", "name": "n", "labels": {"z": "1", "a": "2"}}, "apiVersion": "v1", "kind": "ConfigMap"});
        canonicalize(&rt, &mut v);
        let s = serde_json::to_string(&v).unwrap();
        assert_eq!(
            s,
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"n","uid":"u","labels":{"a":"2","z":"1"}},"data":{"a":"2","b":"1"}}"#
        );
    }
}
