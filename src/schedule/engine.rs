//! The running schedule: which windows are open for whom, opening and closing them on
//! time or when their trigger fires, and telling every gated stream when that changes.
//! What a window *does* is its fault's business (`fault/`); the engine only decides
//! which are open.
//!
//! Everything it tells (trace, oracles, the network) and acts on (the controller
//! process) is given when it is made (`audience.rs`). It knows clients by name only:
//! which client a request is from is decided before it is asked.
//!
//! Time is tokio's clock, so tests drive windows with paused time.

mod audience;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{ClientMatcher, EventKind, Schedule, Verb, Window};
use crate::fault::Random;

pub use self::audience::{Audience, ClientLinks, ProcessSlot};
pub use super::book::Active;
use super::book::Book;

/// What a window does when it opens outside the proxy (a `restart`), put off until the
/// request that fired its trigger has been answered: run it then.
pub struct Deferred(Box<dyn FnOnce() + Send + Sync>);

impl Deferred {
    pub fn run(self) {
        (self.0)()
    }
}

/// What the engine tells the world outside the book about a window, handed out in one
/// place ([`Engine::tell`]). An opening is told in two steps around the book's change:
/// the oracles and the trace hear of it before anything the window does can be recorded,
/// and streams, network and metrics only once the book has it open. A closing is told
/// once it no longer applies.
enum Told<'a> {
    /// About to open: oracles and trace.
    Opening { name: &'a str, fault: &'static str },
    /// Open in the book: metrics, log, network links, streams.
    Opened {
        name: &'a str,
        fault: &'static str,
        duration: Option<Duration>,
    },
    /// Closed in the book: all of them.
    Closed { name: &'a str, fault: &'static str },
}

pub struct Engine {
    /// The schedule's clients: which names a window may aim at, and which of them are
    /// recognised by their listener alone (a `partition` may refuse their connections).
    clients: BTreeMap<String, ClientMatcher>,
    /// Every random choice (jitter, error rates) draws from here, seeded by the
    /// schedule's `seed`, so a run's sequence of choices is reproducible.
    rng: Mutex<rand::rngs::StdRng>,
    trace: crate::trace::Trace,
    oracles: Option<Arc<crate::oracle::Oracles>>,
    /// The controller process, when stalemate owns it (`run`, `explore`).
    process: ProcessSlot,
    /// Which windows are open and armed (`book.rs`): everything the engine decides from.
    book: Mutex<Book>,
    /// The armed windows' timers (`at`, `every`), by their ids in the book.
    timers: Mutex<HashMap<u64, tokio::task::AbortHandle>>,
    changes: watch::Sender<u64>,
    /// The links between clients and the proxy, which `partition` windows break.
    network: Option<Arc<dyn ClientLinks>>,
    /// The windows' metric families (`window_metrics.rs`).
    pub metrics: super::window_metrics::WindowMetrics,
}

impl Random for Engine {
    fn uniform(&self, lo: f64, hi: f64) -> f64 {
        use rand::Rng;
        if hi <= lo {
            return lo;
        }
        self.rng
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .random_range(lo..=hi)
    }

    fn chance(&self, p: f64) -> bool {
        use rand::Rng;
        self.rng
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .random_bool(p.clamp(0.0, 1.0))
    }
}

