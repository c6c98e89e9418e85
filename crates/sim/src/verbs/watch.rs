//! Watches: every form (docs/PROTOCOL.md §A.1–A.3), served from the store's history and its
//! broadcast of new events.
//!
//! ```text
//!  start: RV unset/0 ──────────► synthetic ADDED for the current state, then live
//!         sendInitialEvents=true ► the same, then BOOKMARK k8s.io/initial-events-end
//!         RV=X (in history) ─────► the events after X, then live
//!         RV=X (compacted) ──────► HTTP 200 + one ERROR 410 Expired, end
//!         RV=X (> current) ──────► 504 Too large resource version (no stream)
//!  live:  events that match the filter (label moves become ADDED/DELETED), periodic
//!         BOOKMARKs at the RV of the last event this watcher has seen, end at
//!         timeoutSeconds (default 1800 s × [1, 2), as the apiserver), end when the
//!         client goes or when told to misbehave (clean end or abort).
//! ```
//!
//! Bookmark RVs are never ahead of an event this watcher has not processed yet: every
//! broadcast event, matching or not, advances `seen_rv` only when it is taken off the
//! queue in order (docs/PROTOCOL.md §A.8).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use hyper::Response;
use serde_json::json;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::mpsc;

use super::read::{Filter, parse_rv, validate_list_options};
use crate::ctx::Ctx;
use crate::instance::{CloseMode, Sim, WatchEncoding};
use crate::negotiate::Output;
use crate::resource_type::ResourceType;
use crate::store::{Event, EventType, Stored};
use crate::table;
use stalemate_wire::k8s::request::RvSemantics;
use stalemate_wire::k8s::status::ApiError;
use stalemate_wire::listen::Body;
use stalemate_wire::listen::body::{BodyError, ChannelBody};

/// How a watch encodes each event's object.
#[derive(Clone)]
enum Encoding {
    Json,
    Table {
        version: String,
        include: table::IncludeObject,
        sent_columns: bool,
    },
    Meta(String),
}

struct Watcher {
    rt: Arc<ResourceType>,
    api_version: String,
    filter: Filter,
    encoding: Encoding,
}

impl Watcher {
    /// Turn a store event into what this watcher delivers, if anything: an object that
    /// leaves the selection is DELETED for this watcher, one that enters it ADDED
    /// (`cacher.go cacheWatcher.convertToWatchEvent`).
    fn convert<'a>(&self, ev: &'a Event) -> Option<(EventType, &'a Arc<Stored>)> {
        let now = self.filter.matches(&ev.obj);
        let before = ev.prev.as_ref().is_some_and(|p| self.filter.matches(p));
        match ev.type_ {
            EventType::Added => now.then_some((EventType::Added, &ev.obj)),
            EventType::Deleted => before.then_some((EventType::Deleted, &ev.obj)),
            EventType::Modified => match (before, now) {
                (true, true) => Some((EventType::Modified, &ev.obj)),
                (false, true) => Some((EventType::Added, &ev.obj)),
                (true, false) => Some((EventType::Deleted, &ev.obj)),
                (false, false) => None,
            },
        }
    }

    fn frame(&mut self, type_: &str, obj: &Stored) -> Bytes {
        let object = match &mut self.encoding {
            Encoding::Json => obj.json_at(&self.api_version),
            Encoding::Table {
                version,
                include,
                sent_columns,
            } => {
                let v = obj.value_at(&self.api_version);
                let t = table::table(
                    &self.rt,
                    &[v],
                    json!({"resourceVersion": obj.rv.to_string()}),
                    *include,
                    version,
                    !*sent_columns,
                );
                *sent_columns = true;
                Bytes::from(serde_json::to_vec(&t).unwrap_or_default())
            }
            Encoding::Meta(v) => Bytes::from(
                serde_json::to_vec(&table::partial_metadata(&obj.value, v)).unwrap_or_default(),
            ),
        };
        event_line(type_, &object)
    }

    /// A BOOKMARK carries only the type and an RV (`cacher.go`); kube-rs needs the
    /// apiVersion and kind (`kube-core/src/watch.rs`).
    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = serde_json::Map::new();
        if self.rt.custom {
            if initial_end {
                meta.insert(
                    "annotations".into(),
                    json!({"k8s.io/initial-events-end": "true"}),
                );
            }
            meta.insert("resourceVersion".into(), rv.to_string().into());
            let obj =
                json!({"apiVersion": self.api_version, "kind": self.rt.kind, "metadata": meta});
            return event_line("BOOKMARK", &Bytes::from(obj.to_string()));
        }
        meta.insert("resourceVersion".into(), rv.to_string().into());
        if initial_end {
            meta.insert(
                "annotations".into(),
                json!({"k8s.io/initial-events-end": "true"}),
            );
        }
        let obj = json!({"kind": self.rt.kind, "apiVersion": self.api_version, "metadata": meta});
        event_line("BOOKMARK", &Bytes::from(obj.to_string()))
    }
}

