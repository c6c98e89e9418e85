//! One run of a controller behind the proxy, start to verdict — what `stalemate run` does
//! once, and what every `explore` reference run and trial does again.
//!
//! ```text
//!  upstream (upstream/: a fresh simulator, a real control plane, or a kubeconfig's cluster)
//!    └─► front.rs: proxy with listener "controller" (+ "workload"), schedule, oracles, trace
//!          └─► setup manifests applied (CRDs first) ─► supervise.rs: controller started
//!                └─► (settled) workload started ─► … ─► end: duration, controller exit,
//!                                                         or quiet (activity.rs)
//!  stop: controller (SIGTERM, then SIGKILL) ─► proxy ─► end state read ─► upstream ─► Outcome
//! ```
//!
//! The controller and the workload come in on listeners of their own, so a schedule can
//! tell them apart by listener (`{"listener": "controller"}`) whatever their credentials:
//! both carry the token that makes the proxy use the upstream's credentials, exactly as
//! they would reach the cluster directly with the user's kubeconfig.

mod activity;
mod front;
mod idle;
pub mod leases;
mod outside;
mod scrape;
pub mod snapshot;
mod supervise;
pub mod upstream;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};

use crate::oracle::Oracles;
use crate::request::Verb;
use crate::trace::{Record, Stamped};

pub use snapshot::{Extent, Snapshot};
pub use upstream::Kind;

/// The listener (and client) names a session gives its two processes.
pub const CONTROLLER: &str = "controller";
pub const WORKLOAD: &str = "workload";

/// Another controller under test beside the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Other {
    /// Its client's and listener's name.
    pub name: String,
    /// A shell command (`sh -c`).
    pub command: String,
}

impl Other {
    /// `NAME=CMD`, as `run --controller` takes it.
    pub fn parse(s: &str) -> Result<Other, String> {
        let (name, command) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: give NAME=CMD (e.g. source=./source-controller.sh)"))?;
        let ok = !name.is_empty()
            && name.len() <= 40
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !name.starts_with('-');
        if !ok {
            return Err(format!(
                "{name:?}: a controller's name is lowercase letters, digits and '-' (it names its client and listener)"
            ));
        }
        if [CONTROLLER, WORKLOAD, crate::identity::OTHER].contains(&name) {
            return Err(format!(
                "{name:?} is taken: the controller after -- is \"controller\", the workload \"workload\", requests of no client \"other\""
            ));
        }
        if command.trim().is_empty() {
            return Err(format!("{name:?}: no command after '='"));
        }
        Ok(Other {
            name: name.to_string(),
            command: command.to_string(),
        })
    }
}

/// When the run ends (it always ends when the controller exits on its own).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    /// This long after the controller started.
    After(Duration),
    /// Only when the controller exits.
    ControllerExit,
    /// When nothing has happened for `quiet`: no window open, no write by the controller,
    /// no window opened or closed, no restart, the workload (if any) done. `max_run`
    /// caps a controller that never goes quiet.
    Quiet { quiet: Duration, max_run: Duration },
}

/// Where the trace goes.
#[derive(Debug, Clone)]
pub enum TraceTo {
    Off,
    File(PathBuf),
    /// In memory, returned in the [`Outcome`].
    Memory,
}

/// Asked as a run goes: has it seen enough to end now?
pub type StopEarly = Box<dyn Fn(&Oracles) -> bool + Send + Sync>;

/// Asked once a run is quiet, of its end state (read from ground truth, where
/// `extent_hint` says): is it what it should be? Until it is, or `settle` has passed
/// since the last window closed, the run goes on. A controller with a rate-limited retry
/// pending is quiet — its workqueue reads empty while the item waits out its back-off —
/// and is given the same time to make every object right as the convergence oracle
/// gives it to make its own Current.
pub struct EndStateCheck {
    pub ok: Box<dyn Fn(&Snapshot) -> bool + Send + Sync>,
    pub settle: Duration,
}

