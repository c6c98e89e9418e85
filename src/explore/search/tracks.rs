//! The search over the user's actions: each sequence of actions is a track with its own
//! fault-free references, plans and trials; the tracks take turns.
//!
//! ```text
//!  track 0: the setup (and --workload) alone — the references explore always runs
//!  track N: the same, then sequence N's steps ─► its references (run when the search
//!           first reaches it) ─► rejected? disagreeing? failing with no fault? said so
//!           ─► plans opening after its first step (earlier ones are track 0's)
//!  order: for each focus rank, the setup's rounds 1–3 (track 0), then for each round
//!         every sequence's plans of that rank and round — breadth first: every
//!         sequence gets its likeliest plans before any gets its second round — with
//!         the setup's round 4 first in round 4
//! ```
//!
//! Why the setup goes three rounds deep first: it is the scenario the user wrote, and
//! the sequences are guesses at what a user might do next — 70 to 238 of them for the
//! operators in docs/zoo.md. Breadth first over all of them, a budget of 60–80 reached
//! round 1 of the setup and of a few dozen sequences and never the setup's round 2 or 3,
//! where three of the seven operators' true findings were (a 500 on one write, a long
//! freeze); none of the seven came from a sequence alone.

use std::sync::Arc;

use anyhow::{Context, Result};

use super::reference::{FaultFree, References};
use super::state::{Job, Search};
use crate::explore::actions::{self, Sequence};
use crate::explore::config::Config;
use crate::explore::judge::Found;
use crate::explore::plan::Plan;
use crate::explore::record::Row;
use crate::schedule::Schedule;
use crate::session::{Ended, Outcome};

/// The trials running, each on a task of its own.
type Running = futures_util::stream::FuturesUnordered<
    tokio::task::JoinHandle<Result<crate::explore::record::Trial>>,
>;

/// Where a track is.
#[derive(Clone)]
pub(super) enum State {
    /// Its references have not run yet.
    Pending,
    Ready(Arc<References>),
    /// Not searched, and why.
    Dropped(String),
}

/// One sequence of actions (or none) and its search.
pub(super) struct Track {
    /// 0: no actions.
    pub number: usize,
    pub sequence: Option<Sequence>,
    /// The user's workload steps, then the sequence's.
    pub workload: Vec<String>,
    pub state: State,
    /// The schedule its trials share (its references' Failed objects in its oracles).
    pub base: Schedule,
    /// Its plans not yet tried, in order.
    pub plans: Vec<Plan>,
    pub trials: usize,
    /// What its references end with that is not Current (and so its trials too).
    pub expected: Vec<String>,
}

impl Track {
    /// Track 0 (its references run) and one per sequence.
    pub fn all(
        cfg: &Config,
        base: &Schedule,
        first: Arc<References>,
        plans: Vec<Plan>,
        sequences: Vec<Sequence>,
    ) -> Vec<Track> {
        let mut tracks = vec![Track {
            number: 0,
            sequence: None,
            workload: cfg.workload.clone(),
            state: State::Ready(first),
            base: base.clone(),
            plans,
            trials: 0,
            expected: Vec::new(),
        }];
        for (i, s) in sequences.into_iter().enumerate() {
            let mut workload = cfg.workload.clone();
            workload.extend(s.steps());
            tracks.push(Track {
                number: i + 1,
                sequence: Some(s),
                workload,
                state: State::Pending,
                base: base.clone(),
                plans: Vec::new(),
                trials: 0,
                expected: Vec::new(),
            });
        }
        tracks
    }

    pub fn label(&self) -> Option<String> {
        self.sequence.as_ref().map(Sequence::label)
    }

    pub fn row(&self) -> Row {
        Row {
            number: self.number,
            actions: self.label().unwrap_or_default(),
            steps: self
                .sequence
                .as_ref()
                .map(Sequence::steps)
                .unwrap_or_default(),
            status: match &self.state {
                State::Pending => "not reached".into(),
                State::Ready(_) => "searched".into(),
                State::Dropped(why) => format!("dropped: {why}"),
            },
            trials: self.trials,
            expected: self.expected.clone(),
        }
    }
}

