//! Reads a window answers from the client's view instead of the upstream: during a
//! window whose fault reads from views, a `resourceVersion=0` GET or LIST (which a real
//! apiserver may legally answer from any cache) — and, under `staleConsistentReads`, a
//! consistent one too (a contract violation, counted as such).

use http::Response;
use http::header::{self, HeaderMap, HeaderValue};

use super::call::Call;
use super::shared::Proxy;
use super::status_response::status_response;
use crate::fault::Reads;
use crate::fault::rewind::To;
use crate::k8s::request::{ResourceRequest, RvSemantics, Verb};
use crate::k8s::status::ApiError;
use crate::listen::Body;
use crate::watch::view::{Answer, Encoding, Read, ViewKey};
use tokio::time::Instant;

/// When a rewind goes back to: `by` ago, or when the window `at` last opened.
fn rewind_point(proxy: &Proxy, to: &To) -> Result<Instant, String> {
    match to {
        To::By(d) => Instant::now()
            .checked_sub(*d)
            .ok_or_else(|| "the clock does not reach back that far".to_string()),
        To::At(w) => proxy
            .gates
            .engine
            .opened_at(w)
            .ok_or_else(|| format!("window {w:?} has not opened yet")),
    }
}

/// A watch of a target a `rewind` window holds in the past: from `resourceVersion=0`,
/// or from the resourceVersion a rewound read answered with, the client is given the
/// view as it was (and the changes since, held until the window ends) and the upstream
/// watch starts where the view is now.
pub fn rewind_watch(proxy: &Proxy, call: &mut Call, req: &mut http::Request<crate::listen::Body>) {
    let Some(r) = call.resource() else { return };
    // A WatchList is `watch_list`'s.
    if r.params.send_initial_events == Some(true) || call.rewind.is_some() {
        return;
    }
    let Some(rv) = r.params.resource_version.clone() else {
        return;
    };
    let to = call
        .windows
        .iter()
        .find_map(|a| match a.window.fault.behaviour().reads() {
            Reads::Rewound(to) => Some((a.window.name.clone(), to)),
            _ => None,
        });
    let Some((window, to)) = to else { return };
    let key = view_key(&call.labels.client, r);
    let rewind = rewind_point(proxy, &to)
        .ok()
        .and_then(|t| proxy.gates.views.rewound_watch(&key, &rv, t));
    let Some(rewind) = rewind else {
        if rv == "0" {
            call.labels.note = Some("rewind: no view to start this watch from; forwarded".into());
        }
        return;
    };
    let Some(uri) = with_resource_version(req.uri(), &rewind.upstream_rv) else {
        return;
    };
    *req.uri_mut() = uri;
    call.labels.window = Some(window);
    call.labels.rv = Some(rv);
    call.rewind = Some(rewind);
}

/// A WatchList (`sendInitialEvents=true`) of a target a window answers reads for from
/// views: answered as a watch cache behind the upstream would (`watch_list` in
/// `watch/view`) — the client's view as ADDED events and the `initial-events-end`
/// bookmark at its resourceVersion, at once; then the upstream's events from there, held
/// as the window holds them. Only where a real apiserver could answer so:
///
/// - `resourceVersion` unset is a **consistent read** (`ListOptions.SendInitialEvents`
///   in apimachinery's `meta/v1/types.go`: "If `resourceVersion` is unset, this is
///   interpreted as 'consistent read'"; the cacher asks etcd for its current revision
///   and waits until it has it, `storage/cacher/cacher.go`
///   `getWatchCacheResourceVersion`): a lagging apiserver answers it fresh or not at
///   all, so it goes upstream — unless the window sets `staleConsistentReads`, which is
///   labelled a contract violation. client-go ≥ 1.35 informers start (and restart)
///   with exactly this request, so a restarted controller is not sent back in time.
/// - `resourceVersion=0` may be answered from any cache: the view.
/// - `resourceVersion=X` (`NotOlderThan`): the view if it is at X or later — a rewind
///   only as far back as X, never before what the client has already seen.
pub fn watch_list(proxy: &Proxy, call: &mut Call, req: &mut http::Request<crate::listen::Body>) {
    let Some(r) = call.resource() else { return };
    if r.params.send_initial_events != Some(true) || !proxy.gates.views.enabled() {
        return;
    }
    let Some((window, reads)) =
        call.windows
            .iter()
            .find_map(|a| match a.window.fault.behaviour().reads() {
                Reads::Upstream => None,
                reads => Some((a.window.clone(), reads)),
            })
    else {
        return;
    };
    let asked = r.params.resource_version.clone().unwrap_or_default();
    let violation = asked.is_empty();
    if violation && !window.stale_consistent_reads {
        if matches!(reads, Reads::Rewound(_)) {
            call.labels.window = Some(window.name.clone());
            call.labels.note = Some(
                "rewind: rewound nothing: a WatchList without a resourceVersion is a consistent read; answered upstream".into(),
            );
        }
        return;
    }
    // The stream comes back in the framing the upstream picks: the client's first.
    let protobuf = preferred_protobuf(req.headers());
    let read = Read {
        key: view_key(&call.labels.client, r),
        name: None,
        accept_json: !protobuf,
        accept_protobuf: protobuf,
    };
    let at = match &reads {
        Reads::Rewound(to) => match rewind_point(proxy, to) {
            Ok(t) => Some(t),
            Err(why) => return not_from_view(call, &window.name, &reads, &why),
        },
        _ => None,
    };
    let answer = match proxy.gates.views.watch_list(&read, at) {
        Ok(a) => a,
        Err(why) => return not_from_view(call, &window.name, &reads, &why),
    };
    if !violation && asked != "0" && !at_least(&answer.rv, &asked) {
        let why = format!(
            "the client asks for resourceVersion {asked} or newer and the view is at {}",
            answer.rv
        );
        return not_from_view(call, &window.name, &reads, &why);
    }
    let Some(uri) = with_resource_version(req.uri(), &answer.rewind.upstream_rv) else {
        return;
    };
    *req.uri_mut() = uri;
    let l = &mut call.labels;
    l.answer = if violation { "view-violation" } else { "view" };
    l.window = Some(window.name.clone());
    l.rv = Some(answer.rv.clone());
    proxy
        .metrics
        .view_reads
        .with_label_values(&[
            &*l.client,
            &l.metric_resource,
            if violation { "violated" } else { "kept" },
        ])
        .inc();
    call.initial = Some(answer.initial);
    call.rewind = Some(answer.rewind);
}

