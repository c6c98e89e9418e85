//! Requests over HTTP/1.1 connections that the request's own task drives.
//!
//! hyper-util's pooled client spawns a task per upstream connection: that task reads the
//! socket and hands the response body on through a channel that holds one frame, waking
//! the request's task for each. A kube-apiserver under load writes a LIST in 2 KiB chunks
//! (Go `net/http` chunks what it buffered), so a 948 KB LIST cost ~460 task hand-offs
//! and ~375 writes to the client (bench/README.md, "On a real kube-apiserver").
//! Here the task serving the request polls the connection itself — while it waits for
//! the response head, and inside the response body's `poll_frame` — and joins every chunk
//! the connection has already read into one frame of up to [`JOIN_LIMIT`].
//!
//! Connections wait between requests on a per-thread idle stack. Only serving threads use
//! this pool (`listen::serve_on_threads`): each runs one single-threaded runtime for its
//! whole life, so a connection never leaves the thread whose I/O driver it is registered
//! with, and the idle stack needs no lock.

use std::cell::RefCell;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt;
use http::{HeaderValue, Request, Response, Uri};
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use super::error::BoxError;
use crate::listen::{Body, BodyError};

/// How long a connection may wait unused before it is closed: well under the 90 s after
/// which kube-apiserver closes an idle one (`IdleTimeout` in k8s.io/apiserver
/// `secure_serving.go`), so a request is not written into a connection as it closes.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The most a response body frame carries when chunks are joined: a few TLS records to
/// the client, and a bound on what one client's body holds at once.
const JOIN_LIMIT: usize = 64 * 1024;

type Io = TokioIo<tokio_rustls::client::TlsStream<TcpStream>>;
type Connection = http1::Connection<Io, Body>;

/// A pool of upstream HTTP/1.1 connections of one kind (one TLS configuration), its idle
/// connections kept per thread. Cloning shares it.
#[derive(Clone)]
pub struct InlinePool {
    shared: Arc<Shared>,
}

struct Shared {
    /// Which idle stacks are this pool's.
    id: usize,
    connector: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
    /// Host (without IPv6 brackets) and port to connect to.
    host: String,
    port: u16,
    /// The `Host` header every request carries.
    authority: HeaderValue,
    connect_timeout: Duration,
    /// Connections opened so far.
    opened: AtomicUsize,
}

/// A connection and the handle to send on it; `conn` is `None` once it has ended.
///
/// The connection is boxed: hyper's connection with rustls inside is ~1.7 KiB, and a
/// `Conn` moves on every request (off the idle stack, into the send future, into the
/// response body, back onto the stack) — as a pointer, not as a copy of all of it.
struct Conn {
    send: http1::SendRequest<Body>,
    conn: Option<Box<Connection>>,
}

struct Idle {
    conn: Conn,
    since: Instant,
}

thread_local! {
    /// Idle connections of each pool on this thread, the most recently used last.
    static IDLE: RefCell<Vec<(usize, Vec<Idle>)>> = const { RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// Why a request could not be sent; its source is the underlying error, so
/// `upstream::error` classifies it (refused, timed out, TLS) like hyper-util's.
#[derive(Debug)]
struct Failed {
    stage: &'static str,
    source: BoxError,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.stage)
    }
}

impl std::error::Error for Failed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

fn failed(stage: &'static str, source: impl Into<BoxError>) -> BoxError {
    Box::new(Failed {
        stage,
        source: source.into(),
    })
}

impl InlinePool {
    /// A pool of connections to `base` (`https://host:port`) with this TLS configuration;
    /// it is told to speak HTTP/1.1 (ALPN), whatever the configuration offered. The
    /// apiserver's certificate is checked against `server_name` when given (the
    /// kubeconfig's `tls-server-name`), else against the host.
    pub fn new(
        base: &Uri,
        mut tls: rustls::ClientConfig,
        server_name: Option<ServerName<'static>>,
        connect_timeout: Duration,
    ) -> anyhow::Result<InlinePool> {
        use anyhow::Context as _;
        let host = base
            .host()
            .with_context(|| format!("upstream URL {base} has no host"))?;
        let port = base.port_u16().unwrap_or(443);
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let server_name = match server_name {
            Some(name) => name,
            None => ServerName::try_from(bare.clone()).with_context(|| {
                format!("upstream host {host:?} is not a valid TLS server name")
            })?,
        };
        let authority = match base.port_u16() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        let authority = HeaderValue::from_str(&authority)
            .with_context(|| format!("upstream authority {authority:?} is not a Host header"))?;
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(InlinePool {
            shared: Arc::new(Shared {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                connector: tokio_rustls::TlsConnector::from(Arc::new(tls)),
                server_name,
                host: bare,
                port,
                authority,
                connect_timeout,
                opened: AtomicUsize::new(0),
            }),
        })
    }

    /// How many connections this pool has opened.
    pub fn connections_opened(&self) -> usize {
        self.shared.opened.load(Ordering::Relaxed)
    }

