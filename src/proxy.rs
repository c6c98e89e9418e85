//! Forwarding: the transparent half of stalemate.
//!
//! ```text
//!  client ─TLS─► listen ─► proxy::handle ─► classify ─► upstream (TLS; requests on pooled
//!                                                       HTTP/1.1, watches on HTTP/2)
//!                              │                           │
//!                              └── metrics ◄── response ◄──┘  (body streamed back)
//! ```
//!
//! Bodies are streams both ways and are never buffered: a 100 MB LIST costs a few frames
//! of memory, and each watch frame is flushed as the upstream sends it. Headers are kept
//! except the hop-by-hop ones (RFC 9110 §7.6.1) and `X-Remote-*`, which a front proxy's
//! client could otherwise use to claim any identity (PROTOCOL.md §A.11). Dropping the
//! client's response body (client gone) drops the upstream response: the upstream request
//! is cancelled with it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response};
use http_body::Frame;
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::listen::{Body, BodyError, Peer};
use crate::metrics::Metrics;
use crate::request::{self, RequestInfo, Verb};
use crate::schedule::engine::{Active, request_fault};
use crate::status::ApiError;
use crate::upstream::{Upstream, error};

/// Shared state of a running proxy.
pub struct Proxy {
    pub upstream: Upstream,
    pub metrics: Arc<Metrics>,
    /// Time allowed for the upstream's response headers (not for streaming bodies).
    pub header_timeout: Duration,
    /// Becomes `true` when the proxy shuts down: watch streams then end cleanly at their
    /// next frame boundary, so clients resume (PROTOCOL.md §C) instead of seeing a reset.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// The schedule's windows, views, trace and held-bytes budget; watch streams that
    /// windows target go through a gate.
    pub gates: Arc<crate::watch::stream::Gates>,
    /// Writes and conflicts feed the hot-loop and conflict-storm oracles.
    pub oracles: Arc<crate::oracle::Oracles>,
    /// What the upstream serves: only those resources are metric labels.
    pub known: Arc<crate::upstream::discovery::KnownResources>,
    /// (client, resource) pairs whose ungated watches were already logged.
    pub ungated_seen: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
}

/// The `resource` label of requests for resources the upstream does not serve.
pub const OTHER: &str = "other";

/// The bearer token in kubeconfigs written for proxy clients. It stands for "no
/// credentials of my own": the proxy removes it and the upstream credentials are used.
/// (A kubeconfig user with no credentials at all makes kubectl prompt for a password.)
pub const UPSTREAM_CREDENTIALS_TOKEN: &str = "stalemate-use-upstream-credentials";

/// Hop-by-hop headers (RFC 9110 §7.6.1), never forwarded.
const HOP_BY_HOP: [HeaderName; 9] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

fn is_upgrade(h: &HeaderMap) -> bool {
    h.get(header::CONNECTION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        })
        && h.contains_key(header::UPGRADE)
}

/// Remove hop-by-hop headers, and those the `Connection` header names. For an upgrade,
/// `Connection: Upgrade` and `Upgrade` are end-to-end in effect and are kept.
pub fn strip_hop_by_hop(h: &mut HeaderMap, keep_upgrade: bool) {
    // Every request and response passes here, and most carry none of these: one pass
    // over the (few) names present instead of nine removals.
    if !h.keys().any(|k| HOP_BY_HOP.contains(k)) {
        return;
    }
    let named: Vec<HeaderName> = h
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    let upgrade = keep_upgrade
        .then(|| h.get(header::UPGRADE).cloned())
        .flatten();
    for n in named {
        h.remove(n);
    }
    for n in &HOP_BY_HOP {
        h.remove(n);
    }
    if let Some(u) = upgrade {
        h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        h.insert(header::UPGRADE, u);
    }
}

/// Client request headers that must not reach the upstream: hop-by-hop, `Host` (the
/// client library sets it for the upstream), and every `X-Remote-*`.
pub fn sanitize_request_headers(h: &mut HeaderMap, upgrade: bool) {
    strip_hop_by_hop(h, upgrade);
    h.remove(header::HOST);
    let sentinel = h
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, tok)| {
            scheme.eq_ignore_ascii_case("bearer") && tok.trim() == UPSTREAM_CREDENTIALS_TOKEN
        });
    if sentinel {
        h.remove(header::AUTHORIZATION);
    }
    // Empty (no allocation) for nearly every request.
    let remote: Vec<HeaderName> = h
        .keys()
        .filter(|k| k.as_str().starts_with("x-remote-"))
        .cloned()
        .collect();
    for k in remote {
        h.remove(k);
    }
}