/// The controller failing in a sequence's fault-free references: a finding of its own.
fn failed_after(t: &Track, why: &str, log: &str) -> Found {
    let label = t.label().unwrap_or_default();
    Found {
        oracle: "controller".into(),
        resource: String::new(),
        namespace: String::new(),
        name: String::new(),
        message: format!(
            "after {label} (no fault): the controller failed: {why} (its output: {log})"
        ),
        signature: format!(
            "controller failed after {}",
            t.sequence.as_ref().map(Sequence::class).unwrap_or_default()
        ),
        expect: None,
    }
}

impl Search {
    /// The sequences to search (`--actions`), said on the terminal.
    pub(super) fn sequences(&mut self, first: &References) -> Result<Vec<Sequence>> {
        let cfg = &self.shared.cfg;
        let (mut sequences, notes) = match &cfg.actions {
            actions::Source::None => return Ok(Vec::new()),
            actions::Source::File(p) => (actions::load(p)?, Vec::new()),
            actions::Source::Generated => {
                let g = actions::generate(&cfg.setup, cfg.seed);
                (g.sequences, g.notes)
            }
        };
        if cfg.actions == actions::Source::Generated {
            sequences.extend(actions::delete_owned(&first.owned));
        }
        for n in notes {
            self.progress.say(&format!("explore: actions: {n}"));
        }
        if !sequences.is_empty() {
            self.progress.say(&format!(
                "explore: {} sequences of user actions (--actions{}; list them with --actions-list), each with references of its own when the search reaches it, after the setup's rounds 1–3 on each focus rank; the setup's round 4 comes after theirs, so its trial numbers above are plans, not trials",
                sequences.len(),
                match &cfg.actions {
                    actions::Source::File(p) => format!(" {}", p.display()),
                    _ => " generated".into(),
                }
            ));
        }
        Ok(sequences)
    }

    /// Every track's plans, in `order()`'s stages (module docs), up to `--budget`; returns the
    /// next trial id.
    ///
    /// One stream of trials, `jobs` at a time, across rounds and ranks: the next batch's
    /// first trial starts as soon as a job is free, not once the last trial of the batch
    /// before has ended (nothing a batch decides waits on the one before; with trials of
    /// ~5 s, that wait idled a job for half a trial at every batch). Only a sequence's
    /// references wait for the trials running: they are two runs side by side of their own.
    pub(super) async fn run_tracks(
        &mut self,
        tracks: &mut [Track],
        first: &References,
    ) -> Result<usize> {
        let budget = self.shared.cfg.budget.unwrap_or(usize::MAX);
        self.progress
            .start(budget.min(tracks[0].plans.len()) as u64);
        let mut running = Running::new();
        let mut next_id = 1;
        'search: for (rank, round, which) in order() {
            for t in tracks.iter_mut().filter(|t| which.takes(t.number)) {
                if self.planned_trials >= budget || self.out_of_time() {
                    break 'search;
                }
                if matches!(t.state, State::Pending) {
                    self.drain(&mut running).await?;
                    self.track_references(t, first).await?;
                    let left = budget.saturating_sub(self.planned_trials);
                    self.progress.more(t.plans.len().min(left) as u64);
                }
                let batch: Vec<Plan> = t
                    .plans
                    .iter()
                    .filter(|p| p.rank == rank && p.round == round)
                    .cloned()
                    .collect();
                next_id = self.run_batch(t, batch, next_id, &mut running).await?;
            }
        }
        self.drain(&mut running).await?;
        Ok(next_id)
    }
}

/// Which tracks a stage of the search takes its plans from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tracks {
    /// Track 0: the setup (and `--workload`) alone.
    Setup,
    /// Every sequence's track.
    Sequences,
    /// The setup's, then every sequence's.
    All,
}

impl Tracks {
    fn takes(self, track: usize) -> bool {
        match self {
            Tracks::Setup => track == 0,
            Tracks::Sequences => track > 0,
            Tracks::All => true,
        }
    }
}

/// The stages of the search, in order: (focus rank, round, tracks) — module docs.
fn order() -> Vec<(u8, u8, Tracks)> {
    let mut stages = Vec::new();
    for rank in 1..=3u8 {
        stages.extend((1..=3u8).map(|round| (rank, round, Tracks::Setup)));
        stages.extend((1..=3u8).map(|round| (rank, round, Tracks::Sequences)));
        stages.push((rank, 4, Tracks::All));
    }
    stages
}

