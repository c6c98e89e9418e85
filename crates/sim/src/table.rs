//! `meta.k8s.io` Table responses, which `kubectl get` asks for in human output
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...`; docs/PROTOCOL.md §G).
//!
//! Columns: a CRD version's `additionalPrinterColumns` (evaluated with a JSONPath subset:
//! `.a.b`, `[N]`, `[?(@.k=="v")]`), or the built-in printers' columns for the built-in
//! kinds. Rows carry the object as `PartialObjectMetadata` unless `includeObject` says
//! otherwise. Shapes follow `fixtures/.../cr-get-table.body` and `cr-watch-table.body`.

use std::time::SystemTime;

use serde_json::{Map, Value, json};

use super::age::human_duration;
use super::printers::{AGE_DESCRIPTION, Cell, NAME_DESCRIPTION, path_get};
use super::resource_type::{Printer, PrinterColumn, ResourceType};

/// What a row's `object` holds (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub(crate) fn parse(v: Option<&str>) -> IncludeObject {
        match v {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

fn age_of(ts: &Value) -> Value {
    let Some(t) = ts.as_str().and_then(|s| humantime::parse_rfc3339(s).ok()) else {
        return json!("<unknown>");
    };
    let secs = match SystemTime::now().duration_since(t) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    json!(human_duration(secs))
}

/// Evaluate a printer-column JSONPath (`.a.b[0]`, `.conditions[?(@.type=="Ready")].status`).
/// Missing values give `null`, as the apiserver's CRD printer does.
pub(crate) fn json_path(obj: &Value, path: &str) -> Value {
    let mut cur: Vec<&Value> = vec![obj];
    let mut rest = path.trim().trim_start_matches('{').trim_end_matches('}');
    rest = rest.strip_prefix('$').unwrap_or(rest);
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let field = &r[..end];
            cur = cur.iter().filter_map(|v| v.get(field)).collect();
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Value::Null;
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let Some((field, want)) = filter.split_once("==") else {
                    return Value::Null;
                };
                let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                cur = cur
                    .iter()
                    .filter_map(|v| v.as_array())
                    .flatten()
                    .filter(|item| item.get(field.trim()).and_then(Value::as_str) == Some(want))
                    .collect();
            } else if inner == "*" {
                cur = cur.iter().filter_map(|v| v.as_array()).flatten().collect();
            } else if let Ok(i) = inner.parse::<usize>() {
                cur = cur.iter().filter_map(|v| v.get(i)).collect();
            } else {
                return Value::Null;
            }
        } else {
            return Value::Null;
        }
    }
    match cur.as_slice() {
        [] => Value::Null,
        [one] => (*one).clone(),
        many => Value::Array(many.iter().map(|v| (*v).clone()).collect()),
    }
}

fn cell_value(c: &Cell, obj: &Value) -> Value {
    match c {
        Cell::Name => obj["metadata"]["name"].clone(),
        Cell::Age(p) => age_of(path_get(obj, p)),
        Cell::Path(p) => match path_get(obj, p) {
            Value::Null => json!("<none>"),
            v => v.clone(),
        },
        Cell::Count(fields) => json!(
            fields
                .iter()
                .map(|f| match &obj[*f] {
                    Value::Object(m) => m.len(),
                    Value::Array(a) => a.len(),
                    _ => 0,
                })
                .sum::<usize>()
        ),
        Cell::Compute(f) => f(obj),
    }
}

fn custom_cell(c: &PrinterColumn, obj: &Value) -> Value {
    let v = json_path(obj, &c.json_path);
    match (c.type_.as_str(), v) {
        ("date", v @ Value::String(_)) => age_of(&v),
        (_, Value::Array(a)) => json!(
            a.iter()
                .map(|x| x
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x.to_string()))
                .collect::<Vec<_>>()
                .join(",")
        ),
        (_, v) => v,
    }
}

/// Column definitions for a type.
pub(crate) fn column_definitions(rt: &ResourceType) -> Value {
    let def = |name: &str, type_: &str, format: &str, description: &str, priority: i64| json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority});
    match &rt.printer {
        Printer::Builtin => Value::Array(
            super::printers::columns(&rt.kind)
                .iter()
                .map(|c| def(c.name, c.type_, c.format, c.description, c.priority))
                .collect(),
        ),
        Printer::Columns(cols) => {
            let mut out = vec![def("Name", "string", "name", NAME_DESCRIPTION, 0)];
            out.extend(
                cols.iter()
                    .map(|c| def(&c.name, &c.type_, &c.format, &c.description, c.priority)),
            );
            if cols.is_empty() {
                out.push(def("Age", "date", "", AGE_DESCRIPTION, 0));
            }
            Value::Array(out)
        }
    }
}

/// The cells of one object's row.
pub(crate) fn cells(rt: &ResourceType, obj: &Value) -> Vec<Value> {
    match &rt.printer {
        Printer::Builtin => super::printers::columns(&rt.kind)
            .iter()
            .map(|c| cell_value(&c.cell, obj))
            .collect(),
        Printer::Columns(cols) => {
            let mut out = vec![obj["metadata"]["name"].clone()];
            out.extend(cols.iter().map(|c| custom_cell(c, obj)));
            if cols.is_empty() {
                out.push(age_of(&obj["metadata"]["creationTimestamp"]));
            }
            out
        }
    }
}

/// `PartialObjectMetadata` of an object, metadata keys in Go order.
pub(crate) fn partial_metadata(obj: &Value, version: &str) -> Value {
    use super::meta::{MANAGED_ORDER, META_ORDER, reorder};
    let mut meta = obj["metadata"].clone();
    if let Some(m) = meta.as_object_mut() {
        reorder(m, META_ORDER);
        if let Some(Value::Array(mf)) = m.get_mut("managedFields") {
            for e in mf.iter_mut().filter_map(Value::as_object_mut) {
                reorder(e, MANAGED_ORDER);
            }
        }
    }
    json!({"kind": "PartialObjectMetadata", "apiVersion": format!("meta.k8s.io/{version}"), "metadata": meta})
}

/// One row.
pub(crate) fn row(rt: &ResourceType, obj: &Value, include: IncludeObject, version: &str) -> Value {
    let mut r = Map::new();
    r.insert("cells".into(), Value::Array(cells(rt, obj)));
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            r.insert("object".into(), partial_metadata(obj, version));
        }
        IncludeObject::Object => {
            r.insert("object".into(), obj.clone());
        }
    }
    Value::Object(r)
}

/// A whole Table. `columns: false` writes `"columnDefinitions": null`, as watch events
/// after the first do.
pub(crate) fn table(
    rt: &ResourceType,
    objs: &[Value],
    list_meta: Value,
    include: IncludeObject,
    version: &str,
    columns: bool,
) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": list_meta,
        "columnDefinitions": if columns { column_definitions(rt) } else { Value::Null },
        "rows": objs.iter().map(|o| row(rt, o, include, version)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_path_subset() {
        let o = json!({"spec": {"url": "u", "list": [1, 2]}, "status": {"conditions": [
            {"type": "Reconciling", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(json_path(&o, ".spec.url"), json!("u"));
        assert_eq!(json_path(&o, ".spec.list[1]"), json!(2));
        assert_eq!(
            json_path(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            json!("True")
        );
        assert_eq!(
            json_path(&o, ".status.conditions[?(@.type==\"Nope\")].status"),
            Value::Null
        );
        assert_eq!(json_path(&o, ".missing.x"), Value::Null);
        assert_eq!(
            json_path(&o, ".status.conditions[*].type"),
            json!(["Reconciling", "Ready"])
        );
    }

    #[test]
    fn crd_table_matches_recorded_shape() {
        let recorded: Value = serde_json::from_str(include_str!(
            "../../../fixtures/kube-apiserver-1.28/cr-get-table.body"
        ))
        .unwrap();
        let crd = json!({"spec": {"group": "source.testbed.example.com", "names": {"plural": "gitrepositories", "kind": "GitRepository"},
            "versions": [{"name": "v1", "served": true, "additionalPrinterColumns": [
                {"name": "URL", "type": "string", "jsonPath": ".spec.url"},
                {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]}});
        let rt = super::super::registry::from_crd(&crd).remove(0);
        assert_eq!(column_definitions(&rt), recorded["columnDefinitions"]);
        let obj = json!({"metadata": {"name": "podinfo", "creationTimestamp": super::super::meta::now_rfc3339()}, "spec": {"url": "https://example.invalid/podinfo.git"}});
        let c = cells(&rt, &obj);
        assert_eq!(c, recorded["rows"][0]["cells"].as_array().unwrap().clone());
    }
}
