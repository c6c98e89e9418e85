//! The HTTPS front door shared by the simulator and the proxy: rustls (TLS 1.2/1.3, ALPN
//! `h2` and `http/1.1`) in front of hyper's auto (HTTP/1.1 + HTTP/2) connection builder.
//!
//! ```text
//!  TCP accept ─► TLS handshake (timeout) ─► hyper auto conn ─► handler(Request, Peer)
//!                                              │
//!                      shutdown: drain ◄───────┤ graceful (bounded by the caller)
//!                      kill epoch:  drop ◄─────┘ abrupt (connections vanish mid-stream)
//! ```
//!
//! The abrupt path exists for the simulator's misbehaviour endpoints: a dropped TCP
//! connection is what a client sees when an apiserver restarts, and its reflector must
//! resume (PROTOCOL.md §C).

pub mod body;
pub mod tls;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// Errors a response body can end with. An error aborts the stream (HTTP/1.1: the
/// connection is closed; HTTP/2: RST_STREAM), which is how an apiserver crash looks.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;
/// The response body type every handler returns: bodies stay streams.
pub type Body = BoxBody<Bytes, BodyError>;

/// How long a client may take to finish the TLS handshake before it is dropped.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Who is on the other end of a connection.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    pub remote: SocketAddr,
    pub local: SocketAddr,
}

/// Serve `handler` on `listener` until `shutdown` resolves, then stop accepting and let
/// open connections finish for at most `drain` before dropping them.
///
/// Bumping the value in `kill` drops every connection open at that moment, abruptly.
pub async fn serve<H, F>(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    handler: H,
    shutdown: impl Future<Output = ()>,
    drain: Duration,
    kill: watch::Receiver<u64>,
) where
    H: Fn(Request<Incoming>, Peer) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let acceptor = TlsAcceptor::from(tls);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // client-go multiplexes every watch of a controller on one HTTP/2 connection; the
    // apiserver allows 100 streams (`secure_serving.go`), we allow more so benchmarks
    // with many watches per connection measure us, not the limit.
    builder.http2().max_concurrent_streams(1000);
    let builder = Arc::new(builder);
    tokio::pin!(shutdown);
    loop {
        let (tcp, remote) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let local = tcp.local_addr().unwrap_or(remote);
        let peer = Peer { remote, local };
        let acceptor = acceptor.clone();
        let handler = handler.clone();
        let builder = builder.clone();
        let mut kill = kill.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let epoch = *kill.borrow_and_update();
            let tls = match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%remote, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%remote, "TLS handshake timed out");
                    return;
                }
            };
            let svc = hyper::service::service_fn(move |req| {
                let fut = handler(req, peer);
                async move { Ok::<_, Infallible>(fut.await) }
            });
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), svc);
            let conn = watcher.watch(conn.into_owned());
            tokio::select! {
                res = conn => {
                    if let Err(e) = res {
                        tracing::debug!(%remote, error = %e, "connection ended with an error");
                    }
                }
                _ = async {
                    while kill.changed().await.is_ok() {
                        if *kill.borrow() != epoch { return; }
                    }
                    std::future::pending::<()>().await
                } => {
                    tracing::debug!(%remote, "connection dropped on request");
                }
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("drain deadline passed; closing remaining connections");
    }
}