impl Search {
    /// Start `plans` of track `t`, `jobs` trials at a time, within the budget; returns
    /// once the last of them has started (they may still be running).
    async fn run_batch(
        &mut self,
        t: &mut Track,
        plans: Vec<Plan>,
        mut next_id: usize,
        running: &mut Running,
    ) -> Result<usize> {
        let State::Ready(refs) = &t.state else {
            return Ok(next_id);
        };
        let refs = refs.clone();
        let budget = self.shared.cfg.budget.unwrap_or(usize::MAX);
        let jobs = self.shared.jobs();
        let class = t.sequence.as_ref().map(Sequence::class);
        let mut queue = plans.into_iter().peekable();
        while queue.peek().is_some() && !self.out_of_time() && self.planned_trials < budget {
            if running.len() >= jobs {
                self.record_next(running).await?;
                continue;
            }
            let Some(plan) = queue.next() else { break };
            if let Some(c) = &class
                && !self.tried.insert((c.clone(), plan.slug.clone()))
            {
                continue;
            }
            let schedule = Schedule {
                windows: plan.windows.clone(),
                ..t.base.clone()
            };
            let job = Job {
                id: next_id,
                plan,
                track: t.number,
                actions: t.label(),
                workload: t.workload.clone(),
                shrinking: None,
                schedule,
                quiet: refs.trial_quiet,
            };
            next_id += 1;
            self.planned_trials += 1;
            t.trials += 1;
            running.push(tokio::spawn(self.shared.clone().trial(
                job,
                refs.hint.clone(),
                refs.baseline.clone(),
            )));
        }
        Ok(next_id)
    }

    /// Wait for the next running trial to end, and record it.
    async fn record_next(&mut self, running: &mut Running) -> Result<bool> {
        use futures_util::StreamExt;
        let Some(done) = running.next().await else {
            return Ok(false);
        };
        let tr = done.context("a trial's task failed")??;
        self.progress.trial(&tr, self.found_so_far(&tr));
        self.trials.push(tr);
        Ok(true)
    }

    /// Wait for every running trial to end, recording each.
    async fn drain(&mut self, running: &mut Running) -> Result<()> {
        while self.record_next(running).await? {}
        Ok(())
    }

    /// Run a sequence's references and decide what its search is: plans anchored after
    /// its first step, or dropped (rejected, disagreeing, failing with no fault).
    pub(super) async fn track_references(
        &mut self,
        t: &mut Track,
        first: &References,
    ) -> Result<()> {
        let label = t.label().unwrap_or_default();
        self.progress.say(&format!(
            "explore: actions {}: {label} — 2 fault-free reference runs",
            t.number
        ));
        let stem = format!("actions-{:02}-reference", t.number);
        let (a, b) = self
            .reference_pair(&t.base, &t.workload, &stem, Some(first.trial_quiet))
            .await?;
        // A step the shell could not find or run (`kubectl` not on the PATH) is no
        // refusal of the action: every sequence would be dropped the same way.
        if [a.workload_exit, b.workload_exit]
            .iter()
            .all(|c| matches!(c, Some(126 | 127)))
        {
            self.workload_worked(&[&a, &b], &stem)?;
        }
        if let Some(why) = self.not_carried_out(&a, &b, &stem) {
            t.state = State::Dropped(why);
            self.say_dropped(t);
            return Ok(());
        }
        let Some(without) = self.fault_free_after(t, &a, &b, first, &stem)? else {
            t.state = State::Dropped("the controller failed in its fault-free references".into());
            return Ok(());
        };
        // What ended Failed in both of its references: what their oracles called so, and
        // what track 0's references ended Failed with and these still do. The latter
        // are not violations here (the sequence's references are judged with track 0's
        // expectations, under which Failed is done for them), so they are read from the
        // end state itself.
        let mut failed_objects = without.failed.clone();
        for k in still_failed(&t.base, &a.snapshot, &b.snapshot) {
            if !failed_objects.contains(&k) {
                failed_objects.push(k);
            }
        }
        let refs = match self.learn(&a, &b, without, first.focus.clone()) {
            Ok(r) => r,
            Err(why) => {
                t.state = State::Dropped(why);
                self.say_dropped(t);
                return Ok(());
            }
        };
        super::reference::expect_ends(&mut t.base, &failed_objects, &refs.conditions);
        super::reference::allow_for_leases(&mut t.base, &refs);
        let plans = self.track_plans(t, &refs, first);
        self.progress.say(&format!(
            "explore: actions {}: {} plans after its first step{}",
            t.number,
            plans.len(),
            if self.shared.cfg.shard.is_some() {
                " (this shard's)"
            } else {
                ""
            }
        ));
        t.plans = plans;
        t.state = State::Ready(Arc::new(refs));
        Ok(())
    }

