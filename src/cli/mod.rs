//! The command line: one verb per job, each in its own file.

pub mod certs;
pub mod check;
pub mod ctl;
pub mod docs;
pub mod envtest;
pub mod explore;
pub mod explore_flags;
pub mod explore_gather;
pub mod explore_report;
pub mod explore_shards;
pub mod inject;
pub mod kubeconfig;
pub mod report;
pub mod run;
pub mod schedule_rejected;
pub mod serve;
pub mod sim;
pub mod upstream_args;
pub mod values;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// stalemate — find staleness bugs in Kubernetes controllers.
///
/// A TLS-terminating proxy in front of a kube-apiserver that holds, delays, coalesces and
/// replays watch events on a schedule, then judges whether the controller recovered.
#[derive(Debug, Parser)]
#[command(
    name = "stalemate",
    version,
    about,
    long_about,
    propagate_version = true
)]
pub struct Cli {
    /// Log format on standard error. The level comes from RUST_LOG (default: info).
    #[arg(long, value_enum, global = true, default_value = "text")]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

// Parsed once per process; boxing the larger argument structs would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the proxy in front of a kube-apiserver (TLS-terminating, streaming).
    Serve(serve::ServeArgs),
    /// Run the built-in Kubernetes API simulator (an in-memory apiserver over HTTPS).
    Sim(sim::SimArgs),
    /// Start a real control plane on loopback (etcd + kube-apiserver from
    /// $KUBEBUILDER_ASSETS, optionally kube-controller-manager, kube-scheduler, kwok).
    Envtest(envtest::EnvtestArgs),
    /// Write a kubeconfig for clients of a running proxy.
    Kubeconfig(kubeconfig::KubeconfigArgs),
    /// Generate a CA and a serving certificate for the proxy or a sidecar.
    Certs(certs::CertsArgs),
    /// Validate schedule files; report every error with line, column and field.
    Check(check::CheckArgs),
    /// Talk to a running proxy's control API: status, windows, open, close, freeze.
    Ctl(ctl::CtlArgs),
    /// Add the stalemate sidecar to workloads in Kubernetes YAML (or remove it again).
    Inject(inject::InjectArgs),
    /// Run a controller behind the proxy with a schedule, and judge it: `run --schedule
    /// FILE -- CMD ARGS...`. Exit 0: no violation, 1: violation, 2: failure.
    Run(run::RunArgs),
    /// Search for staleness bugs without being told where they are: fault-free reference
    /// runs, then trials with windows anchored on the controller's own requests, judged
    /// against the references; writes a reproducer schedule per finding. Exit 0: none,
    /// 1: findings, 2: failure.
    Explore(explore::ExploreArgs),
    /// Show the whole story with no cluster: simulator, proxy and a small controller with
    /// Flux's patch pattern; prints a timeline and the oracles' verdict.
    Demo(crate::demo::DemoArgs),
    /// Render a saved trace (`--trace FILE`) as a terminal summary, JSON or HTML report.
    Report(report::ReportArgs),
    /// Print a reference page generated from the code (docs/cli.md). Hidden: for
    /// maintainers, not users.
    #[command(hide = true)]
    Docs(docs::DocsArgs),
}

fn init_logging(format: LogFormat, quiet: bool) {
    // The demo prints its own timeline; its logs are only for trouble.
    let default = if quiet {
        "warn,rustls=error"
    } else {
        "info,rustls=error"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Entry point: parse, run the verb, turn errors into one clear line and an exit status.
pub fn main() -> ExitCode {
    // The matches are kept: `explore job` writes its pods' command lines from the flags
    // as they were given.
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    init_logging(
        cli.log_format,
        matches!(
            cli.command,
            Command::Demo(_) | Command::Report(_) | Command::Explore(_)
        ),
    );
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("stalemate: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let verdict = match cli.command {
        Command::Run(args) => rt.block_on(run::run(args)),
        Command::Explore(args) => {
            rt.block_on(explore::run(args, matches.subcommand_matches("explore")))
        }
        other => rt.block_on(verb(other)).map(|()| ExitCode::SUCCESS),
    };
    match verdict {
        Ok(code) => code,
        Err(e) => {
            eprintln!("stalemate: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The verbs whose success is exit 0.
async fn verb(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Run(_) | Command::Explore(_) => Ok(()),
        Command::Serve(args) => serve::run(args).await,
        Command::Sim(args) => sim::run(args).await,
        Command::Envtest(args) => envtest::run(args).await,
        Command::Kubeconfig(args) => kubeconfig::run(args),
        Command::Certs(args) => certs::run(args),
        Command::Check(args) => check::run(args),
        Command::Ctl(args) => ctl::run(args).await,
        Command::Demo(args) => crate::demo::run(args).await,
        Command::Inject(args) => inject::run(args),
        Command::Report(args) => report::run(args),
        Command::Docs(args) => docs::run(args, <Cli as clap::CommandFactory>::command()),
    }
}

/// docs/cli.md against the flags: here, since only this file may name both `Cli` and
/// `docs` (no import circle inside cli/).
#[cfg(test)]
mod docs_tests {
    use clap::{Command, CommandFactory};

    use super::Cli;
    use super::docs::{REGENERATE, anchor, bin_name, cli_markdown, visible_subcommands};

    #[test]
    fn docs_cli_md_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        let rendered = cli_markdown(Cli::command());
        if on_disk != rendered {
            let line = on_disk
                .lines()
                .zip(rendered.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| on_disk.lines().count().min(rendered.lines().count()))
                + 1;
            panic!(
                "docs/cli.md is stale (first difference at line {line}): the flags changed \
                 and the page did not. Regenerate it with\n    {REGENERATE}"
            );
        }
    }

    #[test]
    fn every_visible_command_and_flag_is_on_the_page() {
        let page = cli_markdown(Cli::command());
        let mut cmd = Cli::command();
        cmd.build();
        fn walk(cmd: &Command, page: &str) {
            for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(l) = a.get_long().filter(|l| !matches!(*l, "help" | "version")) {
                    let item = |line: &str| {
                        line.starts_with("- `")
                            && (line.contains(&format!("`--{l}"))
                                || line.contains(&format!(", --{l}")))
                    };
                    assert!(page.lines().any(item), "--{l}");
                }
            }
            for s in visible_subcommands(cmd) {
                assert!(
                    page.contains(&format!("# {}\n", bin_name(s))),
                    "{}",
                    bin_name(s)
                );
                walk(s, page);
            }
        }
        walk(&cmd, &page);
        assert!(
            !page.contains("stalemate docs"),
            "the hidden verb stays hidden"
        );
        assert!(page.contains("default `10m`"), "run --max-run's default");
    }

    #[test]
    fn anchors_are_githubs() {
        assert_eq!(anchor("stalemate explore job"), "stalemate-explore-job");
    }
}
