//! The search: a [`run`] of `stalemate explore`, from its references to its summary.
//!
//! ```text
//!  mod.rs        run: references, plans ranked and shared out, tracks, findings grouped,
//!                shrunk and replayed, the summary
//!  state.rs      Search (the state of one search) and Shared (what its trials share):
//!                one trial run and judged
//!  reference.rs  the two fault-free references and what they teach
//!  tracks.rs     the plans run, a track per sequence of user actions, in turns
//!  control.rs    a control run: the same actions, no fault, for a finding every trial
//!                of its track showed
//!  shrink.rs     a finding's plan made smaller, and replayed
//!  reshrink.rs   --shrink: an earlier explore's unshrunk findings
//!  progress.rs   what the terminal is told as it goes
//! ```
//!
//! Each of those adds an `impl Search`; only [`run`] leaves the folder.

mod control;
mod progress;
mod reference;
mod reshrink;
mod shrink;
mod state;
mod tracks;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::explore::config::{Config, Verdict, base_schedule};
use crate::explore::plan::Plan;
use crate::explore::record::{Finding, Trial, TrialVerdict};
use crate::explore::{focus, judge, output, shard};
use crate::schedule::Schedule;
use crate::session;
use progress::Progress;
use state::{Search, Shared};

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
        longest_lease: std::sync::Mutex::new(None),
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
        advisories: Vec::new(),
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

impl Search {
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
        *self
            .shared
            .longest_lease
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = reference::longest_lease(&refs);
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
        self.control(&mut findings, &tracks, &mut next_id).await?;
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
            self.shrink_and_replay(f, &tb, &tr, &mut next_id, true)
                .await?;
        }
        let findings = self.shared.out.write_findings(
            &self.shared.cfg,
            self.shared.setup_written(),
            findings,
            &self.trials,
            self.shared.max_run(),
            &self.advisories,
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
        summary.advisories = self.advisories.clone();
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
            "explore: the setup's plans on the focus, {}{}",
            focus::Focus::rounds(plans),
            if plans.iter().any(|p| p.round == 2) {
                " (round 2: the long freezes, --long-window)"
            } else {
                ""
            }
        ));
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
