//! The proxy: one request's way through stalemate, as named stages.
//!
//! ```text
//!  client ─TLS─► handle:
//!    1 classify   verb, resource, watch form; the client (identity.rs); metric labels
//!    2 trigger    afterRequests triggers fire; the windows open over this target
//!    3 faults     a view answers the read (reads.rs), or a fault answers or delays it
//!    4 prepare    what to ask the upstream for (Accept, Accept-Encoding)
//!    5 forward    to the upstream (forward.rs; requests on pooled HTTP/1.1, watches on
//!                 HTTP/2), or the Status that says why not
//!    6 respond    the body wrappers: gated watch (gated.rs), LIST tee (list_tee.rs),
//!                 watch accounting (watch_body.rs)
//!    7 finish     oracles, trace, metrics; then effects a trigger put off (restart)
//! ```
//!
//! Bodies are streams both ways and are never buffered: a 100 MB LIST costs a few frames
//! of memory, and each watch frame is flushed as the upstream sends it. Dropping the
//! client's response body (client gone) drops the upstream response: the upstream request
//! is cancelled with it.

pub mod activity;
mod call;
pub mod created;
pub mod forward;
pub mod gated;
pub mod headers;
pub mod identity;
pub mod links;
pub mod list_tee;
pub mod metrics;
pub mod precondition;
pub mod reads;
mod shared;
mod status_response;
pub mod watch_body;

use std::sync::Arc;
use std::time::Instant;

use http::header;
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use self::call::Abandoned;
pub use self::call::{Call, Labels};
pub use self::headers::{UPSTREAM_CREDENTIALS_TOKEN, sanitize_request_headers, strip_hop_by_hop};
pub use self::shared::Proxy;
pub use self::status_response::status_response;
use crate::fault::{Random, RequestAction};
use crate::k8s::request::{self, RequestInfo, Verb};
use crate::listen::{Body, BodyError, Peer};

/// The `resource` label of requests for resources the upstream does not serve.
pub const OTHER: &str = "other";

pub async fn handle(proxy: Arc<Proxy>, req: Request<Incoming>, peer: Peer) -> Response<Body> {
    // A request with no body (most are GETs) gets a zero-sized one: boxing it allocates
    // nothing. Upstream HTTP/1.1 sends both alike; hyper's HTTP/2 client would add
    // `content-length: 0` to a bodiless POST for this exact size — only watches (GETs)
    // go upstream over HTTP/2.
    let req = req.map(|b| match http_body::Body::is_end_stream(&b) {
        true => crate::listen::body::empty(),
        false => b.map_err(BodyError::from).boxed(),
    });
    let mut call = classify(&proxy, &req, &peer).await;
    let mut req = match call.resource().map(|r| r.verb) {
        Some(verb) if verb.is_write() => {
            let (req, carries) = Box::pin(precondition::read(req, verb)).await;
            call.labels.precondition = carries;
            req
        }
        _ => req,
    };
    trigger(&proxy, &mut call);
    if !call.windows.is_empty()
        && let Some(resp) = Box::pin(faults(&proxy, &mut call, &req)).await
    {
        return finish(&proxy, call, resp);
    }
    let list_view = prepare(&proxy, &mut call, &mut req);
    // Boxed, like the stages above: thousands of requests are in flight when watches open
    // at once, and every byte of this future counts that many times.
    let resp = match Box::pin(forward::forward(&proxy, &call, req)).await {
        Ok((resp, slot)) => respond(&proxy, &call, resp, slot, list_view),
        Err(failed) => failed,
    };
    finish(&proxy, call, resp)
}

