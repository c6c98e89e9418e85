//! Reads answered from a view: which views may answer one (its own query's, its
//! client's all-namespaces one, the unselected one for a single-object field selector),
//! and the JSON or protobuf body built from what the view holds.

use bytes::Bytes;

use super::encoding::Encoding;
use super::key::ViewKey;
use super::parse::{json_with_type, proto_envelope};
use super::store::View;
use crate::k8s::protobuf::Writer;

/// A read answered from a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub encoding: Encoding,
    /// 200, or 404 for a GET of an object the view does not hold.
    pub code: u16,
    pub body: Bytes,
    /// The view's resourceVersion.
    pub rv: String,
}

/// What a read wants from a view.
#[derive(Debug, Clone)]
pub struct Read<'a> {
    pub key: ViewKey,
    /// A GET of this name; a LIST when `None`.
    pub name: Option<&'a str>,
    pub accept_protobuf: bool,
    pub accept_json: bool,
}

/// Which of a view a read wants: a namespace of an all-namespaces view, one object of an
/// unselected one (a `metadata.name=X` field selector).
#[derive(Debug, Clone, Default)]
pub(super) struct Scope {
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
}

impl Scope {
    pub(super) fn covers(&self, (ns, name): &(String, String)) -> bool {
        self.namespace.as_ref().is_none_or(|n| n == ns)
            && self.name.as_ref().is_none_or(|n| n == name)
    }
}

/// The views that may answer `read`, best first: its own query's; the same client's
/// all-namespaces one; for a single-object field selector, the unselected ones.
pub(super) fn candidates(read: &Read<'_>) -> Vec<(ViewKey, Scope)> {
    let k = &read.key;
    let ns = k.namespace.clone();
    let mut out = vec![(k.clone(), Scope::default())];
    if ns.is_some() {
        out.push((
            ViewKey {
                namespace: None,
                ..k.clone()
            },
            Scope {
                namespace: ns.clone(),
                name: None,
            },
        ));
    }
    if let Some(name) = crate::k8s::request::single_name_from_field_selector(&k.field_selector) {
        let plain = ViewKey {
            field_selector: String::new(),
            ..k.clone()
        };
        out.push((
            plain.clone(),
            Scope {
                namespace: None,
                name: Some(name.clone()),
            },
        ));
        if ns.is_some() {
            out.push((
                ViewKey {
                    namespace: None,
                    ..plain
                },
                Scope {
                    namespace: ns,
                    name: Some(name),
                },
            ));
        }
    }
    out
}

/// Build the answer to `read` from a parsed view.
pub(super) fn answer_from(view: &View, read: &Read<'_>, scope: &Scope) -> Option<Answer> {
    let ok = match view.encoding {
        Encoding::Json => read.accept_json,
        Encoding::Protobuf => read.accept_protobuf,
    };
    if !ok {
        return None;
    }
    let ns = read.key.namespace.clone().unwrap_or_default();
    if let Some(name) = read.name {
        if !read.key.label_selector.is_empty() || !read.key.field_selector.is_empty() {
            return None;
        }
        return Some(match view.objects.get(&(ns.clone(), name.to_string())) {
            Some(obj) => Answer {
                encoding: view.encoding,
                code: 200,
                body: match view.encoding {
                    Encoding::Json => json_with_type(&view.api_version, &view.kind, obj),
                    Encoding::Protobuf => proto_envelope(&view.api_version, &view.kind, obj),
                },
                rv: view.rv.clone(),
            },
            None => Answer {
                encoding: Encoding::Json,
                code: 404,
                body: Bytes::new(),
                rv: view.rv.clone(),
            },
        });
    }
    let items = view
        .objects
        .iter()
        .filter(|(k, _)| scope.covers(k))
        .map(|(_, o)| o);
    let list_kind = format!("{}List", view.kind);
    let body = match view.encoding {
        Encoding::Json => {
            let head = serde_json::json!({
                "kind": list_kind,
                "apiVersion": view.api_version,
                "metadata": {"resourceVersion": view.rv},
            });
            let mut out = serde_json::to_vec(&head).unwrap_or_default();
            out.pop();
            out.extend_from_slice(b",\"items\":[");
            for (i, o) in items.enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(o);
            }
            out.extend_from_slice(b"]}");
            Bytes::from(out)
        }
        Encoding::Protobuf => {
            let mut list = Writer::default();
            list.message(1, |lm| {
                lm.string(1, "").string(2, &view.rv).string(3, "");
            });
            for o in items {
                list.bytes(2, o);
            }
            proto_envelope(&view.api_version, &list_kind, &list.buf)
        }
    };
    Some(Answer {
        encoding: view.encoding,
        code: 200,
        body,
        rv: view.rv.clone(),
    })
}

/// A WatchList's initial state from a view — what a watch cache at the view's
/// resourceVersion sends (`apiserver/pkg/storage/cacher`: the objects as synthetic ADDED
/// events, then a BOOKMARK annotated `k8s.io/initial-events-end` at that
/// resourceVersion): each object the read covers, in the cache's key order, then the
/// end marker. In the view's framing.
pub(super) fn initial_events(view: &View, scope: &Scope) -> Vec<Bytes> {
    use crate::watch::{EventType, Format, event};
    let format = match view.encoding {
        Encoding::Json => Format::Json,
        Encoding::Protobuf => Format::Protobuf,
    };
    let mut out: Vec<Bytes> = view
        .objects
        .iter()
        .filter(|(k, _)| scope.covers(k))
        .map(|(_, o)| {
            let object = match view.encoding {
                Encoding::Json => json_with_type(&view.api_version, &view.kind, o),
                Encoding::Protobuf => proto_envelope(&view.api_version, &view.kind, o),
            };
            event(format, EventType::Added, &object)
        })
        .collect();
    let marker = match view.encoding {
        Encoding::Json => Bytes::from(
            serde_json::to_vec(&serde_json::json!({
                "kind": view.kind,
                "apiVersion": view.api_version,
                "metadata": {
                    "resourceVersion": view.rv,
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            }))
            .unwrap_or_default(),
        ),
        Encoding::Protobuf => {
            let mut object = Writer::default();
            object.message(1, |meta| {
                meta.string(6, &view.rv).message(12, |entry| {
                    entry
                        .string(1, "k8s.io/initial-events-end")
                        .string(2, "true");
                });
            });
            proto_envelope(&view.api_version, &view.kind, &object.buf)
        }
    };
    out.push(event(format, EventType::Bookmark, &marker));
    out
}
