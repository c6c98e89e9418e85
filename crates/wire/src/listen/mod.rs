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
//! resume (docs/PROTOCOL.md §C).

pub mod body;
mod kill;
pub mod network;
pub mod sched;
pub mod tls;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

pub use body::{Body, BodyError};

/// How long a client may take to finish the TLS handshake before it is dropped.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Who is on the other end of a connection.
#[derive(Debug, Clone)]
pub struct Peer {
    pub remote: SocketAddr,
    pub local: SocketAddr,
    /// The client certificate the peer presented (DER, leaf), already verified against
    /// the server's client CA during the handshake. Only servers that ask for client
    /// certificates (the simulator) ever see one.
    pub client_cert: Option<Arc<rustls::pki_types::CertificateDer<'static>>>,
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
    let conns = Conns::new(tls, handler, kill, None);
    tokio::pin!(shutdown);
    loop {
        let (tcp, remote) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = accept(&listener) => accepted,
        };
        conns.spawn(tcp, remote, None);
    }
    drop(listener);
    conns.drain(drain).await;
}

/// The next connection; accept errors (EMFILE and friends) back off instead of spinning.
async fn accept(listener: &TcpListener) -> (tokio::net::TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(x) => return x,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Keeps a connection counted on its serving thread while it lives.
struct Load(Arc<AtomicUsize>);

impl Drop for Load {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the connections of one serving loop share: TLS, the HTTP builder, the handler,
/// the kill switch and the graceful-shutdown tracker.
struct Conns<H> {
    acceptor: TlsAcceptor,
    handler: H,
    builder: Arc<auto::Builder<TokioExecutor>>,
    kill: kill::KillSwitch,
    graceful: hyper_util::server::graceful::GracefulShutdown,
    /// What a `partition` does to this loop's connections (the proxy's listeners).
    network: Option<Arc<network::Network>>,
}

impl<H, F> Conns<H>
where
    H: Fn(Request<Incoming>, Peer) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    fn new(
        tls: Arc<rustls::ServerConfig>,
        handler: H,
        kill: watch::Receiver<u64>,
        network: Option<Arc<network::Network>>,
    ) -> Self {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        // client-go multiplexes every watch of a controller on one HTTP/2 connection; the
        // apiserver allows 100 streams (`secure_serving.go`), we allow more so benchmarks
        // with many watches per connection measure us, not the limit.
        builder.http2().max_concurrent_streams(1000);
        let kill = kill::KillSwitch::new(kill);
        if let Some(n) = &network {
            n.serving_loop(kill.resetter());
        }
        Conns {
            acceptor: TlsAcceptor::from(tls),
            handler,
            builder: Arc::new(builder),
            kill,
            graceful: hyper_util::server::graceful::GracefulShutdown::new(),
            network,
        }
    }

    /// Serve one accepted connection on this runtime: TLS handshake, then HTTP.
    fn spawn(&self, tcp: tokio::net::TcpStream, remote: SocketAddr, load: Option<Load>) {
        let _ = tcp.set_nodelay(true);
        let local = tcp.local_addr().unwrap_or(remote);
        let admission = self
            .network
            .as_ref()
            .map_or(network::Admission::Serve, |n| n.admit(&tcp, local));
        if admission == network::Admission::Refuse {
            tracing::debug!(%remote, "partition: connection refused");
            return;
        }
        let acceptor = self.acceptor.clone();
        let handler = self.handler.clone();
        let builder = self.builder.clone();
        let watcher = self.graceful.watcher();
        let registered = self.kill.register(Some(local));
        let id = registered.id();
        let network = self.network.clone();
        let task = tokio::spawn(async move {
            let (_load, _registered) = (load, registered);
            // Behind a blackhole the handshake waits for the link, not against its own
            // timeout: the client's dial timeout is what gives up.
            if let Some(n) = network
                .as_ref()
                .filter(|_| admission == network::Admission::Hold)
            {
                n.until_not_blackholed(local).await;
            }
            let tcp = network::Linked::new(tcp, network, local);
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
            let client_cert = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|c| Arc::new(c.clone().into_owned()));
            let peer = Peer {
                remote,
                local,
                client_cert,
            };
            let svc = hyper::service::service_fn(move |req| {
                let fut = handler(req, peer.clone());
                async move { Ok::<_, Infallible>(fut.await) }
            });
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), svc);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%remote, error = %e, "connection ended with an error");
            }
        });
        self.kill.attach(id, &task);
    }

    /// Let open connections finish for at most `drain`, then drop them.
    async fn drain(self, drain: Duration) {
        // A bump just before the shutdown drops its connections first: a dying
        // apiserver sends no GOAWAY (the graceful close would reach them otherwise).
        self.kill.sweep();
        if tokio::time::timeout(drain, self.graceful.shutdown())
            .await
            .is_err()
        {
            tracing::info!("drain deadline passed; closing remaining connections");
        }
    }
}

