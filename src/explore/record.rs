//! What a search records of its trials and findings: the rows of `summary.json` that
//! `explore merge` reads back, apart from the search that writes them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::effect;
use super::judge::Found;
use crate::schedule::Schedule;
use crate::session::{self, Ended};

/// Where a trial's time went: the session's phases and explore's judging.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct TrialPhases {
    #[serde(flatten)]
    pub session: session::Phases,
    pub judge: f64,
}

/// What one trial came to, as `summary.json` spells it (`pass`, `fail`, `error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrialVerdict {
    /// Ran, and the oracles found nothing that counts.
    Pass,
    /// Ran, and the oracles found something: a finding's evidence.
    Fail,
    /// Could not run (the simulator, the setup): not a finding.
    Error,
}

impl TrialVerdict {
    /// The summary's spelling, also the report's CSS class and the progress line's word.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialVerdict::Pass => "pass",
            TrialVerdict::Fail => "fail",
            TrialVerdict::Error => "error",
        }
    }
}

/// One trial as the summary lists it (read back by `explore merge`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trial {
    pub id: usize,
    pub plan: String,
    pub slug: String,
    pub round: u8,
    /// Its plan's focus rank (`focus.rs`: 1 on the user's objects, 3 elsewhere).
    pub rank: u8,
    /// The user's actions it ran (`actions/`; none: the setup and `--workload` alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<String>,
    /// Which sequence of actions (0: none), and the workload steps it ran.
    #[serde(skip)]
    pub track: usize,
    #[serde(skip)]
    pub workload: Vec<String>,
    /// How long it had to be quiet before it was judged.
    #[serde(skip)]
    pub quiet: Duration,
    /// The controller's exits on its own, each followed by a restart (`exit status: 1
    /// after 3.2s`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exits: Vec<String>,
    /// Which finding's plan this trial shrinks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shrinking: Option<usize>,
    pub schedule: Schedule,
    /// What its faults did (`effect.rs`); `None` when the trial could not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<effect::Effect>,
    pub verdict: TrialVerdict,
    pub found: Vec<Found>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub seconds: f64,
    /// Where those seconds went (`session::Phases`; `judge` is explore's own: the
    /// verdict and the files written); `None` when the trial could not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<TrialPhases>,
    pub ended: Option<Ended>,
    /// Seconds since explore started when the trial ended.
    pub at: f64,
    /// Files written for it (trace, reports, controller output), relative to --out.
    pub files: Vec<String>,
}

/// One finding: a group of failing trials with the same signatures, and its reproducer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub number: usize,
    pub title: String,
    pub signatures: Vec<String>,
    pub found: Vec<Found>,
    /// The plan it was found with, and the trial that shows the reproducer failing.
    pub plan: String,
    /// The user's actions it needs (none: the setup and `--workload` alone); its
    /// reproducer runs them as `--workload` steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<String>,
    pub trial: usize,
    pub trials: Vec<usize>,
    /// The reproducer schedule (relative to --out).
    pub schedule_file: String,
    /// The workload steps its reproducer runs (`--workload` and its actions').
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workload: Vec<String>,
    /// A command that runs it again.
    pub reproduce: Vec<String>,
    /// Whether `stalemate run` judges it by itself (its oracles, not the differential
    /// one, see it).
    pub run_exits_1: bool,
    pub files: Vec<String>,
    /// Seconds since explore started when it was first seen.
    pub first_seen: f64,
    /// Its reproducer run again before it was reported (`--replay`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed: Option<Replayed>,
    /// Its plan was shrunk as far as `--shrink-steps` goes. Not when that was 0, nor when
    /// `--time` or a signal cut the shrinking short: `explore merge` then prefers another
    /// shard's shrunk reproducer, and `explore --shrink DIR` shrinks what none shrank.
    #[serde(default)]
    pub shrunk: bool,
}

/// How often a finding's reproducer came back when run again.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Replayed {
    pub came_back: usize,
    pub of: usize,
    /// When the shrunk reproducer did not come back and the plan as found was replayed
    /// instead: how often the shrunk one came back (the finding's reproducer is then
    /// the unshrunk one, and `came_back`/`of` are its).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrunk: Option<Tally>,
}

/// How often a reproducer came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    pub came_back: usize,
    pub of: usize,
}

impl Replayed {
    /// It never came back.
    pub fn flaky(&self) -> bool {
        self.came_back == 0
    }

    /// `came back 2 of 2 times`, and the shrunk reproducer's count when it was set aside.
    pub fn describe(&self) -> String {
        let times = |n: usize| if n == 1 { "time" } else { "times" };
        let mut s = format!(
            "came back {} of {} {}",
            self.came_back,
            self.of,
            times(self.of)
        );
        if let Some(t) = self.shrunk {
            s.push_str(&format!(
                " as found; its shrunk reproducer came back {} of {} {}, so the finding keeps the plan as found",
                t.came_back,
                t.of,
                times(t.of)
            ));
        }
        s
    }
}

/// A sequence as the summary lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub number: usize,
    pub actions: String,
    /// Its `--workload` steps.
    pub steps: Vec<String>,
    /// searched | dropped: why | not reached
    pub status: String,
    pub trials: usize,
    /// Objects its fault-free references end not Current with (its trials are judged
    /// against that).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<String>,
}