fn status_response(e: &ApiError) -> Response<Body> {
    let body = serde_json::to_vec(&e.to_status()).unwrap_or_default();
    let mut r = Response::new(crate::listen::body::full(body));
    *r.status_mut() = http::StatusCode::from_u16(e.code).unwrap_or(http::StatusCode::BAD_GATEWAY);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The synthetic `Status` of an `errors` fault, shaped like the apiserver's own.
fn injected_error(
    window: &str,
    code: u16,
    retry_after: Option<Duration>,
    r: &request::ResourceRequest,
) -> Response<Body> {
    let gr = crate::status::GroupResource {
        group: &r.group,
        resource: &r.resource,
    };
    let name = r.name.as_deref().unwrap_or("");
    let mut e = match code {
        409 => ApiError::conflict_modified(gr, name),
        429 => ApiError::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        ),
        503 => {
            ApiError::service_unavailable("the server is currently unable to handle the request")
        }
        504 => ApiError::new(
            504,
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request",
        ),
        _ => ApiError::internal("an error on the server has prevented the request from succeeding"),
    };
    e.message = format!("{} (injected by stalemate window {window:?})", e.message);
    if let Some(d) = retry_after {
        let secs = d.as_secs().max(1);
        e.retry_after = Some(secs);
        e = e.with_details(serde_json::json!({"retryAfterSeconds": secs}));
    }
    let mut resp = status_response(&e);
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// Labels for one request, and how it was answered (for the trace).
struct Labels {
    client: String,
    verb: &'static str,
    /// The resource as named (`plural.group`, `/sub`): windows, trace and oracles.
    resource: String,
    /// The resource as metric labels name it: [`Labels::resource`] when the upstream's
    /// discovery knows it, else `other` (label sets stay bounded whatever URLs arrive).
    metric_resource: String,
    watch: bool,
    namespace: Option<String>,
    name: Option<String>,
    answer: &'static str,
    window: Option<String>,
}

fn labels(info: &RequestInfo, client: String) -> Labels {
    match info {
        RequestInfo::NonResource { .. } => Labels {
            client,
            verb: "get",
            resource: String::new(),
            metric_resource: String::new(),
            watch: false,
            namespace: None,
            name: None,
            answer: "upstream",
            window: None,
        },
        RequestInfo::Resource(r) => Labels {
            client,
            verb: r.verb.as_str(),
            resource: match &r.subresource {
                Some(s) => format!("{}/{s}", r.resource_name()),
                None => r.resource_name(),
            },
            metric_resource: OTHER.to_string(),
            watch: r.verb == Verb::Watch,
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            answer: "upstream",
            window: None,
        },
    }
}

fn view_key(client: &str, r: &request::ResourceRequest) -> crate::watch::view::ViewKey {
    crate::watch::view::ViewKey {
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

/// During a window that makes the client stale, answer a read from its view:
/// `resourceVersion=0` always (the API allows any staleness there), consistent reads
/// only when the window sets `staleConsistentReads`.
fn answer_from_view(
    proxy: &Proxy,
    l: &mut Labels,
    r: &request::ResourceRequest,
    windows: &[Active],
    headers: &HeaderMap,
) -> Option<Response<Body>> {
    if !matches!(r.verb, Verb::Get | Verb::List) || r.subresource.is_some() {
        return None;
    }
    let g = &proxy.gates;
    if !g.views.enabled() {
        return None;
    }
    let stale = windows.iter().find(|a| a.window.fault.makes_stale())?;
    let violation = match r.params.rv_semantics() {
        request::RvSemantics::Any => false,
        _ if stale.window.stale_consistent_reads => true,
        _ => return None,
    };
    let (accept_json, accept_protobuf) = accepts(headers);
    let a = g.views.answer(&crate::watch::view::Read {
        key: view_key(&l.client, r),
        name: r.name.as_deref(),
        accept_json,
        accept_protobuf,
    })?;
    l.answer = if violation { "view-violation" } else { "view" };
    l.window = Some(stale.window.name.clone());
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
            crate::watch::view::Encoding::Json => "application/json",
            crate::watch::view::Encoding::Protobuf => "application/vnd.kubernetes.protobuf",
        }),
    );
    Some(resp)
}

