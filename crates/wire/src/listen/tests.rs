//! The serving threads: connections follow the load and keep their thread; partitions
//! hold, refuse and heal; busy shares are measured.

use bytes::Bytes;
use http_body_util::BodyExt;

use super::*;
use rustls::pki_types::pem::PemObject;

type Sender = hyper::client::conn::http1::SendRequest<http_body_util::Empty<Bytes>>;

/// One HTTPS connection of its own (HTTP/1.1, kept open while the sender lives).
async fn connect(addr: SocketAddr, ca_pem: &str) -> Sender {
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    send
}

/// The name of the thread that served a request on this connection.
async fn served_by(send: &mut Sender, path: &str) -> String {
    let resp = send
        .send_request(
            Request::get(path)
                .header("host", "localhost")
                .body(http_body_util::Empty::new())
                .unwrap(),
        )
        .await
        .unwrap();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

fn serving_thread(thread: usize) -> (ServingThread, tokio::sync::mpsc::UnboundedReceiver<Handoff>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Handoff>();
    let thread = ServingThread {
        tx,
        load: Arc::new(AtomicUsize::new(0)),
        busy: BusyShare::new(Box::new(|| Duration::ZERO)),
        thread,
    };
    (thread, rx)
}

#[test]
fn a_gone_thread_leaves_the_rotation() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let conn = || std::net::TcpStream::connect(addr).unwrap();
    let (a, rx_a) = serving_thread(0);
    let (b, mut rx_b) = serving_thread(1);
    let (c, mut rx_c) = serving_thread(2);
    drop(rx_a); // thread 0 is gone
    let mut serving = vec![a, b, c];
    assert!(hand_over(&mut serving, conn(), addr, || false));
    // The others keep their order: thread 1 is now the first.
    assert_eq!(serving.iter().map(|l| l.thread).collect::<Vec<_>>(), [1, 2]);
    let (_, _, load) = rx_b.try_recv().expect("thread 1 got the connection");
    assert_eq!(serving[0].load.load(Ordering::Relaxed), 1);
    drop(load);
    assert_eq!(serving[0].load.load(Ordering::Relaxed), 0);
    drop(rx_b);
    assert!(hand_over(&mut serving, conn(), addr, || false));
    assert!(rx_c.try_recv().is_ok(), "thread 2 got the next one");
    drop(rx_c);
    assert!(!hand_over(&mut serving, conn(), addr, || false));
    assert!(serving.is_empty());
    // Shutting down, a thread gone is one that saw the stop: nothing to say, no
    // thread to drop from the rotation.
    let (a, rx_a) = serving_thread(0);
    let (b, _rx_b) = serving_thread(1);
    drop(rx_a);
    let mut serving = vec![a, b];
    assert!(!hand_over(&mut serving, conn(), addr, || true));
    assert_eq!(serving.len(), 2);
}

#[test]
fn connections_fill_the_first_thread_that_is_not_saturated() {
    // (busy share, open connections) of each thread.
    assert_eq!(pick(&[(0.1, 4), (0.0, 0), (0.0, 0)]), Some(0));
    assert_eq!(pick(&[(0.9, 4), (0.5, 9), (0.0, 0)]), Some(1));
    assert_eq!(pick(&[(0.9, 4), (0.8, 9), (0.2, 3)]), Some(2));
    // Idle but holding many connections: the next thread.
    assert_eq!(pick(&[(0.0, GATHER), (0.0, 0)]), Some(1));
    // None with room: the fewest connections.
    assert_eq!(pick(&[(0.9, 40), (0.8, 9), (1.0, 30)]), Some(1));
    assert_eq!(pick(&[(0.0, GATHER + 3), (0.0, GATHER)]), Some(1));
    assert_eq!(pick(&[]), None);
}

#[test]
fn busy_share_is_measured_over_the_time_since_the_last_look() {
    let busy = Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let mut share = BusyShare::new(Box::new({
        let busy = busy.clone();
        move || *busy.lock().unwrap()
    }));
    let t0 = share.at;
    assert_eq!(share.share(t0), 0.0);
    *busy.lock().unwrap() = Duration::from_millis(300);
    // Looked at again too soon: the last measurement stands.
    assert_eq!(share.share(t0 + SAMPLE_EVERY / 2), 0.0);
    let s = share.share(t0 + Duration::from_millis(400));
    assert!((s - 0.75).abs() < 1e-9, "{s}");
    // Nothing more done: idle since.
    let s = share.share(t0 + Duration::from_millis(800));
    assert_eq!(s, 0.0);
}