/// Stage 1: What the request is, who sent it, and how metrics may name its resource.
async fn classify(proxy: &Proxy, req: &Request<Body>, peer: &Peer) -> Call {
    let start = Instant::now();
    let info = request::classify(req.method(), req.uri().path(), req.uri().query());
    let client = proxy.clients.identify(req.headers(), peer.local);
    let mut labels = Labels::new(client, &info);
    if let RequestInfo::Resource(r) = &info {
        labels.metric_resource = metric_resource(proxy, r, &labels.resource).await;
    }
    let keys = activity::Keys::new(
        labels.client.clone(),
        proxy.clients.listener_key(peer.local),
    );
    let in_flight = proxy
        .activity
        .started(keys, labels.http_verb, &labels.resource);
    let abandoned =
        (labels.http_verb.is_write() && proxy.gates.trace.enabled()).then(|| Abandoned {
            armed: true,
            trace: proxy.gates.trace.clone(),
            start,
            client: labels.client.to_string(),
            verb: labels.verb,
            resource: labels.resource.clone(),
            namespace: info.namespace().map(str::to_string),
            name: info.name().map(str::to_string),
        });
    Call {
        start,
        info,
        labels,
        windows: Vec::new(),
        deferred: Vec::new(),
        rewind: None,
        initial: None,
        in_flight,
        abandoned,
    }
}

/// How metric labels name a request's resource: as it is named when the upstream's
/// discovery knows it (asked again once for a group version it has not seen), else
/// `other`, so label sets stay bounded whatever URLs arrive.
async fn metric_resource(proxy: &Proxy, r: &request::ResourceRequest, resource: &str) -> String {
    let known = &proxy.known;
    let sub = r.subresource.as_deref();
    let mut listed = known.lookup(&r.group, &r.version, &r.resource, sub);
    if listed.is_none() {
        // Boxed: discovery's future is large, and inlined it would grow every
        // request's (thousands of them are in flight when watches open at once).
        Box::pin(known.refresh_for(&r.group, &r.version)).await;
        listed = known.lookup(&r.group, &r.version, &r.resource, sub);
    }
    match listed {
        Some(true) => resource.to_string(),
        _ => OTHER.to_string(),
    }
}

/// Stage 2: Triggers see the request as it arrives, before it is forwarded, so a window it
/// opens already covers the events it causes; then the windows over its target.
fn trigger(proxy: &Proxy, call: &mut Call) {
    let Some(r) = call.resource() else { return };
    // `plural.group` without the `/subresource` the label adds (no name has a `/`).
    let resource = call.labels.resource.split('/').next().unwrap_or_default();
    let engine = &proxy.gates.engine;
    let client = &call.labels.client;
    let deferred = engine.on_request(client, r.verb, resource, r.subresource.as_deref());
    let windows = engine.windows_for(client, resource, r.namespace.as_deref());
    (call.deferred, call.windows) = (deferred, windows);
}

/// Stage 3: A window's fault may answer the request (a view answers a stale read; `errors`
/// answers with a Status) or delay it (`latency`).
async fn faults(proxy: &Proxy, call: &mut Call, req: &Request<Body>) -> Option<Response<Body>> {
    let r = call.resource()?.clone();
    if let Some(resp) = reads::answer(proxy, call, &r, req.headers()) {
        return Some(resp);
    }
    // Oldest window first: delays add up, the first answer ends it.
    let actions: Vec<(String, u64, RequestAction)> = {
        let random: &dyn Random = &*proxy.gates.engine;
        call.windows
            .iter()
            .map(|a| {
                let request = crate::fault::Request {
                    verb: r.verb,
                    group: &r.group,
                    resource: &r.resource,
                    name: r.name.as_deref(),
                    precondition: call.labels.precondition,
                    window: &a.window.name,
                };
                let action = a.window.fault.behaviour().on_request(&request, random);
                (a.window.name.clone(), a.generation, action)
            })
            .collect()
    };
    for (window, generation, action) in actions {
        match action {
            RequestAction::Pass => {}
            RequestAction::Delay(d) => tokio::time::sleep(d).await,
            RequestAction::UntilClosed => {
                proxy.gates.engine.until_closed(&window, generation).await
            }
            RequestAction::Answer(e) => {
                call.labels.answer = "injected";
                call.labels.window = Some(window);
                return Some(status_response(&e));
            }
        }
    }
    None
}