/// A LIST response body on its way to the client, copied as it passes so the client's
/// view can be rebuilt from it when it ends. The client gets every frame at once; the
/// copy stops (and no view is made) past the views' memory cap.
struct ListTee {
    inner: Body,
    /// The body's chunks as they passed (shared with what went to the client, not
    /// copied), and their total length.
    chunks: Vec<Bytes>,
    len: usize,
    limit: usize,
    gzip: bool,
    encoding: crate::watch::view::Encoding,
    first_page: bool,
    key: Option<crate::watch::view::ViewKey>,
    views: Arc<crate::watch::view::Views>,
}

impl ListTee {
    fn finish(&mut self) {
        let Some(key) = self.key.take() else { return };
        let chunks = std::mem::take(&mut self.chunks);
        let chunks = if self.gzip {
            use std::io::Read;
            let gz = crate::watch::view::join_chunks(&chunks);
            let mut out = Vec::new();
            let mut d = flate2::read::GzDecoder::new(&gz[..]).take(self.limit as u64 + 1);
            if d.read_to_end(&mut out).is_err() || out.len() > self.limit {
                return;
            }
            vec![Bytes::from(out)]
        } else {
            chunks
        };
        self.views
            .feed_list_chunks(key, self.encoding, self.first_page, chunks);
    }
}

impl http_body::Body for ListTee {
    type Data = Bytes;
    type Error = BodyError;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    if self.len + d.len() > self.limit {
                        self.key = None;
                        self.chunks = Vec::new();
                    } else if self.key.is_some() {
                        self.len += d.len();
                        self.chunks.push(d.clone());
                    }
                }
            }
            Poll::Ready(None) => self.finish(),
            Poll::Ready(Some(Err(_))) => self.key = None,
            Poll::Pending => {}
        }
        // hyper stops polling once the body says it has ended; the copy is complete then.
        if matches!(r, Poll::Ready(Some(Ok(_)))) && self.inner.is_end_stream() {
            self.finish();
        }
        r
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

type Shutdown = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// A response body that keeps a watch counted while the client holds it, and ends a
/// watch cleanly between upstream chunks when the proxy shuts down. (The apiserver
/// flushes one event per chunk; event-exact framing arrives with the watch codecs.)
struct Counted {
    inner: Body,
    gauge: Option<prometheus::IntGauge>,
    shutdown: Option<Shutdown>,
    /// A watch's place on its upstream connection.
    _slot: Option<crate::upstream::WatchSlot>,
    /// `inner` is the upstream's body itself (an ungated watch): a lost upstream
    /// connection ends it cleanly. (A gated stream has made that choice already.)
    upstream_body: bool,
}

impl Drop for Counted {
    fn drop(&mut self) {
        if let Some(g) = &self.gauge {
            g.dec();
        }
    }
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = BodyError;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if let Some(s) = self.shutdown.as_mut()
            && s.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            // The upstream connection went away under an ungated watch: end it cleanly,
            // as the client would see it direct (`upstream::error::WatchEnd`).
            Poll::Ready(Some(Err(e)))
                if self.upstream_body && error::watch_end(&*e) == error::WatchEnd::Lost =>
            {
                tracing::debug!(error = %e, "upstream watch connection lost; ending the stream");
                Poll::Ready(None)
            }
            r => r,
        }
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// How a watch response can be framed: (format, gzip-encoded), or why it cannot be.
fn watch_framing(h: &HeaderMap) -> Result<(crate::watch::stream::Format, bool), &'static str> {
    let gzip = match h
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
    {
        None => false,
        Some(e) if e.is_empty() || e == "identity" => false,
        Some(e) if e == "gzip" || e == "x-gzip" => true,
        Some(_) => return Err("content-encoding"),
    };
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::watch::stream::Format::from_content_type)
        .map(|f| (f, gzip))
        .ok_or("media-type")
}

/// A watch the gate cannot frame passes through as it is, so no window can apply to it:
/// counted, and said once per client and resource — never silently.
fn ungated(proxy: &Proxy, l: &Labels, reason: &'static str) {
    proxy
        .metrics
        .ungated
        .with_label_values(&[l.client.as_str(), &l.metric_resource, reason])
        .inc();
    let first = proxy
        .ungated_seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert((l.client.clone(), l.metric_resource.clone()));
    if first {
        tracing::warn!(client = %l.client, resource = %l.resource, reason, "a watch stream cannot be gated (its framing is unknown); windows do not apply to it");
    }
}

