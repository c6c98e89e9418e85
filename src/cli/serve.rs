//! `stalemate serve`: the TLS-terminating proxy in front of a kube-apiserver.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::upstream_args::UpstreamArgs;
use crate::k8s::certs;
use crate::upstream::Source;

#[derive(Debug, Args)]
#[command(
    // A kubeconfig is one of three ways to the upstream: --in-cluster and --upstream
    // are the others.
    mut_arg("upstream_kubeconfig", |a| a
        .help("Upstream kubeconfig file")
        .conflicts_with_all(["in_cluster", "upstream"])),
    mut_arg("context", |a| a.conflicts_with_all(["in_cluster", "upstream"])),
    after_help = "\
Upstream: --upstream-kubeconfig FILE [--context NAME], --in-cluster, or --upstream URL
--upstream-ca FILE; with none of them, the usual kubeconfig lookup ($KUBECONFIG, then
~/.kube/config). Upstream TLS is always verified unless --insecure-skip-upstream-verify.

Credentials: a request carrying Authorization is forwarded with it unchanged (a pod's own
service-account token), over upstream connections that present no client certificate, so
the client stays who it is; a request without one gets the upstream kubeconfig's
credentials (certificate, token or exec plugin). Whoever can reach the listener acts with
those credentials: keep it on loopback."
)]
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

    /// Directory holding ca.crt/tls.crt/tls.key; generated on first start when empty
    /// (written once the proxy runs: a start that fails leaves nothing there).
    /// Default: $XDG_STATE_HOME/stalemate/tls (or ~/.local/state/stalemate/tls).
    #[arg(long, value_name = "DIR", conflicts_with = "tls_cert")]
    pub tls_dir: Option<PathBuf>,

    /// Extra subject alternative names when generating the serving certificate.
    #[arg(long = "san", value_name = "NAME")]
    pub sans: Vec<String>,

    #[command(flatten)]
    pub kubeconfig: UpstreamArgs,

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
    #[arg(long, default_value = "70s", value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub upstream_timeout: Duration,

    /// Schedule file (JSON): clients, windows and oracles. Windows can also be opened at
    /// run time over the control API (POST /v1/windows on the admin listener). A schedule
    /// that does not load stops `serve`, except with --in-cluster: a sidecar then serves
    /// with no faults and no oracles, logs the errors, and records a Warning event
    /// (reason ScheduleRejected) on its pod, so that the controller behind it keeps its API.
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<PathBuf>,

    /// Bytes of held events allowed per watch stream; past it the stream ends with
    /// ERROR 410 so the client relists (nothing is silently lost).
    #[arg(long, default_value = "64MiB", value_parser = super::values::parse_bytes, value_name = "SIZE")]
    pub max_held_bytes: usize,

    /// Bytes of held events allowed across all watch streams; a stream whose event would
    /// pass it ends with ERROR 410, like the per-stream cap.
    #[arg(long, default_value = "512MiB", value_parser = super::values::parse_bytes, value_name = "SIZE")]
    pub max_held_bytes_total: usize,

    /// Bytes of client views (the objects each client has been shown, kept to answer
    /// resourceVersion=0 reads during windows). A view past it is dropped and its reads
    /// go upstream. 0 turns views off.
    #[arg(long, default_value = "256MiB", value_parser = super::values::parse_bytes, value_name = "SIZE")]
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
    #[arg(long, default_value = "10s", value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub drain_timeout: Duration,

    /// Serving threads, each with its own event loop and upstream connection pool. A new
    /// connection goes to the first thread that is not busy three quarters of the time
    /// (else to the one with the fewest connections) and stays there with its requests:
    /// a light load runs on one thread. Default: one per CPU this process may use.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,

    /// How the kernel schedules the serving threads. batch: SCHED_BATCH (Linux): a
    /// serving thread woken by a packet does not preempt what runs on its core (the
    /// apiserver, the controller under test, a load generator); it runs at once on an idle
    /// core, else when that task sleeps or its slice ends, and then handles everything that
    /// arrived meanwhile. The CPU share is the same, the wake-ups far fewer: on 2 busy
    /// cores in front of a real kube-apiserver, 16-40% less proxy CPU per request, and the
    /// apiserver preempted ~4 times per 500-object LIST instead of ~30. The price, under
    /// full load only: a wake-up may wait up to one scheduler slice (a few ms), and fan-out
    /// to 10,000 watches delivered ~13% fewer events per second. normal: the kernel's
    /// default (SCHED_OTHER), as nginx runs. A stalemate started under a policy of your
    /// own (chrt) keeps it; the processes stalemate starts run under the default either
    /// way.
    #[arg(long, value_enum, default_value_t, value_name = "POLICY")]
    pub scheduling: crate::listen::sched::Scheduling,
}

fn default_tls_dir() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("stalemate").join("tls")
}

/// The serving certificate and key, and the CA clients should trust.
struct ServingTls {
    cert: Vec<u8>,
    key: Vec<u8>,
    ca: Option<String>,
    /// Generated on this start, to be written into `--tls-dir` once the proxy runs: a
    /// start that fails on its other flags leaves no new CA behind.
    generated: Option<(certs::CertBundle, PathBuf)>,
}