/// A test server on three threads ([`name_the_thread`]): connections go where the
/// load is lightest and stay on their thread.
#[tokio::test]
async fn connections_follow_the_load_and_stay_on_their_thread() {
    let (certs, tls) = test_tls();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (_kill_tx, kill_rx) = watch::channel(0u64);
    let started = Arc::new(std::sync::Mutex::new(Vec::new()));
    let serving = serve_on_threads(
        3,
        listener,
        tls,
        name_the_thread,
        stop_rx,
        Duration::from_secs(5),
        kill_rx,
        None,
        {
            let started = started.clone();
            move |i| started.lock().unwrap().push(i)
        },
    )
    .unwrap();
    let serving = tokio::spawn(serving);
    let open = || async {
        let mut c = connect(addr, &certs.ca_cert_pem).await;
        let name = served_by(&mut c, "/").await;
        (c, name)
    };

    // A light load: connections opened one after another gather on the first thread.
    let mut conns = Vec::new();
    for _ in 0..3 {
        tokio::time::sleep(SAMPLE_EVERY * 2).await;
        conns.push(open().await);
    }
    let names: Vec<&str> = conns.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["stalemate-serve-0"; 3]);
    let mut started = started.lock().unwrap().clone();
    started.sort();
    assert_eq!(started, [0, 1, 2]);

    // Thread 0 busy: the next connection goes to thread 1, and while thread 0 was
    // busy over the time since, the one after that too.
    let mut spinning = connect(addr, &certs.ca_cert_pem).await;
    let spin = tokio::spawn(async move { served_by(&mut spinning, "/spin").await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (c, name) = open().await;
    assert_eq!(name, "stalemate-serve-1");
    conns.push((c, name));
    assert_eq!(spin.await.unwrap(), "stalemate-serve-0");
    let (c, name) = open().await;
    assert_eq!(name, "stalemate-serve-1");
    conns.push((c, name));
    // Idle again: back to thread 0.
    tokio::time::sleep(SAMPLE_EVERY * 3).await;
    let (c, name) = open().await;
    assert_eq!(name, "stalemate-serve-0");
    conns.push((c, name));

    // Many connections do not all gather on one thread, however idle it is.
    for _ in 0..GATHER {
        conns.push(open().await);
    }
    let on_first = conns
        .iter()
        .filter(|(_, n)| n == "stalemate-serve-0")
        .count();
    assert!(on_first <= GATHER, "{on_first} connections on thread 0");

    // A connection keeps its thread for every request.
    keep_their_threads(&mut conns).await;

    // Shutdown: every thread drains (open connections are idle) and the future ends.
    drop(conns);
    stop_tx.send(true).unwrap();
    stopped(serving, addr).await;
}

/// The test server's handler: it answers with the name of the thread it ran on, and
/// keeps that thread busy for three seconds when asked for `/spin`.
async fn name_the_thread(req: Request<Incoming>, _peer: Peer) -> Response<Body> {
    if req.uri().path() == "/spin" {
        // Busy as a thread serving a heavy load is, from its runtime's view:
        // short polls, one after another.
        for _ in 0..300 {
            std::thread::sleep(Duration::from_millis(10));
            tokio::task::yield_now().await;
        }
    }
    let name = std::thread::current().name().unwrap_or("?").to_string();
    Response::new(body::full(name.into_bytes()))
}

/// Each connection is served, request after request, by the thread it was first.
async fn keep_their_threads(conns: &mut [(Sender, String)]) {
    for (c, name) in conns.iter_mut() {
        for _ in 0..3 {
            assert_eq!(&served_by(c, "/").await, name);
        }
    }
}

/// A CA and the serving configuration of a certificate it signed.
fn test_tls() -> (crate::k8s::certs::CertBundle, Arc<rustls::ServerConfig>) {
    let certs = crate::k8s::certs::generate("t", &[]).unwrap();
    let tls = tls::server_config(certs.cert_pem.as_bytes(), certs.key_pem.as_bytes(), "t").unwrap();
    (certs, tls)
}

/// The serving future has ended (every thread drained) and nothing listens any more.
async fn stopped(serving: tokio::task::JoinHandle<()>, addr: SocketAddr) {
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("serving threads stop")
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// A served HTTPS connection behind a partition: a blackhole holds a request and its
/// answer until the link is up (then it is answered); a refusal drops the open
/// connection and resets new ones; up again, new connections are served.
#[tokio::test]
async fn a_partition_holds_then_refuses_then_heals() {
    let (certs, tls) = test_tls();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler =
        |_req: Request<Incoming>, _peer: Peer| async move { Response::new(body::full("ok")) };
    let (stop_tx, stop_rx) = watch::channel(false);
    let (_kill_tx, kill_rx) = watch::channel(0u64);
    let net = network::Network::new();
    let serving = serve_on_threads(
        1,
        listener,
        tls,
        handler,
        stop_rx,
        Duration::from_secs(1),
        kill_rx,
        Some(net.clone()),
        |_| {},
    )
    .unwrap();
    let serving = tokio::spawn(serving);
    let mut c = connect(addr, &certs.ca_cert_pem).await;
    served_by(&mut c, "/").await;

    net.set([(addr, network::Link::Blackhole)].into());
    let held = tokio::spawn(async move {
        let r = served_by(&mut c, "/").await;
        (c, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "no answer through a blackhole");
    net.set(Default::default());
    let (mut c, answer) = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("answered once the link is up")
        .unwrap();
    assert_eq!(answer, "ok");

    net.set([(addr, network::Link::Refuse)].into());
    let sent = c
        .send_request(
            Request::get("/")
                .header("host", "localhost")
                .body(http_body_util::Empty::new())
                .unwrap(),
        )
        .await;
    assert!(sent.is_err(), "the open connection is gone: {sent:?}");
    assert!(net.counts(addr).reset >= 1);
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 1];
    let got = tokio::io::AsyncReadExt::read(&mut tcp, &mut buf).await;
    assert!(
        matches!(&got, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
        "a new connection is reset: {got:?}"
    );

    net.set(Default::default());
    let mut c = connect(addr, &certs.ca_cert_pem).await;
    assert_eq!(served_by(&mut c, "/").await, "ok");
    drop(c);
    stop_tx.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("serving threads stop")
        .unwrap();
}
