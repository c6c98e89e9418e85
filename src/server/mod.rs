//! An in-process proxy: everything `serve` runs, started and stopped as a value, so that
//! `run`, `demo` and `explore` embed the same proxy the `serve` verb runs.
//!
//! ```text
//!  start(Options) ─► upstream, TLS, listener, admin listener, engine + oracles + trace,
//!                    ground-truth watchers, serving threads ─► Running
//!  Running::stop() ─► watches end cleanly, requests drain ─► the final Report
//! ```
//!
//! Beside it: the admin listener it starts (`admin.rs`: `/metrics`, probes, the control
//! API) and `stalemate inject`, which puts this proxy in a pod as a sidecar (`inject.rs`).

pub mod admin;
pub mod inject;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::k8s::certs;
use crate::proxy::metrics::Metrics;
use crate::upstream::{Source, TransportOptions, Upstream};

/// One serving thread per CPU this process may use (cgroup quotas included).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Everything an in-process proxy needs; `serve`, `run` and `demo` fill it from their flags.
pub struct Options {
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    /// Serving certificate chain and key (PEM), and the CA clients should trust.
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
    pub ca: Option<String>,
    pub source: Source,
    pub insecure_skip_upstream_verify: bool,
    pub schedule: crate::schedule::Schedule,
    pub upstream_timeout: Duration,
    pub max_held_bytes: usize,
    pub max_held_bytes_total: usize,
    pub max_view_bytes: usize,
    pub views: crate::watch::view::ViewsMode,
    pub trace: Option<PathBuf>,
    pub admin_token: Option<String>,
    pub drain_timeout: Duration,
    /// Serving threads (`--threads`).
    pub threads: usize,
    /// How the kernel schedules them (`--scheduling`).
    pub scheduling: crate::listen::sched::Scheduling,
    /// The controller process `restart` windows act on: expected when the caller runs
    /// the controller and fills the slot once it runs (`run`, `explore`), none for
    /// `serve` (its schedule may then have no `restart` window).
    pub process: crate::schedule::engine::ProcessSlot,
    /// A name for the main listener (what `listener` client matchers may say).
    pub listen_name: Option<String>,
    /// More listeners of the same proxy, by name: a second client (`explore`'s and
    /// `run`'s workload) is told apart by the listener it comes in on.
    pub named_listeners: Vec<(String, SocketAddr)>,
    /// Record the trace here rather than in `trace`'s file (in memory, for `explore`).
    pub trace_sink: Option<crate::trace::Trace>,
}

impl Options {
    /// A proxy on a free loopback port with a generated certificate and `serve`'s
    /// default caps — what `run` and `demo` start.
    pub fn loopback(
        certs: &certs::CertBundle,
        source: Source,
        schedule: crate::schedule::Schedule,
        trace: Option<PathBuf>,
    ) -> Options {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        Options {
            listen: any,
            admin_listen: any,
            cert: certs.cert_pem.clone().into_bytes(),
            key: certs.key_pem.clone().into_bytes(),
            ca: Some(certs.ca_cert_pem.clone()),
            source,
            insecure_skip_upstream_verify: false,
            schedule,
            upstream_timeout: Duration::from_secs(70),
            max_held_bytes: 64 << 20,
            max_held_bytes_total: 512 << 20,
            max_view_bytes: 256 << 20,
            views: crate::watch::view::ViewsMode::Named,
            trace,
            admin_token: None,
            drain_timeout: Duration::from_secs(5),
            threads: default_threads(),
            scheduling: Default::default(),
            process: Default::default(),
            listen_name: None,
            named_listeners: Vec::new(),
            trace_sink: None,
        }
    }
}

