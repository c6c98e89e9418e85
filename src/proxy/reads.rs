//! Reads a window answers from the client's view instead of the upstream: during a
//! window whose fault reads from views, a `resourceVersion=0` GET or LIST (which a real
//! apiserver may legally answer from any cache) — and, under `staleConsistentReads`, a
//! consistent one too (a contract violation, counted as such).

use http::Response;
use http::header::{self, HeaderMap, HeaderValue};

use super::{Call, Proxy, status_response};
use crate::fault::Reads;
use crate::listen::Body;
use crate::request::{ResourceRequest, RvSemantics, Verb};
use crate::status::ApiError;
use crate::watch::view::{Encoding, Read, ViewKey};

/// The view a request of `client` reads or feeds.
pub fn view_key(client: &str, r: &ResourceRequest) -> ViewKey {
    ViewKey {
        client: client.to_string(),
        resource: r.resource_name(),
        namespace: r.namespace.clone(),
        label_selector: r.params.label_selector.clone().unwrap_or_default(),
        field_selector: r.params.field_selector.clone().unwrap_or_default(),
    }
}

/// What the client accepts, for a read answered from a view: (JSON, protobuf). A
/// request for a Table or PartialObjectMetadata (`as=` in Accept) gets neither: the view
/// holds full objects.
fn accepts(h: &HeaderMap) -> (bool, bool) {
    let accept = h
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("as=") {
        return (false, false);
    }
    if accept.trim().is_empty() {
        return (true, false);
    }
    let mut json = false;
    let mut proto = false;
    for part in accept.split(',') {
        match part.split(';').next().unwrap_or("").trim() {
            "application/json" | "*/*" | "application/*" => json = true,
            "application/vnd.kubernetes.protobuf" => proto = true,
            _ => {}
        }
    }
    (json, proto)
}

/// Answer a read from the client's view if a window open over it says so.
pub fn answer(
    proxy: &Proxy,
    call: &mut Call,
    r: &ResourceRequest,
    headers: &HeaderMap,
) -> Option<Response<Body>> {
    if !matches!(r.verb, Verb::Get | Verb::List) || r.subresource.is_some() {
        return None;
    }
    let views = &proxy.gates.views;
    if !views.enabled() {
        return None;
    }
    let (window, _reads) =
        call.windows
            .iter()
            .find_map(|a| match a.window.fault.behaviour().reads() {
                Reads::Upstream => None,
                reads => Some((a, reads)),
            })?;
    let violation = match r.params.rv_semantics() {
        RvSemantics::Any => false,
        _ if window.window.stale_consistent_reads => true,
        _ => return None,
    };
    let (accept_json, accept_protobuf) = accepts(headers);
    let a = views.answer(&Read {
        key: view_key(&call.labels.client, r),
        name: r.name.as_deref(),
        accept_json,
        accept_protobuf,
    })?;
    let l = &mut call.labels;
    l.answer = if violation { "view-violation" } else { "view" };
    l.window = Some(window.window.name.clone());
    proxy
        .metrics
        .view_reads
        .with_label_values(&[
            l.client.as_str(),
            &l.metric_resource,
            if violation { "violated" } else { "kept" },
        ])
        .inc();
    if a.code == 404 {
        let gr = crate::status::GroupResource {
            group: &r.group,
            resource: &r.resource,
        };
        return Some(status_response(&ApiError::not_found(
            gr,
            r.name.as_deref().unwrap_or(""),
        )));
    }
    let mut resp = Response::new(crate::listen::body::full(a.body));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(match a.encoding {
            Encoding::Json => "application/json",
            Encoding::Protobuf => "application/vnd.kubernetes.protobuf",
        }),
    );
    Some(resp)
}
