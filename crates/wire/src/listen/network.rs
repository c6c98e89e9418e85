//! The network between a listener's clients and the server, as the `partition` fault
//! breaks it: a dead link (`blackhole`) or a refusing host (`refuse`).
//!
//! ```text
//!  accept ─► link of the listener? ─ up ────────► TLS, HTTP (every read and write through
//!                                   │                Linked, which asks the link again
//!                                   │                only when it has changed)
//!                                   ├ blackhole ─► held before the TLS handshake until the
//!                                   │              link is up again (or the client gives up)
//!                                   └ refuse ────► reset at once (SO_LINGER 0: an RST)
//!  link set to blackhole ─► open connections: every read and write pends (no request in,
//!                           no response, watch event or HTTP/2 PING answer out)
//!  link set to refuse ────► open connections of the listener dropped at once, each
//!                           with an RST (the serving loops' kill switches)
//!  link up again ─────────► every pending read and write is woken and goes on
//! ```
//!
//! Why at the transport and not per request: a partition is not an error the server
//! sends. A client behind a dead link sees its requests hang until its own timeouts,
//! its HTTP/2 health check (client-go: a PING unanswered for `ReadIdleTimeout` +
//! `PingTimeout`) give up on the connection, its new connections hang in the handshake,
//! and its leader-election lease run out while renewals hang — the sequence the seed's
//! GitOps deadlock (`dial tcp …:443: i/o timeout`, then a crash loop) went through.
//!
//! The hot path pays one atomic load per read or write: [`Linked`] keeps the link it saw
//! with the network's generation and asks again only when the generation moved. An idle
//! connection behind a blackhole needs no waking (nothing is to get through); behind a
//! refusal it is dropped by its serving loop's kill switch, not woken.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What the network does to one listener's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Link {
    #[default]
    Up,
    /// Nothing gets through, either way; nothing is refused either.
    Blackhole,
    /// New connections are reset; open ones are reset at their next read or write.
    Refuse,
}

impl Link {
    /// The stronger of two links over the same listener: a refusal is what a client
    /// sees first (its connection is reset before anything could hang).
    pub fn max(self, other: Link) -> Link {
        match (self, other) {
            (Link::Refuse, _) | (_, Link::Refuse) => Link::Refuse,
            (Link::Blackhole, _) | (_, Link::Blackhole) => Link::Blackhole,
            _ => Link::Up,
        }
    }
}

/// The links of a server's listeners, by the listener's local address (absent: up).
#[derive(Default)]
pub struct Network {
    generation: AtomicU64,
    links: RwLock<HashMap<SocketAddr, Link>>,
    /// Connections waiting for a link to change: woken (and forgotten) at every change.
    waiting: Mutex<Vec<Waker>>,
    /// What partitions did, by listener.
    counts: Mutex<HashMap<SocketAddr, Counts>>,
    /// Each serving loop's way to drop the connections of a listener.
    resetters: Mutex<Vec<super::kill::Resetter>>,
    /// The listeners whose connections this network carries.
    listeners: RwLock<Vec<SocketAddr>>,
}

/// What a partition did to a listener's connections (the report and metrics read it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// New connections reset at accept.
    pub refused: u64,
    /// Open connections reset by a `refuse`.
    pub reset: u64,
    /// New connections held before their handshake by a `blackhole`.
    pub held: u64,
}

impl Network {
    pub fn new() -> Arc<Network> {
        Arc::new(Network::default())
    }