/// `{"type":T,"object":O}\n` — one compact event per line, as `json.Encoder` writes it.
fn event_line(type_: &str, object: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(object.len() + 32);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(type_.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(object);
    b.put_slice(b"}\n");
    b.freeze()
}

/// The ERROR event for a resume point that is gone (`fixtures/.../cm-watch-expired.body`).
pub(crate) fn expired_event(rv: u64, oldest: u64) -> Bytes {
    let status = stalemate_wire::k8s::status::ApiError::expired(format!(
        "too old resource version: {rv} ({oldest})"
    ))
    .to_status();
    event_line("ERROR", status.to_string().as_bytes())
}

/// Counts a watch as active for as long as it lives.
struct ActiveGuard(Arc<Sim>);
impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.active_watches.fetch_sub(1, Ordering::Relaxed);
    }
}

pub(crate) fn watch(ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let p = &ctx.req.params;
    validate_list_options(p, true)?;
    let filter = Filter::from_request(ctx)?;
    let initial_events = p.send_initial_events == Some(true);
    let timeout = watch_timeout(p.timeout_seconds.as_deref());
    let w = Watcher {
        rt: ctx.rt.clone(),
        api_version: ctx.rt.api_version(),
        filter,
        encoding: encoding(ctx),
    };
    let key = ctx.rt.storage_key();
    let start = start(ctx, &w, &key, initial_events)?;

    let (tx, body) = ChannelBody::channel(64);
    let sim = ctx.sim.clone();
    sim.active_watches.fetch_add(1, Ordering::Relaxed);
    let guard = ActiveGuard(sim.clone());
    let bookmarks = p.allow_watch_bookmarks;
    let interval = sim.cfg.bookmark_interval;
    let mut close = sim.close_signal();
    let close_epoch = close.borrow_and_update().0;
    let stream = Stream {
        w,
        key,
        tx,
        sim,
        initial_events,
        bookmarks,
        interval,
        timeout,
        close,
        close_epoch,
    };
    tokio::spawn(async move {
        let _guard = guard;
        stream.run(start).await;
    });
    Ok(response(ctx, body, initial_events && bookmarks))
}

/// How long the watch lasts: `timeoutSeconds` when the client sets it above 0.
fn watch_timeout(timeout_seconds: Option<&str>) -> Duration {
    match timeout_seconds.and_then(|t| t.parse::<u64>().ok()) {
        Some(t) if t > 0 => Duration::from_secs(t),
        _ => {
            // `MinRequestTimeout` (1800 s) × [1, 2) when the client sets none.
            use rand::Rng;
            Duration::from_secs_f64(1800.0 * (1.0 + rand::rng().random::<f64>()))
        }
    }
}

/// How the watch encodes objects, from the negotiated output.
fn encoding(ctx: &Ctx) -> Encoding {
    match &ctx.output {
        Output::Json => Encoding::Json,
        Output::Table(v) => Encoding::Table {
            version: v.clone(),
            include: ctx.include_object(),
            sent_columns: false,
        },
        Output::Meta(v) => Encoding::Meta(v.clone()),
    }
}

/// Where a watch starts, read under one lock with its subscription.
struct Start {
    /// The events to send first: the current state, or the history since the RV asked.
    initial: Vec<(EventType, Arc<Stored>)>,
    start_rv: u64,
    rx: broadcast::Receiver<Arc<Event>>,
    /// The ERROR event to send instead, when the resume point is gone.
    expired: Option<Bytes>,
}

