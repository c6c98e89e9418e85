//! `stalemate serve`: the TLS-terminating proxy in front of a kube-apiserver.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::certs;
use crate::upstream::{Source, TransportOptions, Upstream};

#[derive(Debug, Args)]
#[command(after_help = "\
Upstream: --upstream-kubeconfig FILE [--context NAME], --in-cluster, or --upstream URL
--upstream-ca FILE; with none of them, the usual kubeconfig lookup ($KUBECONFIG, then
~/.kube/config). Upstream TLS is always verified unless --insecure-skip-upstream-verify.

Credentials: a request carrying Authorization is forwarded with it unchanged (a pod's own
service-account token), over upstream connections that present no client certificate, so
the client stays who it is; a request without one gets the upstream kubeconfig's
credentials (certificate, token or exec plugin). Whoever can reach the listener acts with
those credentials: keep it on loopback.")]
pub struct ServeArgs {
    /// Address to serve HTTPS on.
    #[arg(long, default_value = "127.0.0.1:7443", value_name = "ADDR:PORT")]
    pub listen: SocketAddr,

    /// Serving certificate (PEM, leaf first). Requires --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// Private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Directory holding ca.crt/tls.crt/tls.key; generated on first start when empty.
    /// Default: $XDG_STATE_HOME/stalemate/tls (or ~/.local/state/stalemate/tls).
    #[arg(long, value_name = "DIR", conflicts_with = "tls_cert")]
    pub tls_dir: Option<PathBuf>,

    /// Extra subject alternative names when generating the serving certificate.
    #[arg(long = "san", value_name = "NAME")]
    pub sans: Vec<String>,

    /// Upstream kubeconfig file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["in_cluster", "upstream"])]
    pub upstream_kubeconfig: Option<PathBuf>,

    /// Context of the upstream kubeconfig (default: its current context).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["in_cluster", "upstream"])]
    pub context: Option<String>,

    /// Use the pod's service account to reach the apiserver (sidecar mode).
    #[arg(long, conflicts_with = "upstream")]
    pub in_cluster: bool,

    /// Upstream apiserver URL (https). Requires --upstream-ca.
    #[arg(long, value_name = "URL", requires = "upstream_ca")]
    pub upstream: Option<String>,

    /// CA bundle (PEM) that signs the --upstream apiserver's certificate.
    #[arg(long, value_name = "FILE", requires = "upstream")]
    pub upstream_ca: Option<PathBuf>,

    /// Do not verify the upstream's certificate. Anyone on the path can then read and
    /// change the traffic, including credentials.
    #[arg(long)]
    pub insecure_skip_upstream_verify: bool,

    /// Address of the admin listener (/metrics, /healthz, /readyz).
    #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR:PORT")]
    pub admin_listen: SocketAddr,

    /// Write a kubeconfig for clients of this proxy here at start.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<PathBuf>,

    /// Time allowed for the upstream's response headers.
    #[arg(long, default_value = "70s", value_parser = super::parse_duration, value_name = "DURATION")]
    pub upstream_timeout: Duration,

    /// Schedule file (JSON): clients, windows and oracles. Windows can also be opened at
    /// run time over the control API (POST /v1/windows on the admin listener).
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<PathBuf>,

    /// Bytes of held events allowed per watch stream; past it the stream ends with
    /// ERROR 410 so the client relists (nothing is silently lost).
    #[arg(long, default_value = "64MiB", value_parser = super::parse_bytes, value_name = "SIZE")]
    pub max_held_bytes: usize,

    /// Bytes of held events allowed across all watch streams; a stream whose event would
    /// pass it ends with ERROR 410, like the per-stream cap.
    #[arg(long, default_value = "512MiB", value_parser = super::parse_bytes, value_name = "SIZE")]
    pub max_held_bytes_total: usize,

    /// Bytes of client views (the objects each client has been shown, kept to answer
    /// resourceVersion=0 reads during windows). A view past it is dropped and its reads
    /// go upstream. 0 turns views off.
    #[arg(long, default_value = "256MiB", value_parser = super::parse_bytes, value_name = "SIZE")]
    pub max_view_bytes: usize,

    /// Which client views to keep: `named` — of the resources a staleness window names,
    /// in the schedule or at run time (such a view starts at the client's next LIST);
    /// `all` — of everything every client lists or watches (one copy of each client's
    /// informer cache); `off`.
    #[arg(long, value_enum, default_value_t = crate::watch::view::ViewsMode::Named, value_name = "WHICH")]
    pub views: crate::watch::view::ViewsMode,

    /// Write a JSON-lines trace here: every request, every watch event's fate, every
    /// window opening and closing. Names only: no object contents, no tokens.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Require `Authorization: Bearer TOKEN` on the admin listener's control API
    /// (/v1/...). /metrics, /healthz and /readyz stay open. Also read from
    /// $STALEMATE_ADMIN_TOKEN.
    #[arg(
        long,
        env = "STALEMATE_ADMIN_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,

    /// Write the oracles' report as JSON here when the proxy stops.
    #[arg(long, value_name = "FILE")]
    pub report_json: Option<PathBuf>,