    /// Set every listener's link at once (those not named are up): the connections of a
    /// listener that now refuses are dropped, and every connection waiting on a link is
    /// woken to look again.
    pub fn set(&self, links: HashMap<SocketAddr, Link>) {
        let refusing: Vec<SocketAddr> = {
            let mut now = self.links.write().unwrap_or_else(|p| p.into_inner());
            let links: HashMap<SocketAddr, Link> =
                links.into_iter().filter(|(_, l)| *l != Link::Up).collect();
            if *now == links {
                return;
            }
            let refusing = links
                .iter()
                .filter(|(a, l)| **l == Link::Refuse && now.get(a) != Some(&Link::Refuse))
                .map(|(a, _)| *a)
                .collect();
            *now = links;
            self.generation.fetch_add(1, Ordering::SeqCst);
            refusing
        };
        for local in refusing {
            let mut resetters = self.resetters.lock().unwrap_or_else(|p| p.into_inner());
            let mut reset = 0;
            resetters.retain(|r| r.reset(local).map(|n| reset += n).is_some());
            drop(resetters);
            self.count(local, |c| c.reset += reset as u64);
        }
        let waiting = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|p| p.into_inner()));
        for w in waiting {
            w.wake();
        }
    }

    /// A serving loop whose connections a refusal drops.
    pub(super) fn serving_loop(&self, r: super::kill::Resetter) {
        self.resetters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(r);
    }

    /// The listener at `local` is served behind this network.
    pub fn listening(&self, local: SocketAddr) {
        self.listeners
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(local);
    }

    /// The listeners served behind it.
    pub fn listeners(&self) -> Vec<SocketAddr> {
        self.listeners
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The link of the listener at `local` now.
    pub fn link(&self, local: SocketAddr) -> Link {
        self.links
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&local)
            .copied()
            .unwrap_or_default()
    }

    /// What partitions did to the listener at `local` so far.
    pub fn counts(&self, local: SocketAddr) -> Counts {
        self.counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&local)
            .copied()
            .unwrap_or_default()
    }

    fn count(&self, local: SocketAddr, f: impl FnOnce(&mut Counts)) {
        f(self
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(local)
            .or_default());
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Wake `w` at the next change.
    fn wait(&self, w: &Waker) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if !waiting.iter().any(|x| x.will_wake(w)) {
            waiting.push(w.clone());
        }
    }

    /// Resolves once the listener at `local` is not blackholed (a connection accepted
    /// behind a blackhole waits here before its handshake).
    pub async fn until_not_blackholed(&self, local: SocketAddr) {
        std::future::poll_fn(|cx| {
            let seen = self.generation();
            if self.link(local) != Link::Blackhole {
                return Poll::Ready(());
            }
            self.wait(cx.waker());
            // A change between the look and the registration would be missed otherwise.
            if self.generation() != seen {
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        })
        .await
    }

    /// Whether a connection just accepted on `local` is to be taken: a refused one is
    /// reset here (an RST, as a host with nothing listening sends).
    pub fn admit(&self, tcp: &tokio::net::TcpStream, local: SocketAddr) -> Admission {
        match self.link(local) {
            Link::Up => Admission::Serve,
            Link::Blackhole => {
                self.count(local, |c| c.held += 1);
                Admission::Hold
            }
            Link::Refuse => {
                // Linger 0: close sends an RST, not a FIN.
                #[allow(deprecated)]
                let _ = tcp.set_linger(Some(std::time::Duration::ZERO));
                self.count(local, |c| c.refused += 1);
                Admission::Refuse
            }
        }
    }
}

/// What to do with a connection just accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Serve,
    /// Hold it (no handshake) until the link is up again.
    Hold,
    /// Drop it now (reset).
    Refuse,
}

/// A connection's transport behind its listener's link: reads and writes pend while the
/// link is a blackhole; dropped while it refuses, it is reset (an RST). Without a
/// network (the simulator's listeners), the socket as it is.
pub struct Linked {
    io: tokio::net::TcpStream,
    net: Option<Arc<Network>>,
    local: SocketAddr,
    /// The network's generation when `link` was read.
    seen: u64,
    link: Link,
}

impl Linked {
    pub fn new(io: tokio::net::TcpStream, net: Option<Arc<Network>>, local: SocketAddr) -> Linked {
        let seen = net.as_ref().map_or(0, |n| n.generation());
        let link = net.as_ref().map_or(Link::Up, |n| n.link(local));
        Linked {
            io,
            net,
            local,
            seen,
            link,
        }
    }