/// A running proxy: its addresses, its oracles, and how to stop it.
pub struct Running {
    pub url: String,
    /// The URLs of the named listeners (the main one too, if named).
    pub urls: std::collections::BTreeMap<String, String>,
    pub admin: SocketAddr,
    pub ca: Option<String>,
    pub upstream: Upstream,
    pub oracles: Arc<crate::oracle::Oracles>,
    pub engine: Arc<crate::schedule::engine::Engine>,
    /// The controller process the engine's `restart` windows act on: the caller fills
    /// it once the controller runs.
    pub process: crate::schedule::engine::ProcessSlot,
    /// What each client is doing (`proxy/activity.rs`).
    pub activity: Arc<crate::proxy::activity::ClientActivity>,
    trace: crate::trace::Trace,
    trace_writer: Option<crate::trace::TraceWriter>,
    stop_tx: tokio::sync::watch::Sender<bool>,
    serve_task: tokio::task::JoinHandle<()>,
    admin_task: tokio::task::JoinHandle<()>,
    truth: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// The run's trace (off unless `--trace`).
    pub fn trace(&self) -> crate::trace::Trace {
        self.trace.clone()
    }

    /// Stop: watches end cleanly, open requests drain; the final report is computed,
    /// written to the trace, and returned.
    pub async fn stop(self) -> crate::report::Report {
        let _ = self.stop_tx.send(true);
        let _ = self.serve_task.await;
        let _ = self.admin_task.await;
        for t in &self.truth {
            t.abort();
        }
        let report = crate::report::Report::now(&self.oracles, std::time::SystemTime::now());
        for r in report.trace_records() {
            self.trace.record(r);
        }
        if let Some(w) = self.trace_writer {
            w.finish().await;
        }
        report
    }
}

/// Start a proxy in this process: a short pipeline of the steps below.
pub async fn start(mut o: Options) -> Result<Running> {
    if o.insecure_skip_upstream_verify {
        tracing::warn!(
            "--insecure-skip-upstream-verify: the upstream's certificate is NOT verified; anyone on the path can read and alter the traffic, credentials included"
        );
    }
    refuse_process_windows(&o)?;
    let tls = crate::listen::tls::server_config(&o.cert, &o.key, "the serving certificate")?;
    let upstream = connect_upstream(&o).await?;
    let clients = Arc::new(crate::proxy::identity::Clients::new(&o.schedule.clients));
    let listeners = Listeners::bind(&o, &clients).await?;
    let (trace, trace_writer) = open_trace(o.trace.as_deref(), o.trace_sink.take()).await?;
    let oracles = Arc::new(crate::oracle::Oracles::new(
        o.schedule.oracles.clone().unwrap_or_default(),
        std::time::SystemTime::now(),
    ));
    let network = crate::listen::network::Network::new();
    let engine = engine(&o, &trace, &oracles, &network, &clients);
    let metrics = Arc::new(Metrics::new());
    register_metrics(&metrics, &engine, &oracles, o.max_held_bytes_total);
    let gates = gates(&o, &engine, &metrics, &trace);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let proxy = proxy(
        &o,
        &upstream,
        &metrics,
        &gates,
        &oracles,
        &clients,
        stop_rx.clone(),
    );
    let activity = proxy.activity.clone();
    let truth = ground_truth(&upstream, &oracles)?;
    engine.start(&o.schedule);
    let admin = admin::Admin {
        metrics,
        upstream: upstream.clone(),
        gates,
        clients,
        token: o.admin_token.clone(),
        oracles: oracles.clone(),
    };
    tracing::info!(url = %listeners.url, upstream = %upstream.base, admin = %listeners.admin_addr, upstream_credentials = upstream.has_credentials, "proxy serving");
    let admin_task = serve_admin(listeners.admin, admin, stop_rx.clone());
    let (main, extra) = (listeners.main, listeners.extra);
    let serve_task = match serve(&o, tls, main, extra, proxy, network, stop_rx) {
        Ok(t) => t,
        Err(e) => {
            let _ = stop_tx.send(true);
            truth.iter().for_each(|t| t.abort());
            return Err(e);
        }
    };
    Ok(Running {
        url: listeners.url,
        urls: listeners.urls,
        admin: listeners.admin_addr,
        ca: o.ca,
        upstream,
        oracles,
        engine,
        process: o.process,
        activity,
        trace,
        trace_writer,
        stop_tx,
        serve_task,
        admin_task,
        truth,
    })
}