/// Load the serving certificate and the CA clients should trust: from files, or from a
/// directory (generated for it on first start).
fn serving_tls(args: &ServeArgs) -> Result<ServingTls> {
    if let (Some(c), Some(k)) = (&args.tls_cert, &args.tls_key) {
        let cert = std::fs::read(c).with_context(|| format!("--tls-cert {}", c.display()))?;
        let key = std::fs::read(k).with_context(|| format!("--tls-key {}", k.display()))?;
        return Ok(ServingTls {
            cert,
            key,
            ca: None,
            generated: None,
        });
    }
    let dir = args.tls_dir.clone().unwrap_or_else(default_tls_dir);
    let path = |f: &str| dir.join(f);
    if !path(certs::CERT_FILE).exists() {
        let b = certs::generate("stalemate", &args.sans)?;
        return Ok(ServingTls {
            cert: b.cert_pem.clone().into_bytes(),
            key: b.key_pem.clone().into_bytes(),
            ca: Some(b.ca_cert_pem.clone()),
            generated: Some((b, dir)),
        });
    }
    let read = |f: &str| -> Result<Vec<u8>> {
        let p = path(f);
        std::fs::read(&p).with_context(|| format!("--tls-dir: reading {}", p.display()))
    };
    Ok(ServingTls {
        ca: String::from_utf8(read(certs::CA_CERT_FILE)?).ok(),
        cert: read(certs::CERT_FILE)?,
        key: read(certs::KEY_FILE)?,
        generated: None,
    })
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
            path: args.kubeconfig.upstream_kubeconfig.clone(),
            context: args.kubeconfig.context.clone(),
        }
    })
}

pub async fn run(args: ServeArgs) -> Result<()> {
    let (schedule, rejected) = load_schedule(&args)?;
    let tls = serving_tls(&args)?;
    let running = crate::server::start(crate::server::Options {
        listen: args.listen,
        admin_listen: args.admin_listen,
        cert: tls.cert,
        key: tls.key,
        ca: tls.ca,
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
        threads: args
            .threads
            .map_or_else(crate::server::default_threads, usize::from),
        scheduling: args.scheduling,
        process: crate::schedule::engine::ProcessSlot::none(),
        listen_name: None,
        named_listeners: Vec::new(),
        trace_sink: None,
    })
    .await?;
    if let Some(message) = rejected {
        record_rejection(&running, message);
    }
    if let Some((bundle, dir)) = &tls.generated {
        if let Err(e) = bundle.write_to(dir) {
            running.stop().await;
            return Err(e.context(format!("--tls-dir {}", dir.display())));
        }
        tracing::info!(dir = %dir.display(), "generated a CA and serving certificate");
    }
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
    crate::process::shutdown_signal().await;
    let judged = running.oracles.config != crate::oracle::OracleConfig::default();
    let report = running.stop().await;
    crate::server::write_reports(
        &report,
        args.report_json.as_deref(),
        args.report_html.as_deref(),
    )?;
    if judged {
        eprint!("{}", report.terminal());
    }
    Ok(())
}

/// The schedule to serve, and why it was refused if it was: in a pod (`--in-cluster`) a
/// schedule that does not load is logged and recorded as an event, and the proxy serves
/// with no faults rather than crash-looping the controller's pod; anywhere else it is an
/// error.
fn load_schedule(args: &ServeArgs) -> Result<(crate::schedule::Schedule, Option<String>)> {
    let Some(path) = &args.schedule else {
        return Ok((crate::schedule::Schedule::default(), None));
    };
    match super::check::load(path) {
        Ok(schedule) => Ok((schedule, None)),
        Err(e) if args.in_cluster => {
            let message = format!("{e:#}");
            tracing::error!(error = %message, "the schedule did not load: serving with no faults and no oracles");
            Ok((crate::schedule::Schedule::default(), Some(message)))
        }
        Err(e) => Err(e),
    }
}

/// Record a refused schedule as an event on this pod, where `kubectl describe` shows it.
fn record_rejection(running: &crate::server::Running, message: String) {
    match (
        super::schedule_rejected::ThisPod::from_env(),
        running.upstream.kube_client(),
    ) {
        (Some(pod), Ok(client)) => {
            tokio::spawn(super::schedule_rejected::record(client, pod, message));
        }
        (None, _) => tracing::warn!(
            "no event recorded: {} and {} are not set (stalemate inject sets them)",
            super::schedule_rejected::POD_NAME_ENV,
            super::schedule_rejected::POD_NAMESPACE_ENV
        ),
        (_, Err(e)) => tracing::warn!(error = %format!("{e:#}"), "no event recorded"),
    }
}

fn write_client_kubeconfig(out: &Path, url: &str, ca: &str) -> Result<()> {
    crate::k8s::kubeconfig::write(
        out,
        &crate::k8s::kubeconfig::KubeconfigSpec {
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
