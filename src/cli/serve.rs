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
service-account token); a request without one gets the upstream kubeconfig's credentials.
Whoever can reach the listener acts with those credentials: keep it on loopback.")]
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

    /// On SIGINT/SIGTERM, how long open requests and watches may take to finish.
    #[arg(long, default_value = "10s", value_parser = super::parse_duration, value_name = "DURATION")]
    pub drain_timeout: Duration,
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

pub async fn run(args: ServeArgs) -> Result<()> {
    if args.insecure_skip_upstream_verify {
        tracing::warn!(
            "--insecure-skip-upstream-verify: the upstream's certificate is NOT verified; anyone on the path can read and alter the traffic, credentials included"
        );
    }
    let schedule = match &args.schedule {
        Some(path) => super::check::load(path)?,
        None => crate::schedule::Schedule::default(),
    };
    let engine = crate::schedule::engine::Engine::new(&schedule);
    let upstream = Upstream::connect(
        &source(&args)?,
        &TransportOptions {
            insecure_skip_verify: args.insecure_skip_upstream_verify,
            connect_timeout: Duration::from_secs(10),
        },
    )
    .await?;
    let (cert, key, ca) = serving_tls(&args)?;
    let tls = crate::listen::tls::server_config(&cert, &key, "the serving certificate")?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("--listen {}: cannot bind", args.listen))?;
    let addr = listener.local_addr()?;
    let admin_listener = tokio::net::TcpListener::bind(args.admin_listen)
        .await
        .with_context(|| format!("--admin-listen {}: cannot bind", args.admin_listen))?;
    let admin_addr = admin_listener.local_addr()?;
    let url = super::sim::server_url(addr);
    if let Some(out) = &args.kubeconfig_out {
        let Some(ca) = &ca else {
            bail!(
                "--kubeconfig-out needs the CA of the serving certificate: use --tls-dir, or `stalemate kubeconfig --ca`"
            )
        };
        write_client_kubeconfig(out, &url, ca)?;
    }
    let metrics = Arc::new(crate::metrics::Metrics::new());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (trace, trace_task) = match &args.trace {
        Some(path) => {
            let (t, task) = crate::trace::Trace::to_file(path)
                .await
                .with_context(|| format!("--trace {}", path.display()))?;
            (t, Some(task))
        }
        None => (crate::trace::Trace::off(), None),
    };
    engine.set_trace(trace.clone());
    let gates = Arc::new(crate::watch::stream::Gates {
        engine: engine.clone(),
        metrics: metrics.clone(),
        views: Arc::new(crate::watch::view::Views::new(args.max_view_bytes)),
        trace,
        budget: crate::watch::gate::HeldBudget::new(args.max_held_bytes_total),
        max_held_bytes: args.max_held_bytes,
    });
    let proxy = Arc::new(crate::proxy::Proxy {
        upstream: upstream.clone(),
        metrics: metrics.clone(),
        header_timeout: args.upstream_timeout,
        shutdown: stop_rx.clone(),
        gates: gates.clone(),
    });
    let _ = metrics
        .registry
        .register(Box::new(engine.opened_total.clone()));
    let _ = metrics
        .registry
        .register(Box::new(engine.window_active.clone()));
    engine.start(&schedule);
    let admin = Arc::new(crate::admin::Admin {
        metrics,
        upstream: upstream.clone(),
        gates,
        token: args.admin_token.clone(),
    });
    drop(engine);
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{url}");
        let _ = writeln!(out, "admin http://{admin_addr}");
        let _ = out.flush();
    }
    tracing::info!(%url, upstream = %upstream.base, admin = %admin_addr, upstream_credentials = upstream.has_credentials, "proxy serving");
    let admin_task = tokio::spawn(crate::admin::serve(admin_listener, admin, {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    }));
    let handler = move |req, peer| crate::proxy::handle(proxy.clone(), req, peer);
    let (_kill_tx, kill_rx) = tokio::sync::watch::channel(0u64);
    let stop = stop_tx.clone();
    let shutdown = async move {
        super::shutdown_signal().await;
        // Watches end cleanly first; then the listener drains what is left.
        let _ = stop.send(true);
    };
    crate::listen::serve(
        listener,
        tls,
        handler,
        shutdown,
        args.drain_timeout,
        kill_rx,
    )
    .await;
    let _ = stop_tx.send(true);
    let _ = admin_task.await;
    if let Some(w) = trace_task {
        w.finish().await;
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
            namespace: None,
        },
    )
    .with_context(|| format!("--kubeconfig-out {}", out.display()))
}