/// The schedule's engine, telling the trace and the oracles, cutting the listeners'
/// links for partitions, and restarting the caller's controller process, if any.
fn engine(
    o: &Options,
    trace: &crate::trace::Trace,
    oracles: &Arc<crate::oracle::Oracles>,
    network: &Arc<crate::listen::network::Network>,
    clients: &Arc<crate::proxy::identity::Clients>,
) -> Arc<crate::schedule::engine::Engine> {
    let links = crate::proxy::links::ListenerLinks {
        network: network.clone(),
        clients: clients.clone(),
    };
    crate::schedule::engine::Engine::new(
        &o.schedule,
        crate::schedule::engine::Audience {
            trace: trace.clone(),
            oracles: Some(oracles.clone()),
            network: Some(Arc::new(links)),
            process: o.process.clone(),
        },
    )
}

/// `restart` windows need a controller process stalemate owns; `serve` has none.
fn refuse_process_windows(o: &Options) -> Result<()> {
    if o.process.is_expected() {
        return Ok(());
    }
    match o
        .schedule
        .windows
        .iter()
        .enumerate()
        .find(|(_, w)| w.fault.behaviour().needs_process())
    {
        Some((i, w)) => anyhow::bail!(
            "the schedule's windows[{i}] ({:?}) is a `{}` window: it needs a controller process stalemate owns (`stalemate run` or `explore`); `serve` has none to restart",
            w.name,
            w.fault.name()
        ),
        None => Ok(()),
    }
}

async fn connect_upstream(o: &Options) -> Result<Upstream> {
    Upstream::connect(
        &o.source,
        &TransportOptions {
            insecure_skip_verify: o.insecure_skip_upstream_verify,
            connect_timeout: Duration::from_secs(10),
            // One per serving thread, and one for the rest of the process.
            lanes: o.threads.max(1) + 1,
        },
    )
    .await
}

/// The proxy's sockets, bound (so a port in use is an error before anything runs).
struct Listeners {
    main: tokio::net::TcpListener,
    url: String,
    /// The named ones (the main one too, if named), by name.
    urls: std::collections::BTreeMap<String, String>,
    extra: Vec<tokio::net::TcpListener>,
    admin: tokio::net::TcpListener,
    admin_addr: SocketAddr,
}

impl Listeners {
    /// Bind them, and name the named ones for `listener` client matchers.
    async fn bind(o: &Options, clients: &crate::proxy::identity::Clients) -> Result<Listeners> {
        let main = tokio::net::TcpListener::bind(o.listen)
            .await
            .with_context(|| format!("--listen {}: cannot bind", o.listen))?;
        let addr = main.local_addr()?;
        let admin = tokio::net::TcpListener::bind(o.admin_listen)
            .await
            .with_context(|| format!("--admin-listen {}: cannot bind", o.admin_listen))?;
        let admin_addr = admin.local_addr()?;
        let url = crate::listen::https_url(addr);
        let mut urls = std::collections::BTreeMap::new();
        if let Some(name) = &o.listen_name {
            clients.name_listener(addr, name);
            urls.insert(name.clone(), url.clone());
        }
        let mut extra = Vec::new();
        for (name, at) in &o.named_listeners {
            let l = tokio::net::TcpListener::bind(at)
                .await
                .with_context(|| format!("listener {name:?} on {at}: cannot bind"))?;
            let a = l.local_addr()?;
            clients.name_listener(a, name);
            urls.insert(name.clone(), crate::listen::https_url(a));
            extra.push(l);
        }
        Ok(Listeners {
            main,
            url,
            urls,
            extra,
            admin,
            admin_addr,
        })
    }
}

/// The trace: the caller's sink (explore's, in memory), a file, or off.
async fn open_trace(
    path: Option<&Path>,
    sink: Option<crate::trace::Trace>,
) -> Result<(crate::trace::Trace, Option<crate::trace::TraceWriter>)> {
    Ok(match (path, sink) {
        (_, Some(sink)) => (sink, None),
        (Some(path), None) => {
            let (t, w) = crate::trace::Trace::to_file(path)
                .await
                .with_context(|| format!("--trace {}", path.display()))?;
            (t, Some(w))
        }
        (None, None) => (crate::trace::Trace::off(), None),
    })
}

