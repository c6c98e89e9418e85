//! A trial's verdict: the oracles' violations that count, the differential oracle's
//! differences, and what else a faulted run did that the fault-free runs did not (crash,
//! never go quiet, make the workload fail) — each with a signature, so trials that found
//! the same thing are one finding.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::differ;
use crate::oracle::{ObjectRef, OracleName, Peak};
use crate::session::{CONTROLLER, Ended, Outcome};
use crate::trace::Record;

/// Whether a client of an explore run is a controller under test: the one after `--`
/// or an other (`--controller NAME=CMD`). Explore's runs have no clients but those, the
/// workload (`config::base_schedule`; the others' listeners are named for them) and `other`.
pub fn under_test(client: &str) -> bool {
    client != crate::session::WORKLOAD && client != crate::schedule::OTHER
}

/// One thing a trial found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    /// convergence, readinessRace, hotLoop, conflicts, differential, exit, quiescence,
    /// workload
    pub oracle: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    /// What a person reads.
    pub message: String,
    /// What trials that found the same thing share.
    pub signature: String,
    /// What the fault-free runs showed instead (the differential oracle's findings): a
    /// reproducer carries it, so `run` judges it alone (`oracle/kinds/expected.rs`).
    #[serde(skip)]
    pub expect: Option<Expect>,
}

/// What the references showed for one thing a trial found.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// The object's field had this value (`Null`: absent).
    Field(String, serde_json::Value),
    /// The object existed (or did not).
    Exists(bool),
    /// So many objects of a generated-name group.
    Count(usize),
    /// The controller created (or deleted) so many of the resource.
    Writes(&'static str, usize),
}

