//! Shrinking a finding: the simplest plan that still shows it. Windows the finding does
//! not need are dropped, then each window's duration is bisected — `--shrink-steps`
//! candidates per window, rounded to 10 ms — keeping the shortest that still fails with
//! the finding's first signature.
//!
//! A timing-sensitive bug fails some runs of a plan and not others. A step is kept only
//! when its candidate fails every time it is tried, at least [`CONFIRMATIONS`] times: a
//! candidate that failed once by luck would leave a reproducer that does not come back.
//! And a finding whose shrunk reproducer does not come back when replayed is replayed as
//! it was found before it may be called flaky (`shrink_and_replay`).

use std::time::Duration;

use anyhow::Result;

use super::reference::References;
use super::state::{Job, Search};
use crate::explore::judge;
use crate::explore::plan::Plan;
use crate::explore::record::{Finding, Replayed, Tally, Trial};
use crate::schedule::Schedule;

/// How many times a shrinking candidate must fail, every time, to be kept.
pub const CONFIRMATIONS: usize = 2;

impl Search {
    /// Shrink finding `f` (`shrink`) and replay its reproducer (`replay`, unless it was
    /// replayed already and `replayed_before` says to keep that). When the shrunk
    /// reproducer never comes back, the plan as found is replayed too: one that does
    /// come back is the finding's reproducer again, and the finding says how often each
    /// came back. Only a finding neither comes back for is called flaky.
    pub(super) async fn shrink_and_replay(
        &mut self,
        f: &mut Finding,
        base: &Schedule,
        refs: &References,
        next_id: &mut usize,
        replay: bool,
    ) -> Result<()> {
        let as_found = f.clone();
        f.shrunk = self.shrink(f, base, refs, next_id).await?;
        if !replay {
            return Ok(());
        }
        let Some(shrunk) = self.replay(f, refs, next_id).await? else {
            return Ok(());
        };
        if shrunk.came_back > 0 || f.trial == as_found.trial {
            return self.conclude(f, shrunk);
        }
        let mut unshrunk = as_found;
        let Some(mut r) = self.replay(&mut unshrunk, refs, next_id).await? else {
            return self.conclude(f, shrunk);
        };
        r.shrunk = Some(Tally {
            came_back: shrunk.came_back,
            of: shrunk.of,
        });
        if r.came_back > 0 {
            // The plan as found is the reproducer that backs the claim.
            f.trial = unshrunk.trial;
            f.found = unshrunk.found;
            f.files = unshrunk.files;
            f.signatures = unshrunk.signatures;
        }
        self.conclude(f, r)
    }

    /// Record how the replays went, and call a finding none came back for flaky.
    fn conclude(&self, f: &mut Finding, r: Replayed) -> Result<()> {
        if r.flaky() {
            f.title = format!("{} (flaky: its reproducer {})", f.title, r.describe());
        }
        f.replayed = Some(r);
        Ok(())
    }

    /// Make a finding's plan as small as it goes: windows it does not need dropped, then
    /// each window's duration bisected (at most `--shrink-steps` trials per window).
    /// Returns whether it went as far as that (`Finding::shrunk`): not with
    /// `--shrink-steps 0`, nor when `--time` or a signal cut it short.
    async fn shrink(
        &mut self,
        f: &mut Finding,
        base: &Schedule,
        refs: &References,
        next_id: &mut usize,
    ) -> Result<bool> {
        let Some(best) = self.trials.iter().find(|t| t.id == f.trial).cloned() else {
            return Ok(false);
        };
        if self.shared.cfg.shrink_steps == 0 {
            return Ok(false);
        }
        let mut s = Shrinking {
            key: f.signatures[0].clone(),
            windows: best.schedule.windows.clone(),
            base,
            refs,
            best: &best,
        };
        self.drop_windows(f, &mut s, next_id).await?;
        for w in 0..s.windows.len() {
            if !self.bisect(f, &mut s, w, next_id).await? {
                return Ok(false);
            }
        }
        Ok(!self.out_of_time())
    }