fn register_metrics(
    metrics: &Metrics,
    engine: &crate::schedule::engine::Engine,
    oracles: &crate::oracle::Oracles,
    max_held_bytes_total: usize,
) {
    let oracle_metrics: [Box<dyn prometheus::core::Collector>; 4] = [
        Box::new(oracles.violations_gauge.clone()),
        Box::new(oracles.dropped_counter.clone()),
        Box::new(oracles.exits_counter.clone()),
        Box::new(oracles.backoff_gauge.clone()),
    ];
    for c in engine
        .metrics
        .collectors()
        .into_iter()
        .chain(oracle_metrics)
    {
        let _ = metrics.registry.register(c);
    }
    metrics.held_bytes_limit.set(max_held_bytes_total as i64);
}

/// What gated watch streams and view reads share: the windows, the views, the budget
/// of held bytes.
fn gates(
    o: &Options,
    engine: &Arc<crate::schedule::engine::Engine>,
    metrics: &Arc<Metrics>,
    trace: &crate::trace::Trace,
) -> Arc<crate::proxy::gated::Gates> {
    let views = Arc::new(crate::watch::view::Views::with_mode(
        o.max_view_bytes,
        o.views,
    ));
    views.keep_history_for({
        let engine = engine.clone();
        move |resource| engine.may_rewind(resource)
    });
    Arc::new(crate::proxy::gated::Gates {
        engine: engine.clone(),
        metrics: metrics.clone(),
        views,
        trace: trace.clone(),
        budget: crate::watch::gate::HeldBudget::new(o.max_held_bytes_total),
        max_held_bytes: o.max_held_bytes,
    })
}