/// The watch's start: snapshot (or history) and subscription under one lock, nothing in
/// between; an RV ahead of the store is an error.
fn start(ctx: &Ctx, w: &Watcher, key: &str, initial_events: bool) -> Result<Start, ApiError> {
    let mut st = ctx.sim.lock();
    let from = match ctx.req.params.rv_semantics() {
        RvSemantics::Unset | RvSemantics::Any => None,
        RvSemantics::NotOlderThan(x) | RvSemantics::Exact(x) => Some(parse_rv(&x)?),
    };
    if let Some(x) = from
        && x > st.rv
    {
        return Err(ApiError::too_large_resource_version(x, st.rv));
    }
    let rx = st.subscribe();
    let mut initial: Vec<(EventType, Arc<Stored>)> = Vec::new();
    let mut expired = None;
    match from {
        Some(x) if !initial_events => {
            if st.is_expired_for(key, x) {
                expired = Some(expired_event(x, st.oldest_available_rv_for(key)));
            } else {
                for ev in st.events_since(x) {
                    if *ev.resource == *key
                        && let Some((t, o)) = w.convert(ev)
                    {
                        initial.push((t, o.clone()));
                    }
                }
            }
        }
        _ => {
            initial = st
                .iter(key, w.filter.namespace.as_deref())
                .filter(|o| w.filter.matches(o))
                .map(|o| (EventType::Added, o.clone()))
                .collect();
        }
    }
    Ok(Start {
        initial,
        start_rv: st.rv,
        rx,
        expired,
    })
}

/// A watch's stream once it is answered: what it sends, where to, and until when.
struct Stream {
    w: Watcher,
    key: String,
    tx: mpsc::Sender<Result<Bytes, BodyError>>,
    sim: Arc<Sim>,
    initial_events: bool,
    bookmarks: bool,
    interval: Duration,
    timeout: Duration,
    close: tokio::sync::watch::Receiver<(u64, CloseMode)>,
    close_epoch: u64,
}

impl Stream {
    /// Send a frame once the simulator is not paused; false when the client is gone.
    async fn send(&self, b: Bytes) -> bool {
        self.sim.wait_unpaused().await;
        self.tx.send(Ok(b)).await.is_ok()
    }

    /// The whole stream: the expired ERROR alone, or the initial events (and the
    /// initial-events-end BOOKMARK) and then live.
    async fn run(mut self, start: Start) {
        if let Some(e) = start.expired {
            let _ = self.send(e).await;
            return;
        }
        for (t, o) in &start.initial {
            let f = self.w.frame(t.as_str(), o);
            if !self.send(f).await {
                return;
            }
        }
        if self.initial_events
            && self.bookmarks
            && !self.send(self.w.bookmark(start.start_rv, true)).await
        {
            return;
        }
        self.live(start.start_rv, start.rx).await;
    }