    /// A track's plans, in the order to try them: those after its first step (before
    /// it, they are track 0's), its coalesced stretches first, by focus, this shard's.
    fn track_plans(&self, t: &Track, refs: &References, first: &References) -> Vec<Plan> {
        // Plans before the first step are track 0's: the same run up to there.
        let before = first.reference.phase_starts.len();
        let mut plans: Vec<Plan> = refs
            .plans(&self.plan_options())
            .into_iter()
            .filter(|p| p.phase > before)
            .collect();
        // What the actions' own changes look like to a client that relisted (or was
        // just slow): their event stretches coalesced, tried first — the staleness of
        // the moment an action lands.
        for p in plans.iter_mut().filter(|p| p.coalesces()) {
            p.round = 1;
        }
        plans.sort_by_key(|p| !p.coalesces());
        refs.focus.order(&mut plans);
        if let Some(s) = self.shared.cfg.shard {
            let class = t.sequence.as_ref().map(Sequence::class);
            s.retain(&mut plans, class.as_deref());
        }
        plans
    }

    /// What the oracles found in a sequence's references that the first references did
    /// not show: each a finding with no fault (said now, reported in the summary). None
    /// when the controller failed or never went quiet (a finding too: no search).
    fn fault_free_after(
        &mut self,
        t: &mut Track,
        a: &Outcome,
        b: &Outcome,
        first: &References,
        stem: &str,
    ) -> Result<Option<FaultFree>> {
        let label = t.label().unwrap_or_default();
        let log = |n: usize| format!("logs/{stem}-{n}.log");
        let mut without = FaultFree::default();
        for (n, r) in [(1, a), (2, b)] {
            if r.report.failed() {
                let files = self
                    .shared
                    .out
                    .write_run(&format!("actions-{:02}-reference-{n}", t.number), r)?;
                without.add(n, r, files);
            }
        }
        without.finish();
        self.say_advisories(&without.advisories);
        // The controller failing with actions and no fault is a finding of its own.
        let failed = [a, b].iter().find_map(|r| {
            r.controller_failed
                .clone()
                .or_else(|| (r.ended == Ended::MaxRun).then(|| "it never went quiet".into()))
        });
        let new: Vec<Found> = without
            .found
            .iter()
            .filter(|f| !first.without_faults.keys.contains(&f.signature))
            .cloned()
            .collect();
        for f in &new {
            let mut f = f.clone();
            // An object a user's action leaves not Current in both references (a branch
            // that does not exist, a spec the controller can only retry) is what that
            // action leads to: its trials are judged against it, as against a Failed
            // object — said, not reported as a finding. Whether its controller has
            // answered is what it wrote, not what the status says: Flux leaves
            // `observedGeneration` behind while it retries a spec it cannot apply yet,
            // and says so in a condition. One the controller never wrote to after the
            // action, in either reference, it did not see: a finding, as is anything else.
            if f.oracle == crate::oracle::OracleName::Convergence.as_str()
                && without.in_both(&f.signature)
                && [a, b].iter().all(|r| wrote_after_workload(&r.trace, &f))
            {
                self.progress.say(&format!(
                    "explore: actions {}: without any fault, {}: that is what its trials are judged against",
                    t.number, f.message
                ));
                t.expected.push(f.message.clone());
                continue;
            }
            f.message = format!("after {label} (no fault): {}", f.message);
            self.progress
                .say(&format!("explore: FAIL without any fault: {}", f.message));
            self.with_actions_no_fault.push(f);
        }
        self.with_actions_files
            .extend(without.files.iter().cloned());
        if let Some(why) = failed {
            let f = failed_after(t, &why, &log(1));
            self.progress
                .say(&format!("explore: FAIL without any fault: {}", f.message));
            self.with_actions_no_fault.push(f);
            return Ok(None);
        }
        Ok(Some(without))
    }

