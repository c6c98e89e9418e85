//! What the oracles are told: requests the proxy answered, ground truth's objects, the
//! windows, the controller's restarts and exits. Each call records what the oracles
//! share (`state.rs`), then hands it to every configured oracle's hook (`hooks.rs`) —
//! a fan-out that names no oracle.
//!
//! All state is plain data updated with explicit times, so the rules are tested without
//! a clock.

use std::collections::BTreeSet;
use std::time::SystemTime;

use serde_json::Value;

use super::caps::{MAX_ENTRIES, cap_keys, push_capped};
use super::hooks::{Answered, Seen};
use super::kstatus;
use super::object_ref::ObjectRef;
use super::oracles::{Oracles, State};
use super::staleness;
use super::tracked::Obj;
use super::verdicts::{ExitMark, Mark, RestartMark, WindowSpan};
use crate::k8s::request::Verb;

/// Timeline marks kept for the report (the oldest are dropped past it).
const MAX_MARKS: usize = 20_000;

impl Oracles {
    /// A request the proxy answered. Writes and conflicts on named objects go on the
    /// timeline; every oracle hears of it.
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
        }
        let r = Answered {
            client,
            verb,
            resource,
            namespace,
            name,
            code,
            at,
        };
        let mut guard = self.lock();
        let s = &mut *guard;
        if (200..300).contains(&code)
            && self
                .watching_answers
                .load(std::sync::atomic::Ordering::Relaxed)
            && s.shared.answered_since.is_some_and(|since| at >= since)
        {
            s.shared.answered.entry(client.to_string()).or_insert(at);
        }
        if let Some(name) = name
            && (verb.is_write() || code == 409)
        {
            mark(&mut s.shared.marks, &r, name);
        }
        for o in &mut s.oracles {
            let d = o.on_request(&r, &s.shared);
            self.count_dropped(&mut s.shared, d);
        }
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
        self.lock().shared.lanes.delivery(
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
        // one the run judges by: held to the conditions expected (`convergence`).
        let kstatus = kstatus::compute(obj);
        let verdict = match &self.config.convergence {
            Some(c) => c.verdict(&key, obj),
            None => kstatus.clone(),
        };
        let mark = truth_mark(&key, obj, at, &verdict);
        // Current, or Failed where that is the answer (a spec the controller rejects).
        let done = match &self.config.convergence {
            Some(c) => c.done(&key, verdict.status),
            None => verdict.status == kstatus::Status::Current,
        };
        let mut guard = self.lock();
        let s = &mut *guard;
        s.shared.lanes.truth(&key, mark);
        let o = (s.shared.objects.entry(key.clone())).or_insert_with(|| Obj::new(at));
        o.observe(obj, at, done, verdict);
        let seen = Seen {
            key: &key,
            obj,
            at,
            kstatus: &kstatus,
            done,
        };
        for o in &mut s.oracles {
            o.on_object(&seen, &s.shared);
        }
        // After the oracles heard of it: what the cap drops, they forget with it.
        let dropped = cap_keys(&mut s.shared.objects, |o| o.seen);
        for k in &dropped {
            s.oracles.iter_mut().for_each(|o| o.forget(k));
        }
        self.count_dropped(&mut s.shared, dropped.len() as u64);
    }

    /// Ground truth: the object is gone.
    pub fn on_delete(&self, resource: &str, namespace: &str, name: &str, at: SystemTime) {
        let key = ObjectRef {
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        let mut s = self.lock();
        s.shared.lanes.truth(
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
        let gone: Vec<ObjectRef> = (s.shared.objects.keys())
            .filter(|k| {
                k.resource == resource && !present.contains(&(k.namespace.clone(), k.name.clone()))
            })
            .cloned()
            .collect();
        for k in gone {
            self.prune(&mut s, &k);
        }
    }

    /// A deleted object: every oracle judges what is left to judge about it (its hot
    /// loops, conflict storms and readiness race stay reported) and forgets it; then its
    /// shared state goes. Convergence never judges deleted objects.
    fn prune(&self, s: &mut State, key: &ObjectRef) {
        let mut settled = Vec::new();
        for o in &mut s.oracles {
            settled.extend(o.on_gone(key, &s.shared));
        }
        let shared = &mut s.shared;
        shared.settled.extend(settled);
        shared.objects.remove(key);
        if shared.settled.len() > MAX_ENTRIES {
            let extra = shared.settled.len() - MAX_ENTRIES;
            shared.settled.drain(..extra);
            self.count_dropped(shared, extra as u64);
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
        let dropped = push_capped(&mut s.shared.restarts, mark);
        self.count_dropped(&mut s.shared, dropped);
    }

    /// A window opened or closed.
    pub fn on_window(&self, name: &str, fault: &str, open: bool, at: SystemTime) {
        let mut guard = self.lock();
        let s = &mut *guard;
        if open {
            self.window_opened(&mut s.shared, name, fault, at);
        } else {
            if let Some(w) = (s.shared.windows.iter_mut())
                .rev()
                .find(|w| w.name == name && w.closed_at.is_none())
            {
                w.closed_at = Some(at);
            }
            if s.shared.windows.iter().all(|w| w.closed_at.is_some()) {
                self.answers_from(&mut s.shared, at);
            }
        }
        for o in &mut s.oracles {
            let d = o.on_window(name, open, at, &s.shared);
            self.count_dropped(&mut s.shared, d);
        }
    }

    fn window_opened(&self, s: &mut super::state::Shared, name: &str, fault: &str, at: SystemTime) {
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
                    self.count_dropped(s, 1);
                }
                None => break,
            }
        }
    }

    /// The controller exited on its own at `at` after running `ran`; it starts again
    /// after `backoff` (`None`: it does not).
    pub fn on_exit(
        &self,
        controller: &str,
        at: SystemTime,
        status: &str,
        ran: std::time::Duration,
        backoff: Option<std::time::Duration>,
    ) {
        self.exits_counter.inc();
        self.backoff_gauge
            .set(backoff.map_or(0.0, |b| b.as_secs_f64()));
        let mut s = self.lock();
        let mark = ExitMark {
            controller: controller.to_string(),
            at,
            status: status.to_string(),
            ran_seconds: ran.as_secs_f64(),
            backoff_seconds: backoff.map(|b| b.as_secs_f64()),
        };
        let dropped = push_capped(&mut s.shared.exits, mark);
        self.count_dropped(&mut s.shared, dropped);
        let back = backoff.map_or(at, |b| at + b);
        self.answers_from(&mut s.shared, back);
    }

    /// The controller runs again (its back-off over).
    pub fn on_started_again(&self) {
        self.backoff_gauge.set(0.0);
    }

    /// How the supervisor restarts exits (for the report).
    pub fn set_backoff(&self, described: String) {
        self.lock().shared.backoff = Some(described);
    }

    /// Look at answered requests from `since` on, afresh.
    fn answers_from(&self, s: &mut super::state::Shared, since: SystemTime) {
        s.answered.clear();
        s.answered_since = Some(s.answered_since.map_or(since, |t| t.max(since)));
        self.watching_answers
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The workload's last step ended (`at`): `settle` counts from then too.
    pub fn workload_done(&self, at: SystemTime) {
        self.lock().shared.workload_done_at = Some(at);
    }

    /// The controllers' metrics say they have settled (`at`): their workqueues empty, no
    /// retry pending (`session/idle.rs`) — or, `None`, they are at work again. Settled
    /// after the last window closed, the convergence oracle judges at once instead of
    /// waiting out `settle` for a back-off that is not there.
    pub fn controller_settled(&self, at: Option<SystemTime>) {
        self.lock().shared.settled_at = at;
    }
}

/// A write or a conflict on a named object, on the timeline.
fn mark(marks: &mut std::collections::VecDeque<Mark>, r: &Answered<'_>, name: &str) {
    // `gitrepositories/status` is a write to the object.
    let resource = r.resource.split('/').next().unwrap_or(r.resource);
    marks.push_back(Mark {
        at: r.at,
        client: r.client.to_string(),
        verb: r.verb,
        resource: resource.to_string(),
        namespace: r.namespace.unwrap_or("").to_string(),
        name: name.to_string(),
        code: r.code,
    });
    if marks.len() > MAX_MARKS {
        marks.pop_front();
    }
}

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
