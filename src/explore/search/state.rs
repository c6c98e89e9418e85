//! The state of a search (`Search`) and what its trials share (`Shared`): one trial run
//! and judged (`Shared::trial`), and the search's clock and counts. The files that make
//! up the search — references, tracks, shrinking — each add an `impl Search` on top of
//! this; `mod.rs` runs them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::progress::Progress;
use crate::explore::config::{Config, windows_span};
use crate::explore::judge::{self, Baseline, Found};
use crate::explore::plan::{self, Plan};
use crate::explore::record::{Trial, TrialPhases, TrialVerdict};
use crate::explore::{effect, output};
use crate::schedule::Schedule;
use crate::session::{self, End, Outcome, TraceTo};

/// What trials running side by side share.
pub(super) struct Shared {
    /// True once SIGINT or SIGTERM arrived: runs end, no new trial starts.
    pub(super) stop: tokio::sync::watch::Receiver<bool>,
    pub(super) cfg: Config,
    pub(super) started: Instant,
    pub(super) out: output::Out,
    /// The longest a trial may go without going quiet (`--max-run`, or twice what the
    /// references took if that is longer: set once they have run).
    pub(super) max_run: std::sync::Mutex<Duration>,
    /// The longest leader-election Lease a controller under test held in the references
    /// (`reference::longest_lease`): a restarted one waits that long before it works.
    pub(super) longest_lease: std::sync::Mutex<Option<Duration>>,
    /// The setup alone made the controller write (track 0's references): a sequence's
    /// first step waits for its first write, as in the references (`session::Options::
    /// first_step_after_a_write`).
    pub(super) setup_written: std::sync::atomic::AtomicBool,
}

/// The state of a search.
pub(super) struct Search {
    pub(super) shared: Arc<Shared>,
    pub(super) trials: Vec<Trial>,
    pub(super) progress: Progress,
    /// Trials started for plans (not shrinking or replaying): what `--budget` counts.
    pub(super) planned_trials: usize,
    /// (sequence class, plan) already tried: the same plan for an equivalent sequence
    /// is skipped.
    pub(super) tried: std::collections::BTreeSet<(String, String)>,
    /// What the oracles found with actions and no fault (each a finding in itself).
    pub(super) with_actions_no_fault: Vec<Found>,
    pub(super) with_actions_files: Vec<String>,
    /// What the references showed about the setup's resources (`FaultFree::advisories`).
    pub(super) advisories: Vec<Found>,
}

/// What one trial is given.
pub(super) struct Job {
    pub(super) id: usize,
    pub(super) plan: Plan,
    /// Which sequence of actions (0: none), its label and the workload steps to run.
    pub(super) track: usize,
    pub(super) actions: Option<String>,
    pub(super) workload: Vec<String>,
    pub(super) shrinking: Option<usize>,
    pub(super) schedule: Schedule,
    /// How long it must be quiet before it is judged.
    pub(super) quiet: Duration,
}

impl Shared {
    pub(super) fn max_run(&self) -> Duration {
        *self.max_run.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Whether a run of `workload` waits for the controller's first write before its
    /// first step.
    pub(super) fn waits_for_a_write(&self, workload: &[String]) -> bool {
        crate::explore::config::waits_for_a_write(workload, self.setup_written())
    }

    /// Whether the setup alone made the controller write (track 0's references).
    pub(super) fn setup_written(&self) -> bool {
        self.setup_written
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(super) fn options(
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
        // Nor is the Lease a killed controller's successor must wait out before it can
        // work (Karpenter: 17 s after a restart that came late in a sequence's run).
        let restarts = schedule
            .windows
            .iter()
            .filter(|w| w.fault.name() == "restart")
            .count() as u32;
        let leases = self
            .longest_lease
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unwrap_or_default()
            * restarts;
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
                max_run: self.max_run().max(recovery) + windows + leases,
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

    pub(super) async fn one(&self, o: session::Options) -> Result<Outcome> {
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
    pub(super) fn jobs(&self) -> usize {
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
    pub(super) fn end_state_check(
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
                let judged = reference.judged.in_snapshot(snapshot);
                judge::end_state_differences(&reference, snapshot, &judged).is_empty()
            }),
            settle,
        }
    }

    /// Run one trial and judge it; failing trials' traces and reports are kept.
    pub(super) async fn trial(
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
        if !job.workload.is_empty() {
            files.push(format!("logs/{name}.{}.log", session::WORKLOAD));
        }
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
    pub(super) fn elapsed(&self) -> f64 {
        self.shared.started.elapsed().as_secs_f64()
    }

    pub(super) fn plan_options(&self) -> plan::Options {
        plan::Options {
            long_window: self.shared.cfg.long_window,
        }
    }

    /// `--time` is up, or explore was interrupted: no new trial starts.
    pub(super) fn out_of_time(&self) -> bool {
        *self.shared.stop.borrow()
            || self
                .shared
                .cfg
                .time
                .is_some_and(|t| self.shared.started.elapsed() >= t)
    }

    pub(super) fn found_so_far(&self, t: &Trial) -> usize {
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
}
