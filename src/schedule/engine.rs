//! The running schedule: which windows are open for whom, opening and closing them on
//! time or when their trigger fires, and telling every gated stream when that changes.
//! What a window *does* is its fault's business (`fault/`); the engine only decides
//! which are open.
//!
//! Time is tokio's clock, so tests drive windows with paused time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use http::HeaderMap;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{EventKind, Schedule, Verb, Window};
use crate::fault::{HoldMode, Process, Random};
use crate::identity::Clients;

/// A window that is open now.
#[derive(Debug, Clone)]
pub struct Active {
    pub window: Window,
    pub opened: Instant,
    /// Distinguishes re-openings of the same window (streams are ended once per opening).
    pub generation: u64,
    /// How this opening holds its target's streams, drawn once when it opened (a lag's
    /// jitter): every stream and every later look at it agree, and a seeded run draws
    /// the same sequence whatever else happens in between.
    pub hold: Option<HoldMode>,
}

/// A window waiting for its trigger: counting requests or events, or on a timer (`at`,
/// `every` — an `every` window stays armed until its `count` is used up).
struct Armed {
    id: u64,
    window: Window,
    seen: u64,
    timer: Option<tokio::task::AbortHandle>,
}

/// What a window does when it opens outside the proxy (a `restart`), put off until the
/// request that fired its trigger has been answered: run it then.
pub struct Deferred(Box<dyn FnOnce() + Send + Sync>);

impl Deferred {
    pub fn run(self) {
        (self.0)()
    }
}

