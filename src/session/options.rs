//! What a session is told: the controllers, the end, the trace, the checks — [`Options`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use super::names::{CONTROLLER, WORKLOAD};
use super::snapshot::{Extent, Snapshot};
use super::upstream::Kind;
use crate::oracle::Oracles;

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
        if [CONTROLLER, WORKLOAD, crate::schedule::OTHER].contains(&name) {
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
    /// The controller's stdout and stderr (default: stalemate's); the workload's and each
    /// other controller's go beside it, in [`workload_log`] and [`other_log`].
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

/// Where another controller's output goes when the run's goes to `output`: its own log
/// beside it (`logs/trial-007.log` → `logs/trial-007.source.log`), not interleaved.
/// Where the workload's output goes, beside the controller's `output`:
/// `logs/trial-001.log` → `logs/trial-001.workload.log`.
pub fn workload_log(output: &Path) -> PathBuf {
    other_log(output, WORKLOAD)
}

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
