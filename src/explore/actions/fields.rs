//! Changes to an object's fields: what a structural schema admits (a CRD's
//! `openAPIV3Schema`), what the values already there allow (a schema that preserves
//! unknown fields), and for built-in kinds the fields a user changes (replicas, image,
//! suspend, …). Each change is one JSON patch operation, with the one that undoes it.
//!
//! Two kinds of value: one the controller should take (numbers up, down and to 0,
//! booleans flipped, enums cycled, optional fields set and unset, list items added and
//! removed), and one the schema admits but the controller may have to reject — a string
//! it must parse (a URL, a duration, a selector, an expression) that does not parse, a
//! reference to an object that does not exist. Acto's insight: the schema says what a
//! user may write, not what the controller copes with.

use serde_json::{Value, json};

/// How deep into a spec changes go: deeper fields are rarely what a user edits.
const MAX_DEPTH: usize = 5;

/// One change to one field.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// JSON pointer: `/spec/size`.
    pub path: String,
    /// The patch operation.
    pub op: Value,
    /// The operation that puts the field back as it was (none: nothing to put back).
    pub undo: Option<Value>,
    /// `to 2 (was 1)`, `unset (was "x")`.
    pub what: String,
    /// `up`, `down`, `zero`, `flip`, `next`, `unset`, `set`, `add item`, `remove item`,
    /// `sibling`, `unparsable`, `missing ref`: with the path, what makes two changes alike.
    pub how: &'static str,
    /// A value the controller may have to reject.
    pub reject: bool,
}

/// What a field's schema says (what the generator reads of it).
#[derive(Debug, Clone, Copy, Default)]
struct Shape<'a> {
    schema: Option<&'a Value>,
}

impl<'a> Shape<'a> {
    fn get(&self, k: &str) -> Option<&'a Value> {
        self.schema.and_then(|s| s.get(k))
    }
    fn ty(&self) -> Option<&'a str> {
        self.get("type").and_then(Value::as_str)
    }
    fn property(&self, name: &str) -> Shape<'a> {
        Shape {
            schema: self.get("properties").and_then(|p| p.get(name)),
        }
    }
    fn items(&self) -> Shape<'a> {
        Shape {
            schema: self.get("items"),
        }
    }
    fn required(&self, name: &str) -> bool {
        self.get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|x| x == name))
    }
    /// Properties the schema names (in its order), or none when it names none.
    fn properties(&self) -> Vec<&'a str> {
        self.get("properties")
            .and_then(Value::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
    fn number(&self, k: &str) -> Option<f64> {
        self.get(k).and_then(Value::as_f64)
    }
}

/// Changes to `value` (at `path`, e.g. `/spec`) that `schema` admits; with no schema
/// (or one that preserves unknown fields and names none), what the values there allow.
pub fn changes(schema: Option<&Value>, value: &Value, path: &str) -> Vec<Change> {
    let mut out = Vec::new();
    walk(Shape { schema }, value, path, 0, &mut out);
    out
}

fn walk(shape: Shape, value: &Value, path: &str, depth: usize, out: &mut Vec<Change>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(obj) = value.as_object() else { return };
    // Fields in the schema's order, then the values' own the schema does not name.
    let mut names: Vec<&str> = shape.properties();
    for k in obj.keys() {
        if !names.contains(&k.as_str()) {
            names.push(k);
        }
    }
    for name in names {
        let sub = shape.property(name);
        let at = format!("{path}/{}", pointer_escape(name));
        let optional = !shape.required(name);
        match obj.get(name) {
            Some(v) => field(sub, v, &at, name, optional, depth, out),
            None => absent(sub, &at, out),
        }
    }
    siblings(shape, obj, path, out);
}

/// A string field set to a sibling's value where both hold the same kind of thing (two
/// durations, two URLs, two strings of one `format`): a value the schema admits and the
/// user plausibly copies — an interval equal to the timeout, two references to one URL.
fn siblings(shape: Shape, obj: &serde_json::Map<String, Value>, path: &str, out: &mut Vec<Change>) {
    let kind = |name: &str, s: &str| -> Option<String> {
        let format = shape.property(name).get("format").and_then(Value::as_str);
        match (parsed_as(name, format.unwrap_or(""), s), format) {
            (Some(p), _) => Some(p.name().to_string()),
            (None, Some(f)) if !f.is_empty() => Some(f.to_string()),
            _ => None,
        }
    };
    let strings: Vec<(&str, &str, String)> = obj
        .iter()
        .filter(|(name, _)| shape.property(name).get("enum").is_none())
        .filter_map(|(name, v)| {
            let s = v.as_str()?;
            Some((name.as_str(), s, kind(name, s)?))
        })
        .collect();
    for (name, s, k) in &strings {
        let Some((from, to, _)) = strings
            .iter()
            .find(|(n, v, kk)| n != name && v != s && kk == k)
        else {
            continue;
        };
        let at = format!("{path}/{}", pointer_escape(name));
        out.push(Change {
            path: at.clone(),
            op: json!({"op": "replace", "path": at, "value": to}),
            undo: Some(json!({"op": "replace", "path": at, "value": s})),
            what: format!("to {to:?}, {from}'s value (was {s:?})"),
            how: "sibling",
            reject: false,
        });
    }
}