    /// Drop the windows the finding does not need, one at a time.
    async fn drop_windows(
        &mut self,
        f: &mut Finding,
        s: &mut Shrinking<'_>,
        next_id: &mut usize,
    ) -> Result<()> {
        let (mut i, mut tries) = (0, 0);
        // Out of time or interrupted: no new trial starts (the finding keeps the simplest
        // plan found so far).
        while s.windows.len() > 1
            && i < s.windows.len()
            && tries < self.shared.cfg.shrink_steps
            && !self.out_of_time()
        {
            let mut fewer = s.windows.clone();
            fewer.remove(i);
            let candidate = s.with(fewer.clone());
            if !candidate.check("shrink").is_empty() {
                i += 1;
                continue;
            }
            tries += 1;
            if self.still_fails(f, candidate, s, next_id).await? {
                s.windows = fewer;
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Bisect window `w`'s duration: the shortest that still fails, to 10 ms. Returns
    /// false when out of time.
    async fn bisect(
        &mut self,
        f: &mut Finding,
        s: &mut Shrinking<'_>,
        w: usize,
        next_id: &mut usize,
    ) -> Result<bool> {
        let Some(d) = s.windows[w].duration.map(|d| d.0) else {
            return Ok(true);
        };
        // Restarts and relists act when they open: their length is not the cause.
        if s.windows[w].fault.behaviour().needs_process()
            || matches!(s.windows[w].fault, crate::fault::Fault::Relist(_))
        {
            return Ok(true);
        }
        let (mut lo, mut hi) = (Duration::ZERO, d);
        for _ in 0..self.shared.cfg.shrink_steps {
            if self.out_of_time() {
                return Ok(false);
            }
            let mid = round10((lo + hi) / 2);
            if mid <= lo || mid >= hi {
                break;
            }
            let mut shorter = s.windows.clone();
            shorter[w].duration = Some(crate::k8s::duration::GoDuration(mid));
            let candidate = s.with(shorter.clone());
            if self.still_fails(f, candidate, s, next_id).await? {
                hi = mid;
                s.windows = shorter;
            } else {
                lo = mid;
            }
        }
        Ok(true)
    }

    /// Run a finding's reproducer (the schedule of its trial) again, `--replay` times:
    /// how often it came back. None when it was not run (`--replay 0`, out of time).
    async fn replay(
        &mut self,
        f: &mut Finding,
        refs: &References,
        next_id: &mut usize,
    ) -> Result<Option<Replayed>> {
        let Some(best) = self.trials.iter().find(|t| t.id == f.trial).cloned() else {
            return Ok(None);
        };
        let key = f.signatures[0].clone();
        let (mut tried, mut back) = (0, 0);
        for _ in 0..self.shared.cfg.replay {
            if self.out_of_time() {
                break;
            }
            let job = follow_up(
                &best,
                format!("{} (replaying finding {})", best.plan, f.number),
                best.schedule.clone(),
                f.number,
                refs,
                next_id,
            );
            let t = self
                .shared
                .clone()
                .trial(job, refs.hint.clone(), refs.baseline.clone())
                .await?;
            tried += 1;
            if t.found.iter().any(|x| x.signature == key) {
                back += 1;
            }
            self.progress.trial(&t, self.found_so_far(&t));
            self.trials.push(t);
        }
        Ok((tried > 0).then_some(Replayed {
            came_back: back,
            of: tried,
            shrunk: None,
        }))
    }

    /// Run `schedule` for finding `f`, [`CONFIRMATIONS`] times unless one passes:
    /// whether it failed with the finding's first signature every time (the finding then
    /// takes the last of those trials as its reproducer).
    async fn still_fails(
        &mut self,
        f: &mut Finding,
        schedule: Schedule,
        s: &Shrinking<'_>,
        next_id: &mut usize,
    ) -> Result<bool> {
        for n in 0..CONFIRMATIONS {
            if n > 0 && self.out_of_time() {
                return Ok(false);
            }
            if !self.fails_once(f, schedule.clone(), s, next_id).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// One trial of a shrinking candidate: whether it failed with the finding's first
    /// signature (the finding then takes it as its reproducer).
    async fn fails_once(
        &mut self,
        f: &mut Finding,
        schedule: Schedule,
        s: &Shrinking<'_>,
        next_id: &mut usize,
    ) -> Result<bool> {
        let (key, refs, best) = (s.key.as_str(), s.refs, s.best);
        let job = follow_up(
            best,
            format!("{} (shrinking finding {})", best.plan, f.number),
            schedule,
            f.number,
            refs,
            next_id,
        );
        let t = self
            .shared
            .clone()
            .trial(job, refs.hint.clone(), refs.baseline.clone())
            .await?;
        let fails = t.found.iter().any(|x| x.signature == key);
        self.progress.trial(&t, self.found_so_far(&t));
        if fails {
            f.trial = t.id;
            f.found = t.found.clone();
            f.files = t.files.clone();
            f.signatures = judge::signatures(&t.found);
            if !f.signatures.iter().any(|s| s == key) {
                f.signatures.insert(0, key.to_string());
            }
            let pos = f.signatures.iter().position(|s| s == key).unwrap_or(0);
            f.signatures.swap(0, pos);
        }
        self.trials.push(t);
        Ok(fails)
    }
}

/// A finding being shrunk: its first signature, the windows it still needs, and what its
/// trials are made from and judged against.
struct Shrinking<'a> {
    key: String,
    windows: Vec<crate::schedule::Window>,
    base: &'a Schedule,
    refs: &'a References,
    best: &'a Trial,
}

impl Shrinking<'_> {
    /// The base schedule with these windows.
    fn with(&self, windows: Vec<crate::schedule::Window>) -> Schedule {
        Schedule {
            windows,
            ..self.base.clone()
        }
    }
}

/// A trial run for finding `number` after the search (a shrink or a replay): `best`'s
/// plan with `schedule`, under the next trial id.
fn follow_up(
    best: &Trial,
    label: String,
    schedule: Schedule,
    number: usize,
    refs: &References,
    next_id: &mut usize,
) -> Job {
    let id = *next_id;
    *next_id += 1;
    Job {
        id,
        plan: Plan {
            label,
            slug: best.slug.clone(),
            round: best.round,
            windows: schedule.windows.clone(),
            anchor: String::new(),
            targets: vec![],
            rank: best.rank,
            phase: 0,
        },
        track: best.track,
        actions: best.actions.clone(),
        workload: best.workload.clone(),
        shrinking: Some(number),
        schedule,
        quiet: refs.trial_quiet,
    }
}

fn round10(d: Duration) -> Duration {
    Duration::from_millis((d.as_millis() as u64).div_ceil(10) * 10)
}
