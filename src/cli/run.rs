//! `stalemate run --schedule FILE -- CMD ARGS...`: the local workflow. A proxy on
//! loopback in front of the current kubeconfig's cluster, CMD (a controller) run with
//! `KUBECONFIG` pointing at it, the schedule applied, and the oracles' verdict at the end.
//!
//! Exit status: 0 no violation, 1 a violation, 2 stalemate or CMD failed (said which) or
//! the run ended before the oracles could judge.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use super::upstream_args::UpstreamArgs;
use crate::session::upstream::Choice;
use crate::session::{End, Ended, Options, TraceTo};

#[derive(Debug, Args)]
#[command(
    // A cluster or a control plane of its own, not both.
    mut_arg("upstream_kubeconfig", |a| a.conflicts_with("envtest")),
    after_help = "\
Example:
  stalemate run --schedule config/first-run.json --duration 2m --report-html report.html -- ./bin/manager

CMD gets KUBECONFIG pointing at the proxy (KUBERNETES_SERVICE_HOST/PORT removed, so an
in-cluster config is not picked up) and the proxy reaches the cluster with your
kubeconfig's credentials. SIGINT/SIGTERM are forwarded to CMD. `restart` windows kill CMD
(SIGKILL) and start it again with the same arguments and environment; those kills do not
end the run. The run ends at --duration or --quiet, or when CMD exits on its own (with
--restart-policy always, CMD is started again after kubelet's back-off instead); then the
report is printed, and the exit status is the oracles' verdict."
)]
pub struct RunArgs {
    /// Schedule file (JSON): clients, windows and oracles.
    #[arg(long, value_name = "FILE")]
    pub schedule: PathBuf,

    /// End the run after this long (CMD gets SIGTERM). Default: when CMD exits.
    #[arg(long, value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub duration: Option<Duration>,

    /// End the run once nothing has happened for this long — no write by the controller,
    /// no window open, opened or closed, the workload done — and the oracles can judge:
    /// an object not Current yet is given the schedule's convergence `settle` after the
    /// last window to recover (what `explore` does). With --duration, that is the cap;
    /// else --max-run.
    #[arg(long, value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub quiet: Option<Duration>,

    /// With --quiet: the longest a run may take while its controller is not quiet (one
    /// quiet but waiting for `settle` may go on up to twice this).
    #[arg(long, default_value = "10m", value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub max_run: Duration,

    /// When CMD exits on its own: the run ends (never), or CMD is started again after
    /// kubelet's CrashLoopBackOff (always; needs --quiet or --duration to end the run).
    #[arg(long, value_enum, default_value = "never", value_name = "POLICY")]
    pub restart_policy: RestartPolicy,

    /// Run against a fresh embedded simulator instead of a cluster (what `explore` does).
    #[arg(long, conflicts_with_all = ["upstream_kubeconfig", "context", "envtest"])]
    pub sim: bool,

    #[command(flatten)]
    pub envtest: EnvtestArgs,

    #[command(flatten)]
    pub world: WorldArgs,

    #[command(flatten)]
    pub upstream: UpstreamArgs,

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

/// A real control plane of its own for each run — `run` and `explore` take the same.
#[derive(Debug, Args)]
pub struct EnvtestArgs {
    /// Run against a real control plane of its own, started on loopback and torn down at
    /// the end: etcd and kube-apiserver from DIR (default: $KUBEBUILDER_ASSETS, the
    /// envtest convention), or from the build of a Kubernetes version (`--envtest 1.35`:
    /// `bash e2e/assets/build.sh 1.35` builds it into ~/.cache/stalemate/kube/). The
    /// controller's environment gets STALEMATE_CONTROL_PLANE (a directory with ca.crt,
    /// ca.key, sa.key, sa.pub, admin.kubeconfig) and KUBEBUILDER_ASSETS (that directory).
    #[arg(long, value_name = "DIR|VERSION", num_args = 0..=1)]
    #[allow(clippy::option_option)]
    pub envtest: Option<Option<PathBuf>>,

