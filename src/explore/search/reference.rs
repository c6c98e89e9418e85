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

use super::state::Search;
use crate::explore::config::Verdict;
use crate::explore::judge::{self, Baseline, Found};
use crate::explore::{output, plan};
use crate::k8s::request::Verb;
use crate::oracle::OracleName;
use crate::schedule::Schedule;
use crate::session::snapshot::{IGNORED, base_resource};
use crate::session::{CONTROLLER, Ended, Outcome, WORKLOAD};
use crate::trace::Record;

/// What the references give the search.
pub(super) struct References {
    pub seconds: f64,
    pub baseline: Arc<Baseline>,
    pub hint: crate::session::Extent,
    /// What the reference run showed the controller after `--`…
    pub reference: plan::Reference,
    /// … and each other controller under test (`--controller NAME=CMD`), in order.
    pub others: Vec<plan::Reference>,
    /// How long a trial must be quiet before it is judged.
    pub trial_quiet: Duration,
    /// The longest gap between two controller writes in the references.
    pub longest_gap: Duration,
    /// What the user cares about, for ranking plans.
    pub focus: crate::explore::focus::Focus,
    /// What the oracles found in the references, with no fault.
    pub without_faults: FaultFree,
    /// Objects the controller owns at the end of the first reference run (their
    /// `ownerReferences` name one of the setup's): (resource, namespace, name).
    pub owned: Vec<(String, String, String)>,
    /// The condition types each object ended with in both reference runs: a trial's
    /// object is not Current without them (`ConvergenceConfig::conditions`).
    pub conditions: Vec<crate::oracle::ExpectedConditions>,
}

/// What a reference run showed controller `who`, with how long its Lease lasts.
fn view(a: &Outcome, who: &str) -> plan::Reference {
    let mut r = plan::read(&a.trace, &a.setup, who);
    r.lease_duration = a
        .leases
        .iter()
        .filter(|l| l.controller == who)
        .filter_map(|l| l.duration)
        .max();
    r
}

impl References {
    /// Every plan for every controller under test (`plan::plans_for_all`).
    pub fn plans(&self, opts: &plan::Options) -> Vec<plan::Plan> {
        let views: Vec<&plan::Reference> = std::iter::once(&self.reference)
            .chain(&self.others)
            .collect();
        plan::plans_for_all(&views, opts)
    }
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
    crate::explore::judge::under_test(client)
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
    /// Two fault-free runs of `schedule` with `workload`, side by side when the
    /// upstream allows (one alone when the first shows the controller failing). Each
    /// workload step starts after `before_steps` of quiet (default: the references'
    /// quiet): what trials wait, when it is known, so the controller's writes before a
    /// step — which plans count from the start of the run — are a trial's too.
    pub(super) async fn reference_pair(
        &mut self,
        base: &Schedule,
        workload: &[String],
        stem: &str,
        before_steps: Option<Duration>,
    ) -> Result<(Outcome, Outcome)> {
        let sh = self.shared.clone();
        let quiet = reference_quiet(sh.cfg.quiet);
        let options = |n: usize| -> Result<crate::session::Options> {
            let mut o = sh.options(base.clone(), &format!("{stem}-{n}"), quiet, workload)?;
            o.whole_quiet = true;
            if let Some(b) = before_steps {
                o.settle_before_workload = b;
            }
            Ok(o)
        };
        let (oa, ob) = (options(1)?, options(2)?);
        Ok(if sh.jobs() >= 2 {
            let (a, b) = tokio::join!(sh.one(oa), sh.one(ob));
            (a?, b?)
        } else {
            let a = sh.one(oa).await?;
            if a.controller_failed.is_some() {
                (a.clone(), a)
            } else {
                let b = sh.one(ob).await?;
                (a, b)
            }
        })
    }