/// Changes to a field that has a value.
fn field(
    shape: Shape,
    v: &Value,
    at: &str,
    name: &str,
    optional: bool,
    depth: usize,
    out: &mut Vec<Change>,
) {
    let replace = |to: Value, what: String, how: &'static str, reject: bool| Change {
        path: at.to_string(),
        op: json!({"op": "replace", "path": at, "value": to}),
        undo: Some(json!({"op": "replace", "path": at, "value": v})),
        what,
        how,
        reject,
    };
    match v {
        Value::Bool(b) => out.push(replace(
            json!(!b),
            format!("to {} (was {b})", !b),
            "flip",
            false,
        )),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            let int = n.is_i64() || n.is_u64() || shape.ty() == Some("integer");
            let num = |f: f64| if int { json!(f as i64) } else { json!(f) };
            let min = shape.number("minimum");
            let max = shape.number("maximum");
            let fits = |f: f64| min.is_none_or(|m| f >= m) && max.is_none_or(|m| f <= m);
            let mut tried = Vec::new();
            for (to, how) in [(x + 1.0, "up"), (x - 1.0, "down"), (0.0, "zero")] {
                if to != x && fits(to) && to >= 0.0 && !tried.contains(&to) {
                    tried.push(to);
                    out.push(replace(
                        num(to),
                        format!("to {} (was {n})", num(to)),
                        how,
                        false,
                    ));
                }
            }
        }
        Value::String(s) => string(shape, s, name, out, replace),
        Value::Object(_) => {
            if let Some(c) = missing_ref(v, at, name) {
                out.push(c);
            }
            walk(shape, v, at, depth + 1, out);
        }
        Value::Array(items) => array(shape, items, at, out),
        Value::Null => {}
    }
    if optional && !v.is_null() && shape.get("default").is_none() {
        out.push(Change {
            path: at.to_string(),
            op: json!({"op": "remove", "path": at}),
            undo: Some(json!({"op": "add", "path": at, "value": v})),
            what: format!("(was {})", brief(v)),
            how: "unset",
            reject: false,
        });
    }
}

/// A string field: the next enum value, or one like it; and if the controller must
/// parse it, one that does not parse.
fn string(
    shape: Shape,
    s: &str,
    name: &str,
    out: &mut Vec<Change>,
    replace: impl Fn(Value, String, &'static str, bool) -> Change,
) {
    if let Some(values) = shape.get("enum").and_then(Value::as_array) {
        let i = values.iter().position(|x| x == s);
        let next = values
            .iter()
            .cycle()
            .skip(i.map_or(0, |i| i + 1))
            .take(values.len())
            .find(|x| x.as_str() != Some(s));
        if let Some(n) = next {
            out.push(replace(
                n.clone(),
                format!("to {n} (was {s:?})"),
                "next",
                false,
            ));
        }
        return;
    }
    let format = shape.get("format").and_then(Value::as_str).unwrap_or("");
    let parsed = parsed_as(name, format, s);
    let other = match parsed {
        Some(Parsed::Duration) => doubled_duration(s),
        _ => Some(format!("{s}-2")),
    };
    // A pattern the generator cannot satisfy by construction: the apiserver says
    // whether the new value fits (a rejected sequence is dropped, and said so).
    if let Some(o) = other.filter(|o| o != s) {
        out.push(replace(
            json!(o),
            format!("to {o:?} (was {s:?})"),
            "other",
            false,
        ));
    }
    if let Some(p) = parsed {
        let bad = p.unparsable();
        out.push(replace(
            json!(bad),
            format!(
                "to {bad:?}, which does not parse as {} (was {s:?})",
                p.name()
            ),
            "unparsable",
            true,
        ));
    }
}

/// What a controller must parse a string as, by its format or name.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Parsed {
    Url,
    Duration,
    Selector,
    Expression,
    Cron,
}

