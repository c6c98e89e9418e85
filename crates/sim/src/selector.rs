//! Label and field selectors, as `labels.Parse` and `fields.ParseSelector` accept them.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Exists,
    NotExists,
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Gt(i64),
    Lt(i64),
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LabelSelector(Vec<Requirement>);

/// Split on commas outside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl LabelSelector {
    pub(crate) fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for term in split_terms(s) {
            let t = term.trim();
            if t.is_empty() {
                return Err(format!(
                    "unable to parse requirement: found '', expected: identifier in {s:?}"
                ));
            }
            reqs.push(parse_requirement(t)?);
        }
        Ok(LabelSelector(reqs))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Does an object with these `metadata.labels` match?
    pub(crate) fn matches(&self, labels: &Value) -> bool {
        self.0.iter().all(|r| {
            let v = labels.get(&r.key).and_then(Value::as_str);
            match &r.op {
                Op::Exists => v.is_some(),
                Op::NotExists => v.is_none(),
                Op::Eq(x) => v == Some(x.as_str()),
                Op::NotEq(x) => v != Some(x.as_str()),
                Op::In(xs) => v.is_some_and(|v| xs.iter().any(|x| x == v)),
                Op::NotIn(xs) => !v.is_some_and(|v| xs.iter().any(|x| x == v)),
                Op::Gt(n) => v
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| v > *n),
                Op::Lt(n) => v
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|v| v < *n),
            }
        })
    }
}

fn parse_requirement(t: &str) -> Result<Requirement, String> {
    let bad = |why: &str| format!("unable to parse requirement: {why} in {t:?}");
    let check_key = |k: &str| -> Result<String, String> {
        let k = k.trim();
        if valid_key(k) {
            Ok(k.to_string())
        } else {
            Err(bad(&format!("invalid label key {k:?}")))
        }
    };
    let check_value = |v: &str| -> Result<String, String> {
        let v = v.trim();
        if valid_value(v) {
            Ok(v.to_string())
        } else {
            Err(bad(&format!("invalid label value {v:?}")))
        }
    };
    if let Some(k) = t.strip_prefix('!') {
        return Ok(Requirement {
            key: check_key(k)?,
            op: Op::NotExists,
        });
    }
    for (sym, mk) in [("!=", 0), ("==", 1), ("=", 1), (">", 2), ("<", 3)] {
        if let Some((k, v)) = t.split_once(sym) {
            let key = check_key(k)?;
            let op =
                match mk {
                    0 => Op::NotEq(check_value(v)?),
                    1 => Op::Eq(check_value(v)?),
                    2 => Op::Gt(v.trim().parse().map_err(|_| {
                        bad("for 'gt', 'lt' operators, the value must be an integer")
                    })?),
                    _ => Op::Lt(v.trim().parse().map_err(|_| {
                        bad("for 'gt', 'lt' operators, the value must be an integer")
                    })?),
                };
            return Ok(Requirement { key, op });
        }
    }
    let words: Vec<&str> = t.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let rest = words[1].trim_start();
        let (neg, set) = if let Some(s) = rest.strip_prefix("notin") {
            (true, s)
        } else if let Some(s) = rest.strip_prefix("in") {
            (false, s)
        } else {
            return Err(bad(
                "found unexpected word, expected: in, notin, =, ==, !=, gt, lt",
            ));
        };
        let set = set.trim();
        let inner = set
            .strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .ok_or_else(|| bad("found '', expected: '('"))?;
        let values = inner
            .split(',')
            .map(check_value)
            .collect::<Result<Vec<_>, _>>()?;
        let key = check_key(words[0])?;
        return Ok(Requirement {
            key,
            op: if neg {
                Op::NotIn(values)
            } else {
                Op::In(values)
            },
        });
    }
    Ok(Requirement {
        key: check_key(t)?,
        op: Op::Exists,
    })
}

/// A parsed field selector: `path=value`, `path==value`, `path!=value` terms, ANDed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parse and check every field against `supported` (the type's field label set).
    pub(crate) fn parse(s: &str, supported: &[&str]) -> Result<FieldSelector, String> {
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(terms));
        }
        for t in s.split(',') {
            let (field, eq, value) = if let Some((f, v)) = t.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = t.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = t.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!("invalid selector: '{s}'; can't understand '{t}'"));
            };
            let field = field.trim();
            if !supported.contains(&field) {
                return Err(format!("field label not supported: {field}"));
            }
            terms.push((field.to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector(terms))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, eq, want)| {
            let mut v = obj;
            for part in path.split('.') {
                v = &v[part];
            }
            let got = match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (got == *want) == *eq
        })
    }
}

/// A label selector object (`matchLabels`, `matchExpressions`) as its string form
/// (`app=web,tier in (a,b)`), as a Scale carries it and the printers show it;
/// ReplicationControllers' selectors are plain maps.
pub(crate) fn string_form(s: &Value) -> String {
    let labels = s.get("matchLabels").unwrap_or(s);
    let mut parts: Vec<String> = labels
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
        .collect();
    for e in s["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            _ => format!("!{key}"),
        });
    }
    parts.sort();
    parts.join(",")
}

/// The field labels each kind supports (`pkg/registry/*/strategy.go GetAttrs`).
pub(crate) fn supported_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Secret" => &["metadata.name", "metadata.namespace", "type"],
        "Event" => &[
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "Namespace" => &["metadata.name", "status.phase"],
        _ => &["metadata.name", "metadata.namespace"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_as_strings() {
        assert_eq!(
            string_form(&json!({"matchLabels": {"b": "2", "a": "1"}})),
            "a=1,b=2"
        );
        assert_eq!(string_form(&json!({"app": "rc"})), "app=rc");
        assert_eq!(
            string_form(
                &json!({"matchExpressions": [{"key": "t", "operator": "In", "values": ["x", "y"]}]})
            ),
            "t in (x,y)"
        );
    }

    #[test]
    fn every_operator() {
        let l = json!({"app": "web", "tier": "front", "n": "5"});
        let yes = [
            "app=web",
            "app==web",
            "app!=db",
            "app in (web,db)",
            "app notin (db)",
            "tier",
            "!missing",
            "missing!=x",
            "missing notin (x)",
            "app=web,tier in (front, back)",
            "n>3",
            "n<6",
            "",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).unwrap().matches(&l), "{s}");
        }
        let no = [
            "app=db",
            "app!=web",
            "app in (db)",
            "app notin (web, db)",
            "missing",
            "!app",
            "app=web,tier=back",
            "n>5",
            "missing in (x)",
        ];
        for s in no {
            assert!(!LabelSelector::parse(s).unwrap().matches(&l), "{s}");
        }
    }

    #[test]
    fn bad_label_selectors_are_errors() {
        for s in ["app in web", "a=b,,c=d", "app=(", "n>x", "a b c"] {
            assert!(LabelSelector::parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn field_selectors() {
        let o = json!({"metadata": {"name": "a", "namespace": "ns"}, "type": "Opaque"});
        let f = FieldSelector::parse(
            "metadata.name=a,metadata.namespace!=x",
            supported_fields("ConfigMap"),
        )
        .unwrap();
        assert!(f.matches(&o));
        let f = FieldSelector::parse("metadata.name==b", supported_fields("ConfigMap")).unwrap();
        assert!(!f.matches(&o));
        assert!(
            FieldSelector::parse("type=Opaque", supported_fields("Secret"))
                .unwrap()
                .matches(&o)
        );
        let e = FieldSelector::parse("spec.x=1", supported_fields("ConfigMap")).unwrap_err();
        assert_eq!(e, "field label not supported: spec.x");
    }
}
