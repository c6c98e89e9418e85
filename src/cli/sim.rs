//! `stalemate sim`: serve the in-memory API simulator.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use crate::sim::HistoryLimits;
use crate::sim::{Sim, SimConfig};

#[derive(Debug, Args)]
#[command(after_help = "\
The first line on standard output is the server URL (useful with --listen 127.0.0.1:0).

Misbehaviour for reliability tests, on the same port (no credentials needed):
  GET  /_sim/state                         resourceVersion, compaction point, counts
  POST /_sim/compact                       drop all watch history (resumes get 410 Expired)
  POST /_sim/close-watches?mode=clean      end every watch (mode=abrupt: reset them)
  POST /_sim/pause?for=2s                  hold every request and watch event
  POST /_sim/restart?down=1s               drop all connections, stop listening, come back

Authentication as kube-apiserver: client certificates signed by the simulator's CA, then
bearer tokens it signed (its kubeconfig's; TokenRequest, `kubectl create token`); any other
credential is 401. No credentials: system:anonymous.

Not simulated: authorization, schema validation of custom resources, protobuf serving,
field-ownership conflicts of server-side apply (apply is merged), controllers other than
namespace lifecycle and the default service account / kube-root-ca.crt publishers.")]
pub struct SimArgs {
    /// Address to serve HTTPS on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:6443", value_name = "ADDR:PORT")]
    pub listen: SocketAddr,

    /// Write a kubeconfig for the simulator here (server, CA, and admin credentials).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<PathBuf>,

    /// How the --kubeconfig-out user authenticates: `token` (a bearer token the
    /// simulator signed) or `cert` (a client certificate signed by its CA, CN
    /// stalemate-sim:admin, O system:masters — what kind and kubeadm write).
    #[arg(long, value_enum, default_value_t = crate::sim::KubeconfigAuth::Token, value_name = "HOW")]
    pub kubeconfig_auth: crate::sim::KubeconfigAuth,

    /// Also write the generated CA and serving certificate (ca.crt, tls.crt, tls.key) here.
    #[arg(long, value_name = "DIR")]
    pub tls_dir: Option<PathBuf>,

    /// Kubernetes version to report in /version, as 1.MINOR (kubectl's version dispatcher
    /// picks its client by it). The default is the version whose built-in resources and
    /// defaults the simulator serves; an older minor changes only what it reports.
    #[arg(long, default_value = crate::sim::DEFAULT_KUBE_VERSION, value_parser = parse_kube_version, value_name = "1.MINOR")]
    pub kube_version: u32,

    /// Watch history kept for resuming watches, in events.
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub history_size: usize,

    /// Watch history kept for resuming watches, in time.
    #[arg(long, default_value = "5m", value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub history_age: Duration,

    /// Interval of periodic BOOKMARK events on watches with allowWatchBookmarks=true.
    #[arg(long, default_value = "60s", value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub bookmark_interval: Duration,

    /// Misbehave: encode every watch response (`gzip` or `deflate`) even for clients
    /// that did not ask — an upstream that ignores Accept-Encoding, or sits behind a
    /// compressing gateway. Each event is flushed as its own compressed block.
    #[arg(long, value_enum, value_name = "ENCODING")]
    pub encode_watches: Option<crate::sim::WatchEncoding>,

    /// Largest request body accepted; bigger ones get 413.
    #[arg(long, default_value_t = 3 * 1024 * 1024, value_name = "BYTES")]
    pub max_body_bytes: usize,
}

fn parse_kube_version(s: &str) -> Result<u32, String> {
    let minor = s
        .trim_start_matches('v')
        .strip_prefix("1.")
        .and_then(|m| m.split('.').next())
        .and_then(|m| m.parse::<u32>().ok())
        .ok_or_else(|| format!("{s:?} is not a Kubernetes version like 1.31"))?;
    if !(20..=40).contains(&minor) {
        return Err(format!(
            "1.{minor} is outside the versions kubectl clients speak (1.20–1.40)"
        ));
    }
    Ok(minor)
}

pub async fn run(args: SimArgs) -> Result<()> {
    let certs = crate::k8s::certs::generate("stalemate-sim", &[])?;
    if let Some(dir) = &args.tls_dir {
        certs.write_to(dir)?;
    }
    let cfg = SimConfig {
        kube_minor: args.kube_version,
        history: HistoryLimits {
            max_events: args.history_size,
            max_age: args.history_age,
        },
        bookmark_interval: args.bookmark_interval,
        max_body_bytes: args.max_body_bytes,
        encode_watches: args.encode_watches,
        ..SimConfig::default()
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("--listen {}: cannot bind", args.listen))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let url = crate::listen::https_url(addr);
    let sim = Sim::new(cfg, certs);
    if let Some(path) = &args.kubeconfig_out {
        crate::sim::write_kubeconfig(path, &sim, &url, args.kubeconfig_auth)
            .with_context(|| format!("--kubeconfig-out {}", path.display()))?;
    }
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{url}");
        let _ = out.flush();
    }
    tracing::info!(%url, kube_version = %format!("1.{}", args.kube_version), "simulator serving");
    crate::sim::serve(sim, listener, crate::process::shutdown_signal()).await
}