    /// Run the references, check them, and learn from them.
    pub(super) async fn references(&mut self, base: &Schedule) -> Result<Learnt> {
        let sh = self.shared.clone();
        self.progress.say(&format!(
            "explore: 2 fault-free reference runs of {:?} (each until the controller has been quiet for {})",
            sh.cfg.controller,
            humantime::format_duration(reference_quiet(sh.cfg.quiet))
        ));
        let workload = sh.cfg.workload.clone();
        let (a, b) = self
            .reference_pair(base, &workload, "reference", None)
            .await?;
        self.workload_worked(&[&a, &b], "reference")?;
        // What the oracles find with no fault at all is reported once, and the search
        // goes on against the references as they are — unless the controller never went
        // quiet or wrote nothing, when no trial could be judged.
        let mut without = FaultFree::default();
        for (n, r) in [(1, &a), (2, &b)] {
            if r.report.failed() {
                without.add(
                    n,
                    r,
                    self.shared.out.write_run(&format!("reference-{n}"), r)?,
                );
            }
        }
        without.finish();
        for k in &without.failed {
            self.progress.say(&format!(
                "explore: {} {}/{} is Failed (kstatus) at the end of both reference runs: that is what trials are judged against",
                k.resource, k.namespace, k.name
            ));
        }
        self.say_advisories(&without.advisories);
        if !without.found.is_empty() {
            self.progress.say(&format!(
                "explore: the controller fails without any fault ({}):",
                without.runs()
            ));
            for f in &without.found {
                self.progress.say(&format!("  {}: {}", f.oracle, f.message));
            }
        }
        for (n, r) in [(1, &a), (2, &b)] {
            if let Err(e) = self.usable(n, r) {
                if without.found.is_empty() {
                    return Err(e);
                }
                self.progress.say(&format!("explore: no search: {e:#}"));
                // `--shrink`: the summary copied from the earlier output stays.
                if sh.cfg.shrink.is_none() {
                    let summary = output::Summary::fails_without_faults(
                        &self.shared.cfg,
                        without.found,
                        without.files,
                        self.elapsed(),
                    );
                    self.shared.out.write_summary(&summary)?;
                }
                return Ok(Learnt::FailsWithoutFaults);
            }
        }
        let focus = if sh.cfg.focus.is_empty() {
            let converge: Vec<String> = sh
                .cfg
                .oracles
                .convergence
                .as_ref()
                .map(|c| c.resources.clone())
                .unwrap_or_default();
            crate::explore::focus::Focus::derive(&a, &converge)
        } else {
            crate::explore::focus::Focus::named(&sh.cfg.focus)
        };
        let learnt = self.learn(&a, &b, without, focus).map_err(|d| {
            anyhow::anyhow!(
                "{d}; explore cannot tell a fault's effect from the controller's own variation"
            )
        })?;
        Ok(Learnt::References(Box::new(learnt)))
    }

    /// What two usable reference runs give a search: the baseline (or why they disagree
    /// too much to be one), the quiet and cut-off trials get.
    pub(super) fn learn(
        &self,
        a: &Outcome,
        b: &Outcome,
        without: FaultFree,
        focus: crate::explore::focus::Focus,
    ) -> std::result::Result<References, String> {
        let sh = &self.shared;
        let mut baseline = judge::baseline(a, b).map_err(|d| {
            format!(
                "the two fault-free reference runs disagree beyond masking: {}",
                d.0
            )
        })?;
        baseline.without_faults = without.keys.clone();
        let mut hint = a.extent.clone();
        hint.resources.extend(b.extent.resources.iter().cloned());
        hint.namespaces.extend(b.extent.namespaces.iter().cloned());
        let gap = longest_gap(a).max(longest_gap(b));
        // A trial is cut (and called never quiet) past --max-run, or past twice what the
        // fault-free runs took if that is longer: a controller whose own work takes 40 s
        // is not stuck at 60 s because a fault made it take 50.
        let references = Duration::from_secs_f64(a.seconds.max(b.seconds));
        {
            let mut m = sh.max_run.lock().unwrap_or_else(|p| p.into_inner());
            *m = (*m).max(sh.cfg.max_run.max(references * 2));
        }
        Ok(References {
            seconds: a.seconds.max(b.seconds),
            baseline: Arc::new(baseline),
            hint,
            reference: view(a, CONTROLLER),
            others: sh.cfg.others.iter().map(|o| view(a, &o.name)).collect(),
            trial_quiet: sh
                .cfg
                .quiet
                .max(Duration::from_millis((gap * 2).as_millis() as u64)),
            longest_gap: gap,
            focus,
            without_faults: without,
            owned: owned(a),
            conditions: end_conditions(a, b),
        })
    }