/// The Accept header a watch is forwarded with: only media types the gate can frame
/// (JSON and protobuf, with any parameters such as `as=Table`), so every window
/// applies. `None`: keep the client's. A client that asked only for something else
/// (`application/cbor-seq`) gets JSON, which client-go decodes by the response's
/// Content-Type.
fn gateable_accept(accept: Option<&HeaderValue>) -> Option<HeaderValue> {
    let accept = accept?.to_str().unwrap_or("");
    let ranges: Vec<&str> = accept
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    let framable = |r: &&str| {
        matches!(
            r.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
                .as_str(),
            "application/json" | "application/vnd.kubernetes.protobuf" | "*/*" | "application/*"
        )
    };
    let kept: Vec<&str> = ranges.iter().copied().filter(framable).collect();
    if kept.len() == ranges.len() {
        return None;
    }
    if kept.is_empty() {
        return Some(HeaderValue::from_static("application/json"));
    }
    HeaderValue::from_str(&kept.join(", ")).ok()
}

pub async fn handle(proxy: Arc<Proxy>, mut req: Request<Incoming>, peer: Peer) -> Response<Body> {
    let start = Instant::now();
    let info = request::classify(req.method(), req.uri().path(), req.uri().query());
    let client = proxy.gates.engine.identify(req.headers(), peer.local);
    let mut l = labels(&info, client);
    if let RequestInfo::Resource(r) = &info {
        let known = &proxy.known;
        if !known.knows_group_version(&r.group, &r.version) {
            // Boxed: discovery's future is large, and inlined it would grow every
            // request's (thousands of them are in flight when watches open at once).
            Box::pin(known.refresh_for(&r.group, &r.version)).await;
        }
        if known.knows(&r.group, &r.version, &r.resource, r.subresource.as_deref()) {
            l.metric_resource = l.resource.clone();
        }
    }
    let namespace = match &info {
        RequestInfo::Resource(r) => r.namespace.clone(),
        RequestInfo::NonResource { .. } => None,
    };
    // The windows open over this request's target, looked up once per request (after
    // the triggers, which may just have opened one).
    let mut windows: Vec<Active> = Vec::new();
    if l.watch {
        // The gate reads frames: ask for a plain stream (PROTOCOL.md §A.6; one that
        // comes gzipped anyway is decoded) in a framing it knows.
        req.headers_mut().remove(header::ACCEPT_ENCODING);
        if let Some(a) = gateable_accept(req.headers().get(header::ACCEPT)) {
            req.headers_mut().insert(header::ACCEPT, a);
        }
    }
    if let RequestInfo::Resource(r) = &info {
        let resource = r.resource_name();
        // Triggers see the request as it arrives, before it is forwarded.
        proxy
            .gates
            .engine
            .on_request(&l.client, r.verb, &resource, r.subresource.as_deref());
        windows = proxy
            .gates
            .engine
            .windows_for(&l.client, &resource, namespace.as_deref());
        if let Some(resp) = answer_from_view(&proxy, &mut l, r, &windows, req.headers()) {
            return finish(&proxy, &l, start, resp);
        }
        if let Some((window, fault)) = request_fault(&windows, r.verb) {
            match fault {
                crate::schedule::Fault::Latency { delay, .. } => tokio::time::sleep(delay.0).await,
                crate::schedule::Fault::Errors {
                    status,
                    rate,
                    retry_after,
                    ..
                } if proxy.gates.engine.chance(rate) => {
                    l.answer = "injected";
                    l.window = Some(window.clone());
                    return finish(
                        &proxy,
                        &l,
                        start,
                        injected_error(&window, status, retry_after.map(|d| d.0), r),
                    );
                }
                _ => {}
            }
        }
    }
    let upgrade = is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    // A LIST that reaches the upstream rebuilds the client's view — except during a
    // window that makes the client stale: the view stands for its informer cache, which
    // a one-off consistent read does not change.
    let list_view = match &info {
        RequestInfo::Resource(r)
            if r.verb == Verb::List
                && !windows.iter().any(|a| a.window.fault.makes_stale())
                && proxy.gates.wants_view(&r.resource_name()) =>
        {
            // A view is built from the body: ask for it plain (the apiserver gzips
            // bodies over 128 KiB otherwise, and decoding would cost this thread).
            req.headers_mut().remove(header::ACCEPT_ENCODING);
            Some((view_key(&l.client, r), r.params.continue_token.is_none()))
        }
        _ => None,
    };
    if let RequestInfo::Resource(r) = &info
        && r.verb.is_write()
    {
        proxy
            .metrics
            .writes
            .with_label_values(&[l.client.as_str(), &l.metric_resource, l.verb])
            .inc();
    }

    let (mut parts, body) = req.into_parts();
    let uri = match proxy.upstream.uri_for_request(&parts.uri) {
        Ok(u) => u,
        Err(e) => {
            return finish(
                &proxy,
                &l,
                start,
                status_response(&ApiError::bad_request(format!(
                    "cannot forward {:?}: {e}",
                    parts.uri
                ))),
            );
        }
    };
    sanitize_request_headers(&mut parts.headers, upgrade);
    parts.uri = uri;
    // The upstream connection's HTTP version is the client library's business.
    parts.version = http::Version::HTTP_11;
    let body: Body = body.map_err(BodyError::from).boxed();
    let up_req = Request::from_parts(parts, body);

    let (call, slot) = if l.watch && !upgrade {
        let (f, slot) = proxy.upstream.send_watch(up_req);
        (f, Some(slot))
    } else {
        (proxy.upstream.send(up_req, upgrade), None)
    };
    let sent = tokio::time::timeout(proxy.header_timeout, call).await;
    let mut resp = match sent {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            let err = error::to_api_error(&proxy.upstream.base.to_string(), &*e);
            tracing::warn!(verb = l.verb, resource = %l.resource, code = err.code, error = %err.message, "upstream request failed");
            return finish(&proxy, &l, start, status_response(&err));
        }
        Err(_) => {
            let err = ApiError::new(
                504,
                "Timeout",
                format!(
                    "stalemate: the upstream apiserver {} sent no response headers within {:?}",
                    proxy.upstream.base, proxy.header_timeout
                ),
            );
            return finish(&proxy, &l, start, status_response(&err));
        }
    };

    if resp.status() == http::StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_up) = client_upgrade
    {
        // exec / attach / port-forward: after 101, bytes flow both ways untouched.
        let upstream_up = hyper::upgrade::on(&mut resp);
        tokio::spawn(async move {
            match tokio::try_join!(client_up, upstream_up) {
                Ok((c, u)) => {
                    let mut c = hyper_util::rt::TokioIo::new(c);
                    let mut u = hyper_util::rt::TokioIo::new(u);
                    if let Err(e) = tokio::io::copy_bidirectional(&mut c, &mut u).await {
                        tracing::debug!(error = %e, "upgraded connection ended");
                    }
                }
                Err(e) => tracing::debug!(error = %e, "connection upgrade failed"),
            }
        });
    }

    if resp.status() == http::StatusCode::CONFLICT {
        proxy
            .metrics
            .conflicts
            .with_label_values(&[l.client.as_str(), &l.metric_resource])
            .inc();
    }
    let (mut parts, body) = resp.into_parts();
    let switching = parts.status == http::StatusCode::SWITCHING_PROTOCOLS;
    strip_hop_by_hop(&mut parts.headers, switching);
    let streaming = l.watch && parts.status.is_success();
    let gauge = streaming.then(|| {
        let g = proxy
            .metrics
            .watch_streams
            .with_label_values(&[&l.client, &l.metric_resource]);
        g.inc();
        g
    });
    let shutdown = streaming.then(|| {
        let mut rx = proxy.shutdown.clone();
        Box::pin(async move {
            let _ = rx.wait_for(|s| *s).await;
        }) as Shutdown
    });
    let framing = match streaming.then(|| watch_framing(&parts.headers)) {
        Some(Ok(f)) => Some(f),
        Some(Err(reason)) => {
            ungated(&proxy, &l, reason);
            None
        }
        None => None,
    };
    if let Some((_, true)) = framing {
        // The gate decodes the gzip stream; the client gets it plain.
        parts.headers.remove(header::CONTENT_ENCODING);
        parts.headers.remove(header::CONTENT_LENGTH);
    }
    let gated = framing.is_some() && matches!(info, RequestInfo::Resource(_));
    let inner: Body = match (framing, &info) {
        (Some((format, gzip)), RequestInfo::Resource(r)) => crate::watch::stream::gated(
            body,
            format,
            gzip,
            crate::watch::stream::Target {
                client: l.client.clone(),
                resource: l.resource.clone(),
                label: l.metric_resource.clone(),
                namespace,
                view: view_key(&l.client, r),
                watch_list: r.params.send_initial_events == Some(true),
            },
            proxy.gates.clone(),
        ),
        _ => match list_view.filter(|_| parts.status.is_success()) {
            Some((key, first_page)) => {
                let ct = parts
                    .headers
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let encoding = match ct.split(';').next().unwrap_or("").trim() {
                    _ if ct.contains("as=") => None,
                    "application/json" => Some(crate::watch::view::Encoding::Json),
                    "application/vnd.kubernetes.protobuf" => {
                        Some(crate::watch::view::Encoding::Protobuf)
                    }
                    _ => None,
                };
                let gzip = parts
                    .headers
                    .get(header::CONTENT_ENCODING)
                    .and_then(|v| v.to_str().ok())
                    .map(|v| v.trim().eq_ignore_ascii_case("gzip"));
                match (encoding, gzip) {
                    (Some(encoding), None | Some(true)) => ListTee {
                        inner: body.map_err(BodyError::from).boxed(),
                        chunks: Vec::new(),
                        len: 0,
                        limit: proxy.gates.views.max_bytes(),
                        gzip: gzip == Some(true),
                        encoding,
                        first_page,
                        key: Some(key),
                        views: proxy.gates.views.clone(),
                    }
                    .boxed(),
                    _ => body.map_err(BodyError::from).boxed(),
                }
            }
            None => body.map_err(BodyError::from).boxed(),
        },
    };
    // Only a watch needs counting, a slot or an end at shutdown; a plain response's body
    // is passed on as it is (one box and one layer less per request).
    let body: Body = if gauge.is_none() && shutdown.is_none() && slot.is_none() {
        inner
    } else {
        Counted {
            inner,
            gauge,
            shutdown,
            _slot: slot,
            upstream_body: !gated,
        }
        .boxed()
    };
    finish(&proxy, &l, start, Response::from_parts(parts, body))
}