impl Engine {
    /// The engine of `schedule`, telling `audience` (nothing runs until
    /// [`Engine::start`]).
    pub fn new(schedule: &Schedule, audience: Audience) -> Arc<Engine> {
        use rand::SeedableRng;
        let Audience {
            trace,
            oracles,
            network,
            process,
        } = audience;
        Arc::new(Engine {
            clients: schedule.clients.clone(),
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(schedule.seed)),
            trace,
            oracles,
            process,
            book: Mutex::new(Book::default()),
            timers: Mutex::new(HashMap::new()),
            changes: watch::channel(0).0,
            network,
            metrics: Default::default(),
        })
    }

    /// Start the schedule: windows without a trigger open now, `at` and `every` ones on
    /// time, `afterRequests`/`afterEvents` ones are armed, `manual` ones wait for the
    /// control API.
    pub fn start(self: &Arc<Self>, schedule: &Schedule) {
        for w in &schedule.windows {
            if w.trigger.as_ref().is_some_and(|t| t.manual.is_some()) {
                self.book().note_views(w);
                continue;
            }
            let _ = self.submit(w.clone());
        }
    }

    /// Whether stalemate owns a process `restart` windows can act on (decided when the
    /// engine was made: see [`ProcessSlot`]).
    pub fn owns_process(&self) -> bool {
        self.process.is_expected()
    }

    /// Problems a window has here: its own, and faults this proxy cannot apply.
    fn check(&self, w: &Window) -> Result<(), String> {
        let errs = w.check_with(|c| super::defines(&self.clients, c));
        if let Some((field, msg)) = errs.first() {
            return Err(format!("{field}: {msg}"));
        }
        if let crate::fault::Fault::Partition(p) = &w.fault
            && p.mode == crate::fault::partition::Mode::Refuse
        {
            if !p.whole(&w.resources, &w.namespaces) {
                return Err("fault.partition.mode: a refusal is of connections, which carry every resource and namespace: give it resources [\"*\"] and no namespaces".into());
            }
            if w.client != "*" && self.listener_of(&w.client).is_none() {
                return Err(format!(
                    "client: a refusal acts on connections before any request says whose they are: aim it at \"*\" or at a client recognised by its `listener` alone ({:?} is not)",
                    w.client
                ));
            }
        }
        if w.fault.behaviour().needs_process() && !self.owns_process() {
            return Err(format!(
                "fault.{}: needs a controller process stalemate owns (`stalemate run` or `explore`); this proxy has none to restart",
                w.fault.name()
            ));
        }
        Ok(())
    }

    /// A window from the file or the control API: open it now (no trigger, or `manual`),
    /// or start its trigger (`at` and `every` count from now). Returns what was done.
    pub fn submit(self: &Arc<Self>, w: Window) -> Result<&'static str, String> {
        self.check(&w)?;
        self.book().note_views(&w);
        let Some(t) = w.trigger.clone().filter(|t| t.manual.is_none()) else {
            self.open(w)?;
            return Ok("opened");
        };
        let counted = t.after_requests.is_some() || t.after_events.is_some();
        if t.at.is_none() && t.every.is_none() && !counted {
            self.open(w)?;
            return Ok("opened");
        }
        // Armed before its timer starts, so that a timer firing at once finds it.
        let id = self.book().arm(w.clone());
        let timer = if let Some(at) = t.at {
            let engine = self.clone();
            Some(tokio::spawn(async move {
                tokio::time::sleep(at.0).await;
                engine.unarm(id);
                let _ = engine.open(w);
            }))
        } else if let Some(every) = t.every {
            let (engine, jitter, count) = (self.clone(), t.jitter.map(|j| j.0), t.count);
            Some(tokio::spawn(async move {
                let mut n = 0u64;
                while count.is_none_or(|c| n < c) {
                    let j = jitter.map_or(Duration::ZERO, |j| {
                        Duration::from_secs_f64(engine.uniform(0.0, j.as_secs_f64()))
                    });
                    tokio::time::sleep(every.0.saturating_add(j)).await;
                    let _ = engine.open(w.clone());
                    n += 1;
                }
                engine.unarm(id);
            }))
        } else {
            None
        };
        if let Some(t) = timer
            && !t.is_finished()
        {
            self.lock_timers().insert(id, t.abort_handle());
        }
        Ok("armed")
    }

    /// The book, locked. Nothing that takes another of the engine's locks is called
    /// while it is held.
    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_timers(&self) -> MutexGuard<'_, HashMap<u64, tokio::task::AbortHandle>> {
        self.timers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A timer fired for the last time: no longer armed.
    fn unarm(&self, id: u64) {
        self.book().unarm(id);
        self.lock_timers().remove(&id);
    }

    /// Cancel every armed window named `name` (its trigger will not open it); whether
    /// there was one. An open window of that name stays open: see [`Engine::close`].
    pub fn disarm(&self, name: &str) -> bool {
        let ids = self.book().disarm(name);
        let mut timers = self.lock_timers();
        for id in &ids {
            if let Some(t) = timers.remove(id) {
                t.abort();
            }
        }
        let disarmed = !ids.is_empty();
        if disarmed {
            tracing::info!(window = %name, "window disarmed");
        }
        disarmed
    }

    /// Count a request toward `afterRequests` triggers; opens (before the request is
    /// forwarded) the windows whose count it reaches. What those windows do outside the
    /// proxy comes back, to be run once the request has been answered.
    pub fn on_request(
        self: &Arc<Self>,
        client: &str,
        verb: Verb,
        resource: &str,
        subresource: Option<&str>,
    ) -> Vec<Deferred> {
        self.fire(|w| {
            let m = w.trigger.as_ref()?.after_requests.as_ref()?;
            let counted = m.client.as_deref().unwrap_or(&w.client);
            let ok = (counted == "*" || counted == client)
                && m.verb.is_none_or(|v| v == verb)
                && m.resource.as_deref().is_none_or(|r| r == resource)
                && m.subresource
                    .is_none_or(|s| Some(s.as_str()) == subresource);
            ok.then_some(m.count)
        })
    }

    /// Count an upstream watch event toward `afterEvents` triggers.
    pub fn on_event(self: &Arc<Self>, client: &str, resource: &str, kind: EventKind) {
        for d in self.fire(|w| {
            let m = w.trigger.as_ref()?.after_events.as_ref()?;
            let ok = (w.client == "*" || w.client == client)
                && m.resource.as_deref().is_none_or(|r| r == resource)
                && m.type_.is_none_or(|t| t == kind);
            ok.then_some(m.count)
        }) {
            d.run();
        }
    }

    fn fire(self: &Arc<Self>, counts: impl Fn(&Window) -> Option<u64>) -> Vec<Deferred> {
        let due = self.book().count(counts);
        let mut now = Vec::new();
        for w in due {
            match w.trigger.as_ref().and_then(|t| t.delay) {
                Some(delay) => self.open_later(w, delay.0),
                None => now.push(w),
            }
        }
        now.into_iter()
            .filter_map(|w| self.open_deferred(w).ok().flatten())
            .collect()
    }

    /// A window whose trigger fired with a `delay`: it opens then, and until then the
    /// run is not quiet (it has a window still to come).
    fn open_later(self: &Arc<Self>, w: Window, delay: Duration) {
        self.book().delay();
        tracing::info!(window = %w.name, ?delay, "window triggered; opens after its delay");
        let engine = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = engine.open(w);
            engine.book().delay_over();
            engine.bump();
        });
    }

    /// No window open, and none triggered that waits out its delay.
    pub fn idle(&self) -> bool {
        self.book().idle()
    }

    /// The oracles it tells, if any.
    pub fn oracles(&self) -> Option<&Arc<crate::oracle::Oracles>> {
        self.oracles.as_ref()
    }

    /// The one place the book's changes leave the engine: oracles and trace, the window
    /// metrics and the log, the network's links, and the streams (through `changes`).
    /// The supervisor hears of an opening through its [`Deferred`], run once the request
    /// that fired it has been answered; views read what they keep from the book.
    fn tell(&self, told: Told<'_>) {
        match told {
            Told::Opening { name, fault } => self.announce_window(name, "open", fault),
            Told::Opened {
                name,
                fault,
                duration,
            } => {
                self.metrics.opened(name, duration);
                tracing::info!(window = %name, fault, ?duration, "window opened");
                self.bump();
            }
            Told::Closed { name, fault } => {
                self.announce_window(name, "close", fault);
                self.metrics.closed(name);
                tracing::info!(window = %name, "window closed");
                self.bump();
            }
        }
    }

    fn announce_window(&self, name: &str, action: &'static str, fault: &'static str) {
        if let Some(o) = &self.oracles {
            o.on_window(name, fault, action == "open", std::time::SystemTime::now());
        }
        if self.trace.enabled() {
            self.trace.record(crate::trace::Record::Window {
                window: name.to_string(),
                action,
                fault: fault.to_string(),
            });
        }
    }

    fn bump(&self) {
        self.relink();
        self.changes.send_modify(|n| *n += 1);
    }

    /// The listener a client is recognised by alone, if any (its connections are its
    /// own before any request says whose they are).
    fn listener_of(&self, client: &str) -> Option<&str> {
        self.clients.get(client)?.listener_alone()
    }

    /// Each client's link from the `partition` windows open now: a whole partition
    /// (`fault/partition.rs`) covers every client's connections for `*`, and a client's
    /// own for a client recognised by its listener alone (the network resolves which
    /// listeners those are).
    fn relink(&self) {
        let Some(network) = &self.network else {
            return;
        };
        let mut links: Vec<(String, crate::listen::network::Link)> = Vec::new();
        for a in self.book().active() {
            let crate::fault::Fault::Partition(p) = &a.window.fault else {
                continue;
            };
            if p.whole(&a.window.resources, &a.window.namespaces) {
                links.push((a.window.client.clone(), p.link()));
            }
        }
        let links: Vec<(&str, _)> = links.iter().map(|(c, l)| (c.as_str(), *l)).collect();
        network.set(&links);
    }

    /// Resolves once the window `name`'s opening `generation` has closed.
    pub async fn until_closed(&self, name: &str, generation: u64) {
        let mut changes = self.changes();
        loop {
            let open = self.book().is_open(name, generation);
            if !open || changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Whether a `rewind` window named `resource` (or `*`): its views keep their past.
    pub fn may_rewind(&self, resource: &str) -> bool {
        self.book().may_rewind(resource)
    }

    /// Whether a window could answer reads of `resource` from a view: one that does
    /// named it (or `*`, which does not cover leases) in the schedule or at run time
    /// (a view starts at its client's next LIST).
    pub fn may_use_view(&self, resource: &str) -> bool {
        self.book().may_use_view(resource)
    }

    /// When the window `name` last opened.
    pub fn opened_at(&self, name: &str) -> Option<Instant> {
        self.book().opened_at(name)
    }

    /// Open a window now (it closes after its duration, if it has one).
    pub fn open(self: &Arc<Self>, w: Window) -> Result<(), String> {
        if let Some(d) = self.open_deferred(w)? {
            d.run();
        }
        Ok(())
    }

    /// Open a window now; what it does outside the proxy comes back to be run by the
    /// caller (after the request that fired its trigger has been answered).
    fn open_deferred(self: &Arc<Self>, w: Window) -> Result<Option<Deferred>, String> {
        self.check(&w)?;
        self.book().note_views(&w);
        let name = w.name.clone();
        let duration = w
            .duration
            .map(|d| d.0)
            .or_else(|| w.fault.behaviour().default_duration());
        let hold = w.fault.behaviour().hold(&**self);
        let fault = w.fault.name();
        self.tell(Told::Opening { name: &name, fault });
        let (effect, client) = (w.fault.clone(), w.client.clone());
        let generation = self.book().open(w, hold, Instant::now());
        self.tell(Told::Opened {
            name: &name,
            fault,
            duration,
        });
        if let Some(d) = duration {
            let engine = self.clone();
            let name = name.clone();
            tokio::spawn(async move {
                tokio::time::sleep(d).await;
                let still = engine.book().is_open(&name, generation);
                if still {
                    engine.close(&name);
                }
            });
        }
        let process = self.process.get();
        Ok(Some(Deferred(Box::new(move || {
            effect
                .behaviour()
                .on_open(&name, &client, process.as_deref());
        }))))
    }

    /// Close a window now; its held events are released.
    pub fn close(&self, name: &str) -> bool {
        let removed = self.book().close(name);
        if let Some(a) = &removed {
            let fault = a.window.fault.name();
            self.tell(Told::Closed { name, fault });
        }
        removed.is_some()
    }

    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The open windows that target a stream, oldest first.
    pub fn windows_for(
        &self,
        client: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Vec<Active> {
        self.book().windows_for(client, resource, namespace)
    }

    /// `GET /v1/windows` and `/v1/status` material.
    pub fn describe(&self) -> Value {
        let now = Instant::now();
        let book = self.book();
        let windows: Vec<Value> = book
            .active()
            .map(|a| {
                let remaining = a.window.duration.map(|d| d.0.saturating_sub(now.duration_since(a.opened)).as_secs_f64());
                json!({"window": a.window, "openForSeconds": now.duration_since(a.opened).as_secs_f64(), "remainingSeconds": remaining})
            })
            .collect();
        let armed: Vec<Value> = book
            .armed()
            .iter()
            .map(|a| {
                let count = a.window.trigger.as_ref().and_then(|t| {
                    t.after_requests
                        .as_ref()
                        .map(|m| m.count)
                        .or(t.after_events.as_ref().map(|m| m.count))
                });
                json!({"window": a.window, "seen": count.map(|_| a.seen), "count": count})
            })
            .collect();
        json!({"windows": windows, "armed": armed})
    }

    pub fn active_names(&self) -> Vec<String> {
        self.book().active_names()
    }
}

#[cfg(test)]
mod tests;