/// Stage 4: What to ask the upstream for; returns the view a LIST's body will rebuild.
fn prepare(
    proxy: &Proxy,
    call: &mut Call,
    req: &mut Request<Body>,
) -> Option<(crate::watch::view::ViewKey, bool)> {
    if call.labels.watch {
        // The gate reads frames: ask for a plain stream (docs/PROTOCOL.md §A.6; one that
        // comes gzipped anyway is decoded) in a framing it knows.
        req.headers_mut().remove(header::ACCEPT_ENCODING);
        if let Some(a) = headers::gateable_accept(req.headers().get(header::ACCEPT)) {
            req.headers_mut().insert(header::ACCEPT, a);
        }
        reads::watch_list(proxy, call, req);
        reads::rewind_watch(proxy, call, req);
    }
    let r = call.resource()?;
    if r.verb.is_write() {
        let l = &call.labels;
        proxy
            .metrics
            .writes
            .with_label_values(&[&*l.client, &l.metric_resource, l.verb])
            .inc();
    }
    // A LIST that reaches the upstream rebuilds the client's view — except during a
    // window that reads from views: the view stands for its informer cache, which a
    // one-off consistent read does not change.
    let stale = call.windows.iter().any(|a| a.window.fault.uses_views());
    if r.verb == Verb::List && !stale && proxy.gates.wants_view(&r.resource_name()) {
        // A view is built from the body: ask for it plain (the apiserver gzips bodies
        // over 128 KiB otherwise, and decoding would cost this thread).
        req.headers_mut().remove(header::ACCEPT_ENCODING);
        return Some((
            reads::view_key(&call.labels.client, r),
            r.params.continue_token.is_none(),
        ));
    }
    None
}

/// Stage 6: The response on its way back: counted, and its body wrapped for what it is.
fn respond(
    proxy: &Proxy,
    call: &Call,
    resp: Response<Body>,
    slot: Option<crate::upstream::WatchSlot>,
    list_view: Option<(crate::watch::view::ViewKey, bool)>,
) -> Response<Body> {
    let l = &call.labels;
    if resp.status() == http::StatusCode::CONFLICT {
        proxy
            .metrics
            .conflicts
            .with_label_values(&[&*l.client, &l.metric_resource])
            .inc();
    }
    let (mut parts, body) = resp.into_parts();
    let switching = parts.status == http::StatusCode::SWITCHING_PROTOCOLS;
    strip_hop_by_hop(&mut parts.headers, switching);
    headers::unindexed_unique_values(&mut parts.headers);
    let r = call.resource();
    let body = match r {
        Some(r) if l.watch && parts.status.is_success() => {
            watch_response(proxy, call, r, &mut parts.headers, body, slot)
        }
        _ => match list_view.filter(|_| parts.status.is_success()) {
            Some((key, first_page)) => list_tee::tee(
                body,
                &parts.headers,
                key,
                first_page,
                proxy.gates.views.clone(),
            ),
            // A create's answer names what it made (for explore's clean-up on a
            // cluster), and so does a server-side apply's that made it (201 Created);
            // any other plain body is passed on as it is.
            None if r.is_some_and(|r| {
                r.verb == Verb::Create
                    || (r.verb == Verb::Patch && parts.status == http::StatusCode::CREATED)
            }) && parts.status.is_success()
                && proxy.gates.trace.enabled() =>
            {
                created_response(proxy, l, &parts.headers, body)
            }
            None => body,
        },
    };
    Response::from_parts(parts, body)
}

