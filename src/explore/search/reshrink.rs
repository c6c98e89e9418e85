//! `explore --shrink DIR`: shrinking done once, after the merge, for the findings no
//! shard shrank.
//!
//! ```text
//!  DIR/summary.json (an explore's or a merge's) ─► checked: same --seed
//!    ─► nothing unshrunk? said, and nothing runs
//!  copied into --out (DIR is never written) ─► the references, run again
//!  each finding not shrunk (`Finding::shrunk`): its trial's sequence of actions
//!    (references run when first needed) ─► shrunk, replayed (unless it was) as the
//!    search does ─► its reproducer written again; the other findings kept as they are
//! ```
//!
//! **Why a run of its own, not part of `explore merge`.** Shrinking runs trials: it
//! needs the controller, the setup and an upstream, which a merge does not have (in a
//! Job's flow the controller is in the image, and `explore gather` runs on the user's
//! machine). A shard shrinks what it finds where its controller is, so this is for what
//! none of them shrank: a shard cut short by `--time` or a signal, or shards told not
//! to (`--shrink-steps 0 --replay 0`), so that a bug several shards find is shrunk once
//! rather than by each.
//!
//! The trials it runs are judged against references of its own, as a shard's are
//! against its own: it is one more explore with the same flags, whose plans are the
//! findings' reproducers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};

use super::reference::References;
use super::state::Search;
use super::tracks::{State, Track};
use crate::explore::config::{Config, Verdict};
use crate::explore::output::{Out, Summary};
use crate::explore::record::Finding;

/// The output whose findings are to be shrunk.
pub(super) struct Earlier {
    dir: PathBuf,
    summary: Summary,
}

impl Earlier {
    /// Read `dir` and check it is this explore's: the same seed, and not the directory
    /// the result goes to.
    pub fn read(dir: &Path, cfg: &Config) -> Result<Earlier> {
        let summary = crate::explore::shards::merge::Input::read(dir)
            .with_context(|| format!("--shrink {}", dir.display()))?
            .summary;
        if crate::explore::shards::merge::same_dir(dir, &cfg.out) {
            bail!(
                "--shrink {0} --out {0}: the shrunk findings go to another directory (--out), so that nothing in {0} is lost",
                dir.display()
            );
        }
        if let Some(seed) = summary.seed.or(summary.shard.as_ref().map(|s| s.seed))
            && seed != cfg.seed
        {
            bail!(
                "--shrink {}: it explored with --seed {seed}, not {}: give the same flags as its explore (the seed makes the actions and their labels)",
                dir.display(),
                cfg.seed
            );
        }
        Ok(Earlier {
            dir: dir.to_path_buf(),
            summary,
        })
    }

    /// The numbers of its findings no one shrank.
    pub fn unshrunk(&self) -> Vec<usize> {
        self.summary
            .findings
            .iter()
            .filter(|f| !f.shrunk)
            .map(|f| f.number)
            .collect()
    }

    /// Its verdict, when nothing is left to shrink.
    pub fn verdict(&self) -> Verdict {
        if self.summary.verdict == crate::explore::output::SummaryVerdict::Clean {
            Verdict::Clean
        } else {
            Verdict::Found
        }
    }

    /// A note when the controller command is not the one it explored: in a Job's flow
    /// the controller was the image's (`/manager`) and is a local build here, so that is
    /// no error; but a different controller makes the shrinking say nothing.
    pub fn other_command(&self, cfg: &Config) -> Option<String> {
        (self.summary.controller != cfg.controller).then(|| {
            format!(
                "explore: --shrink {}: it explored {}; shrinking with {}: if that is not the same controller, its findings will not come back",
                self.dir.display(),
                crate::explore::shell::shell_line(&self.summary.controller),
                crate::explore::shell::shell_line(&cfg.controller),
            )
        })
    }

    /// What it says when there is nothing to run.
    pub fn nothing_to_shrink(&self) -> String {
        format!(
            "explore: --shrink {}: {}: nothing to run",
            self.dir.display(),
            match self.summary.findings.len() {
                0 => "it has no finding".to_string(),
                1 => "its finding was shrunk already".to_string(),
                n => format!("its {n} findings were shrunk already"),
            }
        )
    }

    /// Every file its summary lists, copied into `out` under the same names: the trials'
    /// files are the shrinking's starting point, the findings' are kept for those that
    /// are not shrunk again. A file a shard's archive left out is listed still, but
    /// cannot be copied.
    pub fn copy_into(&self, out: &Out) -> Result<()> {
        let s = &self.summary;
        let files = s
            .trials
            .iter()
            .flat_map(|t| &t.files)
            .chain(s.findings.iter().flat_map(|f| &f.files))
            .chain(&s.reference_files);
        for f in files {
            let from = self.dir.join(f);
            if !from.is_file() {
                continue;
            }
            let to = out.root.join(f);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::copy(&from, &to)
                .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        }
        Ok(())
    }
}

