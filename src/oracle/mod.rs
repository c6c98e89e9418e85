//! Oracles: did the controller recover? Judged from ground truth — the upstream watched
//! directly (`truth.rs`), never through a window — and from the requests the proxy saw.
//!
//! - **convergence** (kstatus, `kstatus.rs`; judged in `convergence.rs`): once no window
//!   is open and either `settle` has passed since the last one closed or everything is
//!   Current, every object of the listed resources must be Current; stuck ones are
//!   reported with the rule that failed and since when; each object's recovery time
//!   after each window is measured.
//! - **readiness race**: an object kstatus calls Current before its controller wrote
//!   `status.observedGeneration` — by its fallback rule, with no Ready, Reconciling or
//!   Stalled condition — from when to when.
//! - **hot loop**: more successful writes to one object by one client in a minute than
//!   the limit while its spec does not change, naming the fields that change on every
//!   write (diffs of the successive objects the upstream holds).
//! - **conflict storm**: more 409s on one object for one client in a minute than the limit.
//!
//! - **expected** (`expected.rs`): what fault-free runs showed, held against the end state.
//!
//! All state is plain data updated by `on_*` calls with explicit times, so the rules are
//! tested without a clock; [`Oracles::evaluate`] turns it into verdicts (`verdicts.rs`).

mod caps;
mod config;
mod convergence;
pub mod end_state;
pub mod expected;
pub mod kstatus;
mod object_ref;
mod oracles;
mod paths;
mod rates;
mod recovery;
pub mod staleness;
mod state;
mod time_format;
mod tracked;
pub mod truth;
mod verdicts;

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use serde_json::Value;

use crate::k8s::request::Verb;
pub use caps::MAX_ENTRIES;
use caps::{cap, push_capped};
pub use config::{
    ConflictsConfig, ConvergenceConfig, ExpectedConditions, HotLoopConfig, OracleConfig,
    ReadinessConfig,
};
pub use object_ref::ObjectRef;
pub use oracles::Oracles;
pub use paths::changed_paths;
pub use rates::Peak;
use rates::{Counted, hot_violation, storm_violation};
use state::State;
pub(crate) use time_format::millis as rfc3339;
use tracked::Obj;
pub use verdicts::{
    Comeback, ExitMark, Mark, ObjectStatus, Recovery, RestartMark, Verdicts, Violation, WindowSpan,
};

/// Timeline marks kept for the report (the oldest are dropped past it).
const MAX_MARKS: usize = 20_000;

/// What ground truth says of an object, for the staleness lanes.
fn truth_mark(
    key: &ObjectRef,
    obj: &Value,
    at: SystemTime,
    verdict: &kstatus::Verdict,
) -> staleness::TruthMark {
    staleness::TruthMark {
        at,
        resource: key.resource.clone(),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        resource_version: obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        generation: obj["metadata"]["generation"].as_i64(),
        observed_generation: obj["status"]["observedGeneration"].as_i64(),
        status: format!("{:?}", verdict.status),
    }
}