/// Everything one run needs.
pub struct Options {
    /// Where the run's cluster comes from (`upstream/`).
    pub upstream: Arc<dyn Kind>,
    pub setup: Vec<crate::setup::Manifest>,
    pub schedule: crate::schedule::Schedule,
    /// The controller's program and arguments.
    pub controller: Vec<String>,
    /// More controllers under test at once (`run --controller NAME=CMD`): each a shell
    /// command on a listener, kubeconfig, ports and data directory of its own, its
    /// requests the client NAME; restarted when it exits as the controller is.
    pub others: Vec<Other>,
    /// Shell commands run (`sh -c`) one after another, each once the controller has
    /// settled after the one before (the first: after its start-up): a user's steps,
    /// the controller's reaction to each awaited before the next.
    pub workload: Vec<String>,
    /// How long the controller must have been quiet before each workload step starts.
    pub settle_before_workload: Duration,
    /// The first workload step also waits for the controller's first write: a
    /// controller's start-up (caches syncing, leader election, workers starting) can be
    /// quiet for longer than `settle_before_workload` before it reconciles the setup,
    /// and a step then lands on a controller that has not acted yet.
    pub first_step_after_a_write: bool,
    /// A controller that makes no request within this is an error (it never started).
    pub start_timeout: Duration,
    /// Restart a controller that exits on its own, as a Deployment would (explore); a
    /// crash loop ends the run as a failure. None: its exit ends the run.
    pub restart_crashed: Option<crate::process::CrashPolicy>,
    /// The controller's Prometheus metrics (`$STALEMATE_METRICS_PORT` for the run's
    /// port): a quiet run ends only when its workqueues are idle too (`idle.rs`).
    pub idle_url: Option<String>,
    /// Wait out `settle` even when the metrics say the controller has settled — and
    /// `quiet`, which the metrics may otherwise cut short (`Ended::Settled`).
    pub wait_settle: bool,
    /// Wait out the whole `quiet` whatever the metrics say (explore's reference runs:
    /// their rhythm, an interval requeue included, is what a trial's quiet is derived
    /// from; `settle` may still be cut short).
    pub whole_quiet: bool,
    pub end: End,
    pub trace: TraceTo,
    /// The controller's and the workload's stdout and stderr (default: stalemate's); each
    /// other controller's go beside it, in [`other_log`].
    pub output: Option<PathBuf>,
    /// A private directory for the run's kubeconfigs.
    pub dir: PathBuf,
    pub admin_listen: SocketAddr,
    /// Read the end state from ground truth (for comparing runs).
    pub snapshot: bool,
    /// The caller's stop (`run`'s and explore's, on SIGINT/SIGTERM:
    /// [`crate::process::stop_on_signal`]): the run ends when it turns true, its processes
    /// stopped like at any end; turned true before the controller started, the controller
    /// is not started at all.
    pub cancel: Option<tokio::sync::watch::Receiver<bool>>,
    /// End early when the oracles have already seen enough (checked as the run goes).
    pub stop_early: Option<StopEarly>,
    /// Say on stderr where the proxy is and what runs behind it.
    pub announce: bool,
    /// The proxy's serving threads (`explore` runs trials side by side: one each).
    pub threads: usize,
    /// Read the end state of these too (what the reference runs touched).
    pub extent_hint: Extent,
    /// A quiet run ends only once its end state passes this (or its `settle` is up).
    pub end_state: Option<EndStateCheck>,
}

impl Options {
    /// How long a controller has to make its first request (`--start-timeout`).
    pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(60);