/// A watch's answer: framed through the gate when it can be (gzip decoded, so the client
/// gets it plain), passed through and said otherwise; ended cleanly at shutdown, and
/// counted while open.
fn watch_response(
    proxy: &Proxy,
    call: &Call,
    r: &request::ResourceRequest,
    headers: &mut http::HeaderMap,
    body: Body,
    slot: Option<crate::upstream::WatchSlot>,
) -> Body {
    let l = &call.labels;
    let (inner, gated) = match watch_body::framing(headers) {
        Ok((format, gzip)) => {
            if gzip {
                // The gate decodes the gzip stream; the client gets it plain.
                headers.remove(header::CONTENT_ENCODING);
                headers.remove(header::CONTENT_LENGTH);
            }
            let target = gated::Target {
                client: l.client.to_string(),
                resource: l.resource.clone(),
                label: l.metric_resource.clone(),
                namespace: call.info.namespace().map(str::to_string),
                view: reads::view_key(&l.client, r),
                watch_list: r.params.send_initial_events == Some(true),
                rewind: call.rewind.clone(),
                initial_events: call.initial.clone(),
                initial: (r.params.send_initial_events == Some(true))
                    .then(|| proxy.activity.initial_state(call.in_flight.keys().clone())),
            };
            let body = gated::gated(body, format, gzip, target, proxy.gates.clone());
            (body, true)
        }
        Err(reason) => {
            ungated(proxy, l, reason);
            (body, false)
        }
    };
    let mut stop = proxy.shutdown.clone();
    let shutdown: watch_body::Shutdown = Box::pin(async move {
        let _ = stop.wait_for(|s| *s).await;
    });
    let gauge = proxy
        .metrics
        .watch_streams
        .with_label_values(&[&*l.client, &l.metric_resource]);
    watch_body::WatchBody::new(inner, gauge, shutdown, slot, !gated).boxed()
}

/// A create's answer names what it made (for explore's clean-up on a cluster): the
/// body is passed on as it is, and the name and uid traced from it.
fn created_response(proxy: &Proxy, l: &Labels, headers: &http::HeaderMap, body: Body) -> Body {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/vnd.kubernetes.protobuf"));
    let trace = proxy.gates.trace.clone();
    let (client, resource) = (l.client.to_string(), l.resource.clone());
    created::tee(
        body,
        protobuf,
        Box::new(move |namespace, name, uid| {
            trace.record(crate::trace::Record::Created {
                client,
                resource,
                namespace,
                name,
                uid,
            })
        }),
    )
}

/// A watch the gate cannot frame passes through as it is, so no window can apply to it:
/// counted, and said once per client and resource — never silently.
fn ungated(proxy: &Proxy, l: &Labels, reason: &'static str) {
    proxy
        .metrics
        .ungated
        .with_label_values(&[&*l.client, &l.metric_resource, reason])
        .inc();
    let first = proxy
        .ungated_seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert((l.client.to_string(), l.metric_resource.clone()));
    if first {
        tracing::warn!(client = %l.client, resource = %l.resource, reason, "a watch stream cannot be gated (its framing is unknown); windows do not apply to it");
    }
}

/// Stage 7: Oracles, trace and metrics hear how the request was answered; then the effects
/// its triggers put off (a `restart` kills the controller only once its write has been
/// answered).
fn finish(proxy: &Proxy, mut call: Call, resp: Response<Body>) -> Response<Body> {
    // Answered: not abandoned.
    if let Some(a) = &mut call.abandoned {
        a.armed = false;
    }
    let l = &call.labels;
    let status = resp.status().as_u16();
    proxy.oracles.on_request(
        &l.client,
        l.http_verb,
        &l.resource,
        call.info.namespace(),
        call.info.name(),
        status,
        std::time::SystemTime::now(),
    );
    if proxy.gates.trace.enabled() {
        proxy.gates.trace.record(crate::trace::Record::Request {
            client: l.client.to_string(),
            verb: l.verb,
            resource: l.resource.clone(),
            namespace: call.info.namespace().map(str::to_string),
            name: call.info.name().map(str::to_string),
            code: status,
            latency_ms: call.start.elapsed().as_secs_f64() * 1000.0,
            answer: l.answer,
            window: l.window.clone(),
            resource_version: l.rv.clone(),
            note: l.note.clone(),
            precondition: l.precondition,
        });
    }
    proxy
        .metrics
        .requests
        .with_label_values(&[
            &*l.client,
            l.verb,
            &l.metric_resource,
            resp.status().as_str(),
        ])
        .inc();
    proxy
        .metrics
        .duration
        .with_label_values(&[&*l.client, l.verb])
        .observe(call.start.elapsed().as_secs_f64());
    for d in call.deferred {
        d.run();
    }
    resp
}