    /// Send `req` (an absolute URI) on an idle connection of this thread, or a new one.
    /// A request a reused connection gives back unsent (it had been closed) is sent again
    /// on another.
    pub async fn send(&self, req: Request<Body>) -> Result<Response<Body>, BoxError> {
        let s = &self.shared;
        let (mut parts, body) = req.into_parts();
        // HTTP/1.1 to an origin server: origin-form request target, and a Host header.
        parts.uri = match parts.uri.path_and_query() {
            Some(pq) => Uri::from(pq.clone()),
            None => Uri::from_static("/"),
        };
        parts
            .headers
            .insert(http::header::HOST, s.authority.clone());
        let mut req = Request::from_parts(parts, body);
        loop {
            let (mut conn, reused) = match checkout(s) {
                Some(c) => (c, true),
                // Boxed: the TLS handshake's state would otherwise make the future of
                // every request as large as itself, copied whole wherever it moves.
                None => (Box::pin(connect(s)).await?, false),
            };
            if let Err(e) = conn.ready(reused).await {
                if reused {
                    continue;
                }
                return Err(e);
            }
            let sending = std::pin::pin!(conn.send.try_send_request(req));
            match conn.drive(sending).await {
                Ok(resp) => return Ok(respond(s, conn, resp)),
                Err(mut e) if reused => match e.take_message() {
                    Some(back) => req = back,
                    None => return Err(failed("sending the request upstream", e.into_error())),
                },
                Err(e) => return Err(failed("sending the request upstream", e.into_error())),
            }
        }
    }
}

/// The response with a body that drives its connection; a body that is already over
/// gives the connection back at once (the server may never poll an empty body).
fn respond(s: &Arc<Shared>, conn: Conn, resp: Response<Incoming>) -> Response<Body> {
    if resp.body().is_end_stream() {
        checkin(s, conn);
        return resp.map(|_| crate::listen::body::empty());
    }
    resp.map(|inner| {
        DrivenBody {
            inner,
            conn: Some(conn),
            shared: s.clone(),
            first: None,
            joined: BytesMut::new(),
            trailers: None,
            error: None,
        }
        .boxed()
    })
}