    /// A run of `controller` against `upstream` with `schedule`: no workload, no setup,
    /// ending when the controller exits, no trace, output inherited.
    pub fn new(
        upstream: Arc<dyn Kind>,
        schedule: crate::schedule::Schedule,
        controller: Vec<String>,
        dir: PathBuf,
    ) -> Options {
        Options {
            upstream,
            setup: Vec::new(),
            schedule,
            controller,
            others: Vec::new(),
            workload: Vec::new(),
            settle_before_workload: Duration::from_secs(2),
            first_step_after_a_write: false,
            start_timeout: Self::DEFAULT_START_TIMEOUT,
            restart_crashed: None,
            idle_url: None,
            wait_settle: false,
            whole_quiet: false,
            end: End::ControllerExit,
            trace: TraceTo::Off,
            output: None,
            dir,
            admin_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            snapshot: false,
            cancel: None,
            stop_early: None,
            announce: false,
            threads: crate::server::default_threads(),
            extent_hint: Extent::default(),
            end_state: None,
        }
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ended {
    ControllerExited,
    Quiet,
    /// Idle for less than `quiet`, but the controller's metrics said it had settled (its
    /// workqueues empty, no retry pending) and its end state was what it should be.
    Settled,
    MaxRun,
    Duration,
    Interrupted,
    /// `stop_early` said so.
    Early,
}

/// Where a run's time went, in seconds: `start` (the upstream started, the proxy in front
/// of it, the setup applied, the controllers started), `ready` (until every controller
/// was ready: its first request made, its informers' lists answered), `work` (until the
/// last thing that was not idleness: its last write, a window, the workload),
/// `quiet` (the idle stretch that ended it, the wait for its end state included),
/// `end_state` (reading it) and `stop` (the controllers, the proxy and the upstream
/// stopped).
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Phases {
    pub start: f64,
    pub ready: f64,
    pub work: f64,
    pub quiet: f64,
    pub end_state: f64,
    pub stop: f64,
}

/// What a run left.
#[derive(Clone)]
pub struct Outcome {
    pub report: crate::report::Report,
    /// The trace, if kept in memory.
    pub trace: Vec<Stamped>,
    /// The end state, if asked for.
    pub snapshot: Snapshot,
    /// Where the snapshot looked.
    pub extent: Extent,
    pub peaks: std::collections::BTreeMap<(String, crate::oracle::ObjectRef), crate::oracle::Peak>,
    /// The controller ended on its own with a failure (or could not be started again;
    /// or, restarted after each exit, it kept exiting: a crash loop).
    pub controller_failed: Option<String>,
    /// Its exits on its own that were followed by a restart (`restart_crashed`).
    pub crashes: Vec<crate::process::Crash>,
    /// The workload's exit code (None: no workload, or it never ran or finished).
    pub workload_exit: Option<i32>,
    pub ended: Ended,
    /// When the controller was started.
    pub started: SystemTime,
    pub seconds: f64,
    /// The resources and namespaces the setup put objects in.
    pub setup: Vec<crate::setup::Applied>,
    /// The Leases the controllers under test wrote, read with the end state.
    pub leases: Vec<leases::Held>,
    /// Where its time went.
    pub phases: Phases,
}

/// Run it: the upstream started, the proxy in front of it, the setup applied, the
/// controller (and workload) run until the end, everything stopped in reverse.
pub async fn run(o: Options) -> Result<Outcome> {
    if o.controller.is_empty() {
        anyhow::bail!("nothing to run: give the controller after --")
    }
    let mut names = std::collections::BTreeSet::new();
    if let Some(c) = o.others.iter().find(|c| !names.insert(c.name.as_str())) {
        anyhow::bail!(
            "--controller {}: two controllers of that name (each names its own client and listener)",
            c.name
        )
    }
    let begun = Instant::now();
    let upstream = o.upstream.start(&o.dir).await?;
    let upstream_started = begun.elapsed().as_secs_f64();
    let mut result = behind_proxy(&o, &*upstream).await;
    let unanswered = upstream.unanswered();
    let stopping = Instant::now();
    upstream.stop().await;
    if let Ok(outcome) = &mut result {
        outcome.phases.start += upstream_started;
        outcome.phases.stop += stopping.elapsed().as_secs_f64();
    }
    if !unanswered.is_empty() {
        let what: Vec<String> = unanswered
            .iter()
            .map(|(w, n)| format!("{w} ({n}×)"))
            .collect();
        anyhow::bail!(
            "the simulator cannot answer what was asked of it — {} — so the controller was not exercised as a real apiserver would have it; run with --envtest (a real kube-apiserver) instead",
            what.join("; ")
        );
    }
    result
}

async fn behind_proxy(o: &Options, upstream: &dyn upstream::Started) -> Result<Outcome> {
    let begun = Instant::now();
    let front = front::Front::start(o, upstream.source()).await?;
    let prepared = prepare(o, &front, upstream).await;
    let start = begun.elapsed().as_secs_f64();
    let (client, applied, supervised) = match prepared {
        Ok(p) => p,
        Err(e) => {
            front.stop().await;
            return Err(e);
        }
    };
    let ending = supervised.until_end(o, &front.running).await;
    let reading = Instant::now();
    // Read while the controllers hold them (see `leases::durations`).
    let lease_durations = match &ending {
        Ok(e) if o.snapshot && !matches!(e.ended, Ended::Interrupted) => {
            leases::durations(&client).await
        }
        _ => Default::default(),
    };
    let mut end_state = reading.elapsed().as_secs_f64();
    let stopping = Instant::now();
    supervised
        .stop(ending.as_ref().ok().and_then(|e| e.workload.as_ref()))
        .await;
    let peaks = front.running.oracles.peaks();
    let oracles = front.running.oracles.clone();
    let stopped = front.stop().await;
    let stop = stopping.elapsed().as_secs_f64();
    let ending = ending?;
    let reading = Instant::now();
    let mut extent = extent_of(&stopped.trace, &applied);
    extent
        .resources
        .extend(o.extent_hint.resources.iter().cloned());
    extent
        .namespaces
        .extend(o.extent_hint.namespaces.iter().cloned());
    let expected = oracles.config.expected.as_ref();
    if let Some(e) = expected {
        let (resources, namespaces) = crate::oracle::expected::extent(e);
        extent.resources.extend(resources);
        extent.namespaces.extend(namespaces);
    }
    // Not when interrupted with a control plane that the signal took down too: reading
    // it would wait for its requests to time out, for an end state nobody will judge.
    // A cluster is still there, and its clean-up reads the setup's objects from this.
    // Signalled counts as interrupted however the run ended: the signal that stopped
    // the caller also stops the control plane, and the controller, losing it, may have
    // ended the run first.
    let gone = (matches!(ending.ended, Ended::Interrupted) || signalled(o))
        && !o.upstream.outlives_an_interrupt();
    let snapshot = if (o.snapshot || expected.is_some()) && !gone {
        tokio::select! {
            taken = snapshot::take(&client, &extent) => taken?,
            _ = supervise::interruption(o), if !o.upstream.outlives_an_interrupt() => {
                anyhow::bail!("interrupted (SIGINT or SIGTERM) while the end state was read")
            }
        }
    } else {
        Snapshot::new()
    };
    let controllers: Vec<&str> = std::iter::once(CONTROLLER)
        .chain(o.others.iter().map(|c| c.name.as_str()))
        .collect();
    let leases = leases::held(&stopped.trace, &controllers, &lease_durations);
    let mut report = stopped.report;
    if expected.is_some() && !gone {
        let end = crate::oracle::end_state::normalize(&snapshot);
        let found = oracles.judge_expected(&end, std::time::SystemTime::now());
        report.add_violations(found);
    }
    end_state += reading.elapsed().as_secs_f64();
    Ok(Outcome {
        report,
        trace: stopped.trace,
        snapshot,
        extent,
        peaks,
        controller_failed: ending.controller_failed,
        crashes: supervised.controller.crashes(),
        workload_exit: ending.workload_exit,
        ended: ending.ended,
        started: supervised.started,
        seconds: ending.seconds,
        setup: applied,
        leases,
        phases: Phases {
            start,
            end_state,
            stop,
            ..ending.phases
        },
    })
}

/// The setup applied, the kubeconfigs written, the controller started.
async fn prepare(
    o: &Options,
    front: &front::Front,
    upstream: &dyn upstream::Started,
) -> Result<(
    kube::Client,
    Vec<crate::setup::Applied>,
    supervise::Supervised,
)> {
    // Told to stop while the upstream started: no setup to apply and no controller to
    // start only to stop them (the caller stops the upstream). Not checked after the
    // setup: what it created is cleaned up from the run's outcome, which an error here
    // would lose — a signal from then on ends the run once the controller has started.
    if signalled(o) {
        anyhow::bail!("interrupted (SIGINT or SIGTERM) before the controller started");
    }
    // A control plane the signal takes down answers the setup's requests with a 504
    // each after half a minute: nothing to clean up there, so the signal ends it now.
    let (client, applied) = tokio::select! {
        applied = front.apply_setup(&o.setup) => applied?,
        _ = supervise::interruption(o), if !o.upstream.outlives_an_interrupt() => {
            anyhow::bail!("interrupted (SIGINT or SIGTERM) while the setup was applied")
        }
    };
    let controller_kubeconfig = front.kubeconfig(o, CONTROLLER)?;
    let workload_kubeconfig = match o.workload.is_empty() {
        false => Some(front.kubeconfig(o, WORKLOAD)?),
        true => None,
    };
    if o.announce {
        eprintln!(
            "stalemate: proxy {} (admin http://{}) in front of {}; running {:?}",
            front.running.url,
            front.running.admin,
            upstream.describe(),
            o.controller
        );
    }
    let ports = RunPorts::choose()?;
    let env = controller_env(o, upstream, &ports, CONTROLLER)?;
    // Each other controller: its own listener (and so client), ports and data directory.
    let mut others = Vec::new();
    for c in &o.others {
        let ports = RunPorts::choose()?;
        others.push(supervise::OtherStart {
            name: c.name.clone(),
            command: c.command.clone(),
            kubeconfig: front.kubeconfig(o, &c.name)?,
            env: controller_env(o, upstream, &ports, &c.name)?,
        });
    }
    let supervised = supervise::Supervised::start(
        o,
        &front.running,
        &client,
        &controller_kubeconfig,
        workload_kubeconfig,
        env,
        others,
        match o.idle_url.as_deref() {
            Some(idle::NONE) => None,
            Some(u) => Some(idle::IdleUrl::new(idle::expand(u, ports.metrics), true)),
            None => Some(idle::IdleUrl::new(
                idle::expand(idle::PROBED, ports.metrics),
                false,
            )),
        },
    )?;
    Ok((client, applied, supervised))
}

/// A controller's environment: the upstream's, its ports, a data directory that
/// outlives its restarts within the run — what a pod's emptyDir is to its containers
/// (Flux keeps its artifacts there), not the run — and a `TMPDIR` of its own, as a
/// pod's `/tmp` is: controllers side by side (explore's trials) must not share one.
/// Flux's kustomize-controller, starting, deletes every `kustomization-*` directory
/// in its temp dir as left behind by a previous process (its Deployment mounts an
/// emptyDir there); on a shared `/tmp` it deleted another trial's build mid-reconcile.
fn controller_env(
    o: &Options,
    upstream: &dyn upstream::Started,
    ports: &RunPorts,
    name: &str,
) -> Result<Vec<(std::ffi::OsString, std::ffi::OsString)>> {
    let mut env = upstream.env();
    env.extend(ports.env());
    let data = o.dir.join(format!("{name}-data"));
    std::fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    env.push(("STALEMATE_DATA_DIR".into(), data.into_os_string()));
    let tmp = o.dir.join(format!("{name}-tmp"));
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    env.push(("TMPDIR".into(), tmp.into_os_string()));
    Ok(env)
}

/// Where another controller's output goes when the run's goes to `output`: its own log
/// beside it (`logs/trial-007.log` → `logs/trial-007.source.log`), not interleaved.
pub fn other_log(output: &Path, name: &str) -> PathBuf {
    let stem = output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = output
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    output.with_file_name(format!("{stem}.{name}{ext}"))
}

/// The caller has been told to stop (SIGINT/SIGTERM).
fn signalled(o: &Options) -> bool {
    o.cancel.as_ref().is_some_and(|c| *c.borrow())
}

/// Free loopback ports chosen for one run, given to its controller: run side by side
/// with itself (explore's trials), a controller needs its own metrics and health
/// addresses (`--metrics-bind-address=127.0.0.1:$STALEMATE_METRICS_PORT`).
pub struct RunPorts {
    pub metrics: u16,
    pub health: u16,
    pub spare: u16,
}

impl RunPorts {
    fn choose() -> Result<RunPorts> {
        Ok(RunPorts {
            metrics: crate::envtest::free_port()?,
            health: crate::envtest::free_port()?,
            spare: crate::envtest::free_port()?,
        })
    }

    fn env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        [
            ("STALEMATE_METRICS_PORT", self.metrics),
            ("STALEMATE_HEALTH_PORT", self.health),
            ("STALEMATE_PORT", self.spare),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.to_string().into()))
        .collect()
    }
}