impl Search {
    /// Shrink (and replay) the findings of `e` no one shrank; write the whole output
    /// again, into `--out`.
    pub(super) async fn shrink_earlier(&mut self, e: Earlier) -> Result<Verdict> {
        let numbers = e.unshrunk();
        if let Some(note) = e.other_command(&self.shared.cfg) {
            self.progress.say(&note);
        }
        self.progress.say(&format!(
            "explore: --shrink {}: finding{} {} not shrunk; first, 2 fault-free reference runs to judge the shrinking against",
            e.dir.display(),
            if numbers.len() == 1 { "" } else { "s" },
            numbers
                .iter()
                .map(|n| format!("#{n}"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
        let Some((base, refs)) = self.learn_references().await? else {
            bail!(
                "the controller now fails without any fault in its reference runs (their output is in {}/logs): a finding cannot be told from that, so none is shrunk",
                self.shared.out.root.display()
            );
        };
        let refs: Arc<References> = Arc::from(refs);
        let sequences = self.sequences(&refs)?;
        let mut tracks = Track::all(&self.shared.cfg, &base, refs.clone(), vec![], sequences);
        let mut summary = e.summary;
        self.trials = summary.trials.clone();
        let before = self.trials.len();
        let mut next_id = self.trials.iter().map(|t| t.id).max().unwrap_or(0) + 1;
        let mut findings = std::mem::take(&mut summary.findings);
        let mut shrunk_here = Vec::new();
        for f in findings.iter_mut().filter(|f| !f.shrunk) {
            if self.out_of_time() {
                break;
            }
            let Some(track) = self.track_of(f, &mut tracks, &refs).await? else {
                continue;
            };
            let State::Ready(tr) = tracks[track].state.clone() else {
                continue;
            };
            let tb = tracks[track].base.clone();
            let replay = f.replayed.is_none();
            self.shrink_and_replay(f, &tb, &tr, &mut next_id, replay)
                .await?;
            shrunk_here.push(f.number);
        }
        self.write_shrunk(summary, findings, &shrunk_here, before)
    }

    /// The output again: the findings shrunk here with their reproducers written again,
    /// from the trial that shows each now (the rest as they were written), and the trials
    /// run here after the earlier ones.
    fn write_shrunk(
        &mut self,
        mut summary: Summary,
        findings: Vec<Finding>,
        shrunk_here: &[usize],
        before: usize,
    ) -> Result<Verdict> {
        let (again, kept): (Vec<Finding>, Vec<Finding>) = findings
            .into_iter()
            .partition(|f| shrunk_here.contains(&f.number));
        let mut findings = self.shared.out.write_findings(
            &self.shared.cfg,
            self.shared.setup_written(),
            again,
            &self.trials,
            self.shared.max_run(),
            &summary.advisories,
        )?;
        findings.extend(kept);
        findings.sort_by_key(|f| f.number);
        summary.findings = findings;
        summary.trials_run += self.trials.len() - before;
        summary.trials = std::mem::take(&mut self.trials);
        summary.seconds += self.elapsed();
        summary.trials_per_minute =
            crate::explore::output::per_minute(summary.trials_run, summary.seconds);
        self.shared.out.write_summary(&summary)?;
        let ran = summary.trials.len() - before;
        self.progress.say(&format!(
            "explore: --shrink: {} finding{} shrunk here, {ran} trial{} run\n{}",
            shrunk_here.len(),
            if shrunk_here.len() == 1 { "" } else { "s" },
            if ran == 1 { "" } else { "s" },
            summary.terminal(&self.shared.cfg.out)
        ));
        if *self.shared.stop.borrow() {
            bail!("interrupted (SIGINT or SIGTERM): the summary holds what was shrunk so far");
        }
        Ok(Verdict::Found)
    }

    /// The track of finding `f`'s trial (its sequence of actions, by label), with its
    /// references run if they have not been, and the trial given what the summary does
    /// not keep of it (its track, workload steps and quiet); `None` (said) when this
    /// explore has no such sequence or it cannot be searched.
    async fn track_of(
        &mut self,
        f: &Finding,
        tracks: &mut [Track],
        first: &References,
    ) -> Result<Option<usize>> {
        let Some(actions) = self
            .trials
            .iter()
            .find(|t| t.id == f.trial)
            .map(|t| t.actions.clone())
        else {
            self.progress.say(&format!(
                "explore: finding #{}: its trial {} is not in the summary: not shrunk",
                f.number, f.trial
            ));
            return Ok(None);
        };
        let Some(i) = tracks.iter().position(|t| t.label() == actions) else {
            self.progress.say(&format!(
                "explore: finding #{}: it was found after actions {:?}, which this explore does not have (give the flags its explore had: --actions, --setup, --seed): not shrunk",
                f.number,
                actions.unwrap_or_default()
            ));
            return Ok(None);
        };
        if matches!(tracks[i].state, State::Pending) {
            self.track_references(&mut tracks[i], first).await?;
        }
        let quiet = match &tracks[i].state {
            State::Ready(r) => r.trial_quiet,
            State::Dropped(why) => {
                self.progress.say(&format!(
                    "explore: finding #{}: its actions cannot be searched now ({why}): not shrunk",
                    f.number
                ));
                return Ok(None);
            }
            State::Pending => return Ok(None),
        };
        if let Some(t) = self.trials.iter_mut().find(|t| t.id == f.trial) {
            t.track = i;
            t.workload = tracks[i].workload.clone();
            t.quiet = quiet;
        }
        Ok(Some(i))
    }
}