    /// Why a sequence's steps were not carried out in its references: refused (by the
    /// apiserver or kubectl) in both, or in one only.
    fn not_carried_out(&self, a: &Outcome, b: &Outcome, stem: &str) -> Option<String> {
        let log = |n: usize| format!("logs/{stem}-{n}.log");
        if let (Some(x), Some(y)) = (a.workload_exit, b.workload_exit)
            && x != 0
            && y != 0
        {
            let why = refused(&crate::session::workload_log(
                &self.shared.out.root.join(log(1)),
            ));
            return Some(format!(
                "its steps could not be carried out (exit {x}): {why}"
            ));
        }
        (a.workload_exit != b.workload_exit).then(|| {
            format!(
                "its steps exited {:?} in one reference run and {:?} in the other ({}, {})",
                a.workload_exit,
                b.workload_exit,
                log(1),
                log(2)
            )
        })
    }

    fn say_dropped(&self, t: &Track) {
        if let State::Dropped(why) = &t.state {
            self.progress
                .say(&format!("explore: actions {} dropped: {why}", t.number));
        }
    }
}

/// The objects `base`'s convergence oracle takes Failed for done (track 0's Failed ends)
/// that are kstatus Failed at the end of both runs.
fn still_failed(
    base: &Schedule,
    a: &crate::session::Snapshot,
    b: &crate::session::Snapshot,
) -> Vec<crate::oracle::ObjectRef> {
    let Some(c) = base.oracles.as_ref().and_then(|o| o.convergence.as_ref()) else {
        return Vec::new();
    };
    c.failed
        .iter()
        .filter(|k| {
            [a, b].iter().all(|end| {
                end.get(*k).is_some_and(|obj| {
                    c.verdict(k, obj).status == crate::oracle::kstatus::Status::Failed
                })
            })
        })
        .cloned()
        .collect()
}

/// What kubectl said when it refused a step: the last `error:` or `Error from server`
/// line of the run's output.
fn refused(log: &std::path::Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .rev()
        .find(|l| l.contains("Error from server") || l.starts_with("error:"))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| format!("see {}", log.display()))
}

/// Whether the controller wrote the object `f` is about (its status, or itself) after the
/// workload's first write in run `r`: it saw what the user did.
fn wrote_after_workload(trace: &[crate::trace::Stamped], f: &Found) -> bool {
    use crate::trace::Record;
    let Some(since) = trace.iter().find_map(|s| match &s.record {
        Record::Request { client, verb, .. }
            if client == crate::session::WORKLOAD && is_write(verb) =>
        {
            Some(s.at)
        }
        _ => None,
    }) else {
        return false;
    };
    trace.iter().any(|s| {
        matches!(&s.record, Record::Request { client, verb, resource, namespace, name, code, .. }
            if s.at >= since
                && crate::explore::judge::under_test(client)
                && is_write(verb)
                && (200..300).contains(code)
                && crate::session::snapshot::base_resource(resource) == f.resource
                && namespace.as_deref().unwrap_or("") == f.namespace
                && name.as_deref() == Some(f.name.as_str()))
    })
}

