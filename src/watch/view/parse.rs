//! Reading what a view is fed, without building trees: a LIST page's metadata and items
//! (JSON scanned at its top level, items kept as slices of the body; protobuf walked), the
//! object inside a watch frame, and the envelopes a view's answer is written in.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;

use super::encoding::Encoding;
use crate::k8s::protobuf::{Fields, Wire, unwrap_unknown};

#[derive(Deserialize)]
struct JsonList<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    metadata: Option<JsonListMeta<'a>>,
    #[serde(borrow, default)]
    items: Vec<&'a serde_json::value::RawValue>,
}

#[derive(Deserialize)]
struct JsonListMeta<'a> {
    #[serde(rename = "resourceVersion", borrow, default)]
    resource_version: Option<Cow<'a, str>>,
    #[serde(rename = "continue", borrow, default)]
    continue_: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct JsonItem<'a> {
    #[serde(borrow, default)]
    metadata: Option<JsonItemMeta<'a>>,
}

#[derive(Deserialize)]
struct JsonItemMeta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct JsonEvent<'a> {
    #[serde(borrow)]
    object: &'a serde_json::value::RawValue,
}

/// The end (exclusive) of the JSON value starting at `i` (after whitespace), without
/// parsing it: strings are skipped with their escapes, containers by depth.
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    while b.get(i)?.is_ascii_whitespace() {
        i += 1;
    }
    let mut depth = 0usize;
    loop {
        match *b.get(i)? {
            b'"' => {
                i += 1;
                loop {
                    match *b.get(i)? {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                i += 1;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                if depth == 0 {
                    return Some(i);
                }
                depth -= 1;
                i += 1;
            }
            b',' if depth == 0 => return Some(i),
            _ => i += 1,
        }
        if depth == 0 && matches!(b.get(i - 1), Some(b'"' | b'}' | b']')) {
            return Some(i);
        }
    }
}

/// A JSON LIST page's kind, apiVersion and metadata, read by scanning its top level
/// (the apiserver writes them before `items`) — the items are not parsed here.
pub(super) fn json_list_meta(body: &[u8]) -> Result<Page, String> {
    let bad = |what: &str| format!("not a JSON list: {what}");
    let mut i = body
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .ok_or_else(|| bad("empty"))?;
    if body[i] != b'{' {
        return Err(bad("not an object"));
    }
    i += 1;
    let (mut api_version, mut kind, mut meta): (
        Option<String>,
        Option<String>,
        Option<JsonListMeta<'_>>,
    ) = (None, None, None);
    let mut has_items = false;
    while let Some((key, value_at)) = next_key(body, i)? {
        i = value_at;
        if key == "items" && api_version.is_some() && kind.is_some() && meta.is_some() {
            // The apiserver's order: everything needed is known, and the items — nearly
            // all of the body — are left unscanned until a read needs the view (a broken
            // body is found then, by the full parse).
            has_items = true;
            break;
        }
        let vend = skip_value(body, i).ok_or_else(|| bad("unterminated value"))?;
        let value = &body[i..vend];
        match key.as_ref() {
            "apiVersion" => {
                api_version = serde_json::from_slice(value).map_err(|e| e.to_string())?
            }
            "kind" => kind = serde_json::from_slice(value).map_err(|e| e.to_string())?,
            "metadata" => meta = Some(serde_json::from_slice(value).map_err(|e| e.to_string())?),
            "items" => has_items = true,
            _ => {}
        }
        i = vend;
        if api_version.is_some() && kind.is_some() && meta.is_some() && has_items {
            break;
        }
    }
    if !has_items {
        return Err(bad("no items"));
    }
    let kind = kind.unwrap_or_default();
    Ok(Page {
        api_version: api_version.unwrap_or_default(),
        kind: kind.strip_suffix("List").unwrap_or(&kind).to_string(),
        rv: meta
            .as_ref()
            .and_then(|m| m.resource_version.clone())
            .map(Cow::into_owned)
            .unwrap_or_default(),
        continue_: meta
            .and_then(|m| m.continue_)
            .map(Cow::into_owned)
            .unwrap_or_default(),
        items: Vec::new(),
    })
}

/// The next key of an object scanned from `i` (past separators), and where its value
/// starts; `None` at the object's end.
fn next_key(body: &[u8], mut i: usize) -> Result<Option<(Cow<'_, str>, usize)>, String> {
    let bad = |what: &str| format!("not a JSON list: {what}");
    while body
        .get(i)
        .is_some_and(|c| c.is_ascii_whitespace() || *c == b',')
    {
        i += 1;
    }
    match body.get(i) {
        Some(b'}') | None => return Ok(None),
        Some(b'"') => {}
        Some(_) => return Err(bad("a key is not a string")),
    }
    let kend = skip_value(body, i).ok_or_else(|| bad("unterminated key"))?;
    let key: Cow<'_, str> = serde_json::from_slice(&body[i..kend]).map_err(|e| e.to_string())?;
    i = kend;
    while body.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    if body.get(i) != Some(&b':') {
        return Err(bad("a key without a value"));
    }
    Ok(Some((key, i + 1)))
}

/// `part` as a slice of `body` when it lies inside it (no copy), else a copy.
fn sub(body: &Bytes, part: &[u8]) -> Bytes {
    let (b, p) = (body.as_ptr() as usize, part.as_ptr() as usize);
    if p >= b && p + part.len() <= b + body.len() {
        body.slice_ref(part)
    } else {
        Bytes::copy_from_slice(part)
    }
}

/// A parsed LIST page.
pub(super) struct Page {
    pub api_version: String,
    pub kind: String,
    pub rv: String,
    pub continue_: String,
    pub items: Vec<((String, String), Bytes)>,
}

/// Items are slices of `body`, not copies: a view costs one copy of what it was shown.
pub(super) fn parse_json_list(body: &Bytes) -> Result<Page, String> {
    let l: JsonList<'_> = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let mut items = Vec::with_capacity(l.items.len());
    for raw in l.items {
        let it: JsonItem<'_> = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
        let m = it.metadata.ok_or("a list item without metadata")?;
        let key = (
            m.namespace.map(Cow::into_owned).unwrap_or_default(),
            m.name.map(Cow::into_owned).unwrap_or_default(),
        );
        items.push((key, sub(body, raw.get().as_bytes())));
    }
    let meta = l.metadata;
    Ok(Page {
        api_version: l.api_version.map(Cow::into_owned).unwrap_or_default(),
        kind: l
            .kind
            .map(|k| k.strip_suffix("List").unwrap_or(&k).to_string())
            .unwrap_or_default(),
        rv: meta
            .as_ref()
            .and_then(|m| m.resource_version.clone())
            .map(Cow::into_owned)
            .unwrap_or_default(),
        continue_: meta
            .and_then(|m| m.continue_)
            .map(Cow::into_owned)
            .unwrap_or_default(),
        items,
    })
}

fn proto_key(obj: &[u8]) -> Result<(String, String), String> {
    let (mut ns, mut name) = (String::new(), String::new());
    for f in Fields::new(obj) {
        if let (1, Wire::Bytes(m)) = f.map_err(|e| e.to_string())? {
            for g in Fields::new(m) {
                match g.map_err(|e| e.to_string())? {
                    (1, Wire::Bytes(x)) => name = String::from_utf8_lossy(x).into_owned(),
                    (3, Wire::Bytes(x)) => ns = String::from_utf8_lossy(x).into_owned(),
                    _ => {}
                }
            }
        }
    }
    Ok((ns, name))
}

/// A protobuf LIST page; with `items` false only its metadata is read (ListMeta comes
/// first in the apiserver's encoding, so the walk stops there).
pub(super) fn parse_proto_list(body: &Bytes, items: bool) -> Result<Page, String> {
    let (api_version, kind, raw) = unwrap_unknown(body).map_err(|e| e.to_string())?;
    let mut page = Page {
        api_version,
        kind: kind.strip_suffix("List").unwrap_or(&kind).to_string(),
        rv: String::new(),
        continue_: String::new(),
        items: Vec::new(),
    };
    for f in Fields::new(raw) {
        match f.map_err(|e| e.to_string())? {
            (1, Wire::Bytes(lm)) => {
                for g in Fields::new(lm) {
                    match g.map_err(|e| e.to_string())? {
                        (2, Wire::Bytes(x)) => page.rv = String::from_utf8_lossy(x).into_owned(),
                        (3, Wire::Bytes(x)) => {
                            page.continue_ = String::from_utf8_lossy(x).into_owned()
                        }
                        _ => {}
                    }
                }
                if !items {
                    break;
                }
            }
            (2, Wire::Bytes(item)) if items => page.items.push((proto_key(item)?, sub(body, item))),
            _ => {}
        }
    }
    Ok(page)
}

/// The object inside one watch frame, in the view's encoding.
pub(super) fn event_object(encoding: Encoding, frame: &[u8]) -> Option<Bytes> {
    match encoding {
        Encoding::Json => {
            let ev: JsonEvent<'_> = serde_json::from_slice(frame).ok()?;
            Some(Bytes::copy_from_slice(ev.object.get().as_bytes()))
        }
        Encoding::Protobuf => {
            let msg = frame.get(4..)?;
            let mut raw: &[u8] = &[];
            for f in Fields::new(msg) {
                if let (2, Wire::Bytes(ext)) = f.ok()? {
                    for g in Fields::new(ext) {
                        if let (1, Wire::Bytes(r)) = g.ok()? {
                            raw = r;
                        }
                    }
                }
            }
            let (_, _, obj) = unwrap_unknown(raw).ok()?;
            Some(Bytes::copy_from_slice(obj))
        }
    }
}

pub(super) fn proto_envelope(api_version: &str, kind: &str, raw: &[u8]) -> Bytes {
    Bytes::from(crate::k8s::protobuf::envelope(api_version, kind, raw))
}

/// A JSON list item may lack `kind`/`apiVersion` (built-in types' lists omit them); a
/// GET response carries both.
pub(super) fn json_with_type(api_version: &str, kind: &str, obj: &[u8]) -> Bytes {
    #[derive(Deserialize)]
    struct Tm<'a> {
        #[serde(borrow, default)]
        kind: Option<Cow<'a, str>>,
    }
    let typed = serde_json::from_slice::<Tm<'_>>(obj).is_ok_and(|t| t.kind.is_some());
    let trimmed = obj.trim_ascii_start();
    if typed || !trimmed.starts_with(b"{") {
        return Bytes::copy_from_slice(obj);
    }
    let mut out = serde_json::to_vec(&serde_json::json!({"kind": kind, "apiVersion": api_version}))
        .unwrap_or_default();
    out.pop(); // the closing brace
    let rest = trimmed[1..].trim_ascii_start();
    if !rest.starts_with(b"}") {
        out.push(b',');
    }
    out.extend_from_slice(rest);
    Bytes::from(out)
}