fn finish(proxy: &Proxy, l: &Labels, start: Instant, resp: Response<Body>) -> Response<Body> {
    let status = resp.status().as_u16();
    proxy.oracles.on_request(
        &l.client,
        l.verb,
        &l.resource,
        l.namespace.as_deref(),
        l.name.as_deref(),
        status,
        std::time::SystemTime::now(),
    );
    if proxy.gates.trace.enabled() {
        proxy.gates.trace.record(crate::trace::Record::Request {
            client: l.client.clone(),
            verb: l.verb,
            resource: l.resource.clone(),
            namespace: l.namespace.clone(),
            name: l.name.clone(),
            code: status,
            latency_ms: start.elapsed().as_secs_f64() * 1000.0,
            answer: l.answer,
            window: l.window.clone(),
        });
    }
    proxy
        .metrics
        .requests
        .with_label_values(&[
            l.client.as_str(),
            l.verb,
            &l.metric_resource,
            resp.status().as_str(),
        ])
        .inc();
    proxy
        .metrics
        .duration
        .with_label_values(&[l.client.as_str(), l.verb])
        .observe(start.elapsed().as_secs_f64());
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_hop_by_hop_and_remote_headers() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("connection", "keep-alive, x-custom-hop"),
            ("keep-alive", "timeout=5"),
            ("x-custom-hop", "1"),
            ("te", "trailers"),
            ("host", "proxy:7443"),
            ("x-remote-user", "mallory"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-scopes", "all"),
            ("impersonate-user", "system:serviceaccount:ns:sa"),
            ("authorization", "Bearer t"),
            ("accept", "application/json"),
            ("user-agent", "source-controller/v1"),
            ("audit-id", "abc"),
        ] {
            h.append(k, HeaderValue::from_static(v));
        }
        sanitize_request_headers(&mut h, false);
        let mut left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        left.sort();
        assert_eq!(
            left,
            [
                "accept",
                "audit-id",
                "authorization",
                "impersonate-user",
                "user-agent"
            ]
        );
        // The proxy-kubeconfig sentinel means "use the upstream credentials".
        let mut h = HeaderMap::new();
        h.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {UPSTREAM_CREDENTIALS_TOKEN}")).unwrap(),
        );
        sanitize_request_headers(&mut h, false);
        assert!(h.get("authorization").is_none());
    }

    #[test]
    fn keeps_upgrade_headers_for_upgrades() {
        let mut h = HeaderMap::new();
        h.insert("connection", HeaderValue::from_static("Upgrade"));
        h.insert("upgrade", HeaderValue::from_static("SPDY/3.1"));
        h.insert(
            "x-stream-protocol-version",
            HeaderValue::from_static("v4.channel.k8s.io"),
        );
        assert!(is_upgrade(&h));
        sanitize_request_headers(&mut h, true);
        assert_eq!(h.get("upgrade").unwrap(), "SPDY/3.1");
        assert_eq!(h.get("connection").unwrap(), "Upgrade");
        assert!(h.contains_key("x-stream-protocol-version"));
    }
}