impl Parsed {
    fn name(self) -> &'static str {
        match self {
            Parsed::Url => "a URL",
            Parsed::Duration => "a duration",
            Parsed::Selector => "a label selector",
            Parsed::Expression => "an expression",
            Parsed::Cron => "a cron schedule",
        }
    }

    fn unparsable(self) -> &'static str {
        match self {
            Parsed::Url => "::not a url::",
            Parsed::Duration => "not-a-duration",
            Parsed::Selector => "not a=valid=selector!",
            Parsed::Expression => "((not an expression",
            Parsed::Cron => "not a cron schedule",
        }
    }
}

fn parsed_as(name: &str, format: &str, value: &str) -> Option<Parsed> {
    let n = name.to_ascii_lowercase();
    let has = |w: &[&str]| w.iter().any(|x| n.contains(x));
    if format == "uri" || has(&["url", "uri", "endpoint", "address"]) || value.contains("://") {
        Some(Parsed::Url)
    } else if format == "duration"
        || has(&["duration", "interval", "timeout", "period", "ttl"])
        || is_duration(value)
    {
        Some(Parsed::Duration)
    } else if has(&["selector"]) {
        Some(Parsed::Selector)
    } else if has(&["expression", "expr", "query", "cel"]) {
        Some(Parsed::Expression)
    } else if has(&["cron", "schedule"]) {
        Some(Parsed::Cron)
    } else {
        None
    }
}

/// A Go duration (`1m30s`, `500ms`).
fn is_duration(s: &str) -> bool {
    crate::k8s::duration::parse(s).is_ok() && s.chars().next().is_some_and(|c| c.is_ascii_digit())
}

fn doubled_duration(s: &str) -> Option<String> {
    let d = crate::k8s::duration::parse(s).ok()?;
    let ms = (d * 2).as_millis();
    Some(if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    })
}

/// A reference to another object (`secretRef: {name: …}`, `configMapName: …`) pointed at
/// one that does not exist.
fn missing_ref(v: &Value, at: &str, name: &str) -> Option<Change> {
    let n = name.to_ascii_lowercase();
    let current = v.get("name").and_then(Value::as_str)?;
    if !n.ends_with("ref") && !n.ends_with("reference") {
        return None;
    }
    let path = format!("{at}/name");
    Some(Change {
        op: json!({"op": "replace", "path": path, "value": MISSING}),
        undo: Some(json!({"op": "replace", "path": path, "value": current})),
        path,
        what: format!("to name {MISSING:?}, which does not exist (was {current:?})"),
        how: "missing ref",
        reject: true,
    })
}

/// The name an object that does not exist is given.
pub const MISSING: &str = "stalemate-missing";

fn array(shape: Shape, items: &[Value], at: &str, out: &mut Vec<Change>) {
    let min = shape.number("minItems").unwrap_or(0.0);
    if let Some(last) = items.last() {
        if items.len() as f64 > min {
            let i = items.len() - 1;
            out.push(Change {
                path: at.to_string(),
                op: json!({"op": "remove", "path": format!("{at}/{i}")}),
                undo: Some(json!({"op": "add", "path": format!("{at}/{i}"), "value": last})),
                what: format!("remove its last item ({})", brief(last)),
                how: "remove item",
                reject: false,
            });
        }
        let more = match last {
            Value::String(s) => json!(format!("{s}-2")),
            Value::Number(n) => json!(n.as_f64().unwrap_or(0.0) as i64 + 1),
            other => other.clone(),
        };
        out.push(Change {
            path: at.to_string(),
            op: json!({"op": "add", "path": format!("{at}/-"), "value": more}),
            undo: Some(json!({"op": "remove", "path": format!("{at}/{}", items.len())})),
            what: format!("add an item ({})", brief(&more)),
            how: "add item",
            reject: false,
        });
    }
    // Items of objects: what each field of the first admits.
    if let Some(first) = items.first().filter(|f| f.is_object()) {
        let mut inner = Vec::new();
        walk(shape.items(), first, &format!("{at}/0"), 1, &mut inner);
        out.extend(inner.into_iter().filter(|c| c.how != "unset"));
    }
}

/// A field the object does not set: set it where the schema says what to (a boolean,
/// an enum, a number with a minimum or default).
fn absent(shape: Shape, at: &str, out: &mut Vec<Change>) {
    let default = shape.get("default");
    let value = match shape.ty() {
        Some("boolean") => json!(!default.and_then(Value::as_bool).unwrap_or(false)),
        Some("integer") | Some("number") => {
            let d = default.and_then(Value::as_f64).unwrap_or(0.0);
            let min = shape.number("minimum").unwrap_or(0.0);
            json!(((d + 1.0).max(min)) as i64)
        }
        Some("string") => match shape.get("enum").and_then(Value::as_array) {
            Some(values) => match values.iter().find(|v| Some(*v) != default) {
                Some(v) => v.clone(),
                None => return,
            },
            None => return,
        },
        _ => return,
    };
    out.push(Change {
        path: at.to_string(),
        op: json!({"op": "add", "path": at, "value": value}),
        undo: Some(json!({"op": "remove", "path": at})),
        what: format!("to {value} (unset)"),
        how: "set",
        reject: false,
    });
}

