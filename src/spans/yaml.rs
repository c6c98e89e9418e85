//! YAML (or JSON) documents to values and [`Spans`]: serde-saphyr gives the place of any
//! value read as its `Spanned<T>`, so each document is read as a tree of spanned nodes,
//! then turned into the `serde_json::Value` the rest of the program reads and the spans
//! its errors are placed with.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::Spanned;

use super::place::{Located, Pos, Spans, item, join};

/// One document of a YAML stream.
#[derive(Debug, Clone)]
pub struct Document {
    pub value: Value,
    pub spans: Spans,
}

/// The documents of `text` that hold something (the parser skips those with nothing but
/// comments), or the syntax error, placed (`file` names the text in it).
pub fn documents(text: &str, file: &str) -> Result<Vec<Document>, Located> {
    let docs: Vec<Option<Spanned<Node>>> =
        serde_saphyr::from_str_multiple(text).map_err(|e| syntax(file, &e))?;
    Ok(docs
        .into_iter()
        .flatten()
        .map(|root| {
            let mut spans = Spans::default();
            let value = convert(root, "", None, &mut spans);
            Document { value, spans }
        })
        .collect())
}

/// serde-saphyr's error, its place taken out of the message and put in front.
fn syntax(file: &str, e: &serde_saphyr::Error) -> Located {
    let plain = e.render_with_options(serde_saphyr::render_options! {
        snippets: serde_saphyr::SnippetMode::Off
    });
    let message = match plain.rfind(" at line ") {
        Some(i) => plain[..i].to_string(),
        None => plain,
    };
    Located {
        file: file.to_string(),
        at: e.location().filter(|l| l.line() > 0).map(|l| Pos {
            line: l.line() as u32,
            column: l.column() as u32,
        }),
        path: String::new(),
        message,
    }
}

fn pos<T>(s: &Spanned<T>) -> Pos {
    Pos {
        line: s.referenced.line() as u32,
        column: s.referenced.column() as u32,
    }
}

fn convert(node: Spanned<Node>, path: &str, key: Option<Pos>, spans: &mut Spans) -> Value {
    spans.record(path, key, pos(&node));
    match node.value {
        Node::Value(v) => v,
        Node::Seq(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, n)| convert(n, &item(path, i), None, spans))
                .collect(),
        ),
        Node::Map(entries) => {
            let mut map = Map::new();
            for (k, v) in entries {
                let at = pos(&k);
                if map.contains_key(&k.value.0) {
                    spans
                        .duplicates
                        .push((path.to_string(), k.value.0.clone(), at));
                }
                let child = convert(v, &join(path, &k.value.0), Some(at), spans);
                map.insert(k.value.0, child);
            }
            Value::Object(map)
        }
    }
}

/// A YAML node: a scalar as JSON reads it, or a list or map of spanned nodes.
enum Node {
    Value(Value),
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(Spanned<Key>, Spanned<Node>)>),
}

/// A map key as a string: YAML allows `1:` or `true:` where JSON has only strings.
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        let v = Node::deserialize(d)?;
        Ok(Key(match v {
            Node::Value(Value::String(s)) => s,
            Node::Value(other) => other.to_string(),
            Node::Seq(_) | Node::Map(_) => {
                return Err(serde::de::Error::custom(
                    "a list or map as a key (a Kubernetes manifest has string keys)",
                ));
            }
        }))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Value(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Value(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Value(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Value(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Value(v.into()))
    }
    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Node, E> {
        self.visit_f64(v as f64)
    }
    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Node, E> {
        self.visit_f64(v as f64)
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Node, E> {
        // As serde_json reads a non-finite number: null.
        Ok(Node::Value(
            Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Value(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Value(Value::String(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(n) = a.next_element()? {
            items.push(n);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(e) = a.next_entry()? {
            entries.push(e);
        }
        Ok(Node::Map(entries))
    }
}
