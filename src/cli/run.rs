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
kubeconfig's credentials. SIGINT/SIGTERM are forwarded to CMD. `restart` windows kill CMD
(SIGKILL) and start it again with the same arguments and environment; those kills do not
end the run. The run ends at --duration or when CMD exits on its own; then the report is
printed, and the exit status is the oracles' verdict.")]
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
        controller_process: true,
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
    let controller = match crate::process::Controller::spawn(crate::process::Spec {
        program: program.clone(),
        args: rest.to_vec(),
        env: vec![("KUBECONFIG".into(), kubeconfig.clone().into_os_string())],
        env_remove: vec![
            "KUBERNETES_SERVICE_HOST".into(),
            "KUBERNETES_SERVICE_PORT".into(),
        ],
    }) {
        Ok(c) => c,
        Err(e) => {
            let _ = running.stop().await;
            eprintln!("stalemate: cannot start {program:?}: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    // `restart` windows kill it and start it again; the oracles and the trace hear of it.
    {
        let (oracles, trace) = (running.oracles.clone(), running.trace());
        let c = controller.clone();
        controller.on_restart(Box::new(move |window, at, down| {
            oracles.on_restart(window, at, down);
            trace.record(crate::trace::Record::Restart {
                window: window.to_string(),
                down_ms: down.as_secs_f64() * 1000.0,
                pid: c.pid(),
            });
        }));
    }
    running.engine.set_process(controller.clone());
    let deadline = async {
        match args.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let mut cmd_failed: Option<String> = None;
    let mut stopped_by_us = false;
    tokio::select! {
        exit = controller.exited() => {
            match exit {
                crate::process::Exit::Exited(s) if s.success() => {}
                crate::process::Exit::Exited(s) => cmd_failed = Some(format!("{program:?} exited with {s}")),
                crate::process::Exit::Failed(e) => cmd_failed = Some(format!("{program:?}: {e}")),
            }
        }
        _ = deadline => { stopped_by_us = true; }
        _ = super::shutdown_signal() => { stopped_by_us = true; }
    }
    if stopped_by_us {
        controller.signal(libc::SIGTERM);
        if tokio::time::timeout(Duration::from_secs(10), controller.exited())
            .await
            .is_err()
        {
            controller.signal(libc::SIGKILL);
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