pub struct Engine {
    clients: Clients,
    /// Every random choice (jitter, error rates) draws from here, seeded by the
    /// schedule's `seed`, so a run's sequence of choices is reproducible.
    rng: Mutex<rand::rngs::StdRng>,
    trace: OnceLock<crate::trace::Trace>,
    oracles: OnceLock<Arc<crate::oracle::Oracles>>,
    /// The controller process, when stalemate owns it (`run`, `explore`).
    process: OnceLock<Arc<dyn Process>>,
    expects_process: std::sync::atomic::AtomicBool,
    armed: Mutex<Vec<Armed>>,
    next_armed: std::sync::atomic::AtomicU64,
    /// Windows triggered with a `delay` that have not opened yet.
    delayed: std::sync::atomic::AtomicUsize,
    /// Resources a window that reads from views has named (in the file or at run time):
    /// only these need client views (`--views named`).
    view_resources: RwLock<HashSet<String>>,
    /// Resources a `rewind` window has named: their views keep their past.
    rewind_resources: RwLock<HashSet<String>>,
    active: Mutex<BTreeMap<String, Active>>,
    /// When each window last opened (what `rewind {at}` goes back to).
    last_opened: Mutex<HashMap<String, Instant>>,
    generation: Mutex<u64>,
    changes: watch::Sender<u64>,
    /// The proxy's listeners' links, which `partition` windows break.
    network: Arc<crate::listen::network::Network>,
    pub opened_total: prometheus::IntCounter,
    pub window_active: prometheus::IntGaugeVec,
    /// When each window last opened (unix seconds), and how long it was to stay open (0:
    /// until closed over the control API) — together they tell a window open longer than
    /// planned (the `StalemateWindowOverdue` alert).
    pub window_opened: prometheus::GaugeVec,
    pub window_planned: prometheus::GaugeVec,
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
    pub fn new(schedule: &Schedule) -> Arc<Engine> {
        use rand::SeedableRng;
        Arc::new(Engine {
            clients: Clients::new(&schedule.clients),
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(schedule.seed)),
            trace: OnceLock::new(),
            oracles: OnceLock::new(),
            process: OnceLock::new(),
            expects_process: Default::default(),
            armed: Mutex::new(Vec::new()),
            next_armed: std::sync::atomic::AtomicU64::new(1),
            delayed: Default::default(),
            view_resources: Default::default(),
            rewind_resources: Default::default(),
            active: Mutex::new(BTreeMap::new()),
            last_opened: Mutex::new(HashMap::new()),
            generation: Mutex::new(0),
            changes: watch::channel(0).0,
            network: crate::listen::network::Network::new(),
            opened_total: prometheus::IntCounter::new("windows_opened_total", "Windows opened.")
                .expect("static metric definition"),
            window_active: prometheus::IntGaugeVec::new(
                prometheus::Opts::new("window_active", "1 while a window is open."),
                &["window"],
            )
            .expect("static metric definition"),
            window_opened: prometheus::GaugeVec::new(
                prometheus::Opts::new(
                    "window_opened_timestamp_seconds",
                    "When the window last opened (unix time).",
                ),
                &["window"],
            )
            .expect("static metric definition"),
            window_planned: prometheus::GaugeVec::new(
                prometheus::Opts::new(
                    "window_planned_seconds",
                    "How long the window was to stay open when it last opened (0: until closed over the control API).",
                ),
                &["window"],
            )
            .expect("static metric definition"),
        })
    }

    /// Start the schedule: windows without a trigger open now, `at` and `every` ones on
    /// time, `afterRequests`/`afterEvents` ones are armed, `manual` ones wait for the
    /// control API.
    pub fn start(self: &Arc<Self>, schedule: &Schedule) {
        for w in &schedule.windows {
            if w.trigger.as_ref().is_some_and(|t| t.manual.is_some()) {
                self.note_view_resources(w);
                continue;
            }
            let _ = self.submit(w.clone());
        }
    }

    /// Give the engine the controller process it may restart (`run`, `explore`).
    pub fn set_process(&self, p: Arc<dyn Process>) {
        let _ = self.process.set(p);
    }

    /// A process will be handed over with [`Engine::set_process`] once it runs: windows
    /// that need one are accepted from now on.
    pub fn expect_process(&self) {
        self.expects_process
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether stalemate owns a process `restart` windows can act on.
    pub fn owns_process(&self) -> bool {
        self.process.get().is_some()
            || self
                .expects_process
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Problems a window has here: its own, and faults this proxy cannot apply.
    fn check(&self, w: &Window) -> Result<(), String> {
        let errs = w.check_with(|c| self.clients.defines(c));
        if let Some((field, msg)) = errs.first() {
            return Err(format!("{field}: {msg}"));
        }
        if let crate::fault::Fault::Partition(p) = &w.fault
            && p.mode == crate::fault::partition::Mode::Refuse
        {
            if !p.whole(&w.resources, &w.namespaces) {
                return Err("fault.partition.mode: a refusal is of connections, which carry every resource and namespace: give it resources [\"*\"] and no namespaces".into());
            }
            if w.client != "*" && self.clients.listener_of(&w.client).is_none() {
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
        self.note_view_resources(&w);
        let Some(t) = w.trigger.clone().filter(|t| t.manual.is_none()) else {
            self.open(w)?;
            return Ok("opened");
        };
        let id = self
            .next_armed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let timer = if let Some(at) = t.at {
            let (engine, w) = (self.clone(), w.clone());
            Some(tokio::spawn(async move {
                tokio::time::sleep(at.0).await;
                engine.unarm(id);
                let _ = engine.open(w);
            }))
        } else if let Some(every) = t.every {
            let (engine, jitter, count, w) =
                (self.clone(), t.jitter.map(|j| j.0), t.count, w.clone());
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
        } else if t.after_requests.is_some() || t.after_events.is_some() {
            None
        } else {
            self.open(w)?;
            return Ok("opened");
        };
        self.lock_armed().push(Armed {
            id,
            window: w,
            seen: 0,
            timer: timer.map(|t| t.abort_handle()),
        });
        Ok("armed")
    }

    fn lock_armed(&self) -> std::sync::MutexGuard<'_, Vec<Armed>> {
        self.armed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A timer fired for the last time: no longer armed.
    fn unarm(&self, id: u64) {
        self.lock_armed().retain(|a| a.id != id);
    }

    /// Cancel every armed window named `name` (its trigger will not open it); whether
    /// there was one. An open window of that name stays open: see [`Engine::close`].
    pub fn disarm(&self, name: &str) -> bool {
        let mut armed = self.lock_armed();
        let before = armed.len();
        armed.retain(|a| {
            if a.window.name != name {
                return true;
            }
            if let Some(t) = &a.timer {
                t.abort();
            }
            false
        });
        let disarmed = armed.len() < before;
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
        let due = self.due(counts);
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
        use std::sync::atomic::Ordering;
        self.delayed.fetch_add(1, Ordering::SeqCst);
        tracing::info!(window = %w.name, ?delay, "window triggered; opens after its delay");
        let engine = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = engine.open(w);
            engine.delayed.fetch_sub(1, Ordering::SeqCst);
            engine.bump();
        });
    }

    /// No window open, and none triggered that waits out its delay.
    pub fn idle(&self) -> bool {
        self.lock().is_empty() && self.delayed.load(std::sync::atomic::Ordering::SeqCst) == 0
    }

    /// The armed windows whose counts reach their trigger, disarmed.
    fn due(&self, counts: impl Fn(&Window) -> Option<u64>) -> Vec<Window> {
        let due: Vec<Window> = {
            let mut armed = self.lock_armed();
            let mut due = Vec::new();
            armed.retain_mut(|a| match counts(&a.window) {
                Some(n) => {
                    a.seen += 1;
                    if a.seen >= n {
                        due.push(a.window.clone());
                        false
                    } else {
                        true
                    }
                }
                None => true,
            });
            due
        };
        due
    }

    /// Send window openings and closings to a trace (the oracles hear of them too).
    pub fn set_trace(&self, t: crate::trace::Trace) {
        let _ = self.trace.set(t);
    }

    /// The oracles, once set.
    pub fn oracles(&self) -> Option<&Arc<crate::oracle::Oracles>> {
        self.oracles.get()
    }

    /// Tell the oracles when windows open and close.
    pub fn set_oracles(&self, o: Arc<crate::oracle::Oracles>) {
        let _ = self.oracles.set(o);
    }

    fn announce_window(&self, name: &str, action: &'static str, fault: &'static str) {
        if let Some(o) = self.oracles.get() {
            o.on_window(name, fault, action == "open", std::time::SystemTime::now());
        }
        if let Some(t) = self.trace.get() {
            t.record(crate::trace::Record::Window {
                window: name.to_string(),
                action,
                fault: fault.to_string(),
            });
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Active>> {
        self.active.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.relink();
        self.changes.send_modify(|n| *n += 1);
    }

    /// The network the proxy's listeners are served behind.
    pub fn network(&self) -> Arc<crate::listen::network::Network> {
        self.network.clone()
    }

    /// Each listener's link from the `partition` windows open now: a whole partition
    /// (`fault/partition.rs`) covers every listener for `*`, and a client's listener for a
    /// client recognised by its listener alone.
    fn relink(&self) {
        use crate::listen::network::Link;
        let listeners = self.network.listeners();
        let mut links: HashMap<std::net::SocketAddr, Link> = HashMap::new();
        for a in self.lock().values() {
            let crate::fault::Fault::Partition(p) = &a.window.fault else {
                continue;
            };
            if !p.whole(&a.window.resources, &a.window.namespaces) {
                continue;
            }
            let client = a.window.client.as_str();
            let listener = self.clients.listener_of(client);
            for addr in &listeners {
                let covered =
                    client == "*" || listener.is_some_and(|l| self.clients.is_listener(*addr, l));
                if covered {
                    let link = links.entry(*addr).or_default();
                    *link = link.max(p.link());
                }
            }
        }
        self.network.set(links);
    }

    /// Resolves once the window `name`'s opening `generation` has closed.
    pub async fn until_closed(&self, name: &str, generation: u64) {
        let mut changes = self.changes();
        loop {
            let open = self
                .lock()
                .get(name)
                .is_some_and(|a| a.generation == generation);
            if !open || changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// A window that may answer reads from views: its resources keep views from now on
    /// (a view starts at its client's next LIST).
    fn note_view_resources(&self, w: &Window) {
        if w.fault.uses_views() {
            self.view_resources
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .extend(w.resources.iter().cloned());
        }
        if matches!(w.fault.behaviour().reads(), crate::fault::Reads::Rewound(_)) {
            self.rewind_resources
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .extend(w.resources.iter().cloned());
        }
    }

    /// Whether a `rewind` window named `resource` (or `*`): its views keep their past.
    pub fn may_rewind(&self, resource: &str) -> bool {
        let named = self
            .rewind_resources
            .read()
            .unwrap_or_else(|p| p.into_inner());
        named.contains(resource)
            || (named.contains("*") && resource != "leases.coordination.k8s.io")
    }

    /// Whether a window could answer reads of `resource` from a view: one that does
    /// named it (or `*`, which does not cover leases) in the schedule or at run time.
    pub fn may_use_view(&self, resource: &str) -> bool {
        let named = self
            .view_resources
            .read()
            .unwrap_or_else(|p| p.into_inner());
        named.contains(resource)
            || (named.contains("*") && resource != "leases.coordination.k8s.io")
    }

    /// When the window `name` last opened.
    pub fn opened_at(&self, name: &str) -> Option<Instant> {
        self.last_opened
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .copied()
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
        self.note_view_resources(&w);
        let generation = {
            let mut g = self.generation.lock().unwrap_or_else(|p| p.into_inner());
            *g += 1;
            *g
        };
        let name = w.name.clone();
        let duration = w
            .duration
            .map(|d| d.0)
            .or_else(|| w.fault.behaviour().default_duration());
        let hold = w.fault.behaviour().hold(&**self);
        let fault = w.fault.name();
        self.announce_window(&name, "open", fault);
        let now = Instant::now();
        self.last_opened
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.clone(), now);
        let (effect, client) = (w.fault.clone(), w.client.clone());
        self.lock().insert(
            name.clone(),
            Active {
                window: w,
                opened: now,
                generation,
                hold,
            },
        );
        self.opened_total.inc();
        self.window_active.with_label_values(&[&name]).set(1);
        self.window_opened.with_label_values(&[&name]).set(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        );
        self.window_planned
            .with_label_values(&[&name])
            .set(duration.map_or(0.0, |d| d.as_secs_f64()));
        tracing::info!(window = %name, fault, ?duration, "window opened");
        self.bump();
        if let Some(d) = duration {
            let engine = self.clone();
            let name = name.clone();
            tokio::spawn(async move {
                tokio::time::sleep(d).await;
                let still = engine
                    .lock()
                    .get(&name)
                    .is_some_and(|a| a.generation == generation);
                if still {
                    engine.close(&name);
                }
            });
        }
        let process = self.process.get().cloned();
        Ok(Some(Deferred(Box::new(move || {
            effect
                .behaviour()
                .on_open(&name, &client, process.as_deref());
        }))))
    }

    /// Close a window now; its held events are released.
    pub fn close(&self, name: &str) -> bool {
        let removed = self.lock().remove(name);
        if let Some(a) = &removed {
            self.announce_window(name, "close", a.window.fault.name());
            self.window_active.with_label_values(&[name]).set(0);
            tracing::info!(window = %name, "window closed");
            self.bump();
        }
        removed.is_some()
    }

    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Call the listener at `addr` `name`, for `listener` client matchers.
    pub fn name_listener(&self, addr: std::net::SocketAddr, name: &str) {
        self.clients.name_listener(addr, name);
    }

    /// The activity key (`listener:NAME`) of the listener at `addr`, if it has a name.
    pub fn listener_key(&self, addr: std::net::SocketAddr) -> Option<std::sync::Arc<str>> {
        self.clients.listener_key(addr)
    }

    /// The schedule client a request belongs to, or `other`.
    pub fn identify(
        &self,
        headers: &HeaderMap,
        listener: std::net::SocketAddr,
    ) -> std::sync::Arc<str> {
        self.clients.identify(headers, listener)
    }

    /// The open windows that target a stream, oldest first.
    pub fn windows_for(
        &self,
        client: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Vec<Active> {
        let mut v: Vec<Active> = self
            .lock()
            .values()
            .filter(|a| {
                (a.window.client == "*" || a.window.client == client)
                    && a.window.targets(resource, namespace)
            })
            .cloned()
            .collect();
        v.sort_by_key(|a| a.opened);
        v
    }

    /// `GET /v1/windows` and `/v1/status` material.
    pub fn describe(&self) -> Value {
        let now = Instant::now();
        let windows: Vec<Value> = self
            .lock()
            .values()
            .map(|a| {
                let remaining = a.window.duration.map(|d| d.0.saturating_sub(now.duration_since(a.opened)).as_secs_f64());
                json!({"window": a.window, "openForSeconds": now.duration_since(a.opened).as_secs_f64(), "remainingSeconds": remaining})
            })
            .collect();
        let armed: Vec<Value> = self
            .lock_armed()
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

    /// The schedule's client names.
    pub fn client_names(&self) -> Vec<String> {
        self.clients.names()
    }

    /// How a schedule client is recognised (`null` for `other`).
    pub fn client_matcher(&self, name: &str) -> Value {
        self.clients.matcher(name)
    }

    pub fn active_names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests;