    /// With --envtest: also start these, comma-separated: kube-controller-manager (the
    /// built-in controllers: Deployments make ReplicaSets make Pods), kube-scheduler,
    /// kwok (a fake node whose pods run; brings kube-scheduler).
    #[arg(long, value_name = "COMPONENTS", requires = "envtest", value_parser = crate::envtest::With::parse)]
    pub with: Option<crate::envtest::With>,
}

impl EnvtestArgs {
    /// The upstream these flags choose, if any.
    pub fn choice(&self) -> Option<Choice> {
        self.envtest.as_ref().map(|dir| Choice::Envtest {
            assets: dir.clone(),
            with: self.with.clone().unwrap_or_default(),
        })
    }
}

/// What a run starts from and what happens during it — `run` and `explore` take the same.
#[derive(Debug, Args)]
pub struct WorldArgs {
    /// Manifests (YAML or JSON, several documents each) applied before CMD starts (before
    /// every run, for explore): CRDs first, waited for until served, then namespaces, then
    /// the rest.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub setup: Vec<PathBuf>,

    /// What a user does while CMD runs: a shell command started once CMD has settled, with
    /// its own KUBECONFIG through a second listener of the proxy — another client (`{"listener":
    /// "workload"}`; CMD's is `{"listener": "controller"}`) whose requests windows can open on.
    /// Repeated: steps run one after another, each once CMD has settled after the one
    /// before (a step that exits non-zero ends the workload).
    #[arg(long, value_name = "CMD")]
    pub workload: Vec<String>,

    /// The first --workload step waits for CMD's first write too, not only for quiet: a
    /// controller's start-up (caches syncing, leader election) can be quiet longer than
    /// --quiet before it reconciles the setup. explore's reproducers pass it when the
    /// setup alone made the controller write.
    #[arg(long, requires = "workload")]
    pub workload_after_write: bool,

    /// A controller that makes no request within this is an error (exit 2): it did not
    /// start, or does not use the KUBECONFIG it is given. Quiet is counted only once the
    /// controller is ready (its first request made, its watches' initial state in,
    /// nothing in flight).
    #[arg(long, default_value = "60s", value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub start_timeout: Duration,

    /// Another controller under test beside CMD, repeated for more: NAME=COMMAND, a shell
    /// command run on a listener of its own (its requests are the client NAME, which
    /// windows can target; CMD's are `controller`), with its own KUBECONFIG, ports
    /// (STALEMATE_*) and STALEMATE_DATA_DIR, restarted as CMD is. A `restart` window
    /// restarts the controller its client names (`*`: every one; any other client: CMD);
    /// explore plans for each, anchored on any controller's writes.
    #[arg(long = "controller", value_name = "NAME=COMMAND", value_parser = crate::session::Other::parse)]
    pub others: Vec<crate::session::Other>,

    /// The controller's Prometheus metrics, e.g.
    /// http://127.0.0.1:$STALEMATE_METRICS_PORT/metrics (each run gets a free port in
    /// STALEMATE_METRICS_PORT, STALEMATE_HEALTH_PORT and STALEMATE_PORT): a run is quiet
    /// only when every workqueue there is empty and has no unfinished work too. With no
    /// retry pending either (workqueue_retries_total) the controller has settled: it is
    /// judged at once, not after the convergence oracle's settle (run: the schedule's
    /// `oracles.convergence.settle`; explore: --settle), and a run whose objects are
    /// already right (Current; explore: the reference runs' end state) ends without
    /// waiting out --quiet. Without this flag that URL is probed: a controller serving its workqueues there (--metrics-bind-address=
    /// 127.0.0.1:$STALEMATE_METRICS_PORT) is read as if named. `none`: no metrics read.
    #[arg(long, value_name = "URL")]
    pub idle_url: Option<String>,

    /// Wait out --quiet and the convergence oracle's settle (run: the schedule's
    /// `oracles.convergence.settle`; explore: --settle) even when the controller's metrics
    /// say it has settled — for one that waits with a RequeueAfter, which its metrics do
    /// not count as a retry, for something that is still to come.
    #[arg(long)]
    pub wait_settle: bool,