/// The request handler's shared state; starts discovering the upstream's resources (the
/// metrics' `resource` label is bounded by them).
fn proxy(
    o: &Options,
    upstream: &Upstream,
    metrics: &Arc<Metrics>,
    gates: &Arc<crate::proxy::gated::Gates>,
    oracles: &Arc<crate::oracle::Oracles>,
    clients: &Arc<crate::proxy::identity::Clients>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Arc<crate::proxy::Proxy> {
    let known = Arc::new(crate::upstream::discovery::KnownResources::new(
        upstream.kube_client().ok(),
    ));
    tokio::spawn({
        let known = known.clone();
        async move { known.discover().await }
    });
    Arc::new(crate::proxy::Proxy {
        upstream: upstream.clone(),
        metrics: metrics.clone(),
        header_timeout: o.upstream_timeout,
        shutdown,
        gates: gates.clone(),
        oracles: oracles.clone(),
        ungated_seen: Default::default(),
        known,
        clients: clients.clone(),
        activity: Default::default(),
    })
}

/// The oracles' own watches of the upstream, for what they judge.
fn ground_truth(
    upstream: &Upstream,
    oracles: &Arc<crate::oracle::Oracles>,
) -> Result<Vec<tokio::task::JoinHandle<()>>> {
    let watched = oracles.config.watched_resources();
    if watched.is_empty() {
        return Ok(vec![]);
    }
    Ok(crate::oracle::truth::spawn(
        upstream.kube_client()?,
        watched,
        oracles.clone(),
    ))
}

/// The admin listener (metrics, probes, control API) until the proxy stops.
fn serve_admin(
    listener: tokio::net::TcpListener,
    admin: admin::Admin,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(admin::serve(listener, Arc::new(admin), async move {
        let _ = stop.wait_for(|s| *s).await;
    }))
}

/// The serving threads of the main listener, one each for the named ones, all behind
/// `network` (the links `partition` windows cut).
fn serve(
    o: &Options,
    tls: Arc<rustls::ServerConfig>,
    main: tokio::net::TcpListener,
    extra: Vec<tokio::net::TcpListener>,
    proxy: Arc<crate::proxy::Proxy>,
    network: Arc<crate::listen::network::Network>,
    stop_rx: tokio::sync::watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>> {
    // Boxed: hyper keeps a stream's task — sized for the handler's future — for as long
    // as the stream lives, so an open watch would carry the whole (finished) handler
    // future; boxed, it carries a pointer and the future is freed when it completes.
    let handler = move |req, peer| Box::pin(crate::proxy::handle(proxy.clone(), req, peer));
    let (kill_tx, kill_rx) = tokio::sync::watch::channel(0u64);
    let scheduling = o.scheduling;
    for l in std::iter::once(&main).chain(&extra) {
        if let Ok(a) = l.local_addr() {
            network.listening(a);
        }
    }
    let mut others = Vec::new();
    for l in extra {
        others.push(
            crate::listen::serve_on_threads(
                1,
                l,
                tls.clone(),
                handler.clone(),
                stop_rx.clone(),
                o.drain_timeout,
                kill_rx.clone(),
                Some(network.clone()),
                move |_| scheduling.enter(),
            )
            .context("starting a named listener's serving thread")?,
        );
    }
    let serving = crate::listen::serve_on_threads(
        o.threads,
        main,
        tls,
        handler,
        stop_rx,
        o.drain_timeout,
        kill_rx,
        Some(network),
        // Serving thread i sends its requests over upstream lane i + 1.
        move |i| {
            scheduling.enter();
            crate::upstream::use_lane(i + 1)
        },
    )
    .context("starting the serving threads")?;
    Ok(tokio::spawn(async move {
        futures_util::future::join(serving, futures_util::future::join_all(others)).await;
        drop(kill_tx);
    }))
}

/// Write the report files asked for.
pub fn write_reports(
    report: &crate::report::Report,
    json: Option<&Path>,
    html: Option<&Path>,
) -> Result<()> {
    if let Some(p) = json {
        let text = serde_json::to_string_pretty(report)?;
        std::fs::write(p, text + "\n").with_context(|| format!("--report-json {}", p.display()))?;
    }
    if let Some(p) = html {
        std::fs::write(p, crate::report::html::render(report))
            .with_context(|| format!("--report-html {}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Local;

    /// A kube-rs client of the proxy with a token of its own (passed through upstream).
    fn client_of(running: &Running, token: String) -> kube::Client {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let ca = running.ca.as_deref().expect("the proxy's CA");
        let mut cfg = kube::Config::new(running.url.parse().expect("proxy URL"));
        cfg.root_cert = Some(
            CertificateDer::pem_slice_iter(ca.as_bytes())
                .map(|c| c.expect("PEM").to_vec())
                .collect(),
        );
        cfg.auth_info.token = Some(token.into());
        kube::Client::try_from(cfg).expect("client")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_reuse_upstream_connections_and_outlive_an_apiserver_restart() {
        let dir = tempfile::tempdir().unwrap();
        let local = Local::start(dir.path(), crate::sim::SimConfig::default())
            .await
            .unwrap();
        let certs = crate::k8s::certs::generate("stalemate-test", &[]).unwrap();
        let mut o = Options::loopback(
            &certs,
            crate::upstream::Source::kubeconfig_file(local.kubeconfig.clone()),
            crate::schedule::Schedule::default(),
            None,
        );
        o.threads = 1;
        let running = start(o).await.unwrap();
        let client = client_of(&running, local.sim.token_for("admin"));
        for _ in 0..5 {
            client.apiserver_version().await.unwrap();
        }
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(client.clone());
        namespaces.list(&Default::default()).await.unwrap();
        let opened = running.upstream.connections_opened();
        assert_eq!(opened, 1, "one request at a time: one upstream connection");

        // The apiserver restarts: its connections are gone; the next request is answered
        // on a new one (a dead connection is seen at checkout, or gives the request back
        // unsent), not failed.
        local.sim.restart(Duration::ZERO);
        tokio::time::sleep(Duration::from_millis(200)).await;
        client.apiserver_version().await.unwrap();
        assert_eq!(running.upstream.connections_opened(), opened + 1);

        running.stop().await;
        local.stop().await;
    }
}
