//! A control run: the same setup and actions with no fault at all, for a finding every
//! trial of its track showed whatever its fault.
//!
//! A finding is a claim that a fault made the controller end otherwise than its fault-free
//! references. When every trial of a sequence fails the same way under faults of three
//! or more kinds — a freeze, a restart, a coalesce — the likelier claim is that the
//! references were not what that sequence leads to (they ended too early, or were judged
//! by other expectations), and any trial would show it. One more run with no fault at all,
//! judged as the trials are, tells the two apart: if it fails the same way, the finding
//! is the references', reported as what the controller does without any fault, not as a
//! fault's.

use anyhow::Result;

use super::state::{Job, Search};
use super::tracks::{State, Track};
use crate::explore::judge::Found;
use crate::explore::plan::Plan;
use crate::explore::record::{Finding, TrialVerdict};
use crate::schedule::Schedule;

/// How many kinds of fault a finding's trials must span, all of its track's trials
/// failing with it, before a control run is made.
const KINDS: usize = 3;

impl Search {
    /// Run a control for each finding that every trial of its track showed under faults
    /// of [`KINDS`] or more kinds; drop those the control shows too (each becomes a
    /// no-fault finding of its track, said and kept in the summary).
    pub(super) async fn control(
        &mut self,
        findings: &mut Vec<Finding>,
        tracks: &[Track],
        next_id: &mut usize,
    ) -> Result<()> {
        let mut kept = Vec::new();
        for f in std::mem::take(findings) {
            if self.out_of_time() || !self.needs_control(&f) {
                kept.push(f);
                continue;
            }
            let Some(track) = self.track_of_trial(f.trial, tracks) else {
                kept.push(f);
                continue;
            };
            match self.control_run(&f, track, next_id).await? {
                Some(found) => {
                    self.progress.say(&format!(
                        "explore: FAIL without any fault: {}",
                        found.message
                    ));
                    self.with_actions_no_fault.push(found);
                }
                None => kept.push(f),
            }
        }
        for (i, f) in kept.iter_mut().enumerate() {
            f.number = i + 1;
        }
        *findings = kept;
        Ok(())
    }

    /// Whether every planned trial of `f`'s track failed with it, under faults of
    /// [`KINDS`] or more kinds.
    fn needs_control(&self, f: &Finding) -> bool {
        let Some(track) = self
            .trials
            .iter()
            .find(|t| t.id == f.trial)
            .map(|t| t.track)
        else {
            return false;
        };
        let planned: Vec<&crate::explore::record::Trial> = self
            .trials
            .iter()
            .filter(|t| t.track == track && t.shrinking.is_none())
            .collect();
        let all_fail = !planned.is_empty()
            && planned.iter().all(|t| {
                t.verdict == TrialVerdict::Fail
                    && crate::explore::judge::signatures(&t.found) == f.signatures
            });
        let mut kinds: Vec<&str> = planned
            .iter()
            .flat_map(|t| t.schedule.windows.iter().map(|w| w.fault.name()))
            .collect();
        kinds.sort();
        kinds.dedup();
        all_fail && kinds.len() >= KINDS
    }

    fn track_of_trial<'t>(&self, trial: usize, tracks: &'t [Track]) -> Option<&'t Track> {
        let number = self.trials.iter().find(|t| t.id == trial)?.track;
        tracks.iter().find(|t| t.number == number)
    }

    /// One run of `track` with no fault, judged as its trials are: what `f` found, as a
    /// no-fault finding, if the control shows it too.
    async fn control_run(
        &mut self,
        f: &Finding,
        track: &Track,
        next_id: &mut usize,
    ) -> Result<Option<Found>> {
        let State::Ready(refs) = &track.state else {
            return Ok(None);
        };
        let id = *next_id;
        *next_id += 1;
        let label = format!("no fault (a control run for finding {})", f.number);
        let job = Job {
            id,
            plan: Plan {
                label: label.clone(),
                slug: "control".into(),
                round: 0,
                windows: vec![],
                anchor: String::new(),
                targets: vec![],
                rank: 0,
                phase: 0,
            },
            track: track.number,
            actions: track.label(),
            workload: track.workload.clone(),
            shrinking: Some(f.number),
            schedule: Schedule {
                windows: vec![],
                ..track.base.clone()
            },
            quiet: refs.trial_quiet,
        };
        let t = self
            .shared
            .clone()
            .trial(job, refs.hint.clone(), refs.baseline.clone())
            .await?;
        self.progress.trial(&t, self.found_so_far(&t));
        let shown = t
            .found
            .iter()
            .find(|x| f.signatures.contains(&x.signature))
            .cloned();
        self.trials.push(t);
        Ok(shown.map(|mut x| {
            x.message = format!(
                "{}{}: every one of its {} trials showed it, whatever the fault, and so did a run with no fault at all (trial {id}) — not a fault's doing: without faults it ends this way too, though its two fault-free references did not",
                track
                    .label()
                    .map(|l| format!("after {l} (no fault): "))
                    .unwrap_or_else(|| "no fault: ".into()),
                x.message,
                f.trials.len(),
            );
            x
        }))
    }
}
