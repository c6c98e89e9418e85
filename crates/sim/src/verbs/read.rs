//! GET and LIST, with resourceVersion semantics, selectors and paging.
//!
//! The simulator is always consistent, so most reads are served from the current state;
//! what differs by RV (docs/PROTOCOL.md §A.2) is validation and the cases that are not
//! "now": an RV the server has not reached gets `504 Too large resource version`; an exact
//! or continued LIST is served as of its RV, reconstructed from history, or `410 Expired`
//! once that history is gone. `resourceVersion=0` LISTs ignore `limit`, as the watch
//! cache does.

use std::sync::Arc;

use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use hyper::Response;
use serde_json::{Value, json};

use crate::ctx::Ctx;
use crate::negotiate::Output;
use crate::resource_type::ResourceType;
use crate::selector::{FieldSelector, LabelSelector, supported_fields};
use crate::store::{ObjKey, State, Stored};
use crate::table;
use stalemate_wire::k8s::request::{ListParams, RvSemantics};
use stalemate_wire::k8s::status::{ApiError, FieldError};
use stalemate_wire::listen::Body;

/// Parse an RV given by a client; malformed ones are a 400 like the apiserver's.
pub(crate) fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid resource version: {s:?}: must be a non-negative integer"
        ))
    })
}

/// The checks apimachinery's `ValidateListOptions` makes, as 422s (`fixtures/.../cr-list-match-without-rv`).
pub(crate) fn validate_list_options(p: &ListParams, watch: bool) -> Result<(), ApiError> {
    let invalid = |e: FieldError| {
        ApiError::invalid(
            "ListOptions.meta.k8s.io",
            "meta.k8s.io",
            "ListOptions",
            "",
            &[e],
        )
    };
    let rv = p.resource_version.as_deref().unwrap_or("");
    let m = p.resource_version_match.as_deref().unwrap_or("");
    if let Some(true) = p.send_initial_events {
        if !watch {
            return Err(invalid(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            )));
        }
        if m != "NotOlderThan" {
            return Err(invalid(FieldError {
                reason: "FieldValueNotSupported",
                field: "resourceVersionMatch".into(),
                message: format!("Unsupported value: {m:?}: supported values: \"NotOlderThan\""),
            }));
        }
        return Ok(());
    }
    if watch && !m.is_empty() {
        return Err(invalid(FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        )));
    }
    if !m.is_empty() && rv.is_empty() {
        return Err(invalid(FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        )));
    }
    match m {
        "" | "NotOlderThan" => {}
        "Exact" if rv == "0" => {
            return Err(invalid(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            )));
        }
        "Exact" => {}
        other => {
            return Err(invalid(FieldError {
                reason: "FieldValueNotSupported",
                field: "resourceVersionMatch".into(),
                message: format!(
                    "Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
                ),
            }));
        }
    }
    if p.continue_token.as_deref().is_some_and(|c| !c.is_empty()) && !matches!(rv, "" | "0") {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    Ok(())
}

/// Label and field selectors of a request, parsed (400 when malformed).
pub(crate) struct Filter {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Filter {
    pub(crate) fn from_request(ctx: &Ctx) -> Result<Filter, ApiError> {
        let p = &ctx.req.params;
        let labels = LabelSelector::parse(p.label_selector.as_deref().unwrap_or(""))
            .map_err(ApiError::bad_request)?;
        let fields = FieldSelector::parse(
            p.field_selector.as_deref().unwrap_or(""),
            supported_fields(&ctx.rt.kind),
        )
        .map_err(ApiError::bad_request)?;
        Ok(Filter {
            namespace: ctx.req.namespace.clone(),
            labels,
            fields,
        })
    }

    pub(crate) fn matches(&self, obj: &Stored) -> bool {
        if let Some(ns) = &self.namespace
            && obj.namespace() != ns
        {
            return false;
        }
        self.labels.matches(&obj.value["metadata"]["labels"]) && self.fields.matches(&obj.value)
    }

