//! PATCH bodies: JSON merge patch and JSON patch (RFC 7386 / RFC 6902, via `json-patch`),
//! strategic merge patch for built-in types, and server-side apply approximated as a merge.
//!
//! Strategic merge is a faithful subset of `apimachinery/pkg/util/strategicpatch`: maps
//! merge, `null` deletes, lists of named things merge by their key (containers, env,
//! volumes by `name`; ports by `containerPort`; volumeMounts by `mountPath`; conditions by
//! `type`; ownerReferences by `uid`), `metadata.finalizers` merges as a set, and the
//! directives `$patch: replace|delete`, `$retainKeys`, `$deleteFromPrimitiveList/<f>` and
//! `$setElementOrder/<f>` (accepted; order is not re-applied) are honoured. Other lists are
//! replaced, as for types whose field has no patch strategy.
//!
//! Server-side apply is *approximated*: the applied configuration is merged into the live
//! object like a merge patch and its manager recorded in managedFields with operation
//! `Apply`; field ownership conflicts are not detected and fields a manager stops applying
//! are not removed.

use serde_json::{Map, Value};

/// The patch types the apiserver accepts, by Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    pub(crate) fn from_content_type(ct: &str) -> Option<PatchType> {
        let media = ct.split(';').next().unwrap_or("").trim();
        Some(match media {
            "application/json-patch+json" => PatchType::Json,
            "application/merge-patch+json" => PatchType::Merge,
            "application/strategic-merge-patch+json" => PatchType::Strategic,
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => PatchType::Apply,
            _ => return None,
        })
    }
}

/// Media types a resource accepts for PATCH, in the apiserver's order, for 415 messages.
pub(crate) fn accepted_patch_types(custom: bool) -> &'static [&'static str] {
    if custom {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]
    } else {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ]
    }
}

/// Why a patch could not be applied: a malformed patch (400) or one that does not apply
/// to the object (422), as `handlers/patch.go` distinguishes them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PatchError {
    Malformed(String),
    Unprocessable(String),
}

/// Apply `body` of type `pt` to `doc`.
pub(crate) fn apply(doc: &mut Value, pt: PatchType, body: &[u8]) -> Result<(), PatchError> {
    match pt {
        PatchType::Merge => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| PatchError::Malformed(format!("error decoding patch: {e}")))?;
            if !patch.is_object() {
                return Err(PatchError::Malformed(
                    "error decoding patch: a merge patch must be a JSON object".into(),
                ));
            }
            json_patch::merge(doc, &patch);
            Ok(())
        }
        PatchType::Json => {
            let patch: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| PatchError::Malformed(format!("error decoding patch: {e}")))?;
            json_patch::patch(doc, &patch.0).map_err(|e| PatchError::Unprocessable(e.to_string()))
        }
        PatchType::Strategic => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| PatchError::Malformed(format!("error decoding patch: {e}")))?;
            let Value::Object(p) = patch else {
                return Err(PatchError::Malformed(
                    "error decoding patch: a strategic merge patch must be a JSON object".into(),
                ));
            };
            let merged = strategic_merge_map(doc.as_object().cloned().unwrap_or_default(), &p, "")?;
            *doc = Value::Object(merged.unwrap_or_default());
            Ok(())
        }
        PatchType::Apply => {
            let applied = parse_apply_body(body)?;
            json_patch::merge(doc, &applied);
            Ok(())
        }
    }
}

/// The applied configuration of an apply patch: YAML (of which JSON is a subset).
pub(crate) fn parse_apply_body(body: &[u8]) -> Result<Value, PatchError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| PatchError::Malformed("error decoding YAML: not UTF-8".into()))?;
    let v: Value = serde_saphyr::from_str(text)
        .map_err(|e| PatchError::Malformed(format!("error decoding YAML: {e}")))?;
    if !v.is_object() {
        return Err(PatchError::Malformed(
            "error decoding YAML: the applied configuration must be an object".into(),
        ));
    }
    Ok(v)
}