/// A WatchList a window would have answered from the view went upstream: the trace says
/// why (a rewind that could not go back rewound nothing).
fn not_from_view(call: &mut Call, window: &str, reads: &Reads, why: &str) {
    call.labels.window = Some(window.to_string());
    call.labels.note = Some(match reads {
        Reads::Rewound(_) => format!("rewind: rewound nothing: {why}; answered upstream"),
        _ => format!("view: {why}; answered upstream"),
    });
}

/// Whether resourceVersion `have` is at least `want` (both etcd revisions; anything else
/// is not comparable, and not taken for newer).
fn at_least(have: &str, want: &str) -> bool {
    match (have.parse::<u64>(), want.parse::<u64>()) {
        (Ok(h), Ok(w)) => h >= w,
        _ => false,
    }
}

/// `uri` with its `resourceVersion` query parameter set to `rv` (and no
/// `resourceVersionMatch` or `sendInitialEvents`: a plain watch that starts exactly
/// there).
fn with_resource_version(uri: &http::Uri, rv: &str) -> Option<http::Uri> {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in crate::k8s::request::query_pairs(uri.query().unwrap_or("")) {
        match &*k {
            "resourceVersion" | "resourceVersionMatch" | "sendInitialEvents" => {}
            _ => {
                q.append_pair(&k, &v);
            }
        }
    }
    q.append_pair("resourceVersion", rv);
    let pq = format!("{}?{}", uri.path(), q.finish());
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(pq.parse().ok()?);
    http::Uri::from_parts(parts).ok()
}

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

/// Whether a watch's Accept puts protobuf before JSON (what the apiserver then answers in).
fn preferred_protobuf(h: &HeaderMap) -> bool {
    let accept = h
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    for part in accept.split(',') {
        match part.split(';').next().unwrap_or("").trim() {
            "application/vnd.kubernetes.protobuf" => return true,
            "application/json" | "*/*" | "application/*" => return false,
            _ => {}
        }
    }
    false
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
    let (window, reads) =
        call.windows
            .iter()
            .find_map(|a| match a.window.fault.behaviour().reads() {
                Reads::Upstream => None,
                reads => Some((a, reads)),
            })?;
    let window = window.window.clone();
    let violation = match r.params.rv_semantics() {
        RvSemantics::Any => false,
        _ if window.stale_consistent_reads => true,
        _ => return None,
    };
    let (accept_json, accept_protobuf) = accepts(headers);
    let read = Read {
        key: view_key(&call.labels.client, r),
        name: r.name.as_deref(),
        accept_json,
        accept_protobuf,
    };
    let a = match reads {
        Reads::Rewound(to) => {
            let past = rewind_point(proxy, &to).and_then(|t| views.answer_at(&read, t));
            match past {
                Ok(a) => a,
                Err(why) => {
                    // Never a silent no-op: the trace says why the read went upstream.
                    call.labels.window = Some(window.name.clone());
                    call.labels.note = Some(format!("rewind: {why}; answered upstream"));
                    return None;
                }
            }
        }
        _ => views.answer(&read)?,
    };
    let l = &mut call.labels;
    l.answer = if violation { "view-violation" } else { "view" };
    l.window = Some(window.name.clone());
    l.rv = Some(a.rv.clone());
    proxy
        .metrics
        .view_reads
        .with_label_values(&[
            &*l.client,
            &l.metric_resource,
            if violation { "violated" } else { "kept" },
        ])
        .inc();
    Some(view_response(r, a))
}

/// The answer a view gave, as the apiserver would have sent it: a `Status` 404 for an
/// object it does not hold, else its body in the encoding asked for.
fn view_response(r: &ResourceRequest, a: Answer) -> Response<Body> {
    if a.code == 404 {
        let gr = crate::k8s::status::GroupResource {
            group: &r.group,
            resource: &r.resource,
        };
        return status_response(&ApiError::not_found(gr, r.name.as_deref().unwrap_or("")));
    }
    let mut resp = Response::new(crate::listen::body::full(a.body));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(match a.encoding {
            Encoding::Json => "application/json",
            Encoding::Protobuf => "application/vnd.kubernetes.protobuf",
        }),
    );
    resp
}
