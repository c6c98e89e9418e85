//! `stalemate run --schedule FILE -- CMD ARGS...`: the local workflow. A proxy on
//! loopback in front of the current kubeconfig's cluster, CMD (a controller) run with
//! `KUBECONFIG` pointing at it, the schedule applied, and the oracles' verdict at the end.
//!
//! Exit status: 0 no violation, 1 a violation, 2 stalemate or CMD failed (said which) or
//! the run ended before the oracles could judge.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "\
Example:
  stalemate run --schedule config/flux-f1.json --duration 2m --report-html report.html -- ./bin/manager

CMD gets KUBECONFIG pointing at the proxy (KUBERNETES_SERVICE_HOST/PORT removed, so an
in-cluster config is not picked up) and the proxy reaches the cluster with your
kubeconfig's credentials. SIGINT/SIGTERM are forwarded to CMD. The run ends at --duration
or when CMD exits; then the report is printed.")]
pub struct RunArgs {
    /// Schedule file (JSON): clients, windows and oracles.
    #[arg(long, value_name = "FILE")]
    pub schedule: PathBuf,

    /// End the run after this long (CMD gets SIGTERM). Default: when CMD exits.
    #[arg(long, value_parser = super::parse_duration, value_name = "DURATION")]
    pub duration: Option<Duration>,

    /// Upstream kubeconfig (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub upstream_kubeconfig: Option<PathBuf>,

    /// Context of the upstream kubeconfig (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// Address of the admin listener (metrics, control API).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR:PORT")]
    pub admin_listen: std::net::SocketAddr,

    /// Write a JSON-lines trace here.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Write the report as JSON here.
    #[arg(long, value_name = "FILE")]
    pub report_json: Option<PathBuf>,

    /// Write the report as a self-contained HTML timeline here.
    #[arg(long, value_name = "FILE")]
    pub report_html: Option<PathBuf>,

    /// The controller to run, and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) with a pid we spawned and a valid signal number; no memory is
        // shared with the callee.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

pub async fn run(args: RunArgs) -> Result<ExitCode> {
    let schedule = super::check::load(&args.schedule)?;
    let dir = std::env::temp_dir().join(format!("stalemate-run-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let r = run_in(&args, schedule, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    r
}

async fn run_in(
    args: &RunArgs,
    schedule: crate::schedule::Schedule,
    dir: &std::path::Path,
) -> Result<ExitCode> {
    let certs = crate::certs::generate("stalemate", &[])?;
    let running = crate::server::start(crate::server::Options {
        admin_listen: args.admin_listen,
        ..crate::server::Options::loopback(
            &certs,
            crate::upstream::Source::Kubeconfig {
                path: args.upstream_kubeconfig.clone(),
                context: args.context.clone(),
            },
            schedule,
            args.trace.clone(),
        )
    })
    .await?;
    let kubeconfig = dir.join("kubeconfig");
    crate::kubeconfig::write(
        &kubeconfig,
        &crate::kubeconfig::KubeconfigSpec {
            name: "stalemate",
            server: &running.url,
            ca_pem: &certs.ca_cert_pem,
            token: Some(crate::proxy::UPSTREAM_CREDENTIALS_TOKEN),
            client_cert: None,
            namespace: None,
        },
    )?;
    eprintln!(
        "stalemate: proxy {} (admin http://{}) in front of {}; running {:?}",
        running.url, running.admin, running.upstream.base, args.cmd
    );
    let Some((program, rest)) = args.cmd.split_first() else {
        bail!("nothing to run: give the controller after --")
    };
    let mut child = match tokio::process::Command::new(program)
        .args(rest)
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            let _ = running.stop().await;
            eprintln!("stalemate: cannot start {program:?}: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let pid = child.id().unwrap_or(0);
    let deadline = async {
        match args.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let mut cmd_failed: Option<String> = None;
    let mut stopped_by_us = false;
    tokio::select! {
        st = child.wait() => {
            match st {
                Ok(s) if s.success() => {}
                Ok(s) => cmd_failed = Some(format!("{program:?} exited with {s}")),
                Err(e) => cmd_failed = Some(format!("waiting for {program:?}: {e}")),
            }
        }
        _ = deadline => { stopped_by_us = true; }
        _ = super::shutdown_signal() => { stopped_by_us = true; }
    }
    if stopped_by_us {
        signal(pid, libc::SIGTERM);
        if tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
    let report = running.stop().await;
    crate::server::write_reports(
        &report,
        args.report_json.as_deref(),
        args.report_html.as_deref(),
    )?;
    print!("{}", report.terminal());
    if let Some(why) = cmd_failed {
        eprintln!("stalemate: the controller failed: {why}");
        return Ok(ExitCode::from(2));
    }
    Ok(match report.verdict.as_str() {
        "pass" => ExitCode::SUCCESS,
        "fail" => ExitCode::from(1),
        _ => {
            eprintln!(
                "stalemate: the run ended before the oracles could judge ({}); give a longer --duration",
                report.verdicts.pending.as_deref().unwrap_or("too early")
            );
            ExitCode::from(2)
        }
    })
}