    /// Say what the references showed about the setup's resources (once: what an
    /// earlier pair of references said already is not said again), and keep it for the
    /// summary.
    pub(super) fn say_advisories(&mut self, advisories: &[Found]) {
        for a in advisories {
            if self.advisories.iter().any(|x| x.signature == a.signature) {
                continue;
            }
            self.progress.say(&format!(
                "explore: about the setup's resources (not a finding): {}: {} {}",
                a.oracle, a.resource, a.message
            ));
            self.advisories.push(a.clone());
        }
    }

    /// An error when the workload failed in a fault-free reference run: a search without
    /// the user's workload (a typo, a `kubectl` not on the PATH) searches something else
    /// than what the user asked for, and every trial would fail the same way.
    pub(super) fn workload_worked(&self, runs: &[&Outcome], stem: &str) -> Result<()> {
        for (n, r) in runs.iter().enumerate() {
            let Some(code) = r.workload_exit.filter(|c| *c != 0) else {
                continue;
            };
            let log = self
                .shared
                .out
                .root
                .join(format!("logs/{stem}-{}.log", n + 1));
            let log = crate::session::workload_log(&log);
            anyhow::bail!(
                "the workload failed in fault-free reference run {} (exit {code}{}): {}\n{}",
                n + 1,
                match code {
                    127 => ": a command not found",
                    126 => ": a command not executable",
                    _ => "",
                },
                log.display(),
                quote_tail(&log, 12)
            );
        }
        Ok(())
    }

