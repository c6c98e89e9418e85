//! The two fault-free reference runs, and what explore learns from them before any
//! trial: that the controller started, wrote something, went quiet and does not fail on
//! its own; the baseline to compare trials with; and how long a trial must stay quiet
//! before it is judged.
//!
//! **Quiet, derived.** A controller waiting on a requeue timer is not idle. References
//! run with a generous quiet (twice `--quiet`, at least 5 s) so that the controller's
//! own rhythm shows in them; trials are then judged after `--quiet` or twice the longest
//! gap between two of the controller's writes in the references, whichever is longer.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Result;

use super::judge::{self, Baseline, Found};
use super::{Search, Verdict, output, plan};
use crate::request::Verb;
use crate::schedule::Schedule;
use crate::session::snapshot::{IGNORED, base_resource};
use crate::session::{CONTROLLER, Ended, Outcome, WORKLOAD};
use crate::trace::Record;

/// What the references give the search.
pub(super) struct References {
    pub seconds: f64,
    pub baseline: Arc<Baseline>,
    pub hint: crate::session::Extent,
    pub reference: plan::Reference,
    /// How long a trial must be quiet before it is judged.
    pub trial_quiet: Duration,
    /// The longest gap between two controller writes in the references.
    pub longest_gap: Duration,
    /// What the user cares about, for ranking plans.
    pub focus: super::focus::Focus,
}

/// How the references ended.
pub(super) enum Learnt {
    References(Box<References>),
    /// The controller fails without any fault: no search needed.
    FailsWithoutFaults,
}

/// The quiet the references run with.
pub fn reference_quiet(quiet: Duration) -> Duration {
    (quiet * 2).max(Duration::from_secs(5))
}

/// A controller write that is work (not a lease renewal or an Event).
fn is_work(client: &str, verb: &str, resource: &str) -> bool {
    client == CONTROLLER
        && Verb::from_name(verb).is_some_and(Verb::is_write)
        && !IGNORED.contains(&base_resource(resource))
}

/// Whether the controller did any work in a run.
fn wrote(o: &Outcome) -> bool {
    o.trace.iter().any(|s| {
        matches!(&s.record, Record::Request { client, verb, resource, .. } if is_work(client, verb, resource))
    })
}

/// The controller's own rhythm in a run: the longest gap between two of its work-like
/// writes (not leases or events) with nothing of the workload's between them. The wait
/// for the workload — the references let the controller go quiet before it starts — is
/// the run's rhythm, not the controller's, and would make every trial wait it out twice.
fn longest_gap(o: &Outcome) -> Duration {
    let mut longest = Duration::ZERO;
    let mut last: Option<SystemTime> = None;
    for s in &o.trace {
        let Record::Request {
            client,
            verb,
            resource,
            ..
        } = &s.record
        else {
            continue;
        };
        if client == WORKLOAD {
            last = None;
        } else if is_work(client, verb, resource) {
            if let Some(l) = last {
                longest = longest.max(s.at.duration_since(l).unwrap_or_default());
            }
            last = Some(s.at);
        }
    }
    longest
}