    /// A controller that exits on its own is started again as kubelet starts a crashed
    /// container (CrashLoopBackOff): after this back-off, doubling with each exit in a row
    /// up to --crash-backoff-max, and from the start again once it has run 10 minutes.
    /// explore always restarts it (5 exits in a row: a crash loop, a finding); run with
    /// --restart-policy always. The report says which back-off was used; shorten both for
    /// tests.
    #[arg(long, default_value = "10s", value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub crash_backoff: Duration,

    /// The longest back-off between restarts (kubelet's: 5 minutes).
    #[arg(long, default_value = "5m", value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub crash_backoff_max: Duration,

    /// After the last window closes, every object the convergence oracle judges must be
    /// Current again within this (default: its settle): later is a `recovery` finding
    /// saying how long it took; never is a convergence finding saying why (the
    /// controller backing off, a crash loop, no reconcile). Longer than settle, it is
    /// what the run waits.
    #[arg(long, value_parser = super::values::parse_duration, value_name = "DURATION")]
    pub recover_within: Option<Duration>,
}

impl WorldArgs {
    /// Set what these flags say on a session's options.
    pub fn apply(&self, o: &mut Options) {
        o.workload = self.workload.clone();
        o.first_step_after_a_write = self.workload_after_write;
        o.start_timeout = self.start_timeout;
        o.idle_url = self.idle_url.clone();
        o.wait_settle = self.wait_settle;
        o.others = self.others.clone();
    }

    /// How an exited controller is restarted; `give_up_after` exits in a row end the run.
    pub fn crash_policy(
        &self,
        give_up_after: Option<usize>,
    ) -> Result<crate::process::CrashPolicy> {
        if self.crash_backoff.is_zero() || self.crash_backoff > self.crash_backoff_max {
            anyhow::bail!(
                "--crash-backoff {} must be more than 0 and at most --crash-backoff-max {}",
                humantime::format_duration(self.crash_backoff),
                humantime::format_duration(self.crash_backoff_max)
            );
        }
        Ok(crate::process::CrashPolicy {
            backoff: self.crash_backoff,
            max_backoff: self.crash_backoff_max,
            give_up_after,
            ..crate::process::CrashPolicy::KUBELET
        })
    }

    /// `--recover-within` on the schedule's convergence oracle (which it needs).
    pub fn recover_within(&self, oracles: &mut Option<crate::oracle::OracleConfig>) -> Result<()> {
        let Some(d) = self.recover_within else {
            return Ok(());
        };
        match oracles.as_mut().and_then(|o| o.convergence.as_mut()) {
            Some(c) => {
                c.recover_within = Some(crate::k8s::duration::GoDuration(d));
                Ok(())
            }
            None => anyhow::bail!(
                "--recover-within: the schedule has no convergence oracle (oracles.convergence) to judge recovery with"
            ),
        }
    }
}

/// What `run` does when the controller exits on its own (a pod's `restartPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RestartPolicy {
    /// The run ends (with exit 2 if it failed).
    Never,
    /// It is started again after kubelet's back-off (--crash-backoff); the run ends at
    /// --quiet or --duration.
    Always,
}