/// A value in a few characters.
fn brief(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(39).collect::<String>())
    } else {
        s
    }
}

/// A JSON pointer segment (RFC 6901).
pub fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// The fields a user changes on a built-in kind, as (JSON pointer under the object,
/// value if it is unset); `*` stands for every key.
pub fn builtin_fields(kind: &str) -> Option<&'static [(&'static str, Option<&'static str>)]> {
    Some(match kind {
        "Deployment" => &[
            ("/spec/replicas", Some("1")),
            ("/spec/paused", Some("false")),
            ("/spec/template/spec/containers/0/image", None),
            ("/spec/template/metadata/labels", None),
        ],
        "StatefulSet" | "ReplicaSet" => &[
            ("/spec/replicas", Some("1")),
            ("/spec/template/spec/containers/0/image", None),
            ("/spec/template/metadata/labels", None),
        ],
        "DaemonSet" => &[
            ("/spec/template/spec/containers/0/image", None),
            ("/spec/template/metadata/labels", None),
        ],
        "Job" => &[
            ("/spec/suspend", Some("false")),
            ("/spec/parallelism", Some("1")),
        ],
        "CronJob" => &[("/spec/suspend", Some("false"))],
        "ConfigMap" => &[("/data/*", None)],
        _ => return None,
    })
}

/// Changes to a built-in kind's fields a user changes (`builtin_fields`).
pub fn builtin_changes(object: &Value, fields: &[(&str, Option<&str>)]) -> Vec<Change> {
    let mut out = Vec::new();
    for (path, unset) in fields {
        if let Some(parent) = path.strip_suffix("/*") {
            let Some(map) = object.pointer(parent).and_then(Value::as_object) else {
                continue;
            };
            let shape = Shape::default();
            for (k, v) in map {
                let at = format!("{parent}/{}", pointer_escape(k));
                field(shape, v, &at, k, true, 0, &mut out);
            }
            continue;
        }
        let name = path.rsplit('/').next().unwrap_or("");
        match object.pointer(path) {
            // A label added to the pod template: a rollout the selector still matches.
            Some(v) if name == "labels" && v.is_object() => {
                let at = format!("{path}/{}", pointer_escape(TEMPLATE_LABEL));
                out.push(Change {
                    path: at.clone(),
                    op: json!({"op": "add", "path": at, "value": "1"}),
                    undo: Some(json!({"op": "remove", "path": at})),
                    what: format!("label {TEMPLATE_LABEL}=1 added"),
                    how: "add item",
                    reject: false,
                });
            }
            Some(v) if name == "image" => {
                if let Some(s) = v.as_str() {
                    let to = other_image(s);
                    out.push(Change {
                        path: path.to_string(),
                        op: json!({"op": "replace", "path": path, "value": to}),
                        undo: Some(json!({"op": "replace", "path": path, "value": s})),
                        what: format!("to {to:?} (was {s:?})"),
                        how: "other",
                        reject: false,
                    });
                }
            }
            Some(v) => field(Shape::default(), v, path, name, false, 0, &mut out),
            None => {
                let Some(d) = unset.and_then(|u| serde_json::from_str::<Value>(u).ok()) else {
                    continue;
                };
                field(Shape::default(), &d, path, name, false, 0, &mut out);
                // The field was unset: the change adds it, the undo removes it.
                for c in out.iter_mut().filter(|c| c.path == *path) {
                    c.op["op"] = json!("add");
                    c.undo = Some(json!({"op": "remove", "path": path}));
                    c.what = format!("{} (unset, {d} by default)", c.what);
                }
            }
        }
    }
    out
}

/// The label a pod template is given (a rollout that changes nothing else).
pub const TEMPLATE_LABEL: &str = "stalemate.dev/touched";

/// Another tag of the same image: `nginx:1.25` → `nginx:1.25-2`, `busybox` → `busybox:2`.
fn other_image(s: &str) -> String {
    let tagged = s
        .rsplit_once(':')
        .is_some_and(|(_, tag)| !tag.contains('/'));
    if s.contains('@') {
        s.split('@').next().unwrap_or(s).to_string() + ":stalemate"
    } else if tagged {
        format!("{s}-2")
    } else {
        format!("{s}:2")
    }
}
