//! Shrinking a finding: the simplest plan that still shows it. Windows the finding does
//! not need are dropped, then each window's duration is bisected — `--shrink-steps`
//! trials per window, rounded to 10 ms — keeping the shortest that still fails with the
//! finding's first signature.

use std::time::Duration;

use anyhow::Result;

use super::judge;
use super::plan::Plan;
use super::record::{Finding, Trial};
use super::reference::References;
use super::state::{Job, Search};
use crate::schedule::Schedule;

impl Search {
    /// Make a finding's plan as small as it goes: windows it does not need dropped, then
    /// each window's duration bisected (at most `--shrink-steps` trials per window).
    /// Returns whether it went as far as that (`Finding::shrunk`): not with
    /// `--shrink-steps 0`, nor when `--time` or a signal cut it short.
    pub(super) async fn shrink(
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

    /// Run a finding's reproducer again, `--replay` times, before it is reported: one
    /// that never comes back is still reported, called flaky, with how often it came
    /// back (a finding is a claim about the controller, and a claim its own reproducer
    /// does not back is worth less).
    pub(super) async fn replay(
        &mut self,
        f: &mut Finding,
        refs: &References,
        next_id: &mut usize,
    ) -> Result<()> {
        let Some(best) = self.trials.iter().find(|t| t.id == f.trial).cloned() else {
            return Ok(());
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
        if tried > 0 {
            f.replayed = Some(super::record::Replayed {
                came_back: back,
                of: tried,
            });
            if back == 0 {
                f.title = format!(
                    "{} (flaky: its reproducer came back 0 of {tried} times)",
                    f.title
                );
            }
        }
        Ok(())
    }

    /// Run `schedule` for finding `f`: whether it still fails with the finding's first
    /// signature (the finding then takes that trial as its reproducer).
    async fn still_fails(
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