    /// Live: matching events and periodic BOOKMARKs until the client goes, the timeout,
    /// a lag, or the simulator closing its watches.
    async fn live(mut self, mut seen_rv: u64, mut rx: broadcast::Receiver<Arc<Event>>) {
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + self.interval, self.interval);
        loop {
            tokio::select! {
                _ = self.tx.closed() => return,
                _ = &mut deadline => return,
                _ = tick.tick(), if self.bookmarks => {
                    if !self.send(self.w.bookmark(seen_rv, false)).await { return; }
                }
                changed = self.close.changed() => {
                    if changed.is_err() { return; }
                    let (epoch, mode) = *self.close.borrow();
                    if epoch != self.close_epoch {
                        if mode == CloseMode::Abrupt {
                            let _ = self.tx.send(Err("watch aborted by the simulator".into())).await;
                        }
                        return;
                    }
                }
                ev = rx.recv() => match ev {
                    Ok(ev) => {
                        seen_rv = ev.rv;
                        if *ev.resource != *self.key { continue; }
                        if let Some((t, o)) = self.w.convert(&ev) {
                            let f = self.w.frame(t.as_str(), o);
                            if !self.send(f).await { return; }
                        }
                    }
                    // Too slow to keep up: closed, as the watch cache closes
                    // unresponsive watchers; the client resumes from its last RV.
                    Err(RecvError::Lagged(n)) => {
                        tracing::info!(skipped = n, "closing a watch that fell behind");
                        return;
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        }
    }
}

/// The 200 whose body is the stream: marked when it is a WatchList, compressed when the
/// simulator is told to encode watches.
fn response(ctx: &Ctx, body: Body, watch_list: bool) -> Response<Body> {
    let mut resp = ctx.reply.raw(200, Bytes::new(), "application/json");
    if watch_list {
        resp.extensions_mut().insert(WatchListStream);
    }
    *resp.body_mut() = match ctx.sim.cfg.encode_watches {
        None => body,
        Some(enc) => {
            let name = match enc {
                WatchEncoding::Gzip => "gzip",
                WatchEncoding::Deflate => "deflate",
            };
            resp.headers_mut().insert(
                "content-encoding",
                hyper::header::HeaderValue::from_static(name),
            );
            http_body_util::BodyExt::boxed(Encoded::new(body, enc))
        }
    };
    resp
}

/// Marks a WatchList response (`sendInitialEvents=true` with bookmarks, the apiserver's
/// `isListWatchRequest`): since 1.37 (WatchListCompression) those are gzipped for a
/// client that accepts gzip, one gzip member per flush (`perFlushGzipWriter`).
#[derive(Clone, Copy)]
pub(crate) struct WatchListStream;

/// `resp` gzipped as a 1.37 apiserver gzips a WatchList response, if it is one and not
/// encoded already (`--encode-watches`).
pub(crate) fn gzip_watch_list(mut resp: Response<Body>) -> Response<Body> {
    if resp.extensions().get::<WatchListStream>().is_none()
        || resp.headers().contains_key("content-encoding")
    {
        return resp;
    }
    let headers = resp.headers_mut();
    headers.insert(
        "content-encoding",
        hyper::header::HeaderValue::from_static("gzip"),
    );
    headers.append(
        "vary",
        hyper::header::HeaderValue::from_static("Accept-Encoding"),
    );
    let (parts, body) = resp.into_parts();
    let body = http_body_util::BodyExt::boxed(Encoded::members(body));
    Response::from_parts(parts, body)
}

/// A body compressed on the fly, each frame flushed as its own block (a sync flush, as
/// Go's `gzip.Writer.Flush` after each event), so a reader can decode every event as it
/// arrives.
struct Encoded {
    inner: Body,
    enc: Option<Box<dyn EncodeWrite + Send + Sync>>,
    /// Each frame a gzip member of its own (a WatchList response), not a sync flush.
    members: bool,
}

trait EncodeWrite: std::io::Write {
    fn take(&mut self) -> Vec<u8>;
    fn finish_box(self: Box<Self>) -> std::io::Result<Vec<u8>>;
}

impl EncodeWrite for flate2::write::GzEncoder<Vec<u8>> {
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(self.get_mut())
    }
    fn finish_box(self: Box<Self>) -> std::io::Result<Vec<u8>> {
        self.finish()
    }
}

impl EncodeWrite for flate2::write::ZlibEncoder<Vec<u8>> {
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(self.get_mut())
    }
    fn finish_box(self: Box<Self>) -> std::io::Result<Vec<u8>> {
        self.finish()
    }
}

impl Encoded {
    fn new(inner: Body, enc: WatchEncoding) -> Encoded {
        let level = flate2::Compression::fast();
        let enc: Box<dyn EncodeWrite + Send + Sync> = match enc {
            WatchEncoding::Gzip => Box::new(flate2::write::GzEncoder::new(Vec::new(), level)),
            // HTTP's "deflate" is the zlib format (RFC 9110 §8.4.1.2).
            WatchEncoding::Deflate => Box::new(flate2::write::ZlibEncoder::new(Vec::new(), level)),
        };
        Encoded {
            inner,
            enc: Some(enc),
            members: false,
        }
    }

    fn members(inner: Body) -> Encoded {
        Encoded {
            members: true,
            ..Encoded::new(inner, WatchEncoding::Gzip)
        }
    }
}

impl http_body::Body for Encoded {
    type Data = Bytes;
    type Error = stalemate_wire::listen::BodyError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        use std::io::Write;
        use std::task::Poll;
        if self.enc.is_none() {
            return Poll::Ready(None);
        }
        match std::pin::Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f))) => {
                let Ok(data) = f.into_data() else {
                    return Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::new()))));
                };
                if self.members {
                    let mut member =
                        flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                    let out = member.write_all(&data).and_then(|()| member.finish());
                    return Poll::Ready(Some(
                        out.map(|b| http_body::Frame::data(Bytes::from(b)))
                            .map_err(Into::into),
                    ));
                }
                let Some(enc) = self.enc.as_mut() else {
                    return Poll::Ready(None);
                };
                let out = enc
                    .write_all(&data)
                    .and_then(|()| enc.flush())
                    .map(|()| enc.take());
                Poll::Ready(Some(
                    out.map(|b| http_body::Frame::data(Bytes::from(b)))
                        .map_err(Into::into),
                ))
            }
            Poll::Ready(None) if self.members => Poll::Ready(None),
            Poll::Ready(None) => match self.enc.take().map(|e| e.finish_box()) {
                Some(Ok(tail)) if !tail.is_empty() => {
                    Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(tail)))))
                }
                _ => Poll::Ready(None),
            },
            other => other,
        }
    }
}