/// The merge key for list `field` (by field name; the types served here never reuse a
/// name with a different key).
fn merge_key(field: &str, parent: &str) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => "name",
        "ports" if parent == "containers" || parent == "initContainers" => "containerPort",
        "ports" => "port",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "conditions" => "type",
        "ownerReferences" => "uid",
        "hostAliases" => "ip",
        "topologySpreadConstraints" => "topologyKey",
        _ => return None,
    })
}

/// Lists of scalars merged as sets.
fn merges_as_set(field: &str) -> bool {
    matches!(field, "finalizers")
}

fn strategic_merge_map(
    mut orig: Map<String, Value>,
    patch: &Map<String, Value>,
    parent: &str,
) -> Result<Option<Map<String, Value>>, PatchError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("delete") => return Ok(None),
        Some("replace") => {
            let mut p = patch.clone();
            strip_directives(&mut p);
            return Ok(Some(p));
        }
        Some("merge") | None => {}
        Some(other) => {
            return Err(PatchError::Malformed(format!(
                "unknown patch type: {other:?}"
            )));
        }
    }
    if let Some(keep) = patch.get("$retainKeys") {
        let keep: Vec<&str> = keep
            .as_array()
            .ok_or_else(|| PatchError::Malformed("$retainKeys must be a list".into()))?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        orig.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (k, pv) in patch {
        if k.starts_with("$setElementOrder/") || k == "$retainKeys" || k == "$patch" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let gone: Vec<&Value> = pv
                .as_array()
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            if let Some(Value::Array(list)) = orig.get_mut(field) {
                list.retain(|v| !gone.contains(&v));
            }
            continue;
        }
        match pv {
            Value::Null => {
                orig.shift_remove(k);
            }
            Value::Object(pm) => {
                let base = match orig.shift_remove(k) {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                if let Some(m) = strategic_merge_map(base, pm, k)? {
                    orig.insert(k.clone(), Value::Object(m));
                }
            }
            Value::Array(items) => {
                let base = orig.shift_remove(k);
                let merged = merge_list(base, items, k, parent)?;
                orig.insert(k.clone(), merged);
            }
            scalar => {
                orig.insert(k.clone(), scalar.clone());
            }
        }
    }
    Ok(Some(orig))
}

fn merge_list(
    base: Option<Value>,
    items: &[Value],
    field: &str,
    parent: &str,
) -> Result<Value, PatchError> {
    let mut base = match base {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    if items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        let rest = items
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .cloned()
            .collect();
        return Ok(Value::Array(rest));
    }
    if merges_as_set(field) {
        for i in items {
            if !base.contains(i) {
                base.push(i.clone());
            }
        }
        return Ok(Value::Array(base));
    }
    let Some(key) = merge_key(field, parent) else {
        return Ok(Value::Array(items.to_vec()));
    };
    for item in items {
        let Value::Object(pm) = item else {
            return Err(PatchError::Malformed(format!(
                "{field}: list items must be objects with a {key:?} key"
            )));
        };
        let id = pm.get(key).cloned().unwrap_or(Value::Null);
        let pos = base.iter().position(|b| b.get(key) == Some(&id));
        match (pm.get("$patch").and_then(Value::as_str), pos) {
            (Some("delete"), Some(i)) => {
                base.remove(i);
            }
            (Some("delete"), None) => {}
            (_, Some(i)) => {
                let orig = base[i].as_object().cloned().unwrap_or_default();
                match strategic_merge_map(orig, pm, field)? {
                    Some(m) => base[i] = Value::Object(m),
                    None => {
                        base.remove(i);
                    }
                }
            }
            (_, None) => {
                let mut m = pm.clone();
                strip_directives(&mut m);
                base.push(Value::Object(m));
            }
        }
    }
    Ok(Value::Array(base))
}