    /// Write the oracles' report as a self-contained HTML timeline here when it stops.
    #[arg(long, value_name = "FILE")]
    pub report_html: Option<PathBuf>,

    /// On SIGINT/SIGTERM, how long open requests and watches may take to finish.
    #[arg(long, default_value = "10s", value_parser = super::parse_duration, value_name = "DURATION")]
    pub drain_timeout: Duration,

    /// Serving threads, each with its own event loop and upstream connection pool. A new
    /// connection goes to the thread with the fewest and stays there with its requests.
    /// Default: one per CPU this process may use.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

/// One serving thread per CPU this process may use (cgroup quotas included).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn default_tls_dir() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("stalemate").join("tls")
}

/// Load the serving certificate and the CA clients should trust: from files, or from a
/// directory (generated there on first start).
fn serving_tls(args: &ServeArgs) -> Result<(Vec<u8>, Vec<u8>, Option<String>)> {
    if let (Some(c), Some(k)) = (&args.tls_cert, &args.tls_key) {
        let cert = std::fs::read(c).with_context(|| format!("--tls-cert {}", c.display()))?;
        let key = std::fs::read(k).with_context(|| format!("--tls-key {}", k.display()))?;
        return Ok((cert, key, None));
    }
    let dir = args.tls_dir.clone().unwrap_or_else(default_tls_dir);
    let path = |f: &str| dir.join(f);
    if !path(certs::CERT_FILE).exists() {
        let b = certs::generate("stalemate", &args.sans)?;
        b.write_to(&dir)
            .with_context(|| format!("--tls-dir {}", dir.display()))?;
        tracing::info!(dir = %dir.display(), "generated a CA and serving certificate");
    }
    let read = |f: &str| -> Result<Vec<u8>> {
        let p = path(f);
        std::fs::read(&p).with_context(|| format!("--tls-dir: reading {}", p.display()))
    };
    let ca = String::from_utf8(read(certs::CA_CERT_FILE)?).ok();
    Ok((read(certs::CERT_FILE)?, read(certs::KEY_FILE)?, ca))
}

fn source(args: &ServeArgs) -> Result<Source> {
    Ok(if args.in_cluster {
        Source::InCluster
    } else if let Some(url) = &args.upstream {
        let Some(ca) = args.upstream_ca.clone() else {
            bail!("--upstream needs --upstream-ca")
        };
        Source::Url {
            url: url.clone(),
            ca,
        }
    } else {
        Source::Kubeconfig {
            path: args.upstream_kubeconfig.clone(),
            context: args.context.clone(),
        }
    })
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
        }
    }
}

