//! Field paths: how the hot-loop oracle names what changed between two states of an
//! object, and how `explore`'s differ names a field.

use std::collections::BTreeSet;

use serde_json::Value;

/// A JSON path segment: `.name`, or `["a.b/c"]` when the key is not a plain word.
pub(crate) fn segment(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        format!(".{k}")
    } else {
        format!("[{}]", serde_json::Value::String(k.to_string()))
    }
}

/// Paths of the leaves that differ between two objects (resourceVersion and
/// managedFields, which change on every write by definition, are left out).
pub fn changed_paths(a: &Value, b: &Value) -> BTreeSet<String> {
    fn walk(path: &str, a: &Value, b: &Value, out: &mut BTreeSet<String>) {
        if matches!(
            path,
            ".metadata.resourceVersion" | ".metadata.managedFields"
        ) {
            return;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for k in x.keys().chain(y.keys()).collect::<BTreeSet<_>>() {
                    walk(
                        &format!("{path}{}", segment(k)),
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                        out,
                    );
                }
            }
            (x, y) if x != y => {
                out.insert(path.to_string());
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk("", a, b, &mut out);
    out.into_iter()
        .map(|p| p.strip_prefix('.').map(str::to_string).unwrap_or(p))
        .collect()
}