    fn unfiltered(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }
}

pub(crate) fn get(ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let name = ctx.req.name.as_deref().unwrap_or_default();
    let ns = ctx.req.namespace.as_deref().unwrap_or_default();
    let obj = {
        let st = ctx.sim.lock();
        if let RvSemantics::NotOlderThan(rv) | RvSemantics::Exact(rv) =
            ctx.req.params.rv_semantics()
        {
            let rv = parse_rv(&rv)?;
            if rv > st.rv {
                return Err(ApiError::too_large_resource_version(rv, st.rv));
            }
        }
        st.get(&ctx.rt.storage_key(), ns, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(ctx.rt.group_resource(), name))?
    };
    Ok(match &ctx.output {
        Output::Json => ctx
            .reply
            .json_bytes(200, obj.json_at(&ctx.rt.api_version())),
        Output::Table(v) => {
            let val = obj.value_at(&ctx.rt.api_version());
            let t = table::table(
                &ctx.rt,
                &[val],
                json!({"resourceVersion": obj.rv.to_string()}),
                ctx.include_object(),
                v,
                true,
            );
            ctx.reply.json(200, &t)
        }
        Output::Meta(v) => ctx.reply.json(200, &table::partial_metadata(&obj.value, v)),
    })
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: u64,
    start: String,
}

fn encode_continue(rv: u64, key: &ObjKey, namespaced_request: bool) -> String {
    let start = if namespaced_request || key.0.is_empty() {
        format!("{}\u{0}", key.1)
    } else {
        format!("{}/{}\u{0}", key.0, key.1)
    };
    let tok = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv,
        start,
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&tok).unwrap_or_default())
}