/// What the fault-free runs established.
pub struct Baseline {
    /// The end state of what the differential judges (`judged.rs`)…
    pub state: differ::State,
    /// … and of everything the references' extents covered, for an object only a
    /// trial's clients touched.
    pub all: differ::State,
    /// What the references' clients under test and workload wrote, and what that owns.
    pub judged: super::judged::Judged,
    pub masks: differ::Masks,
    /// Successful creates and deletes by the controller, per resource; `None` where the
    /// two reference runs disagree (not compared).
    pub counts: BTreeMap<(String, &'static str), Option<usize>>,
    /// Of those, what the controllers did before the workload's first request (the
    /// fewer of the two runs): a start-up's creates and deletes, which a controller
    /// restarted after a rewind may do again ([`startup_counts`]; after a plain restart
    /// what it undid is allowed in any amount: `beyond`).
    pub startup: BTreeMap<(String, &'static str), usize>,
    pub peaks: BTreeMap<(String, ObjectRef), Peak>,
    pub workload_exit: Option<i32>,
    /// How long the reference runs took to go quiet.
    pub seconds: f64,
    /// The oracles' violations the references showed with no fault
    /// ([`fault_free_key`]): the same in a trial is not the fault's.
    pub without_faults: std::collections::BTreeSet<String>,
}

/// The controllers' successful creates and deletes before the workload's first request
/// (the whole run, without a workload): what a start-up does. A restarted controller
/// starts up again — it has lost what it knew, lists everything, and redoes what a
/// fresh start does: Kyverno's background controller replays every policy and makes a
/// new UpdateRequest for each, which it processes and deletes. Doing that once more per
/// restart is what a restart costs, not a duplicate made on a stale view; what it
/// leaves behind still shows in the end state. The limit after a rewind and a restart;
/// a plain restart's start-up may do more (`beyond`).
pub fn startup_counts(o: &Outcome) -> BTreeMap<(String, &'static str), usize> {
    let end = o
        .trace
        .iter()
        .position(|s| {
            matches!(&s.record, Record::Request { client, .. } if client == crate::session::WORKLOAD)
        })
        .unwrap_or(o.trace.len());
    count_where(&o.trace[..end], |code| (200..300).contains(&code))
}

/// How many times a controller under test was restarted by a window.
fn restarts(trace: &[crate::trace::Stamped]) -> usize {
    trace
        .iter()
        .filter(|s| matches!(s.record, Record::Restart { .. }))
        .count()
}

/// Successful creates and deletes by the controller, per resource.
pub fn counts(o: &Outcome) -> BTreeMap<(String, &'static str), usize> {
    count_where(&o.trace, |code| (200..300).contains(&code))
}

fn count_where(
    trace: &[crate::trace::Stamped],
    code_ok: impl Fn(u16) -> bool,
) -> BTreeMap<(String, &'static str), usize> {
    let mut m = BTreeMap::new();
    for s in trace {
        if let Record::Request {
            client,
            verb,
            resource,
            code,
            ..
        } = &s.record
            && under_test(client)
            && code_ok(*code)
            && !resource.contains('/')
            && !crate::session::snapshot::IGNORED.contains(&resource.as_str())
        {
            // A server-side apply that made the object is a patch answered 201 Created
            // (cert-manager creates its Secrets so): a create all the same.
            let v: &'static str = match *verb {
                "create" => "created",
                "patch" if *code == 201 => "created",
                "delete" => "deleted",
                _ => continue,
            };
            *m.entry((resource.clone(), v)).or_default() += 1;
        }
    }
    m
}

/// What two reference runs agree on.
pub fn baseline(a: &Outcome, b: &Outcome) -> Result<Baseline, differ::Disagreement> {
    let judged = super::judged::Judged::of(a).and(b);
    let (ja, jb) = (
        judged.in_snapshot(&a.snapshot),
        judged.in_snapshot(&b.snapshot),
    );
    let (mut sa, sb) = (ja.state(&a.snapshot), jb.state(&b.snapshot));
    let mut all = differ::normalize(&a.snapshot);
    let extents = [&a.extent, &b.extent];
    let covered = |run: usize, k: &ObjectRef| {
        let e = extents[run];
        e.resources.contains(&k.resource)
            && (k.namespace.is_empty() || e.namespaces.contains(&k.namespace))
    };
    let masks = differ::masks(&sa, &sb, covered)?;
    // What only the second run looked at is the reference too.
    for (k, v) in &sb.named {
        if !covered(0, k) {
            sa.named.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    for (k, v) in &differ::normalize(&b.snapshot).named {
        if !covered(0, k) {
            all.named.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    let (ca, cb) = (counts(a), counts(b));
    let (sa_, sb_) = (startup_counts(a), startup_counts(b));
    let startup = sa_
        .iter()
        .map(|(k, n)| (k.clone(), (*n).min(sb_.get(k).copied().unwrap_or(0))))
        .collect();
    let counts = ca
        .keys()
        .chain(cb.keys())
        .map(|k| {
            let agreed = (ca.get(k) == cb.get(k)).then(|| ca.get(k).copied().unwrap_or(0));
            (k.clone(), agreed)
        })
        .collect();
    let mut peaks = a.peaks.clone();
    for (k, p) in &b.peaks {
        let e = peaks.entry(k.clone()).or_default();
        e.writes = e.writes.max(p.writes);
        e.conflicts = e.conflicts.max(p.conflicts);
    }
    Ok(Baseline {
        state: sa,
        all,
        judged,
        masks,
        counts,
        startup,
        peaks,
        workload_exit: a.workload_exit,
        seconds: a.seconds.max(b.seconds),
        without_faults: Default::default(),
    })
}

/// Digits out, so `status.conditions[0]` and `[1]`, `62 conflicts` and `70`, are one.
fn mask_digits(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last_digit = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('N');
            }
            last_digit = true;
        } else {
            out.push(c);
            last_digit = false;
        }
    }
    out
}

fn found(oracle: &str, o: &ObjectRef, message: String, what: &str) -> Found {
    Found {
        oracle: oracle.into(),
        resource: o.resource.clone(),
        namespace: o.namespace.clone(),
        name: o.name.clone(),
        signature: format!("{oracle} {} {}", o.resource, mask_digits(what)),
        message,
        expect: None,
    }
}

/// What matches a trial's violation to one the references showed: oracle, object and
/// rule, digits aside (`observedGeneration (1) != metadata.generation (2)` is the same
/// rule at any generation). The readiness race is the resource's, not one object's: it
/// is how its CRD and its controller meet kstatus (every new object is Current by the
/// fallback rule until its controller writes its status), so a race the references
/// showed for one object is the same race for another — one a trial's controller made
/// under a generated name (Karpenter's NodeClaims) most of all.
pub fn fault_free_key(v: &crate::oracle::Violation) -> String {
    if v.oracle == OracleName::ReadinessRace {
        return format!("{} {} *: {}", v.oracle, v.resource, mask_digits(&v.rule));
    }
    format!(
        "{} {} {}/{}: {}",
        v.oracle,
        v.resource,
        v.namespace,
        v.name,
        mask_digits(&v.rule)
    )
}

/// Judge one faulted run against the baseline: what its processes, oracles, end state and
/// writes did that the fault-free runs did not.
pub fn judge(o: &Outcome, base: &Baseline) -> Vec<Found> {
    let mut out = process_findings(o, base);
    out.extend(violation_findings(o, base));
    out.extend(state_differences(o, base));
    out.extend(write_differences(o, base));
    out
}

/// What the processes did that the fault-free runs did not: the controller failed or
/// never went quiet, the workload exited otherwise.
fn process_findings(o: &Outcome, base: &Baseline) -> Vec<Found> {
    let mut out = Vec::new();
    let nothing = ObjectRef {
        resource: String::new(),
        namespace: String::new(),
        name: String::new(),
    };
    if let Some(why) = &o.controller_failed {
        out.push(found(
            "exit",
            &nothing,
            format!("the controller failed: {why}"),
            "exit",
        ));
    }
    if o.ended == Ended::MaxRun {
        out.push(found(
            "quiescence",
            &nothing,
            format!(
                "the controller never went quiet: still writing (or a window open) {:.0}s after it started; the fault-free runs were quiet after {:.1}s",
                o.seconds, base.seconds
            ),
            "never quiet",
        ));
    }
    if o.workload_exit != base.workload_exit && o.workload_exit.is_some() {
        out.push(found(
            "workload",
            &nothing,
            format!(
                "the workload exited with {} ({} in the fault-free runs)",
                o.workload_exit.unwrap_or(-1),
                base.workload_exit
                    .map_or("none".to_string(), |c| c.to_string())
            ),
            "exit",
        ));
    }
    out
}

/// The oracles' violations that count: not ones the references showed too, and rates
/// only where they beat the references' (`rate_counts`).
fn violation_findings(o: &Outcome, base: &Baseline) -> Vec<Found> {
    let mut out = Vec::new();
    let last_close = o
        .report
        .verdicts
        .windows
        .iter()
        .filter_map(|w| w.closed_at.or(Some(w.opened_at)))
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH);
    for v in &o.report.verdicts.violations {
        let obj = ObjectRef {
            resource: v.resource.clone(),
            namespace: v.namespace.clone(),
            name: v.name.clone(),
        };
        let rate = matches!(v.oracle, OracleName::HotLoop | OracleName::Conflicts);
        // What the references showed is what is expected; a rate is judged against
        // theirs below instead (a loop the fault makes twice as fast still counts).
        if !rate && base.without_faults.contains(&fault_free_key(v)) {
            continue;
        }
        if rate && !rate_counts(v, &obj, base, last_close) {
            continue;
        }
        let what = if rate {
            v.oracle.to_string()
        } else {
            v.rule.clone()
        };
        out.push(found(
            v.oracle.as_str(),
            &obj,
            format!("{}: {}", differ::describe(&obj), v.rule),
            &what,
        ));
    }
    out
}

/// Whether a rate violation (hotLoop, conflicts) counts, against the references' peak.
fn rate_counts(
    v: &crate::oracle::Violation,
    obj: &ObjectRef,
    base: &Baseline,
    last_close: SystemTime,
) -> bool {
    // Healthy controllers retry under staleness: a rate counts only when it is
    // the controller's, outlives the faults, and clearly beats its own
    // fault-free rate.
    let client = v.client.as_deref().unwrap_or("");
    let reference = base
        .peaks
        .get(&(client.to_string(), obj.clone()))
        .map_or(0, |p| {
            if v.oracle == OracleName::HotLoop {
                p.writes
            } else {
                p.conflicts
            }
        }) as u64;
    let peak = v.peak.unwrap_or(0);
    let outlived = v.until.is_some_and(|u| u > last_close);
    under_test(client) && outlived && peak > 2 * reference.max(1)
}

/// The differential oracle on the end state: each difference from the references, with
/// what they showed instead.
fn state_differences(o: &Outcome, base: &Baseline) -> Vec<Found> {
    let mut out = Vec::new();
    let touched = touched(&o.trace);
    for d in end_state_differences(base, &o.snapshot, &base.judged.and(o)) {
        if touched && GENERATIONS.contains(&d.what.as_str()) {
            continue;
        }
        let mut f = found(
            "differential",
            &d.object,
            format!("{}: {}", differ::describe(&d.object), d.message),
            &d.what,
        );
        f.expect = Some(match d.what.as_str() {
            "missing" => Expect::Exists(true),
            "extra" => Expect::Exists(false),
            "count" => Expect::Count(base.state.generated.get(&d.object).copied().unwrap_or(0)),
            path => Expect::Field(
                path.to_string(),
                base.state
                    .named
                    .get(&d.object)
                    .map(|v| crate::oracle::end_state::lookup(v, path).clone())
                    .unwrap_or_default(),
            ),
        });
        out.push(f);
    }
    out
}

/// What a `touch` changes besides its annotation: it writes the user's objects twice
/// (the annotation on, then off), and a Deployment's generation counts annotation
/// changes too (kube-apiserver's deployment strategy, for the rollback annotation's
/// sake) — KEDA's Deployment ended at generation 4 where the references, untouched, had
/// 2. Those counts are the touch's, not the controller's; the spec and status it
/// counts are compared as ever.
const GENERATIONS: [&str; 2] = ["metadata.generation", "status.observedGeneration"];

/// Whether a `touch` window opened in the run.
fn touched(trace: &[crate::trace::Stamped]) -> bool {
    window_opened(trace, "touch")
}

/// Whether a window of this fault opened in the run.
fn window_opened(trace: &[crate::trace::Stamped], fault_name: &str) -> bool {
    trace
        .iter()
        .any(|s| matches!(&s.record, Record::Window { fault, .. } if fault == fault_name))
}

/// How the judged part of an end state differs from the references': `judged` is what
/// the run judges (the references' and its own clients' writes, and what they own). An
/// object only this run's clients touched is compared with what the references had of
/// it, judged or not.
pub fn end_state_differences(
    base: &Baseline,
    snapshot: &crate::session::Snapshot,
    judged: &super::judged::Judged,
) -> Vec<differ::Difference> {
    let keys = judged.keys(snapshot);
    let mut reference = base.state.clone();
    let extra = super::judged::only(&base.all, &keys);
    for (k, v) in extra.named {
        reference.named.entry(k).or_insert(v);
    }
    for (k, n) in extra.generated {
        reference.generated.entry(k).or_insert(n);
    }
    differ::compare(&reference, &base.masks, &judged.state(snapshot))
}

/// The controller's creates and deletes per resource beyond the references'.
fn write_differences(o: &Outcome, base: &Baseline) -> Vec<Found> {
    let mut out = Vec::new();
    // Creates and deletes per resource beyond what the references did, where they agree
    // (or had none at all): a duplicate made and cleaned up again is the cost of acting
    // on a stale view even when the end state converges (kubernetes#129795). Fewer is
    // not a finding on its own: a controller that saw two changes late may fold their
    // work together (a DaemonSet's replacement pod and its rollout's, one create), and
    // work left undone shows in the end state.
    // Only answered ones count: a request a killed controller gave up on (499) may or
    // may not have been done.
    // A restart may redo its start-up's (`startup_counts`), and after a restart
    // without a rewind, whatever it undid by the end (`Restarts`).
    let here = counts(o);
    let restarted = Restarts {
        count: restarts(&o.trace),
        rewound: window_opened(&o.trace, "rewind"),
    };
    for (key, h, reference, allowed) in beyond(&here, base, restarted) {
        let (resource, what) = key;
        let reference = match reference {
            Some(n) if allowed > n => {
                format!("{n} in the fault-free runs, {allowed} with the restarts' start-ups")
            }
            Some(n) => format!("{n} in the fault-free runs"),
            None => "none in the fault-free runs".to_string(),
        };
        let obj = ObjectRef {
            resource: resource.clone(),
            namespace: String::new(),
            name: String::new(),
        };
        let mut f = found(
            "differential",
            &obj,
            format!("the controller {what} {h} {resource} ({reference})"),
            what,
        );
        f.expect = Some(Expect::Writes(what, allowed));
        out.push(f);
    }
    out
}

/// The restarts a run's windows made, and whether a rewind went with them.
#[derive(Debug, Clone, Copy)]
struct Restarts {
    count: usize,
    rewound: bool,
}

/// Each (resource, created/deleted) done more often than the references did — where they
/// agree, or did none — and the restarts allow: (key, count here, the references' count,
/// the count allowed). A restart's extra work is allowed only where it left nothing
/// behind: the resource's creates less its deletes no more than the references'
/// (Kyverno's extra UpdateRequests, made and deleted again). One that stays is the crash
/// bug itself — Karpenter's kwok provider, restarted right after it made a NodeClaim's
/// Node and before it recorded it, makes a second Node for the same NodeClaim.
///
/// How much it may redo: after a plain restart, any amount. The new process listed
/// everything afresh — a consistent read — so what it did and undid again was done on
/// a true view of the world, not a stale one; it may differ from a fresh start's
/// (Kyverno's restarted background controller made two UpdateRequests at start where
/// a fresh one made one: by then the policy's NetworkPolicies existed, to sync too).
/// After a rewind and a restart, the new process did start on a stale view, which is
/// what the search is after: there it may redo only what the references' start-ups did.
#[allow(clippy::type_complexity)]
fn beyond<'a>(
    here: &'a BTreeMap<(String, &'static str), usize>,
    base: &'a Baseline,
    restarts: Restarts,
) -> Vec<(&'a (String, &'static str), usize, Option<usize>, usize)> {
    let keys: std::collections::BTreeSet<&(String, &'static str)> =
        base.counts.keys().chain(here.keys()).collect();
    let net = |counts: &dyn Fn(&'static str) -> Option<usize>| -> Option<i64> {
        Some(counts("created")? as i64 - counts("deleted")? as i64)
    };
    keys.into_iter()
        .filter_map(|key| {
            let (resource, what) = key;
            let h = here.get(key).copied().unwrap_or(0);
            let net_here = net(&|w| Some(here.get(&(resource.clone(), w)).copied().unwrap_or(0)));
            let net_ref = net(&|w| match base.counts.get(&(resource.clone(), w)) {
                Some(n) => *n,
                None => Some(0),
            });
            let undone = match (net_here, net_ref, *what) {
                (Some(h), Some(r), "created") => h <= r,
                (Some(h), Some(r), _) => h >= r,
                _ => false,
            };
            let again = match (undone, restarts) {
                (
                    true,
                    Restarts {
                        count,
                        rewound: true,
                    },
                ) => count * base.startup.get(key).copied().unwrap_or(0),
                (true, Restarts { count, .. }) if count > 0 => usize::MAX,
                _ => 0,
            };
            match base.counts.get(key) {
                Some(Some(n)) if h > n.saturating_add(again) => {
                    Some((key, h, Some(*n), n.saturating_add(again)))
                }
                None if h > 0 => Some((key, h, None, 0)),
                _ => None,
            }
        })
        .collect()
}

/// What the references showed for everything in `found` they can speak to, as the
/// `expected` oracle's section of a reproducer.
pub fn expected(found: &[Found]) -> Option<crate::oracle::expected::ExpectedConfig> {
    use crate::oracle::expected::{ExpectedConfig, ExpectedObject, ExpectedWrites};
    let mut e = ExpectedConfig {
        from: "the 2 fault-free reference runs of stalemate explore".into(),
        client: CONTROLLER.into(),
        ..Default::default()
    };
    for f in found {
        let Some(x) = &f.expect else { continue };
        if let Expect::Writes(what, n) = x {
            let i = match e.writes.iter().position(|w| w.resource == f.resource) {
                Some(i) => i,
                None => {
                    e.writes.push(ExpectedWrites {
                        resource: f.resource.clone(),
                        created: None,
                        deleted: None,
                    });
                    e.writes.len() - 1
                }
            };
            let w = &mut e.writes[i];
            *(if *what == "created" {
                &mut w.created
            } else {
                &mut w.deleted
            }) = Some(*n);
            continue;
        }
        let i = match e.objects.iter().position(|o| {
            (&o.resource, &o.namespace, &o.name) == (&f.resource, &f.namespace, &f.name)
        }) {
            Some(i) => i,
            None => {
                e.objects.push(ExpectedObject {
                    resource: f.resource.clone(),
                    namespace: f.namespace.clone(),
                    name: f.name.clone(),
                    exists: true,
                    count: None,
                    fields: Default::default(),
                });
                e.objects.len() - 1
            }
        };
        let o = &mut e.objects[i];
        match x {
            Expect::Field(path, v) => {
                o.fields.insert(path.clone(), v.clone());
            }
            Expect::Exists(b) => o.exists = *b,
            Expect::Count(n) => o.count = Some(*n),
            Expect::Writes(..) => {}
        }
    }
    (!e.objects.is_empty() || !e.writes.is_empty()).then_some(e)
}

/// The signatures of what a trial found, sorted and unique: trials with the same set are
/// one finding.
pub fn signatures(found: &[Found]) -> Vec<String> {
    let mut s: Vec<String> = found.iter().map(|f| f.signature.clone()).collect();
    s.sort();
    s.dedup();
    s
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