/// A running proxy: its addresses, its oracles, and how to stop it.
pub struct Running {
    pub url: String,
    pub admin: SocketAddr,
    pub ca: Option<String>,
    pub upstream: Upstream,
    pub oracles: Arc<crate::oracle::Oracles>,
    pub engine: Arc<crate::schedule::engine::Engine>,
    trace: crate::trace::Trace,
    trace_writer: Option<crate::trace::TraceWriter>,
    stop_tx: tokio::sync::watch::Sender<bool>,
    serve_task: tokio::task::JoinHandle<()>,
    admin_task: tokio::task::JoinHandle<()>,
    truth: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
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

/// Start a proxy in this process.
pub async fn start(o: Options) -> Result<Running> {
    if o.insecure_skip_upstream_verify {
        tracing::warn!(
            "--insecure-skip-upstream-verify: the upstream's certificate is NOT verified; anyone on the path can read and alter the traffic, credentials included"
        );
    }
    let schedule = o.schedule;
    let engine = crate::schedule::engine::Engine::new(&schedule);
    let upstream = Upstream::connect(
        &o.source,
        &TransportOptions {
            insecure_skip_verify: o.insecure_skip_upstream_verify,
            connect_timeout: Duration::from_secs(10),
            // One per serving thread, and one for the rest of the process.
            lanes: o.threads.max(1) + 1,
        },
    )
    .await?;
    let tls = crate::listen::tls::server_config(&o.cert, &o.key, "the serving certificate")?;
    let listener = tokio::net::TcpListener::bind(o.listen)
        .await
        .with_context(|| format!("--listen {}: cannot bind", o.listen))?;
    let addr = listener.local_addr()?;
    let admin_listener = tokio::net::TcpListener::bind(o.admin_listen)
        .await
        .with_context(|| format!("--admin-listen {}: cannot bind", o.admin_listen))?;
    let admin_addr = admin_listener.local_addr()?;
    let url = super::sim::server_url(addr);
    let metrics = Arc::new(crate::metrics::Metrics::new());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (trace, trace_writer) = match &o.trace {
        Some(path) => {
            let (t, w) = crate::trace::Trace::to_file(path)
                .await
                .with_context(|| format!("--trace {}", path.display()))?;
            (t, Some(w))
        }
        None => (crate::trace::Trace::off(), None),
    };
    engine.set_trace(trace.clone());
    let oracles = Arc::new(crate::oracle::Oracles::new(
        schedule.oracles.clone().unwrap_or_default(),
        std::time::SystemTime::now(),
    ));
    engine.set_oracles(oracles.clone());
    let gates = Arc::new(crate::watch::stream::Gates {
        engine: engine.clone(),
        metrics: metrics.clone(),
        views: Arc::new(crate::watch::view::Views::with_mode(
            o.max_view_bytes,
            o.views,
        )),
        trace: trace.clone(),
        budget: crate::watch::gate::HeldBudget::new(o.max_held_bytes_total),
        max_held_bytes: o.max_held_bytes,
    });
    let known = Arc::new(crate::upstream::discovery::KnownResources::new(
        upstream.kube_client().ok(),
    ));
    tokio::spawn({
        let known = known.clone();
        async move { known.discover().await }
    });
    let proxy = Arc::new(crate::proxy::Proxy {
        upstream: upstream.clone(),
        metrics: metrics.clone(),
        header_timeout: o.upstream_timeout,
        shutdown: stop_rx.clone(),
        gates: gates.clone(),
        oracles: oracles.clone(),
        ungated_seen: Default::default(),
        known: known.clone(),
    });
    for c in [
        Box::new(engine.opened_total.clone()) as Box<dyn prometheus::core::Collector>,
        Box::new(engine.window_active.clone()),
        Box::new(oracles.violations_gauge.clone()),
        Box::new(oracles.dropped_counter.clone()),
    ] {
        let _ = metrics.registry.register(c);
    }
    let watched = oracles.config.watched_resources();
    let truth = if watched.is_empty() {
        vec![]
    } else {
        crate::oracle::truth::spawn(upstream.kube_client()?, watched, oracles.clone())
    };
    engine.start(&schedule);
    let admin = Arc::new(crate::admin::Admin {
        metrics,
        upstream: upstream.clone(),
        gates,
        token: o.admin_token.clone(),
        oracles: oracles.clone(),
    });
    tracing::info!(%url, upstream = %upstream.base, admin = %admin_addr, upstream_credentials = upstream.has_credentials, "proxy serving");
    let admin_task = tokio::spawn(crate::admin::serve(admin_listener, admin, {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    }));
    let handler = move |req, peer| crate::proxy::handle(proxy.clone(), req, peer);
    let (kill_tx, kill_rx) = tokio::sync::watch::channel(0u64);
    let serving = crate::listen::serve_on_threads(
        o.threads,
        listener,
        tls,
        handler,
        stop_rx.clone(),
        o.drain_timeout,
        kill_rx,
        // Serving thread i sends its requests over upstream lane i + 1.
        |i| crate::upstream::use_lane(i + 1),
    )
    .context("starting the serving threads")?;
    let serve_task = tokio::spawn(async move {
        serving.await;
        drop(kill_tx);
    });
    Ok(Running {
        url,
        admin: admin_addr,
        ca: o.ca,
        upstream,
        oracles,
        engine,
        trace,
        trace_writer,
        stop_tx,
        serve_task,
        admin_task,
        truth,
    })
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

pub async fn run(args: ServeArgs) -> Result<()> {
    let schedule = match &args.schedule {
        Some(path) => super::check::load(path)?,
        None => crate::schedule::Schedule::default(),
    };
    let (cert, key, ca) = serving_tls(&args)?;
    let running = start(Options {
        listen: args.listen,
        admin_listen: args.admin_listen,
        cert,
        key,
        ca,
        source: source(&args)?,
        insecure_skip_upstream_verify: args.insecure_skip_upstream_verify,
        schedule,
        upstream_timeout: args.upstream_timeout,
        max_held_bytes: args.max_held_bytes,
        max_held_bytes_total: args.max_held_bytes_total,
        max_view_bytes: args.max_view_bytes,
        views: args.views,
        trace: args.trace.clone(),
        admin_token: args.admin_token.clone(),
        drain_timeout: args.drain_timeout,
        threads: args.threads.map_or_else(default_threads, usize::from),
    })
    .await?;
    if let Some(out) = &args.kubeconfig_out {
        let Some(ca) = &running.ca else {
            bail!(
                "--kubeconfig-out needs the CA of the serving certificate: use --tls-dir, or `stalemate kubeconfig --ca`"
            )
        };
        write_client_kubeconfig(out, &running.url, ca)?;
    }
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", running.url);
        let _ = writeln!(out, "admin http://{}", running.admin);
        let _ = out.flush();
    }
    super::shutdown_signal().await;
    let judged = running.oracles.config != crate::oracle::OracleConfig::default();
    let report = running.stop().await;
    write_reports(
        &report,
        args.report_json.as_deref(),
        args.report_html.as_deref(),
    )?;
    if judged {
        eprint!("{}", report.terminal());
    }
    Ok(())
}

fn write_client_kubeconfig(out: &Path, url: &str, ca: &str) -> Result<()> {
    crate::kubeconfig::write(
        out,
        &crate::kubeconfig::KubeconfigSpec {
            name: "stalemate",
            server: url,
            ca_pem: ca,
            token: Some(crate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
            client_cert: None,
            namespace: None,
        },
    )
    .with_context(|| format!("--kubeconfig-out {}", out.display()))
}