impl Search {
    /// Run the references, check them, and learn from them.
    pub(super) async fn references(&mut self, base: &Schedule) -> Result<Learnt> {
        let sh = self.shared.clone();
        let quiet = reference_quiet(sh.cfg.quiet);
        self.progress.say(&format!(
            "explore: 2 fault-free reference runs of {:?} (each until the controller has been quiet for {})",
            sh.cfg.controller,
            humantime::format_duration(quiet)
        ));
        let (oa, ob) = (
            sh.options(base.clone(), "reference-1", quiet)?,
            sh.options(base.clone(), "reference-2", quiet)?,
        );
        let (a, b) = if sh.jobs() >= 2 {
            let (a, b) = tokio::join!(sh.one(oa), sh.one(ob));
            (a?, b?)
        } else {
            let a = sh.one(oa).await?;
            if a.report.failed() || a.controller_failed.is_some() {
                (a.clone(), a)
            } else {
                let b = sh.one(ob).await?;
                (a, b)
            }
        };
        for (n, r) in [(1, &a), (2, &b)] {
            if self.fails_on_its_own(n, r)? {
                return Ok(Learnt::FailsWithoutFaults);
            }
        }
        let baseline = judge::baseline(&a, &b).map_err(|d| {
            anyhow::anyhow!(
                "the two fault-free reference runs disagree beyond masking: {}; explore cannot tell a fault's effect from the controller's own variation",
                d.0
            )
        })?;
        let mut hint = a.extent.clone();
        hint.resources.extend(b.extent.resources.iter().cloned());
        hint.namespaces.extend(b.extent.namespaces.iter().cloned());
        let gap = longest_gap(&a).max(longest_gap(&b));
        // A trial is cut (and called never quiet) past --max-run, or past twice what the
        // fault-free runs took if that is longer: a controller whose own work takes 40 s
        // is not stuck at 60 s because a fault made it take 50.
        let references = Duration::from_secs_f64(a.seconds.max(b.seconds));
        *sh.max_run.lock().unwrap_or_else(|p| p.into_inner()) = sh.cfg.max_run.max(references * 2);
        let focus = if sh.cfg.focus.is_empty() {
            let converge: Vec<String> = sh
                .cfg
                .oracles
                .convergence
                .as_ref()
                .map(|c| c.resources.clone())
                .unwrap_or_default();
            super::focus::Focus::derive(&a, &converge)
        } else {
            super::focus::Focus::named(&sh.cfg.focus)
        };
        Ok(Learnt::References(Box::new(References {
            seconds: a.seconds.max(b.seconds),
            baseline: Arc::new(baseline),
            hint,
            reference: plan::read(&a.trace, &a.setup),
            trial_quiet: sh
                .cfg
                .quiet
                .max(Duration::from_millis((gap * 2).as_millis() as u64)),
            longest_gap: gap,
            focus,
        })))
    }

    /// Whether reference run `n` shows the controller failing without any fault (then
    /// reported, `Ok(true)`); an error when it shows nothing can be explored.
    fn fails_on_its_own(&mut self, n: usize, r: &Outcome) -> Result<bool> {
        let log = self.shared.out.root.join(format!("logs/reference-{n}.log"));
        if let Some(why) = &r.controller_failed {
            anyhow::bail!(
                "the controller failed in fault-free reference run {n}: {why} (its output: {})",
                log.display()
            );
        }
        if r.report.failed() {
            let files = self.shared.out.write_run(&format!("reference-{n}"), r)?;
            let found: Vec<Found> = r
                .report
                .verdicts
                .violations
                .iter()
                .map(|v| Found {
                    oracle: v.oracle.clone(),
                    resource: v.resource.clone(),
                    namespace: v.namespace.clone(),
                    name: v.name.clone(),
                    message: format!("{}/{}: {}", v.namespace, v.name, v.rule),
                    signature: format!("{} {}", v.oracle, v.resource),
                    expect: None,
                })
                .collect();
            let summary = output::Summary::fails_without_faults(
                &self.shared.cfg,
                found.clone(),
                files,
                self.elapsed(),
            );
            self.shared.out.write_summary(&summary)?;
            self.progress.say(&format!(
                "explore: the controller fails without any fault (reference run {n}):"
            ));
            for f in &found {
                self.progress.say(&format!("  {}: {}", f.oracle, f.message));
            }
            return Ok(true);
        }
        if r.ended == Ended::MaxRun {
            anyhow::bail!(
                "the controller never went quiet in fault-free reference run {n} (still writing after {:.0}s): raise --max-run, or lower --quiet",
                r.seconds
            );
        }
        if !wrote(r) {
            anyhow::bail!(
                "nothing to perturb: the controller wrote nothing in fault-free reference run {n} — give a --setup that needs reconciling or a --workload that changes something (its output: {})",
                log.display()
            );
        }
        Ok(false)
    }
}

/// The verdict a search that stopped at the references gives.
pub(super) fn fails_without_faults() -> Verdict {
    Verdict::Found
}