/// The resources and namespaces a run's end state is read from: what its clients wrote
/// and what the controller watched or listed, where; and what the setup created.
pub fn extent_of(trace: &[Stamped], setup: &[crate::setup::Applied]) -> Extent {
    let mut e = Extent::default();
    for a in setup {
        if a.resource == "customresourcedefinitions.apiextensions.k8s.io" {
            continue;
        }
        e.resources.insert(a.resource.clone());
        if let Some(ns) = &a.namespace {
            e.namespaces.insert(ns.clone());
        }
        if a.resource == "namespaces" {
            e.namespaces.insert(a.name.clone());
        }
    }
    for s in trace {
        let Record::Request {
            client,
            verb,
            resource,
            namespace,
            ..
        } = &s.record
        else {
            continue;
        };
        // Every controller's (the one after `--` and each `--controller`) and the
        // workload's; not requests of no client.
        if resource.is_empty() || client == crate::identity::OTHER {
            continue;
        }
        let reads = matches!(*verb, "list" | "watch") && client != WORKLOAD;
        if reads || Verb::from_name(verb).is_some_and(Verb::is_write) {
            e.resources
                .insert(snapshot::base_resource(resource).to_string());
            if let Some(ns) = namespace {
                e.namespaces.insert(ns.clone());
            }
        }
    }
    e.resources
        .retain(|r| !snapshot::IGNORED.contains(&r.as_str()) && r != "namespaces");
    e
}

#[cfg(test)]
mod tests;