fn is_write(verb: &str) -> bool {
    matches!(verb, "create" | "update" | "patch" | "delete")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Record, Stamped};
    use std::time::{Duration, SystemTime};

    fn request(ms: u64, client: &str, verb: &'static str, resource: &str, name: &str) -> Stamped {
        Stamped {
            at: SystemTime::UNIX_EPOCH + Duration::from_millis(ms),
            record: Record::Request {
                client: client.into(),
                verb,
                resource: resource.into(),
                namespace: Some("demo".into()),
                name: Some(name.into()),
                code: 200,
                latency_ms: 1.0,
                answer: "upstream",
                window: None,
                resource_version: None,
                note: None,
                precondition: false,
            },
        }
    }

    /// The setup goes three rounds deep on a rank before any sequence's round 1 there;
    /// every rank and round is taken once for the setup and once for the sequences.
    #[test]
    fn the_setup_goes_three_rounds_deep_before_the_sequences() {
        let stages = order();
        let at = |rank, round, setup: bool| {
            stages
                .iter()
                .position(|&(k, r, w)| {
                    k == rank && r == round && w.takes(if setup { 0 } else { 1 })
                })
                .unwrap_or(usize::MAX)
        };
        for rank in 1..=3u8 {
            assert!(
                at(rank, 3, true) < at(rank, 1, false),
                "rank {rank}: {stages:?}"
            );
            for round in 1..=4u8 {
                let taken = |track| {
                    stages
                        .iter()
                        .filter(|&&(k, r, w)| k == rank && r == round && w.takes(track))
                        .count()
                };
                assert_eq!((taken(0), taken(1)), (1, 1), "rank {rank} round {round}");
            }
            // Rank by rank: all of this rank before the next one's first stage.
            if rank < 3 {
                assert!(at(rank, 4, false) < at(rank + 1, 1, true));
            }
        }
    }

    /// Track 0's Failed object is Failed after the sequence too, in both of its
    /// references: trials are judged against that, though the sequence's references had
    /// no violation to say so (Failed was already done for them). One the sequence made
    /// Current again, or that one reference left otherwise, is not.
    #[test]
    fn what_ended_failed_before_and_still_does_stays_the_answer() {
        let k = |name: &str| crate::oracle::ObjectRef {
            resource: "kustomizations.kustomize.toolkit.fluxcd.io".into(),
            namespace: "flux-demo".into(),
            name: name.into(),
        };
        let mut oracles = crate::explore::config::default_oracles(
            &[],
            &["kustomizations.kustomize.toolkit.fluxcd.io".into()],
            Duration::from_secs(30),
        );
        if let Some(c) = oracles.convergence.as_mut() {
            c.failed = vec![k("stalled"), k("fixed"), k("once")];
        }
        let base = crate::schedule::Schedule {
            oracles: Some(oracles),
            ..Default::default()
        };
        let stalled = serde_json::json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1,
            "conditions": [{"type": "Stalled", "status": "True", "reason": "InvalidCELExpression"},
                           {"type": "Ready", "status": "False", "reason": "InvalidCELExpression"}]}});
        let ready = serde_json::json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded"}]}});
        let a: crate::session::Snapshot = [
            (k("stalled"), stalled.clone()),
            (k("fixed"), ready.clone()),
            (k("once"), stalled.clone()),
        ]
        .into_iter()
        .collect();
        let b: crate::session::Snapshot = [
            (k("stalled"), stalled),
            (k("fixed"), ready.clone()),
            (k("once"), ready),
        ]
        .into_iter()
        .collect();
        assert_eq!(still_failed(&base, &a, &b), vec![k("stalled")]);
    }

    /// An object left not Current after an action is the action's answer only if the
    /// controller wrote it after the action: a status patch after the user's patch
    /// counts; one before it, or to another object, does not.
    #[test]
    fn the_controller_answered_an_action_if_it_wrote_the_object_after_it() {
        let f = Found {
            oracle: "convergence".into(),
            resource: "gitrepositories.source.toolkit.fluxcd.io".into(),
            namespace: "demo".into(),
            name: "podinfo".into(),
            message: String::new(),
            signature: String::new(),
            expect: None,
        };
        const GR: &str = "gitrepositories.source.toolkit.fluxcd.io";
        let before = request(
            100,
            "controller",
            "patch",
            &format!("{GR}/status"),
            "podinfo",
        );
        let user = request(200, "workload", "patch", GR, "podinfo");
        let other = request(300, "controller", "patch", &format!("{GR}/status"), "other");
        let read = request(300, "controller", "get", GR, "podinfo");
        let after = request(
            400,
            "controller",
            "patch",
            &format!("{GR}/status"),
            "podinfo",
        );
        assert!(!wrote_after_workload(
            &[before.clone(), user.clone(), other, read],
            &f
        ));
        assert!(wrote_after_workload(
            &[before.clone(), user, after.clone()],
            &f
        ));
        assert!(
            !wrote_after_workload(&[before, after], &f),
            "no action at all"
        );
    }
}