fn strip_directives(m: &mut Map<String, Value>) {
    m.retain(|k, _| !k.starts_with('$'));
    for v in m.values_mut() {
        if let Value::Object(inner) = v {
            strip_directives(inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(doc: Value, patch: Value) -> Value {
        let mut d = doc;
        apply(&mut d, PatchType::Strategic, patch.to_string().as_bytes()).unwrap();
        d
    }

    #[test]
    fn strategic_merges_containers_env_and_ports_by_key() {
        let doc = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "a:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
             "ports": [{"containerPort": 80, "name": "http"}]},
            {"name": "side", "image": "s:1"}
        ]}}}});
        let out = smp(
            doc,
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": "a:2", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}, {"name": "A", "$patch": "delete"}],
                 "ports": [{"containerPort": 443, "name": "https"}]}
            ]}}}}),
        );
        let c = &out["spec"]["template"]["spec"]["containers"];
        assert_eq!(
            c.as_array().unwrap().len(),
            2,
            "unnamed containers are kept"
        );
        assert_eq!(c[0]["image"], "a:2");
        assert_eq!(
            c[0]["env"],
            json!([{"name": "B", "value": "3"}, {"name": "C", "value": "4"}])
        );
        assert_eq!(c[0]["ports"].as_array().unwrap().len(), 2);
        assert_eq!(c[1]["image"], "s:1");
    }

    #[test]
    fn strategic_directives() {
        let doc = json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}}, "spec": {"a": {"b": 1, "c": 2}, "keep": 1, "drop": 2}, "data": ["x"]});
        let out = smp(
            doc.clone(),
            json!({"metadata": {"finalizers": ["c"], "labels": {"x": null}}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
        assert_eq!(out["metadata"]["labels"], json!({"y": "2"}));
        let out = smp(
            doc.clone(),
            json!({"$deleteFromPrimitiveList/finalizers": ["a"], "$setElementOrder/finalizers": ["b"]}),
        );
        assert_eq!(
            out["metadata"]["finalizers"],
            json!(["a", "b"]),
            "directive applies at its own level only"
        );
        let out = smp(
            doc.clone(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        let out = smp(
            doc.clone(),
            json!({"spec": {"a": {"$patch": "replace", "z": 9}}}),
        );
        assert_eq!(out["spec"]["a"], json!({"z": 9}));
        let out = smp(doc.clone(), json!({"spec": {"a": {"$patch": "delete"}}}));
        assert!(out["spec"].get("a").is_none());
        let out = smp(
            doc.clone(),
            json!({"spec": {"$retainKeys": ["keep", "new"], "new": 3}}),
        );
        assert_eq!(out["spec"], json!({"keep": 1, "new": 3}));
        let out = smp(doc, json!({"data": ["y"]}));
        assert_eq!(
            out["data"],
            json!(["y"]),
            "lists without a strategy are replaced"
        );
    }

    #[test]
    fn malformed_and_unprocessable_patches() {
        let mut d = json!({"a": 1});
        assert!(matches!(
            apply(&mut d, PatchType::Merge, b"{"),
            Err(PatchError::Malformed(_))
        ));
        assert!(matches!(
            apply(&mut d, PatchType::Json, b"{}"),
            Err(PatchError::Malformed(_))
        ));
        let r = apply(
            &mut d,
            PatchType::Json,
            br#"[{"op":"remove","path":"/nope"}]"#,
        );
        assert!(matches!(r, Err(PatchError::Unprocessable(_))));
        assert!(matches!(
            apply(&mut d, PatchType::Strategic, b"[1]"),
            Err(PatchError::Malformed(_))
        ));
        assert!(matches!(
            apply(&mut d, PatchType::Apply, b"- a\n- b\n"),
            Err(PatchError::Malformed(_))
        ));
    }

    #[test]
    fn apply_accepts_yaml() {
        let mut d = json!({"spec": {"a": 1, "b": 2}});
        apply(&mut d, PatchType::Apply, b"spec:\n  a: 5\n").unwrap();
        assert_eq!(d, json!({"spec": {"a": 5, "b": 2}}));
    }
}