/// A connection on its way to a serving thread, counted on that thread from now on.
type Handoff = (std::net::TcpStream, SocketAddr, Load);

/// A serving thread counts as saturated once it has been busy this share of the time
/// lately: new connections then go to the next thread.
const SATURATED: f64 = 0.75;

/// How long a measured busy share stands before it is measured again (the accept loop
/// looks this often, and on every accept).
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// How busy a serving thread has been since it was last looked at, from its runtime's own
/// count of the time it spent running tasks.
struct BusyShare {
    total: Box<dyn Fn() -> Duration + Send + Sync>,
    at: std::time::Instant,
    seen: Duration,
    share: f64,
}

impl BusyShare {
    fn new(total: Box<dyn Fn() -> Duration + Send + Sync>) -> BusyShare {
        BusyShare {
            seen: total(),
            total,
            at: std::time::Instant::now(),
            share: 0.0,
        }
    }

    /// Of the time since the last measurement, the share the thread was busy.
    fn share(&mut self, now: std::time::Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at);
        if elapsed >= SAMPLE_EVERY {
            let total = (self.total)();
            self.share = total.saturating_sub(self.seen).as_secs_f64() / elapsed.as_secs_f64();
            (self.at, self.seen) = (now, total);
        }
        self.share
    }
}

/// A serving thread, as the accept loop sees it.
struct ServingThread {
    tx: tokio::sync::mpsc::UnboundedSender<Handoff>,
    /// Connections open on it.
    load: Arc<AtomicUsize>,
    busy: BusyShare,
    thread: usize,
}

/// Connections a thread gathers before new ones go to the next, however idle it is: a
/// controller opens one or two, a benchmark's load generator a handful; a hundred are
/// many clients whose load, once it comes, one thread could not carry — and a
/// connection never moves once placed.
const GATHER: usize = 16;

/// Which thread a new connection goes to, given each one's busy share and open
/// connections: the first that is not saturated and holds fewer than [`GATHER`] — so a
/// light load gathers on one thread, as nginx's does on one worker, and its requests and
/// upstream connections never wait on another thread — else the one with the fewest
/// connections.
fn pick(threads: &[(f64, usize)]) -> Option<usize> {
    (0..threads.len())
        .find(|i| threads[*i].0 < SATURATED && threads[*i].1 < GATHER)
        .or_else(|| (0..threads.len()).min_by_key(|i| threads[*i].1))
}

/// Give a connection to a serving thread ([`pick`]). A thread that is gone (it could not
/// start, or died) leaves `threads`, and the connection goes to the next one. `false`
/// when no thread is left.
fn hand_over(
    threads: &mut Vec<ServingThread>,
    mut tcp: std::net::TcpStream,
    remote: SocketAddr,
    stopping: impl Fn() -> bool,
) -> bool {
    let now = std::time::Instant::now();
    loop {
        let seen: Vec<(f64, usize)> = threads
            .iter_mut()
            .map(|t| (t.busy.share(now), t.load.load(Ordering::Relaxed)))
            .collect();
        let Some(i) = pick(&seen) else { return false };
        let t = &threads[i];
        t.load.fetch_add(1, Ordering::Relaxed);
        match t.tx.send((tcp, remote, Load(t.load.clone()))) {
            Ok(()) => return true,
            Err(tokio::sync::mpsc::error::SendError((back, _, _))) => {
                // Shutting down, a thread that saw the stop first is gone for that.
                if stopping() {
                    return false;
                }
                tracing::error!(
                    thread = t.thread,
                    "a serving thread is gone; serving on the others"
                );
                tcp = back;
                threads.remove(i);
            }
        }
    }
}

