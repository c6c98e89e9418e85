//! What an explore is asked (`Config`), what it comes to (`Verdict`), and what every run
//! of it shares: the base schedule, the default oracles, how long a schedule's windows
//! take. Below the search: the files that search depend on this, not on `mod.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{actions, shard};
use crate::oracle::OracleConfig;
use crate::schedule::Schedule;
use crate::session;

/// Everything `explore` was asked.
#[derive(Debug, Clone)]
pub struct Config {
    pub controller: Vec<String>,
    pub setup_paths: Vec<PathBuf>,
    pub setup: Vec<crate::setup::Manifest>,
    /// The user's own workload steps (`--workload`), run before any action's.
    pub workload: Vec<String>,
    /// Where the user's actions come from (`--actions`).
    pub actions: actions::Source,
    /// A controller that makes no request within this is an error.
    pub start_timeout: Duration,
    /// The controller's metrics, for its workqueues' idleness (`session/idle.rs`).
    pub idle_url: Option<String>,
    /// Wait out `settle` even when the controller's metrics say it has settled.
    pub wait_settle: bool,
    /// More controllers under test beside it, in every run (`--controller NAME=CMD`).
    pub others: Vec<session::Other>,
    /// How an exited controller is restarted (`--crash-backoff`).
    pub crash_policy: crate::process::CrashPolicy,
    /// Resources to rank first (`--focus`; empty: derived from the references).
    pub focus: Vec<String>,
    /// Where each run's cluster comes from.
    pub upstream: Arc<dyn session::Kind>,
    pub jobs: usize,
    pub budget: Option<usize>,
    pub time: Option<Duration>,
    pub seed: u64,
    pub out: PathBuf,
    pub quiet: Duration,
    pub max_run: Duration,
    /// What a controller is given after the last window to make things right
    /// (`--settle`): the convergence oracle's, and every object the differential judges.
    pub settle: Duration,
    pub oracles: OracleConfig,
    pub shrink_steps: u32,
    /// Runs of each finding's reproducer before it is reported (`--replay`).
    pub replay: u32,
    /// Round 2's freezes (`plan/freeze.rs`); none: no round 2.
    pub long_window: Option<Duration>,
    /// Draw a progress bar (a terminal) rather than print a line per trial.
    pub progress_bar: bool,
    /// Try only this share of the plans (`--shard I/N`, `shard.rs`).
    pub shard: Option<shard::Shard>,
    /// Instead of a search: shrink the findings of this earlier output (an explore's or
    /// a merge's) that no one shrank (`--shrink DIR`, `reshrink.rs`).
    pub shrink: Option<PathBuf>,
}

/// How explore ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing found.
    Clean,
    /// Findings (or the controller fails without any fault).
    Found,
}

/// The baseline schedule every run shares: the clients (the controller, the workload,
/// each other controller under test, each by its listener) and the oracles.
pub fn base_schedule(cfg: &Config) -> Schedule {
    let others = cfg.others.iter().map(|o| o.name.as_str());
    let clients = [session::CONTROLLER, session::WORKLOAD]
        .into_iter()
        .chain(others)
        .map(|name| {
            let matcher = crate::schedule::ClientMatcher {
                listener: Some(name.into()),
                ..Default::default()
            };
            (name.to_string(), matcher)
        })
        .collect();
    Schedule {
        seed: cfg.seed,
        clients,
        windows: vec![],
        oracles: Some(cfg.oracles.clone()),
    }
}

/// Default oracles: every one that can judge the setup's resources — convergence (with
/// `settle` to recover after the last window), the readiness race and hot loop over the
/// setup's custom resources (or `--converge`), conflict storms everywhere.
pub fn default_oracles(
    setup: &[crate::setup::Manifest],
    converge: &[String],
    settle: Duration,
) -> OracleConfig {
    let mut resources: Vec<String> = if converge.is_empty() {
        setup.iter().filter_map(|m| m.crd_resource()).collect()
    } else {
        converge.to_vec()
    };
    resources.dedup();
    let mut config = OracleConfig {
        conflicts: Some(crate::oracle::ConflictsConfig::at_most(20)),
        hot_loop: Some(crate::oracle::HotLoopConfig::at_most(30, resources.clone())),
        ..OracleConfig::default()
    };
    if !resources.is_empty() {
        config.readiness_race = Some(crate::oracle::ReadinessConfig {
            resources: resources.clone(),
        });
        config.convergence = Some(crate::oracle::ConvergenceConfig {
            resources,
            settle: crate::k8s::duration::GoDuration(settle),
            failed: Vec::new(),
            conditions: Vec::new(),
            recover_within: None,
        });
    }
    config
}

/// How long a schedule's windows take from their triggers: the longest delay and
/// duration of one.
pub fn windows_span(schedule: &Schedule) -> Duration {
    schedule
        .windows
        .iter()
        .map(|w| {
            let delay = w
                .trigger
                .as_ref()
                .and_then(|t| t.delay)
                .map_or(Duration::ZERO, |d| d.0);
            delay + w.duration.map_or(Duration::ZERO, |d| d.0)
        })
        .max()
        .unwrap_or_default()
}

/// Whether a run of `workload` waits for the controller's first write before its first
/// step: when the setup alone made the controller write (`setup_written`, learnt from
/// track 0's references).
pub fn waits_for_a_write(workload: &[String], setup_written: bool) -> bool {
    !workload.is_empty() && setup_written
}