    /// An error when reference run `n` shows nothing a search can judge: the controller
    /// failed, never went quiet, or wrote nothing.
    fn usable(&self, n: usize, r: &Outcome) -> Result<()> {
        let log = self.shared.out.root.join(format!("logs/reference-{n}.log"));
        if let Some(why) = &r.controller_failed {
            anyhow::bail!(
                "the controller failed in fault-free reference run {n}: {why} (its output: {})",
                log.display()
            );
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
        Ok(())
    }
}

/// The last `lines` lines of a log, indented, for an error message (or why not).
pub(super) fn quote_tail(log: &std::path::Path, lines: usize) -> String {
    match std::fs::read_to_string(log) {
        Ok(text) if !text.trim().is_empty() => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..]
                .iter()
                .map(|l| format!("  | {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
        Ok(_) => "  (it printed nothing)".into(),
        Err(e) => format!("  (its output could not be read: {e})"),
    }
}

/// Objects at the end of `o` whose `ownerReferences` name one of the setup's.
fn owned(o: &Outcome) -> Vec<(String, String, String)> {
    let setup_uids: std::collections::BTreeSet<&str> = o
        .snapshot
        .iter()
        .filter(|(k, _)| {
            o.setup.iter().any(|a| {
                a.resource == k.resource
                    && a.name == k.name
                    && a.namespace.as_deref().unwrap_or("") == k.namespace
            })
        })
        .filter_map(|(_, v)| v["metadata"]["uid"].as_str())
        .collect();
    o.snapshot
        .iter()
        .filter(|(_, v)| {
            v["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r["uid"].as_str().is_some_and(|u| setup_uids.contains(u)))
                })
        })
        .map(|(k, _)| (k.resource.clone(), k.namespace.clone(), k.name.clone()))
        .collect()
}

/// The condition types each object ended with in both runs, in the first run's order.
pub(super) fn end_conditions(a: &Outcome, b: &Outcome) -> Vec<crate::oracle::ExpectedConditions> {
    let types = |v: &serde_json::Value| -> Vec<String> {
        v["status"]["conditions"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c["type"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    a.snapshot
        .iter()
        .filter_map(|(k, v)| {
            let theirs = types(b.snapshot.get(k)?);
            let both: Vec<String> = types(v)
                .into_iter()
                .filter(|t| theirs.contains(t))
                .collect();
            (!both.is_empty()).then(|| crate::oracle::ExpectedConditions {
                resource: k.resource.clone(),
                namespace: k.namespace.clone(),
                name: k.name.clone(),
                types: both,
            })
        })
        .collect()
}

/// Hold a schedule's convergence oracle to what the references ended with: objects
/// Failed in both are done when Failed; the others need the conditions both ended with.
pub(super) fn expect_ends(
    schedule: &mut crate::schedule::Schedule,
    failed: &[crate::oracle::ObjectRef],
    conditions: &[crate::oracle::ExpectedConditions],
) {
    if let Some(c) = schedule
        .oracles
        .as_mut()
        .and_then(|o| o.convergence.as_mut())
    {
        c.failed = failed.to_vec();
        c.conditions = conditions
            .iter()
            .filter(|e| c.resources.contains(&e.resource))
            .cloned()
            .collect();
    }
}

/// A controller holding a leader-election Lease that is killed (a `restart`, an exit
/// after a partition) cannot be back before that Lease runs out: its successor waits a
/// whole lease duration from when it first sees the dead holder's record (client-go's
/// `leaderelection` times leases by its own clock), and the dead one never released it.
/// So unless `--recover-within` was given, the recovery oracle allows `settle` plus the
/// longest lease duration among the controllers under test: the lease doing its job is
/// not a finding (docs/flux.md measures it).
pub(super) fn allow_for_leases(schedule: &mut crate::schedule::Schedule, refs: &References) {
    allow_for_lease(schedule, longest_lease(refs));
}

/// The longest Lease duration among the controllers under test, as the references held
/// them (None: none held one).
pub(super) fn longest_lease(refs: &References) -> Option<Duration> {
    std::iter::once(&refs.reference)
        .chain(&refs.others)
        .filter_map(|r| r.lease_duration)
        .max()
}

fn allow_for_lease(schedule: &mut crate::schedule::Schedule, longest: Option<Duration>) {
    if let (Some(lease), Some(c)) = (
        longest,
        schedule
            .oracles
            .as_mut()
            .and_then(|o| o.convergence.as_mut()),
    ) && c.recover_within.is_none()
    {
        c.recover_within = Some(crate::k8s::duration::GoDuration(c.settle.0 + lease));
    }
}

/// What the oracles found in the reference runs, with no fault: reported once, as the
/// controller's own, and a trial that shows the same thing (same oracle, object and
/// rule, digits aside) is not called a finding for it. An object kstatus calls Failed at
/// the end of both runs is not reported at all: a spec its controller rejects
/// (`Stalled=True`) is its right answer, and trials are judged against it
/// (`ConvergenceConfig::failed`).
#[derive(Default)]
pub(super) struct FaultFree {
    pub found: Vec<Found>,
    /// What the references showed that is about the setup's resources rather than the
    /// controller's answer to a fault: the readiness race. Every custom resource whose
    /// CRD does not default `status.observedGeneration` is Current by kstatus's fallback
    /// rule from its creation until its controller first writes its status, in every
    /// run. Reported once, with its fix; not a failure of the controller (it does not
    /// change explore's exit status), and a trial showing it again is not a finding.
    pub advisories: Vec<Found>,
    pub files: Vec<String>,
    /// What a trial's violation is matched by (`judge::fault_free_key`).
    pub keys: std::collections::BTreeSet<String>,
    /// Objects Failed at the end of both runs.
    pub failed: Vec<crate::oracle::ObjectRef>,
    seen: Vec<Seen>,
}

/// One violation as the reference runs showed it.
struct Seen {
    found: Found,
    /// Which runs showed it.
    runs: Vec<usize>,
    /// The convergence oracle's `Failed`: the object ended rejected.
    failed: bool,
}

impl FaultFree {
    pub(super) fn add(&mut self, n: usize, r: &Outcome, files: Vec<String>) {
        self.files.extend(files);
        let end = r.started + Duration::from_secs_f64(r.seconds);
        for v in &r.report.verdicts.violations {
            let key = judge::fault_free_key(v);
            if let Some(s) = self.seen.iter_mut().find(|s| s.found.signature == key) {
                if !s.runs.contains(&n) {
                    s.runs.push(n);
                }
                continue;
            }
            let at = |t: SystemTime| {
                t.duration_since(r.started)
                    .unwrap_or_default()
                    .as_secs_f64()
            };
            let lasted = match v.until {
                Some(u) => format!("from {:.1}s to {:.1}s", at(v.since), at(u)),
                None => format!(
                    "from {:.1}s to the end of the run ({:.1}s)",
                    at(v.since),
                    at(end)
                ),
            };
            self.keys.insert(key.clone());
            self.seen.push(Seen {
                found: Found {
                    oracle: v.oracle.to_string(),
                    resource: v.resource.clone(),
                    namespace: v.namespace.clone(),
                    name: v.name.clone(),
                    message: format!("{}/{}: {} ({lasted})", v.namespace, v.name, v.rule),
                    signature: key,
                    expect: None,
                },
                runs: vec![n],
                failed: v.oracle == OracleName::Convergence
                    && v.rule
                        .starts_with(&format!("{:?}:", crate::oracle::kstatus::Status::Failed)),
            });
        }
    }

    /// Sort what was seen into what is expected (Failed in both runs) and what is
    /// reported, each saying which runs showed it: one that only one run shows is the
    /// controller's own flakiness, still not a fault's.
    pub(super) fn finish(&mut self) {
        for s in std::mem::take(&mut self.seen) {
            if s.failed && s.runs.len() > 1 {
                self.failed.push(crate::oracle::ObjectRef {
                    resource: s.found.resource,
                    namespace: s.found.namespace,
                    name: s.found.name,
                });
                continue;
            }
            let mut f = s.found;
            f.message.push_str(&match s.runs.as_slice() {
                [n] => format!("; in reference run {n} only"),
                _ => "; in both reference runs".to_string(),
            });
            if f.oracle == OracleName::ReadinessRace.as_str() {
                f.message.push_str(READINESS_ADVICE);
                self.advisories.push(f);
                continue;
            }
            self.seen.push(Seen {
                found: f.clone(),
                runs: s.runs,
                failed: s.failed,
            });
            self.found.push(f);
        }
    }

    /// Whether both reference runs showed the violation with `signature`.
    pub(super) fn in_both(&self, signature: &str) -> bool {
        self.seen
            .iter()
            .any(|s| s.found.signature == signature && s.runs.len() > 1)
    }

    /// `both reference runs`, `reference run 2 of 2`.
    fn runs(&self) -> String {
        if self.seen.iter().any(|s| s.runs.len() > 1) {
            "both reference runs".into()
        } else {
            let mut runs: Vec<usize> = self.seen.iter().flat_map(|s| s.runs.clone()).collect();
            runs.sort();
            runs.dedup();
            runs.iter()
                .map(|n| format!("reference run {n} of 2"))
                .collect::<Vec<_>>()
                .join(" and ")
        }
    }
}

/// What a readiness race in the references means, and what fixes it (seed 004:
/// cluster-api's request to default `observedGeneration` to -1).
const READINESS_ADVICE: &str = ". A tool that waits on kstatus (Flux's health checks, `kstatus`-based rollouts) can take it for ready before its controller has looked at it. The CRD can default `status.observedGeneration` to -1 (`+kubebuilder:default={\"observedGeneration\":-1}` on the status), or the controller can write a `Reconciling` condition first";

/// The verdict a search that stopped at the references gives.
pub(super) fn fails_without_faults() -> Verdict {
    Verdict::Found
}

#[cfg(test)]
mod lease_tests {
    use super::*;

    /// settle + the lease, unless --recover-within was given or no lease is known.
    #[test]
    fn recovery_allows_a_lease_duration_more_unless_told_otherwise() {
        let oracles = crate::explore::config::default_oracles(
            &[],
            &["widgets.x".into()],
            Duration::from_secs(30),
        );
        let mut s = crate::schedule::Schedule {
            oracles: Some(oracles),
            ..Default::default()
        };
        let within = |s: &crate::schedule::Schedule| {
            s.oracles
                .as_ref()
                .unwrap()
                .convergence
                .as_ref()
                .unwrap()
                .recover_within()
        };
        allow_for_lease(&mut s, None);
        assert_eq!(within(&s), Duration::from_secs(30));
        allow_for_lease(&mut s, Some(Duration::from_secs(35)));
        assert_eq!(within(&s), Duration::from_secs(65));
        let mut told = s.clone();
        if let Some(c) = told.oracles.as_mut().and_then(|o| o.convergence.as_mut()) {
            c.recover_within = Some(crate::k8s::duration::GoDuration(Duration::from_secs(10)));
        }
        allow_for_lease(&mut told, Some(Duration::from_secs(35)));
        assert_eq!(within(&told), Duration::from_secs(10));
    }
}