impl Oracles {
    /// A request the proxy answered. Writes and conflicts on named objects count.
    #[allow(clippy::too_many_arguments)]
    pub fn on_request(
        &self,
        client: &str,
        verb: Verb,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        code: u16,
        at: SystemTime,
    ) {
        if verb.is_write() {
            self.last_writes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(client.to_string(), at);
            self.count_write(client, verb, resource, code);
        }
        if (200..300).contains(&code)
            && self
                .watching_answers
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            let mut s = self.lock();
            if s.answered_since.is_some_and(|since| at >= since) {
                s.answered.entry(client.to_string()).or_insert(at);
            }
        }
        let Some(name) = name else { return };
        if !verb.is_write() && code != 409 {
            return;
        }
        // `gitrepositories/status` is a write to the object.
        let resource = resource.split('/').next().unwrap_or(resource);
        let obj = ObjectRef {
            resource: resource.to_string(),
            namespace: namespace.unwrap_or("").to_string(),
            name: name.to_string(),
        };
        let mut s = self.lock();
        s.marks.push_back(Mark {
            at,
            client: client.to_string(),
            verb,
            resource: obj.resource.clone(),
            namespace: obj.namespace.clone(),
            name: obj.name.clone(),
            code,
        });
        if s.marks.len() > MAX_MARKS {
            s.marks.pop_front();
        }
        let key = (client.to_string(), obj);
        let counted = if code == 409 {
            self.config
                .conflicts
                .as_ref()
                .map(|c| (Counted::Conflict, c.max_per_object_per_minute, c.grace.0))
        } else if (200..300).contains(&code) {
            self.config.hot_loop.as_ref().map(|h| {
                (
                    Counted::Write,
                    h.max_writes_per_object_per_minute,
                    h.grace.0,
                )
            })
        } else {
            None
        };
        if let Some((what, limit, grace)) = counted {
            let inside = rates::inside_windows(&s.windows, at, grace);
            let d = s.rates.count(what, key, at, inside, limit as usize);
            self.count_dropped(&mut s, d);
        }
    }

    /// A create or delete the `expected` oracle counts: done (2xx) only (see
    /// [`expected::WriteCounts`]).
    fn count_write(&self, client: &str, verb: Verb, resource: &str, code: u16) {
        let Some(e) = &self.config.expected else {
            return;
        };
        let what = match verb {
            Verb::Create => "created",
            Verb::Delete => "deleted",
            _ => return,
        };
        if client != e.client || !e.writes.iter().any(|w| w.resource == resource) {
            return;
        }
        if (200..300).contains(&code) {
            *self
                .lock()
                .writes
                .entry((resource.to_string(), what))
                .or_default() += 1;
        }
    }

    /// The `expected` oracle's verdict on a run's end state (nothing without one).
    pub fn judge_expected(&self, end: &end_state::State, at: SystemTime) -> Vec<Violation> {
        match &self.config.expected {
            Some(e) => expected::judge(e, end, &self.lock().writes, at),
            None => Vec::new(),
        }
    }

    /// Each client's highest write and 409 rates per object (with the hot-loop and
    /// conflicts oracles configured), whether or not they passed a limit.
    pub fn peaks(&self) -> BTreeMap<(String, ObjectRef), Peak> {
        self.lock().rates.peaks.clone()
    }

    /// Whether a rate oracle (hot loop, conflicts) is over its limit with every window
    /// closed, and was after the last one closed — a run that cannot go quiet can end
    /// early. (A storm inside a window is what the window does; whether it outlives the
    /// window is the question.)
    pub fn rate_violated(&self) -> bool {
        let s = self.lock();
        if s.windows.iter().any(|w| w.closed_at.is_none()) {
            return false;
        }
        let last_close = s.windows.iter().filter_map(|w| w.closed_at).max();
        s.rates.violated_after(last_close)
    }

    /// Whether ground truth has reported this object yet.
    pub fn has_seen(&self, resource: &str, namespace: &str, name: &str) -> bool {
        self.lock().objects.contains_key(&ObjectRef {
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
    }

    /// Whether the delivery lanes record `resource`'s events (the resources the oracles
    /// watch in ground truth: the others have no truth lane to compare with).
    pub fn keeps_lanes_for(&self, resource: &str) -> bool {
        self.watched.contains(resource)
    }

    /// What the proxy did with one watch event of one object for one client.
    #[allow(clippy::too_many_arguments)]
    pub fn on_delivery(
        &self,
        client: &str,
        resource: &str,
        namespace: &str,
        name: &str,
        resource_version: &str,
        type_: &str,
        fate: &str,
        at: SystemTime,
    ) {
        let key = ObjectRef {
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        self.lock().lanes.delivery(
            &key,
            staleness::DeliveryMark {
                at,
                client: client.to_string(),
                resource: key.resource.clone(),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                resource_version: resource_version.to_string(),
                type_: type_.to_string(),
                fate: fate.to_string(),
            },
        );
    }

    /// When `client` last sent a write through the proxy.
    pub fn last_write(&self, client: &str) -> Option<SystemTime> {
        self.last_writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(client)
            .copied()
    }

    /// When any client but those in `except` last sent a write (a run's controller,
    /// whatever a schedule calls it, is every client but the workload).
    pub fn last_write_except(&self, except: &[&str]) -> Option<SystemTime> {
        self.last_writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(c, _)| !except.contains(&c.as_str()))
            .map(|(_, t)| *t)
            .max()
    }

    /// Ground truth: the object as the upstream holds it now.
    pub fn on_object(&self, resource: &str, obj: &Value, at: SystemTime) {
        let key = ObjectRef {
            resource: resource.to_string(),
            namespace: obj["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            name: obj["metadata"]["name"].as_str().unwrap_or("").to_string(),
        };
        // kstatus's own answer (the readiness race is about its fallback rule), and the
        // one the convergence oracle judges by: held to the conditions expected.
        let kstatus = kstatus::compute(obj);
        let verdict = match &self.config.convergence {
            Some(c) => c.verdict(&key, obj),
            None => kstatus.clone(),
        };
        let mark = truth_mark(&key, obj, at, &verdict);
        let readiness = self
            .config
            .readiness_race
            .as_ref()
            .is_some_and(|c| c.resources.iter().any(|r| r == resource));
        let judged = self
            .config
            .convergence
            .as_ref()
            .is_some_and(|c| c.resources.iter().any(|r| r == resource));
        // Current, or Failed where that is the answer (a spec the controller rejects).
        let done = match &self.config.convergence {
            Some(c) => c.done(&key, verdict.status),
            None => verdict.status == kstatus::Status::Current,
        };
        let racing = readiness.then(|| kstatus::current_unobserved(obj, &kstatus));
        let mut s = self.lock();
        s.convergence_seen |= judged;
        s.lanes.truth(&key, mark);
        let o = s.objects.entry(key.clone()).or_insert_with(|| Obj::new(at));
        o.observe(obj, at, done, racing, verdict);
        let d = cap(&mut s.objects, |o| o.seen);
        self.count_dropped(&mut s, d);
        if done {
            for (r, recovered) in s.recoveries.iter_mut() {
                if recovered.is_none()
                    && r.resource == key.resource
                    && r.namespace == key.namespace
                    && r.name == key.name
                {
                    *recovered = Some(at);
                }
            }
        }
    }

    /// Ground truth: the object is gone.
    pub fn on_delete(&self, resource: &str, namespace: &str, name: &str, at: SystemTime) {
        let key = ObjectRef {
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        let mut s = self.lock();
        s.lanes.truth(
            &key,
            staleness::TruthMark {
                at,
                resource: key.resource.clone(),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                resource_version: String::new(),
                generation: None,
                observed_generation: None,
                status: "Deleted".into(),
            },
        );
        self.prune(&mut s, &key);
    }

    /// Ground truth relisted: objects of `resource` not in `present` were deleted while
    /// its watch was down.
    pub fn on_resync(&self, resource: &str, present: &BTreeSet<(String, String)>, _at: SystemTime) {
        let mut s = self.lock();
        let gone: Vec<ObjectRef> = s
            .objects
            .keys()
            .filter(|k| {
                k.resource == resource && !present.contains(&(k.namespace.clone(), k.name.clone()))
            })
            .cloned()
            .collect();
        for k in gone {
            self.prune(&mut s, &k);
        }
    }

    /// A deleted object: judge what is left to judge about it (its hot loops, conflict
    /// storms and readiness race stay reported), then forget its state. Convergence
    /// never judges deleted objects.
    fn prune(&self, s: &mut State, key: &ObjectRef) {
        let mut settled = Vec::new();
        if let Some(h) = &self.config.hot_loop {
            for ((client, k), hit) in s.rates.hot.iter().filter(|((_, k), _)| k == key) {
                settled.extend(hot_violation(&s.objects, h, client, k, hit));
            }
        }
        if let Some(c) = &self.config.conflicts {
            for ((client, k), hit) in s.rates.storms.iter().filter(|((_, k), _)| k == key) {
                settled.push(storm_violation(c, client, k, hit));
            }
        }
        if let Some(o) = s.objects.get(key)
            && let Some(race) = o.readiness
        {
            settled.push(readiness_violation(key, race));
        }
        s.settled.extend(settled);
        s.objects.remove(key);
        s.rates.forget(key);
        if s.settled.len() > MAX_ENTRIES {
            let extra = s.settled.len() - MAX_ENTRIES;
            s.settled.drain(..extra);
            self.count_dropped(s, extra as u64);
        }
    }

    /// The controller was killed by a `restart` window and starts again after `down`.
    pub fn on_restart(
        &self,
        window: &str,
        controller: &str,
        at: SystemTime,
        down: std::time::Duration,
    ) {
        let mut s = self.lock();
        let mark = RestartMark {
            window: window.to_string(),
            controller: controller.to_string(),
            at,
            down_seconds: down.as_secs_f64(),
        };
        let dropped = push_capped(&mut s.restarts, mark);
        self.count_dropped(&mut s, dropped);
    }

    /// A window opened or closed.
    pub fn on_window(&self, name: &str, fault: &str, open: bool, at: SystemTime) {
        let mut s = self.lock();
        if open {
            // Opened again while open (an `every` trigger faster than its duration, a
            // second `ctl freeze`): the engine keeps one window, so one span stays open.
            for w in s.windows.iter_mut() {
                if w.name == name && w.closed_at.is_none() {
                    w.closed_at = Some(at);
                }
            }
            s.windows.push_back(WindowSpan {
                name: name.to_string(),
                fault: fault.to_string(),
                opened_at: at,
                closed_at: None,
            });
            // The oldest closed spans go first; open ones are still needed to judge.
            while s.windows.len() > MAX_ENTRIES {
                match s.windows.iter().position(|w| w.closed_at.is_some()) {
                    Some(i) => {
                        s.windows.remove(i);
                        self.count_dropped(&mut s, 1);
                    }
                    None => break,
                }
            }
            return;
        }
        if let Some(w) = s
            .windows
            .iter_mut()
            .rev()
            .find(|w| w.name == name && w.closed_at.is_none())
        {
            w.closed_at = Some(at);
        }
        if s.windows.iter().all(|w| w.closed_at.is_some()) {
            self.answers_from(&mut s, at);
        }
        if let Some(c) = &self.config.convergence {
            let dropped = convergence::start_recoveries(c, &mut s, name, at);
            self.count_dropped(&mut s, dropped);
        }
    }

    /// The verdicts as of `now`; also sets `stalemate_oracle_violations`.
    pub fn evaluate(&self, now: SystemTime) -> Verdicts {
        let s = self.lock();
        let (judged, pending, mut violations) = self.judge(&s, now);
        // Said where verdicts are reported, not at every look at whether they can be.
        recovery::explain(&mut violations, &s, now, self.started);
        Verdicts {
            judged,
            pending,
            violations,
            inside_windows: s.rates.inside_notes(
                self.config.hot_loop.as_ref(),
                self.config.conflicts.as_ref(),
            ),
            windows: s.windows.iter().cloned().collect(),
            restarts: s.restarts.iter().cloned().collect(),
            exits: s.exits.iter().cloned().collect(),
            backoff: s.backoff.clone(),
            comeback: recovery::comeback(&s, self.config.convergence.as_ref()),
            recoveries: s
                .recoveries
                .iter()
                .map(|(r, done)| Recovery {
                    seconds: done.map(|d| {
                        d.duration_since(r.closed_at)
                            .unwrap_or_default()
                            .as_secs_f64()
                    }),
                    ..r.clone()
                })
                .collect(),
            objects: s
                .objects
                .iter()
                .filter(|(_, o)| !o.deleted)
                .filter_map(|(k, o)| {
                    o.verdict.as_ref().map(|v| ObjectStatus {
                        resource: k.resource.clone(),
                        namespace: k.namespace.clone(),
                        name: k.name.clone(),
                        status: v.status,
                        rule: v.rule.clone(),
                    })
                })
                .collect(),
            timeline: s.marks.iter().cloned().collect(),
            truth: s.lanes.truth_marks(),
            deliveries: s.lanes.delivery_marks(),
        }
    }

    /// Whether the convergence oracle can judge now (see [`Oracles::update_gauge`]): a
    /// quiet run ends only then, so a controller backing off after errors gets its
    /// `settle` to recover.
    pub fn can_judge(&self, now: SystemTime) -> bool {
        self.update_gauge(now)
    }

    /// How many windows have closed so far.
    pub fn windows_closed(&self) -> usize {
        self.lock()
            .windows
            .iter()
            .filter(|w| w.closed_at.is_some())
            .count()
    }

    /// Only set `stalemate_oracle_violations` (for a scrape: no report is built);
    /// returns whether the convergence oracle can judge yet: no window open, and either
    /// `settle` has passed since the last one closed or every object it judges is
    /// Current.
    pub fn update_gauge(&self, now: SystemTime) -> bool {
        let s = self.lock();
        self.judge(&s, now).0
    }

    /// (judged, why not, violations) as of `now`; sets `stalemate_oracle_violations`.
    fn judge(&self, s: &State, now: SystemTime) -> (bool, Option<String>, Vec<Violation>) {
        let (judged, pending, mut violations) = match &self.config.convergence {
            Some(c) => {
                let mut j = convergence::judge(c, s, self.started, now);
                if j.judged {
                    j.violations
                        .extend(recovery::judge(c, s, self.started, now));
                }
                (j.judged, j.pending, j.violations)
            }
            None => (true, None, Vec::new()),
        };
        violations.extend(s.settled.iter().cloned());
        for (k, o) in &s.objects {
            if let Some(race) = o.readiness {
                violations.push(readiness_violation(k, race));
            }
        }
        if let Some(h) = &self.config.hot_loop {
            for ((client, k), hit) in &s.rates.hot {
                violations.extend(hot_violation(&s.objects, h, client, k, hit));
            }
        }
        if let Some(c) = &self.config.conflicts {
            for ((client, k), hit) in &s.rates.storms {
                violations.push(storm_violation(c, client, k, hit));
            }
        }
        for oracle in [
            "convergence",
            "recovery",
            "readinessRace",
            "hotLoop",
            "conflicts",
        ] {
            self.violations_gauge
                .with_label_values(&[oracle])
                .set(violations.iter().filter(|v| v.oracle == oracle).count() as i64);
        }
        (judged, pending, violations)
    }
}

fn readiness_violation(
    k: &ObjectRef,
    (since, until): (SystemTime, Option<SystemTime>),
) -> Violation {
    Violation {
        oracle: "readinessRace".into(),
        resource: k.resource.clone(),
        namespace: k.namespace.clone(),
        name: k.name.clone(),
        rule: "kstatus Current before the controller wrote status.observedGeneration (by its fallback rule: no Ready, Reconciling or Stalled condition)".into(),
        since,
        client: None,
        until,
        peak: None,
        why: None,
    }
}

#[cfg(test)]
mod tests;