pub async fn run(args: RunArgs) -> Result<ExitCode> {
    let mut schedule = super::check::load(&args.schedule)?;
    args.world.recover_within(&mut schedule.oracles)?;
    let restart = match args.restart_policy {
        RestartPolicy::Never => None,
        RestartPolicy::Always if args.quiet.is_none() && args.duration.is_none() => {
            anyhow::bail!(
                "--restart-policy always: give --quiet or --duration, or the run never ends (CMD is started again whenever it exits)"
            )
        }
        RestartPolicy::Always => Some(args.world.crash_policy(None)?),
    };
    let setup = crate::setup::load(&args.world.setup)?;
    let choice = match args.envtest.choice() {
        Some(c) => c,
        None if args.sim => Choice::Sim,
        None => Choice::Cluster {
            kubeconfig: args.upstream.upstream_kubeconfig.clone(),
            context: args.upstream.context.clone(),
            reset: None,
        },
    };
    // From here on a Ctrl-C stops what was started and cleans it up.
    let stop = crate::process::stop_on_signal().context("handling SIGINT and SIGTERM")?;
    let upstream = match choice.for_run().await {
        Ok(u) => u,
        Err(e) => return interrupted(&e).ok_or(e),
    };
    // Made once the upstream is there, so that no error path leaves it behind.
    let dir = std::env::temp_dir().join(format!("stalemate-run-{}", uuid::Uuid::new_v4()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        let _ = upstream.finish().await;
        return Err(e).with_context(|| format!("creating {}", dir.display()));
    }
    let mut o = Options {
        setup,
        restart_crashed: restart,
        end: match (args.quiet, args.duration) {
            (Some(quiet), cap) => End::Quiet {
                quiet,
                max_run: cap.unwrap_or(args.max_run),
            },
            (None, Some(d)) => End::After(d),
            (None, None) => End::ControllerExit,
        },
        trace: match &args.trace {
            Some(p) => TraceTo::File(p.clone()),
            None => TraceTo::Off,
        },
        admin_listen: args.admin_listen,
        cancel: Some(stop.clone()),
        announce: true,
        ..Options::new(upstream.clone(), schedule, args.cmd.clone(), dir.clone())
    };
    // The flags `explore` takes too, set as it sets them.
    args.world.apply(&mut o);
    if let Some(q) = args.quiet {
        o.settle_before_workload = q;
    }
    let outcome = crate::session::run(o).await;
    if let Err(e) = upstream.finish().await {
        tracing::warn!(error = %format!("{e:#}"), "stopping the upstream");
    }
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok(outcome) => conclude(&args, &outcome),
        Err(e) => interrupted(&e).ok_or(e),
    }
}

/// The reports written and printed, and the exit status: the oracles' verdict, or 2 with
/// what kept them from one.
fn conclude(args: &RunArgs, outcome: &crate::session::Outcome) -> Result<ExitCode> {
    let report = &outcome.report;
    crate::server::write_reports(
        report,
        args.report_json.as_deref(),
        args.report_html.as_deref(),
    )?;
    print!("{}", report.terminal());
    if let Some(why) = &outcome.controller_failed {
        eprintln!("stalemate: the controller failed: {why}");
        return Ok(ExitCode::from(2));
    }
    if let Some(code) = outcome.workload_exit.filter(|c| *c != 0) {
        eprintln!("stalemate: the workload exited with status {code}");
    }
    if outcome.ended == Ended::Settled {
        eprintln!(
            "stalemate: ended after {:.1}s, before --quiet: the controller's metrics said it had settled (workqueues empty, no retry pending) and the oracles could judge",
            outcome.seconds
        );
    }
    if outcome.ended == Ended::MaxRun {
        eprintln!(
            "stalemate: the controller was still writing (or a window still open) after {}; the run was cut there",
            humantime::format_duration(args.duration.unwrap_or(args.max_run))
        );
    }
    Ok(match report.verdict.as_str() {
        "pass" => ExitCode::SUCCESS,
        "fail" => ExitCode::from(1),
        _ => {
            let why = report.verdicts.pending.as_deref().unwrap_or("too early");
            if outcome.ended == Ended::Interrupted {
                eprintln!(
                    "stalemate: interrupted (SIGINT or SIGTERM) before the oracles could judge ({why})"
                );
            } else {
                eprintln!(
                    "stalemate: the run ended before the oracles could judge ({why}); give a longer --duration"
                );
            }
            ExitCode::from(2)
        }
    })
}

/// What `run` says when it failed after a SIGINT or SIGTERM: whatever failed then (a
/// control plane whose processes got the terminal's Ctrl-C too, a start cut short) failed
/// because of it, and what had started is stopped — exit 2, as for any run that ended
/// before the oracles could judge. `None` when no signal came: the error is the answer.
fn interrupted(e: &anyhow::Error) -> Option<ExitCode> {
    if !crate::envtest::daemon::cut_short_by_signal(e) {
        return None;
    }
    tracing::debug!(error = %format!("{e:#}"), "after the interrupt");
    eprintln!("stalemate: interrupted (SIGINT or SIGTERM); what it had started is stopped");
    Some(ExitCode::from(2))
}