impl Conn {
    /// Wait until the connection takes a request, driving it meanwhile. A reused
    /// connection gets one look: one that is not ready at once is not waited for.
    async fn ready(&mut self, reused: bool) -> Result<(), BoxError> {
        std::future::poll_fn(|cx| {
            if self.poll_conn(cx).is_ready() {
                return Poll::Ready(Err(failed(
                    "the upstream connection closed",
                    "closed before the request was sent",
                )));
            }
            match self.send.poll_ready(cx) {
                Poll::Ready(r) => Poll::Ready(r.map_err(|e| failed("the upstream connection", e))),
                Poll::Pending if reused => Poll::Ready(Err(failed(
                    "the upstream connection",
                    "an idle connection was busy",
                ))),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }

    /// Poll `fut` while driving the connection, until `fut` is done.
    async fn drive<F: std::future::Future + Unpin>(&mut self, mut fut: F) -> F::Output {
        std::future::poll_fn(|cx| {
            let _ = self.poll_conn(cx);
            fut.poll_unpin(cx)
        })
        .await
    }

    /// Drive the connection (read, write, hand frames to the body); `Ready` once it has
    /// ended, after which it is not polled again.
    fn poll_conn(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(c) = self.conn.as_mut() else {
            return Poll::Ready(());
        };
        match c.poll_unpin(cx) {
            Poll::Ready(r) => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "upstream connection ended with an error");
                }
                self.conn = None;
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The most recently used idle connection of this pool on this thread; expired ones are
/// dropped (closed) on the way.
fn checkout(s: &Shared) -> Option<Conn> {
    IDLE.with(|idle| {
        let mut idle = idle.borrow_mut();
        let stack = idle.iter_mut().find(|(id, _)| *id == s.id)?;
        while let Some(c) = stack.1.pop() {
            if c.since.elapsed() < IDLE_TIMEOUT {
                return Some(c.conn);
            }
        }
        None
    })
}

/// Put a connection whose response is over back on this thread's idle stack — unless it
/// is closed, or still busy (the apiserver answered before the request body was all
/// sent: only driving it would finish that, and nothing drives an idle connection).
fn checkin(s: &Shared, conn: Conn) {
    if conn.conn.is_none() || !conn.send.is_ready() {
        return;
    }
    IDLE.with(|idle| {
        let mut idle = idle.borrow_mut();
        let at = match idle.iter().position(|(id, _)| *id == s.id) {
            Some(at) => at,
            None => {
                idle.push((s.id, Vec::new()));
                idle.len() - 1
            }
        };
        let stack = &mut idle[at].1;
        // Oldest first: drop the ones that waited too long.
        let expired = stack
            .iter()
            .take_while(|c| c.since.elapsed() >= IDLE_TIMEOUT)
            .count();
        stack.drain(..expired);
        stack.push(Idle {
            conn,
            since: Instant::now(),
        });
    })
}

async fn connect(s: &Shared) -> Result<Conn, BoxError> {
    s.opened.fetch_add(1, Ordering::Relaxed);
    let tcp = match tokio::time::timeout(
        s.connect_timeout,
        TcpStream::connect((s.host.as_str(), s.port)),
    )
    .await
    {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => return Err(failed("tcp connect error", e)),
        Err(_) => {
            return Err(failed(
                "tcp connect error",
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("connecting timed out after {:?}", s.connect_timeout),
                ),
            ));
        }
    };
    let _ = tcp.set_nodelay(true);
    let tls = match s.connector.connect(s.server_name.clone(), tcp).await {
        Ok(tls) => tls,
        Err(e) => {
            // The rustls error itself, so the failure is classified as TLS.
            let source: BoxError = match e.into_inner() {
                Some(inner) => inner,
                None => "TLS handshake failed".into(),
            };
            return Err(failed("TLS handshake with the upstream", source));
        }
    };
    let (send, conn) = http1::Builder::new()
        .handshake(TokioIo::new(tls))
        .await
        .map_err(|e| failed("HTTP/1.1 handshake with the upstream", e))?;
    Ok(Conn {
        send,
        conn: Some(Box::new(conn)),
    })
}

/// A response body that drives its own connection and joins the chunks already read;
/// at its end the connection goes back to the idle stack.
struct DrivenBody {
    inner: Incoming,
    /// `None` once the body has ended and the connection went back (or away).
    conn: Option<Conn>,
    shared: Arc<Shared>,
    /// The first chunk of the frame being gathered, kept as it is unless more follow.
    first: Option<Bytes>,
    /// Chunks joined so far (reused: once its frame has been written, `reserve` takes
    /// the same allocation back).
    joined: BytesMut,
    /// Trailers that arrived behind data still to hand out.
    trailers: Option<http::HeaderMap>,
    /// The error the body ended with, behind data still to hand out.
    error: Option<BodyError>,
}

impl DrivenBody {
    fn gathered(&self) -> usize {
        self.first.as_ref().map_or(0, Bytes::len) + self.joined.len()
    }

    fn gather(&mut self, data: Bytes) {
        if self.first.is_none() && self.joined.is_empty() {
            self.first = Some(data);
            return;
        }
        if let Some(first) = self.first.take() {
            self.joined
                .reserve(JOIN_LIMIT.max(first.len() + data.len()));
            self.joined.extend_from_slice(&first);
        }
        self.joined.extend_from_slice(&data);
    }

    /// The gathered data as one frame, if there is any.
    fn take_gathered(&mut self) -> Option<Frame<Bytes>> {
        if let Some(first) = self.first.take() {
            return Some(Frame::data(first));
        }
        (!self.joined.is_empty()).then(|| Frame::data(self.joined.split().freeze()))
    }

    fn finish(&mut self) {
        if let Some(conn) = self.conn.take() {
            checkin(&self.shared, conn);
        }
    }
}

impl http_body::Body for DrivenBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        if let Some(t) = this.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(t))));
        }
        if let Some(e) = this.error.take() {
            return Poll::Ready(Some(Err(e)));
        }
        loop {
            if let Some(conn) = this.conn.as_mut() {
                let _ = conn.poll_conn(cx);
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        this.gather(data);
                        if this.inner.is_end_stream() {
                            // The last chunk (a Content-Length body): the server may
                            // not poll again, so the connection goes back now.
                            this.finish();
                            return Poll::Ready(this.take_gathered().map(Ok));
                        }
                        if this.gathered() >= JOIN_LIMIT {
                            return Poll::Ready(this.take_gathered().map(Ok));
                        }
                    }
                    Err(frame) => {
                        let Ok(trailers) = frame.into_trailers() else {
                            continue;
                        };
                        // Trailers end an HTTP/1.1 body.
                        this.finish();
                        return Poll::Ready(Some(Ok(match this.take_gathered() {
                            Some(data) => {
                                this.trailers = Some(trailers);
                                data
                            }
                            None => Frame::trailers(trailers),
                        })));
                    }
                },
                // The connection is unusable; what was read before the error goes first.
                Poll::Ready(Some(Err(e))) => {
                    this.conn = None;
                    let e = BodyError::from(e);
                    return Poll::Ready(Some(match this.take_gathered() {
                        Some(data) => {
                            this.error = Some(e);
                            Ok(data)
                        }
                        None => Err(e),
                    }));
                }
                Poll::Ready(None) => {
                    this.finish();
                    return Poll::Ready(this.take_gathered().map(Ok));
                }
                Poll::Pending => {
                    return match this.take_gathered() {
                        Some(data) => Poll::Ready(Some(Ok(data))),
                        None => Poll::Pending,
                    };
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
            && self.first.is_none()
            && self.joined.is_empty()
            && self.trailers.is_none()
            && self.error.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let gathered = self.gathered() as u64;
        let mut hint = SizeHint::new();
        // Upper first: `set_lower` asserts it stays at or below the upper bound.
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper.saturating_add(gathered));
        }
        hint.set_lower(inner.lower().saturating_add(gathered));
        hint
    }
}
