//! `stalemate explore`: find staleness bugs in an unmodified controller without being
//! told where they are.
//!
//! ```text
//!  2 fault-free reference runs ──► baseline (end state, masks, rates) ─┐
//!        │ (one fails already: "fails without any fault")             │
//!        └─► plans (plan.rs): windows anchored on the controller's    │
//!            own requests, breadth first                              │
//!  trials: each plan on a fresh upstream, until quiet ──► judge ◄─────┘
//!  failing trials grouped by signature ─► simplest plan ─► shrunk ─► findings/NN-*.json
//! ```
//!
//! Every trial is a [`crate::session`] on an upstream of the kind chosen
//! (`session/upstream/`): on the simulator or a real control plane (`--envtest`), trials
//! run side by side (`--jobs`), each with an upstream of its own; on a cluster one at a
//! time, the cluster put back between them.

pub mod actions;
pub mod differ;
pub mod effect;
pub mod focus;
mod invoked;
pub mod job;
pub mod judge;
pub mod merge;
pub mod output;
pub mod pack;
pub mod plan;
mod progress;
mod record;
mod reference;
mod reshrink;
pub mod shard;
mod shrink;
pub mod tracks;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::oracle::OracleConfig;
use crate::schedule::Schedule;
use crate::session::{self, End, Outcome, TraceTo};
use anyhow::{Context, Result};
use judge::{Baseline, Found};
use plan::Plan;
use progress::Progress;
pub use record::{Finding, Replayed, Trial, TrialPhases, TrialVerdict};

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
    /// Round 2's freezes (`plan.rs`); none: no round 2.
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

/// Whether a client of an explore run is a controller under test: the one after `--`
/// or an other (`--controller NAME=CMD`). Explore's runs have no clients but those, the
/// workload (`base_schedule`; the others' listeners are named for them) and `other`.
pub fn under_test(client: &str) -> bool {
    client != session::WORKLOAD && client != crate::identity::OTHER
}