/// [`serve`] on `threads` OS threads, each with its own single-threaded runtime, the way
/// nginx runs one event loop per worker process. The caller's runtime accepts and hands
/// each connection to the first thread that is not saturated ([`pick`]); the connection, its
/// requests and — through `on_thread_start`, which the proxy uses to give each thread its
/// own upstream pool — their upstream connections then stay on that thread: nothing hops
/// between work-stealing workers per request (bench/README.md has the measurements).
///
/// Threads are started before this returns. The returned future accepts connections
/// until `shutdown` becomes `true`, and ends when every thread has drained (or dropped,
/// after `drain`) its connections.
#[allow(clippy::too_many_arguments)]
pub fn serve_on_threads<H, F>(
    threads: usize,
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    handler: H,
    shutdown: watch::Receiver<bool>,
    drain: Duration,
    kill: watch::Receiver<u64>,
    network: Option<Arc<network::Network>>,
    on_thread_start: impl Fn(usize) + Send + Sync + 'static,
) -> std::io::Result<impl Future<Output = ()> + Send + 'static>
where
    H: Fn(Request<Incoming>, Peer) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let on_thread_start = Arc::new(on_thread_start);
    let mut serving = Vec::with_capacity(threads);
    let mut stopped = Vec::with_capacity(threads);
    for i in 0..threads.max(1) {
        let (tls, handler, kill) = (tls.clone(), handler.clone(), kill.clone());
        let network = network.clone();
        let (mut stop, on_thread_start) = (shutdown.clone(), on_thread_start.clone());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Handoff>();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let metrics = rt.metrics();
        std::thread::Builder::new()
            .name(format!("stalemate-serve-{i}"))
            .spawn(move || {
                on_thread_start(i);
                rt.block_on(async move {
                    let conns = Conns::new(tls, handler, kill, network);
                    loop {
                        let (tcp, remote, load) = tokio::select! {
                            _ = stop.wait_for(|s| *s) => break,
                            next = rx.recv() => match next {
                                Some(x) => x,
                                None => break,
                            },
                        };
                        match tokio::net::TcpStream::from_std(tcp) {
                            Ok(tcp) => conns.spawn(tcp, remote, Some(load)),
                            Err(e) => {
                                tracing::warn!(%remote, error = %e, "cannot take over a connection")
                            }
                        }
                    }
                    conns.drain(drain).await;
                });
                // Tasks still on this runtime (e.g. idle upstream connections) end here.
                drop(rt);
                let _ = done_tx.send(());
            })?;
        serving.push(ServingThread {
            tx,
            load: Arc::new(AtomicUsize::new(0)),
            busy: BusyShare::new(Box::new(move || metrics.worker_total_busy_duration(0))),
            thread: i,
        });
        stopped.push(done_rx);
    }
    Ok(accept_and_hand_over(listener, serving, stopped, shutdown))
}

/// The accepting side of [`serve_on_threads`], on the caller's runtime: each connection
/// to a serving thread ([`hand_over`]) until `stop`, then the threads' drains waited for.
async fn accept_and_hand_over(
    listener: TcpListener,
    mut serving: Vec<ServingThread>,
    stopped: Vec<tokio::sync::oneshot::Receiver<()>>,
    mut stop: watch::Receiver<bool>,
) {
    // Busy shares are measured every SAMPLE_EVERY, not only when a connection comes:
    // a share measured over the long quiet before an accept would hide how busy the
    // thread was just now.
    let mut sample = tokio::time::interval(SAMPLE_EVERY);
    sample.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let (tcp, remote) = tokio::select! {
            // The stop first: the serving threads watch it too, and one that has
            // seen it is gone — a connection accepted after it has nowhere to go.
            biased;
            _ = stop.wait_for(|s| *s) => break,
            now = sample.tick() => {
                for t in serving.iter_mut() {
                    t.busy.share(now.into_std());
                }
                continue;
            }
            accepted = accept(&listener) => accepted,
        };
        // Moving the socket between runtimes: deregister here, register there.
        let tcp = match tcp.into_std() {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(%remote, error = %e, "cannot hand over a connection");
                continue;
            }
        };
        let stopping = || *stop.borrow();
        if !hand_over(&mut serving, tcp, remote, stopping) {
            if !stopping() {
                tracing::error!("no serving thread left; no longer accepting connections");
            }
            break;
        }
    }
    drop(listener);
    drop(serving);
    for s in stopped {
        let _ = s.await;
    }
}

/// `https://host:port`, with IPv6 hosts bracketed.
pub fn https_url(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("https://{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("https://[{}]:{}", a.ip(), a.port()),
    }
}

#[cfg(test)]
mod tests;