    /// `Ready(Ok)`: go on to the transport; otherwise what the link makes of the call.
    fn gate(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let Some(net) = &self.net else {
            return Poll::Ready(Ok(()));
        };
        let generation = net.generation();
        if generation != self.seen {
            self.seen = generation;
            self.link = net.link(self.local);
        }
        match self.link {
            Link::Up => Poll::Ready(Ok(())),
            Link::Blackhole => {
                net.wait(cx.waker());
                if net.generation() != self.seen {
                    cx.waker().wake_by_ref();
                }
                Poll::Pending
            }
            // Its serving loop drops it; until then nothing goes through.
            Link::Refuse => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "partition: the connection is refused",
            ))),
        }
    }
}

impl Drop for Linked {
    fn drop(&mut self) {
        if self
            .net
            .as_ref()
            .is_some_and(|n| n.link(self.local) == Link::Refuse)
        {
            // Linger 0: the close sends an RST, not a FIN.
            #[allow(deprecated)]
            let _ = self.io.set_linger(Some(std::time::Duration::ZERO));
        }
    }
}

impl AsyncRead for Linked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        std::task::ready!(me.gate(cx))?;
        Pin::new(&mut me.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Linked {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        std::task::ready!(me.gate(cx))?;
        Pin::new(&mut me.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        std::task::ready!(me.gate(cx))?;
        Pin::new(&mut me.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        std::task::ready!(me.gate(cx))?;
        Pin::new(&mut me.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn pair(net: &Arc<Network>) -> (Linked, tokio::net::TcpStream, SocketAddr) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (server, _) = l.accept().await.unwrap();
        (Linked::new(server, Some(net.clone()), addr), client, addr)
    }

    #[tokio::test]
    async fn a_blackhole_holds_both_ways_until_the_link_is_up() {
        let net = Network::new();
        let (mut server, mut client, addr) = pair(&net).await;
        net.set([(addr, Link::Blackhole)].into());
        client.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        let read =
            tokio::time::timeout(std::time::Duration::from_millis(200), server.read(&mut buf))
                .await;
        assert!(read.is_err(), "a read behind a blackhole pends");
        let write = tokio::time::timeout(
            std::time::Duration::from_millis(200),
            server.write_all(b"pong"),
        )
        .await;
        assert!(write.is_err(), "a write behind a blackhole pends");
        let heal = {
            let net = net.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                net.set(HashMap::new());
            })
        };
        server.read_exact(&mut buf).await.unwrap();
        assert_eq!(
            &buf, b"ping",
            "what was sent during the partition arrives after it"
        );
        server.write_all(b"pong").await.unwrap();
        client.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
        heal.await.unwrap();
    }

    #[tokio::test]
    async fn a_connection_accepted_while_refusing_is_reset() {
        let net = Network::new();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        net.set([(addr, Link::Refuse)].into());
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (server, _) = l.accept().await.unwrap();
        assert_eq!(net.admit(&server, addr), Admission::Refuse);
        drop(server);
        let mut buf = [0u8; 1];
        let got = client.read(&mut buf).await;
        assert!(
            matches!(&got, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
            "the client sees a reset, not an end of stream: {got:?}"
        );
        assert_eq!(net.counts(addr).refused, 1);
        net.set([(addr, Link::Blackhole)].into());
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (server, _) = l.accept().await.unwrap();
        assert_eq!(net.admit(&server, addr), Admission::Hold);
        let held = tokio::time::timeout(
            std::time::Duration::from_millis(100),
            net.until_not_blackholed(addr),
        )
        .await;
        assert!(held.is_err(), "held while the blackhole lasts");
        net.set(HashMap::new());
        net.until_not_blackholed(addr).await;
        assert_eq!(net.counts(addr).held, 1);
    }

    #[test]
    fn refuse_is_stronger_than_blackhole() {
        assert_eq!(Link::Blackhole.max(Link::Refuse), Link::Refuse);
        assert_eq!(Link::Up.max(Link::Blackhole), Link::Blackhole);
        assert_eq!(Link::Up.max(Link::Up), Link::Up);
    }
}