fn decode_continue(s: &str, ns: Option<&str>) -> Result<(u64, ObjKey), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .map_err(|_| bad("not base64"))?;
    let tok: ContinueToken =
        serde_json::from_slice(&raw).map_err(|_| bad("not a continue token"))?;
    if tok.v != "meta.k8s.io/v1" {
        return Err(bad(
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    let start = tok
        .start
        .strip_suffix('\u{0}')
        .unwrap_or(&tok.start)
        .to_string();
    let key = match ns {
        Some(ns) => (ns.to_string(), start),
        None => match start.split_once('/') {
            Some((n, name)) => (n.to_string(), name.to_string()),
            None => (String::new(), start),
        },
    };
    // The token points just past `key`: resume strictly after it.
    Ok((tok.rv, key))
}

/// The items of one LIST page and its list metadata.
pub(crate) struct Page {
    pub items: Vec<Arc<Stored>>,
    pub rv: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

pub(crate) fn list_page(ctx: &Ctx, filter: &Filter) -> Result<Page, ApiError> {
    let p = &ctx.req.params;
    validate_list_options(p, false)?;
    let limit = page_limit(p)?;
    let cont = p.continue_token.as_deref().filter(|c| !c.is_empty());
    let key = ctx.rt.storage_key();
    let mut st = ctx.sim.lock();
    let (rv, after, limit) = match cont {
        Some(c) => {
            let (rv, after) = resume_point(&mut st, &key, c, filter)?;
            (rv, Some(after), limit)
        }
        None => {
            let (rv, limit) = read_point(&mut st, &key, p, limit)?;
            (rv, None, limit)
        }
    };
    let matching = |o: &&Arc<Stored>| filter.matches(o);
    let past = |o: &&Arc<Stored>| after.as_ref().is_none_or(|a| o.key() > *a);
    let (items, last, remaining) = if rv == st.rv {
        collect_page(
            &mut st
                .iter(&key, filter.namespace.as_deref())
                .filter(past)
                .filter(matching),
            limit,
        )
    } else {
        let snap = st.snapshot_at(&key, rv);
        collect_page(&mut snap.values().filter(past).filter(matching), limit)
    };
    drop(st);
    let more = remaining > 0;
    Ok(Page {
        continue_token: match (more, last) {
            (true, Some(k)) => Some(encode_continue(rv, &k, filter.namespace.is_some())),
            _ => None,
        },
        remaining: (more && filter.unfiltered()).then_some(remaining),
        items,
        rv,
    })
}

/// The `limit` asked for (0: no limit; negative ones are 0).
fn page_limit(p: &ListParams) -> Result<usize, ApiError> {
    Ok(match p.limit.as_deref() {
        None | Some("") => 0,
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?
            .max(0) as usize,
    })
}

/// A continued LIST: the RV it is served as of and the key it resumes after, or why the
/// token cannot be followed.
fn resume_point(
    st: &mut State,
    key: &str,
    cont: &str,
    filter: &Filter,
) -> Result<(u64, ObjKey), ApiError> {
    let (rv, after) = decode_continue(cont, filter.namespace.as_deref())?;
    if rv > st.rv {
        return Err(ApiError::bad_request(
            "continue key is not valid: resourceVersion is in the future",
        ));
    }
    if st.is_expired_for(key, rv) {
        return Err(ApiError::expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        ));
    }
    Ok((rv, after))
}

/// A first LIST: the RV it is served as of (by its resourceVersion semantics) and the
/// limit that applies, or why that RV cannot be served.
fn read_point(
    st: &mut State,
    key: &str,
    p: &ListParams,
    limit: usize,
) -> Result<(u64, usize), ApiError> {
    Ok(match p.rv_semantics() {
        RvSemantics::Unset => (st.rv, limit),
        // The watch cache serves RV=0 and ignores limit.
        RvSemantics::Any => (st.rv, 0),
        RvSemantics::NotOlderThan(x) => {
            let x = parse_rv(&x)?;
            if x > st.rv {
                return Err(ApiError::too_large_resource_version(x, st.rv));
            }
            (st.rv, limit)
        }
        RvSemantics::Exact(x) => {
            let x = parse_rv(&x)?;
            if x > st.rv {
                return Err(ApiError::too_large_resource_version(x, st.rv));
            }
            if st.is_expired_for(key, x) {
                return Err(ApiError::expired(format!(
                    "too old resource version: {x} ({})",
                    st.oldest_available_rv_for(key)
                )));
            }
            (x, limit)
        }
    })
}

/// A page of `limit` items (0: all) from `it`: the items, the key of the last one, and
/// how many more there were.
fn collect_page(
    it: &mut dyn Iterator<Item = &Arc<Stored>>,
    limit: usize,
) -> (Vec<Arc<Stored>>, Option<ObjKey>, usize) {
    let mut items = Vec::new();
    let mut last = None;
    let mut remaining = 0usize;
    for o in it {
        if limit == 0 || items.len() < limit {
            last = Some(o.key());
            items.push(o.clone());
        } else {
            remaining += 1;
        }
    }
    (items, last, remaining)
}

pub(crate) fn list(ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let filter = Filter::from_request(ctx)?;
    let page = list_page(ctx, &filter)?;
    let api_version = ctx.rt.api_version();
    Ok(match &ctx.output {
        Output::Json => ctx
            .reply
            .json_bytes(200, render_list(&ctx.rt, &api_version, &page)),
        Output::Table(v) => {
            let objs: Vec<Value> = page
                .items
                .iter()
                .map(|o| o.value_at(&api_version))
                .collect();
            let mut meta = serde_json::Map::new();
            meta.insert("resourceVersion".into(), page.rv.to_string().into());
            if let Some(c) = &page.continue_token {
                meta.insert("continue".into(), c.clone().into());
            }
            if let Some(r) = page.remaining {
                meta.insert("remainingItemCount".into(), r.into());
            }
            ctx.reply.json(
                200,
                &table::table(
                    &ctx.rt,
                    &objs,
                    Value::Object(meta),
                    ctx.include_object(),
                    v,
                    true,
                ),
            )
        }
        Output::Meta(v) => {
            let items: Vec<Value> = page
                .items
                .iter()
                .map(|o| table::partial_metadata(&o.value, v))
                .collect();
            let mut meta = serde_json::Map::new();
            meta.insert("resourceVersion".into(), page.rv.to_string().into());
            if let Some(c) = &page.continue_token {
                meta.insert("continue".into(), c.clone().into());
            }
            ctx.reply.json(
                200,
                &json!({"kind": "PartialObjectMetadataList", "apiVersion": format!("meta.k8s.io/{v}"), "metadata": meta, "items": items}),
            )
        }
    })
}

/// Serialize a LIST by concatenating each item's cached JSON: no per-request re-encoding
/// of objects, which is what makes the simulator fast enough to benchmark a proxy with.
pub(crate) fn render_list(rt: &ResourceType, api_version: &str, page: &Page) -> Bytes {
    let mut b =
        BytesMut::with_capacity(128 + page.items.iter().map(|o| o.json.len() + 1).sum::<usize>());
    let s = |v: &str| serde_json::to_string(v).unwrap_or_default();
    let rv = s(&page.rv.to_string());
    let items = |b: &mut BytesMut| {
        b.put_slice(b"\"items\":[");
        for (i, o) in page.items.iter().enumerate() {
            if i > 0 {
                b.put_u8(b',');
            }
            if rt.custom {
                b.put_slice(&o.json_at(api_version));
            } else {
                b.put_slice(&o.item_json());
            }
        }
        b.put_u8(b']');
    };
    if rt.custom {
        // Unstructured lists: Go map order (sorted keys), `continue` always present.
        b.put_slice(format!("{{\"apiVersion\":{},", s(api_version)).as_bytes());
        items(&mut b);
        b.put_slice(
            format!(
                ",\"kind\":{},\"metadata\":{{\"continue\":{}",
                s(&rt.list_kind()),
                s(page.continue_token.as_deref().unwrap_or(""))
            )
            .as_bytes(),
        );
        if let Some(r) = page.remaining {
            b.put_slice(format!(",\"remainingItemCount\":{r}").as_bytes());
        }
        b.put_slice(format!(",\"resourceVersion\":{rv}}}}}").as_bytes());
    } else {
        b.put_slice(
            format!(
                "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{\"resourceVersion\":{rv}",
                s(&rt.list_kind()),
                s(api_version)
            )
            .as_bytes(),
        );
        if let Some(c) = &page.continue_token {
            b.put_slice(format!(",\"continue\":{}", s(c)).as_bytes());
        }
        if let Some(r) = page.remaining {
            b.put_slice(format!(",\"remainingItemCount\":{r}").as_bytes());
        }
        b.put_slice(b"},");
        items(&mut b);
        b.put_u8(b'}');
    }
    b.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_token_matches_recorded_format() {
        // fixtures/kube-apiserver-1.28/cm-list-json-limit.body
        let t = encode_continue(584, &("fixtures".into(), "cm-0".into()), true);
        assert_eq!(
            t,
            "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NTg0LCJzdGFydCI6ImNtLTBcdTAwMDAifQ"
        );
        let (rv, key) = decode_continue(&t, Some("fixtures")).unwrap();
        assert_eq!(
            (rv, key),
            (584, ("fixtures".to_string(), "cm-0".to_string()))
        );
        let t = encode_continue(9, &("ns".into(), "x".into()), false);
        assert_eq!(
            decode_continue(&t, None).unwrap().1,
            ("ns".to_string(), "x".to_string())
        );
        assert!(decode_continue("!!", None).is_err());
        assert!(decode_continue("e30", None).is_err());
    }

    #[test]
    fn list_option_validation() {
        let p = |rv: Option<&str>, m: Option<&str>, sie: Option<bool>| ListParams {
            resource_version: rv.map(str::to_string),
            resource_version_match: m.map(str::to_string),
            send_initial_events: sie,
            ..Default::default()
        };
        assert_eq!(
            validate_list_options(&p(None, Some("NotOlderThan"), None), false)
                .unwrap_err()
                .code,
            422
        );
        assert_eq!(
            validate_list_options(&p(Some("0"), Some("Exact"), None), false)
                .unwrap_err()
                .code,
            422
        );
        assert_eq!(
            validate_list_options(&p(Some(""), Some("NotOlderThan"), Some(true)), false)
                .unwrap_err()
                .code,
            422
        );
        assert!(
            validate_list_options(&p(Some(""), Some("NotOlderThan"), Some(true)), true).is_ok()
        );
        assert_eq!(
            validate_list_options(&p(Some("5"), Some("Exact"), None), true)
                .unwrap_err()
                .code,
            422
        );
        assert_eq!(
            validate_list_options(&p(Some(""), None, Some(true)), true)
                .unwrap_err()
                .code,
            422
        );
        assert!(validate_list_options(&p(Some("5"), Some("Exact"), None), false).is_ok());
    }
}