/// The baseline schedule every run shares: the clients (the controller, the workload,
/// each other controller under test, each by its listener) and the oracles.
pub fn base_schedule(cfg: &Config) -> Schedule {
    let others = cfg.others.iter().map(|o| o.name.as_str());
    let clients = [session::CONTROLLER, session::WORKLOAD]
        .into_iter()
        .chain(others)
        .map(|name| {
            let matcher = crate::identity::ClientMatcher {
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

/// Default oracles: convergence (with `settle` to recover after the last window) and hot
/// loop over the setup's custom resources (or its objects' resources), conflict storms.
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
    let mut config: OracleConfig = serde_json::from_value(serde_json::json!({
        "conflicts": {"maxPerObjectPerMinute": 20},
        "hotLoop": {"maxWritesPerObjectPerMinute": 30, "resources": resources},
    }))
    .expect("static oracle config");
    if !resources.is_empty() {
        config.convergence = Some(crate::oracle::ConvergenceConfig {
            resources,
            settle: crate::duration::GoDuration(settle),
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

/// What trials running side by side share.
struct Shared {
    /// True once SIGINT or SIGTERM arrived: runs end, no new trial starts.
    stop: tokio::sync::watch::Receiver<bool>,
    cfg: Config,
    started: Instant,
    out: output::Out,
    /// The longest a trial may go without going quiet (`--max-run`, or twice what the
    /// references took if that is longer: set once they have run).
    max_run: std::sync::Mutex<Duration>,
    /// The setup alone made the controller write (track 0's references): a sequence's
    /// first step waits for its first write, as in the references (`session::Options::
    /// first_step_after_a_write`).
    setup_written: std::sync::atomic::AtomicBool,
}

/// The state of a search.
struct Search {
    shared: Arc<Shared>,
    trials: Vec<Trial>,
    progress: Progress,
    /// Trials started for plans (not shrinking or replaying): what `--budget` counts.
    planned_trials: usize,
    /// (sequence class, plan) already tried: the same plan for an equivalent sequence
    /// is skipped.
    tried: std::collections::BTreeSet<(String, String)>,
    /// What the oracles found with actions and no fault (each a finding in itself).
    with_actions_no_fault: Vec<Found>,
    with_actions_files: Vec<String>,
}

/// Run the search.
pub async fn run(cfg: Config) -> Result<Verdict> {
    let earlier = match cfg
        .shrink
        .as_deref()
        .map(|d| reshrink::Earlier::read(d, &cfg))
    {
        Some(Err(e)) => {
            cfg.upstream.finish().await?;
            return Err(e);
        }
        Some(Ok(e)) if e.unshrunk().is_empty() => {
            eprintln!("{}", e.nothing_to_shrink());
            cfg.upstream.finish().await?;
            return Ok(e.verdict());
        }
        Some(Ok(e)) => Some(e),
        None => None,
    };
    let out = output::Out::create(&cfg.out)?;
    if let Some(e) = &earlier {
        e.copy_into(&out)?;
    }
    // Controllers run in process groups of their own, so a terminal's Ctrl-C reaches
    // only stalemate: it stops every run (and so every controller) itself.
    let stop = crate::process::stop_on_signal().context("handling SIGINT and SIGTERM")?;
    let shared = Arc::new(Shared {
        max_run: std::sync::Mutex::new(cfg.max_run),
        setup_written: Default::default(),
        stop,
        cfg,
        started: Instant::now(),
        out,
    });
    let mut s = Search {
        progress: Progress::new(shared.cfg.progress_bar),
        shared: shared.clone(),
        trials: Vec::new(),
        planned_trials: 0,
        tried: Default::default(),
        with_actions_no_fault: Vec::new(),
        with_actions_files: Vec::new(),
    };
    let r = match earlier {
        Some(e) => s.shrink_earlier(e).await,
        None => s.search().await,
    };
    let finished = shared.cfg.upstream.finish().await;
    s.progress.finish();
    let r = r?;
    finished?;
    Ok(r)
}

/// What one trial is given.
struct Job {
    id: usize,
    plan: Plan,
    /// Which sequence of actions (0: none), its label and the workload steps to run.
    track: usize,
    actions: Option<String>,
    workload: Vec<String>,
    shrinking: Option<usize>,
    schedule: Schedule,
    /// How long it must be quiet before it is judged.
    quiet: Duration,
}

impl Shared {
    fn max_run(&self) -> Duration {
        *self.max_run.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Whether a run of `workload` waits for the controller's first write before its
    /// first step.
    fn waits_for_a_write(&self, workload: &[String]) -> bool {
        !workload.is_empty()
            && self
                .setup_written
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn options(
        &self,
        schedule: Schedule,
        id: &str,
        quiet: Duration,
        workload: &[String],
    ) -> Result<session::Options> {
        let dir = self.out.scratch(id)?;
        // A plan's windows are not the controller failing to go quiet: a run may take
        // as long as they do on top of --max-run — and nor is its recovery: a controller
        // retrying within the time it is allowed to recover after them (a retry after
        // a long back-off or a resync interval) is not called never quiet before that.
        let windows = windows_span(&schedule);
        let recovery = schedule
            .oracles
            .as_ref()
            .and_then(|o| o.convergence.as_ref())
            .map_or(Duration::ZERO, |c| c.allowance() + quiet);
        Ok(session::Options {
            setup: self.cfg.setup.clone(),
            workload: workload.to_vec(),
            start_timeout: self.cfg.start_timeout,
            // As a Deployment would: an exit is followed by kubelet's back-off and a
            // restart; only a crash loop (or a different end state) is a finding.
            restart_crashed: Some(self.cfg.crash_policy),
            others: self.cfg.others.clone(),
            idle_url: self.cfg.idle_url.clone(),
            wait_settle: self.cfg.wait_settle,
            settle_before_workload: quiet,
            first_step_after_a_write: self.waits_for_a_write(workload),
            end: End::Quiet {
                quiet,
                max_run: self.max_run().max(recovery) + windows,
            },
            trace: TraceTo::Memory,
            snapshot: true,
            output: Some(self.out.root.join(format!("logs/{id}.log"))),
            threads: 1,
            stop_early: Some(Box::new(|oracles| oracles.rate_violated())),
            cancel: Some(self.stop.clone()),
            ..session::Options::new(
                self.cfg.upstream.clone(),
                schedule,
                self.cfg.controller.clone(),
                dir,
            )
        })
    }

    async fn one(&self, o: session::Options) -> Result<Outcome> {
        let outcome = session::run(o).await;
        // Noted even when interrupted: what the run made is cleaned up at the end.
        if let Ok(out) = &outcome {
            self.cfg.upstream.ran(out);
        }
        if *self.stop.borrow() {
            anyhow::bail!("interrupted (SIGINT or SIGTERM)");
        }
        outcome
    }

    /// How many runs may go at once.
    fn jobs(&self) -> usize {
        if self.cfg.upstream.side_by_side() {
            self.cfg.jobs.max(1)
        } else {
            1
        }
    }

    /// Every object the differential judges gets the allowance the convergence oracle
    /// gives its own: a quiet trial whose end state differs from the references' goes on
    /// until it does not, or until `settle` after the last window (a retry waiting out
    /// its back-off is quiet too).
    fn end_state_check(
        &self,
        schedule: &Schedule,
        reference: Arc<Baseline>,
    ) -> session::EndStateCheck {
        let settle = schedule
            .oracles
            .as_ref()
            .and_then(|c| c.convergence.as_ref())
            .map_or(self.cfg.settle, |c| c.allowance());
        session::EndStateCheck {
            ok: Box::new(move |snapshot| {
                let state = differ::normalize(snapshot);
                differ::compare(&reference.state, &reference.masks, &state).is_empty()
            }),
            settle,
        }
    }

    /// Run one trial and judge it; failing trials' traces and reports are kept.
    async fn trial(
        self: Arc<Self>,
        job: Job,
        hint: session::Extent,
        baseline: Arc<Baseline>,
    ) -> Result<Trial> {
        let name = format!("trial-{:03}", job.id);
        let mut o = self.options(job.schedule.clone(), &name, job.quiet, &job.workload)?;
        o.extent_hint = hint;
        o.end_state = Some(self.end_state_check(&job.schedule, baseline.clone()));
        let started = Instant::now();
        let mut files = vec![format!("logs/{name}.log")];
        // Each other controller's log beside it (`session::other_log`).
        files.extend(
            self.cfg
                .others
                .iter()
                .map(|c| format!("logs/{name}.{}.log", c.name)),
        );
        let mut exits = Vec::new();
        let mut effect = None;
        let mut phases = None;
        let (verdict, found, error, ended) = match self.one(o).await {
            Ok(outcome) => {
                let judging = Instant::now();
                phases = Some((outcome.phases, judging));
                effect = Some(effect::Effect::of(&job.schedule, &outcome));
                exits = outcome
                    .crashes
                    .iter()
                    .map(|c| {
                        let after = c.at.duration_since(outcome.started).unwrap_or_default();
                        format!("{} after {:.1}s", c.status, after.as_secs_f64())
                    })
                    .collect();
                let found = judge::judge(&outcome, &baseline);
                if !found.is_empty() {
                    files.extend(self.out.write_run(&name, &outcome)?);
                }
                let v = if found.is_empty() {
                    TrialVerdict::Pass
                } else {
                    TrialVerdict::Fail
                };
                (v, found, None, Some(outcome.ended))
            }
            // A trial that cannot run (the simulator, the setup) is not a finding.
            Err(e) => (TrialVerdict::Error, vec![], Some(format!("{e:#}")), None),
        };
        Ok(Trial {
            id: job.id,
            plan: job.plan.label.clone(),
            slug: job.plan.slug.clone(),
            round: job.plan.round,
            rank: job.plan.rank,
            actions: job.actions,
            track: job.track,
            workload: job.workload,
            quiet: job.quiet,
            exits,
            shrinking: job.shrinking,
            schedule: job.schedule,
            effect,
            verdict,
            found,
            error,
            seconds: started.elapsed().as_secs_f64(),
            phases: phases.map(|(session, judging)| TrialPhases {
                session,
                judge: judging.elapsed().as_secs_f64(),
            }),
            ended,
            at: self.elapsed(),
            files,
        })
    }
}

impl Search {
    fn elapsed(&self) -> f64 {
        self.shared.started.elapsed().as_secs_f64()
    }

    /// The references, and the schedule every trial shares as they leave it; `None`
    /// when the controller fails without any fault (the summary says so).
    async fn learn_references(&mut self) -> Result<Option<(Schedule, Box<reference::References>)>> {
        let mut base = base_schedule(&self.shared.cfg);
        let refs = match self.references(&base).await? {
            reference::Learnt::References(r) => r,
            reference::Learnt::FailsWithoutFaults => return Ok(None),
        };
        // What ended Failed in both references is what a trial is judged against: done
        // when Failed, as the rest is when Current with the conditions both ended with
        // (and so are the reproducers).
        reference::expect_ends(&mut base, &refs.without_faults.failed, &refs.conditions);
        reference::allow_for_leases(&mut base, &refs);
        // The setup alone made the controller write: a sequence's first step waits for
        // that write (its start-up may be quiet longer than a trial's quiet). With a
        // --workload by hand, its first step is timed as in these references.
        let wrote = refs
            .reference
            .anchors
            .iter()
            .any(|a| a.client == session::CONTROLLER);
        self.shared.setup_written.store(
            wrote && self.shared.cfg.workload.is_empty(),
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(Some((base, refs)))
    }

    async fn search(&mut self) -> Result<Verdict> {
        let Some((base, refs)) = self.learn_references().await? else {
            return Ok(reference::fails_without_faults());
        };
        let mut plans = refs.plans(&self.plan_options());
        let ranks = refs.focus.order(&mut plans);
        self.say_plans(&refs, &plans, ranks);
        let share = self.take_share(&mut plans);
        let sequences = self.sequences(&refs)?;
        let refs: Arc<reference::References> = Arc::from(refs);
        let mut tracks =
            tracks::Track::all(&self.shared.cfg, &base, refs.clone(), plans, sequences);
        let mut next_id = self.run_tracks(&mut tracks, &refs).await?;
        let mut findings = self.group();
        for f in &mut findings {
            if self.out_of_time() {
                break;
            }
            let Some(track) = self
                .trials
                .iter()
                .find(|t| t.id == f.trial)
                .map(|t| t.track)
            else {
                continue;
            };
            let Some(tracks::State::Ready(tr)) = tracks.get(track).map(|t| t.state.clone()) else {
                continue;
            };
            let tb = tracks[track].base.clone();
            f.shrunk = self.shrink(f, &tb, &tr, &mut next_id).await?;
            self.replay(f, &tr, &mut next_id).await?;
        }
        let findings = self.shared.out.write_findings(
            &self.shared,
            findings,
            &self.trials,
            self.shared.max_run(),
        )?;
        let mut summary = output::Summary::new(
            &self.shared.cfg,
            &findings,
            &self.trials,
            self.elapsed(),
            refs.seconds,
        );
        summary.focus = refs.focus.resources.iter().cloned().collect();
        summary.plans_by_rank = Some(ranks);
        summary.shard = share;
        let mut without = refs.without_faults.found.clone();
        without.extend(self.with_actions_no_fault.iter().cloned());
        let mut files = refs.without_faults.files.clone();
        files.extend(self.with_actions_files.iter().cloned());
        summary.fault_free(&without, &files);
        summary.sequences = tracks.iter().skip(1).map(|t| t.row()).collect();
        self.shared.out.write_summary(&summary)?;
        self.progress.say(&summary.terminal(&self.shared.cfg.out));
        if *self.shared.stop.borrow() {
            anyhow::bail!(
                "interrupted (SIGINT or SIGTERM): the summary holds the trials that finished"
            );
        }
        Ok(if findings.is_empty() && without.is_empty() {
            Verdict::Clean
        } else {
            Verdict::Found
        })
    }

    /// With `--shard`: keep this shard's plans (`shard.rs`), and say how many of the
    /// whole list they are.
    fn take_share(&self, plans: &mut Vec<Plan>) -> Option<shard::Record> {
        let s = self.shared.cfg.shard?;
        let mut record = shard::Record::new(s, self.shared.cfg.seed);
        record.plans = plans.len();
        record.plan_digest = shard::digest(plans);
        s.retain(plans, None);
        record.taken = plans.len();
        self.progress.say(&format!(
            "explore: shard {s}: {} of the {} plans are this shard's (each sequence of actions' plans are shared out the same way)",
            record.taken, record.plans
        ));
        Some(record)
    }

    fn plan_options(&self) -> plan::Options {
        plan::Options {
            long_window: self.shared.cfg.long_window,
        }
    }

    /// What the references say about the plans.
    fn say_plans(&self, refs: &reference::References, plans: &[Plan], ranks: [usize; 3]) {
        self.progress.say(&format!(
            "explore: reference runs quiet after {:.1}s; {} anchors, {} plans; trials end after {} of quiet (the controller's longest gap between writes: {}){}",
            refs.seconds,
            refs.reference.anchors.len(),
            plans.len(),
            humantime::format_duration(Duration::from_millis(refs.trial_quiet.as_millis() as u64)),
            humantime::format_duration(Duration::from_millis(refs.longest_gap.as_millis() as u64)),
            self.shared
                .cfg
                .oracles
                .convergence
                .as_ref()
                .map(|c| format!(
                    " once everything is Current, or {} after the last window (--settle)",
                    humantime::format_duration(c.settle.0)
                ))
                .unwrap_or_default(),
        ));
        self.progress.say(&format!(
            "explore: focus{} {}: {} plans on it, {} near it, {} elsewhere (tried in that order)",
            if refs.focus.explicit {
                " (--focus)"
            } else {
                ""
            },
            refs.focus.describe(),
            ranks[0],
            ranks[1],
            ranks[2],
        ));
        if !refs.others.is_empty() {
            // Whose: each controller's anchors (anyone's writes) and plans aimed at it.
            let each: Vec<String> = std::iter::once(&refs.reference)
                .chain(&refs.others)
                .map(|r| {
                    let writes = refs
                        .reference
                        .anchors
                        .iter()
                        .filter(|a| a.client == r.controller)
                        .count();
                    let aimed = plans
                        .iter()
                        .filter(|p| p.windows.iter().any(|w| w.client == r.controller))
                        .count();
                    format!(
                        "{}: {writes} anchors of its own, {aimed} plans aimed at it",
                        r.controller
                    )
                })
                .collect();
            self.progress.say(&format!(
                "explore: controllers under test — {}",
                each.join("; ")
            ));
        }
        self.progress.say(&format!(
            "explore: on the focus, {}{}",
            focus::Focus::rounds(plans),
            if plans.iter().any(|p| p.round == 2) {
                " (round 2: the long freezes, --long-window)"
            } else {
                ""
            }
        ));
    }

    /// `--time` is up, or explore was interrupted: no new trial starts.
    fn out_of_time(&self) -> bool {
        *self.shared.stop.borrow()
            || self
                .shared
                .cfg
                .time
                .is_some_and(|t| self.shared.started.elapsed() >= t)
    }

    fn found_so_far(&self, t: &Trial) -> usize {
        let mut sigs: Vec<Vec<String>> = self
            .trials
            .iter()
            .chain(std::iter::once(t))
            .filter(|t| t.verdict == TrialVerdict::Fail)
            .map(|t| judge::signatures(&t.found))
            .collect();
        sigs.sort();
        sigs.dedup();
        sigs.len()
    }

    /// Failing trials with the same signatures are one finding; its plan is the simplest.
    fn group(&self) -> Vec<Finding> {
        let mut groups: Vec<(Vec<String>, Vec<&Trial>)> = Vec::new();
        for t in self
            .trials
            .iter()
            .filter(|t| t.verdict == TrialVerdict::Fail)
        {
            let sig = judge::signatures(&t.found);
            match groups.iter_mut().find(|(s, _)| *s == sig) {
                Some((_, ts)) => ts.push(t),
                None => groups.push((sig, vec![t])),
            }
        }
        groups
            .into_iter()
            .enumerate()
            .map(|(i, (signatures, ts))| {
                // Simplest: fewest windows, then the earliest round (plans are ordered
                // likeliest and plainest first), then the first tried.
                let best = ts
                    .iter()
                    .min_by_key(|t| (t.schedule.windows.len(), t.round, t.id))
                    .copied()
                    .unwrap_or(ts[0]);
                Finding {
                    number: i + 1,
                    title: best.found[0].message.clone(),
                    signatures,
                    found: best.found.clone(),
                    plan: best.plan.clone(),
                    actions: best.actions.clone(),
                    trial: best.id,
                    trials: ts.iter().map(|t| t.id).collect(),
                    schedule_file: String::new(),
                    workload: vec![],
                    reproduce: vec![],
                    run_exits_1: false,
                    files: best.files.clone(),
                    first_seen: ts.iter().map(|t| t.at).fold(f64::MAX, f64::min),
                    replayed: None,
                    shrunk: false,
                }
            })
            .collect()
    }
}
