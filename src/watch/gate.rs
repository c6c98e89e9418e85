//! The per-stream gate: the only place that delays or drops anything.
//!
//! A pure state machine over frames and time (no I/O, no clock of its own), so schedule
//! logic is testable with any notion of "now". The proxy feeds it upstream frames and
//! window changes and writes out what it returns.
//!
//! ```text
//!               open(Freeze|Coalesce)              close / tick
//!   Passing ───────────────────────────► Holding ───────────────► Passing
//!      │  ▲        open(Lag{delay})         │  (release held, in order; coalesce:
//!      │  └─────────────────────────────────┘   latest state per object, in RV order)
//!      │ upstream end / cap / relist
//!      ▼
//!   Ended  — if events were held: ERROR 410 Expired, never a clean close (invariant 1)
//! ```
//!
//! Invariant 2 (docs/PROTOCOL.md §A.8): a BOOKMARK promises "you have everything up to RV";
//! delivering one past an event still held would let a reconnecting client skip that
//! event forever. So while anything is held, ordinary bookmarks are dropped (a later one
//! will come), and under `lag` they queue behind the events they follow. The WatchList
//! end marker (`k8s.io/initial-events-end`) is never dropped: client-go waits for it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

// tokio's clock, as everywhere a schedule decides something: paused-time tests drive
// the gate too.
use tokio::time::Instant;

use super::event::EventType;
use super::frame::Frame;

/// The held bytes of all streams together, against the global cap (invariant 5).
#[derive(Debug)]
pub struct HeldBudget {
    used: AtomicUsize,
    max: usize,
}

impl HeldBudget {
    pub fn new(max: usize) -> Arc<HeldBudget> {
        Arc::new(HeldBudget {
            used: AtomicUsize::new(0),
            max,
        })
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn reserve(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|t| *t <= self.max)
            })
            .is_ok()
    }

    fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// `now + d`, or as late as the clock goes: a delay that does not fit never panics.
fn later(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(86400 * 365 * 30)))
        .unwrap_or(now)
}

/// What happened to one event, for the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Delivered,
    Held,
    /// Delivered after being held this long.
    Released(Duration),
    Dropped,
}

impl Fate {
    pub fn as_str(self) -> &'static str {
        match self {
            Fate::Delivered => "delivered",
            Fate::Held => "held",
            Fate::Released(_) => "released",
            Fate::Dropped => "dropped",
        }
    }
}

/// One event's fate, recorded when [`Gate::record`] is on.
#[derive(Debug, Clone)]
pub struct Note {
    pub fate: Fate,
    pub meta: super::event::EventMeta,
}

/// How a window holds a stream's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldMode {
    /// Nothing until the window ends; then everything held, in order.
    Freeze,
    /// Like freeze, but at the end only the latest event of each object, in RV order.
    Coalesce,
    /// Every event `delay` late, in order.
    Lag(Duration),
}

/// What the gate asks the stream to do.
// Nearly every output is a `Deliver`; boxing it would allocate per event for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Write this frame (its original bytes) to the client now.
    Deliver(Frame),
    /// End the stream with an ERROR 410 `Expired` event, so the client relists.
    EndExpired { reason: &'static str },
    /// End the stream cleanly (the client resumes from its last RV).
    EndClean,
    /// Reset the stream (as a crashed apiserver would).
    Abort,
}

/// Why a held frame left the gate without being delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// An ordinary bookmark while events were held.
    Bookmark,
    /// An earlier state of an object a coalesce window replaced.
    Coalesced,
}

#[derive(Debug)]
struct Held {
    frame: Frame,
    due: Option<Instant>,
    /// When it arrived from the upstream.
    since: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Passing,
    Holding(HoldMode),
    Ended,
}

/// Counters a stream reports as metrics, per event type (indexed by [`type_index`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GateStats {
    pub delivered: [u64; 5],
    pub held: [u64; 5],
    pub released: [u64; 5],
    /// Ordinary bookmarks dropped while holding, and states a coalesce replaced.
    pub dropped: [u64; 5],
    pub dropped_bookmarks: u64,
    pub coalesced: u64,
    /// Streams ended because a held-bytes cap (per stream or global) was reached.
    pub cap_hits: u64,
}

/// The index of an event type in [`GateStats`] arrays.
pub fn type_index(t: Option<EventType>) -> usize {
    match t {
        Some(EventType::Added) => 0,
        Some(EventType::Modified) => 1,
        Some(EventType::Deleted) => 2,
        Some(EventType::Bookmark) => 3,
        Some(EventType::Error) | None => 4,
    }
}

/// The event type names in [`type_index`] order, for metric labels.
pub const TYPE_NAMES: [&str; 5] = ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"];

#[derive(Debug)]
pub struct Gate {
    state: State,
    held: VecDeque<Held>,
    held_bytes: usize,
    max_held_bytes: usize,
    budget: Option<Arc<HeldBudget>>,
    pub stats: GateStats,
    /// Record every event's fate in [`Gate::take_notes`] (for `--trace`).
    pub record: bool,
    notes: Vec<Note>,
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Gate {
    pub fn new(max_held_bytes: usize) -> Gate {
        Gate {
            state: State::Passing,
            held: VecDeque::new(),
            held_bytes: 0,
            max_held_bytes,
            budget: None,
            stats: GateStats::default(),
            record: false,
            notes: Vec::new(),
        }
    }

    /// Also count held bytes against a budget shared by every stream.
    pub fn with_budget(mut self, budget: Arc<HeldBudget>) -> Gate {
        self.budget = Some(budget);
        self
    }

    /// The fates recorded since the last call.
    pub fn take_notes(&mut self) -> Vec<Note> {
        std::mem::take(&mut self.notes)
    }

    fn note(&mut self, fate: Fate, frame: &Frame) {
        if self.record {
            self.notes.push(Note {
                fate,
                meta: frame.meta.clone(),
            });
        }
    }

    /// When the oldest event still held arrived: how far behind the client is.
    pub fn oldest_held_since(&self) -> Option<Instant> {
        self.held.front().map(|h| h.since)
    }

    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    pub fn held_len(&self) -> usize {
        self.held.len()
    }

    /// Resource versions of the events (not bookmarks) still held, oldest first.
    pub fn held_rvs(&self) -> impl Iterator<Item = &str> {
        self.held
            .iter()
            .filter(|h| h.frame.meta.type_ != Some(EventType::Bookmark))
            .map(|h| h.frame.meta.resource_version.as_str())
    }

    pub fn is_ended(&self) -> bool {
        self.state == State::Ended
    }

    /// When `tick` has something to release (lag), if ever.
    pub fn next_due(&self) -> Option<Instant> {
        self.held.front().and_then(|h| h.due)
    }

    /// A window opens over this stream. A second window replaces the first's mode; the
    /// events already held stay held, in order.
    pub fn open(&mut self, mode: HoldMode, now: Instant) -> Vec<Output> {
        if self.state == State::Ended {
            return vec![];
        }
        self.state = State::Holding(mode);
        if let HoldMode::Lag(d) = mode {
            for h in &mut self.held {
                h.due.get_or_insert(later(now, d));
            }
        } else {
            for h in &mut self.held {
                h.due = None;
            }
        }
        vec![]
    }

    /// The window ends: release everything held, in order (coalesced if the mode says so).
    pub fn close(&mut self, now: Instant) -> Vec<Output> {
        let State::Holding(mode) = self.state else {
            return vec![];
        };
        self.state = State::Passing;
        if mode == HoldMode::Coalesce {
            self.coalesce();
        }
        self.release_all(now)
    }

    /// Release lagged events whose time has come.
    pub fn tick(&mut self, now: Instant) -> Vec<Output> {
        let mut out = Vec::new();
        if let State::Holding(HoldMode::Lag(_)) = self.state {
            while self
                .held
                .front()
                .is_some_and(|h| h.due.is_some_and(|d| d <= now))
            {
                if let Some(h) = self.pop() {
                    out.push(self.released(h, now));
                }
            }
        }
        out
    }

    /// A frame arrived from the upstream.
    pub fn on_frame(&mut self, frame: Frame, now: Instant) -> Vec<Output> {
        match self.state {
            State::Ended => vec![],
            State::Passing if self.held.is_empty() => self.deliver(frame),
            State::Passing => {
                // Still draining (cannot happen: close releases all) — keep order anyway.
                self.push(frame, None, now)
            }
            State::Holding(mode) => {
                let is_bookmark = frame.meta.type_ == Some(EventType::Bookmark);
                if is_bookmark && !frame.meta.initial_events_end {
                    match mode {
                        HoldMode::Lag(d) if !self.held.is_empty() => {
                            return self.push(frame, Some(later(now, d)), now);
                        }
                        HoldMode::Lag(_) => return self.deliver(frame),
                        _ => {
                            self.stats.dropped_bookmarks += 1;
                            self.stats.dropped[type_index(frame.meta.type_)] += 1;
                            self.note(Fate::Dropped, &frame);
                            return vec![];
                        }
                    }
                }
                if frame.meta.type_ == Some(EventType::Error) {
                    // An upstream ERROR ends the stream: whatever is held would be lost.
                    return self.end_while_holding(
                        "the upstream sent an ERROR event while events were held",
                    );
                }
                let due = match mode {
                    HoldMode::Lag(d) => Some(later(now, d)),
                    _ => None,
                };
                self.push(frame, due, now)
            }
        }
    }

    /// A frame of a WatchList's initial state answered from the client's view (a watch
    /// cache behind the upstream): delivered now, whatever the windows hold — the state
    /// it shows is the stale one. Only before anything from the upstream, so no
    /// bookmark in it can pass a held event (invariant 2).
    pub fn initial(&mut self, frame: Frame) -> Vec<Output> {
        if self.state == State::Ended {
            return vec![];
        }
        self.deliver(frame)
    }

    /// The upstream ended the stream.
    pub fn on_upstream_end(&mut self) -> Vec<Output> {
        if self.state == State::Ended {
            return vec![];
        }
        if self.held.is_empty() {
            self.state = State::Ended;
            return vec![Output::EndClean];
        }
        self.end_while_holding("the upstream closed the watch while events were held")
    }

    /// A `relist` fault: end the stream now, with 410 (`expired`) or a reset (`close`).
    pub fn relist(&mut self, expired: bool) -> Vec<Output> {
        if self.state == State::Ended {
            return vec![];
        }
        self.clear();
        self.state = State::Ended;
        vec![if expired {
            Output::EndExpired {
                reason: "stalemate: relist fault",
            }
        } else {
            Output::Abort
        }]
    }

    fn deliver(&mut self, frame: Frame) -> Vec<Output> {
        self.stats.delivered[type_index(frame.meta.type_)] += 1;
        self.note(Fate::Delivered, &frame);
        vec![Output::Deliver(frame)]
    }

    fn released(&mut self, h: Held, now: Instant) -> Output {
        self.stats.released[type_index(h.frame.meta.type_)] += 1;
        self.note(
            Fate::Released(now.saturating_duration_since(h.since)),
            &h.frame,
        );
        Output::Deliver(h.frame)
    }

    fn end_while_holding(&mut self, reason: &'static str) -> Vec<Output> {
        self.clear();
        self.state = State::Ended;
        vec![Output::EndExpired { reason }]
    }

    fn clear(&mut self) {
        self.held.clear();
        if let Some(b) = &self.budget {
            b.release(self.held_bytes);
        }
        self.held_bytes = 0;
    }

    fn push(&mut self, frame: Frame, due: Option<Instant>, now: Instant) -> Vec<Output> {
        let size = frame.bytes.len();
        let fits = self.held_bytes + size <= self.max_held_bytes
            && self.budget.as_ref().is_none_or(|b| b.reserve(size));
        if !fits {
            // Bounded memory (invariant 5) without losing anything silently (invariant 1).
            self.stats.cap_hits += 1;
            return self.end_while_holding("stalemate: the held-events memory cap was reached");
        }
        self.held_bytes += size;
        self.stats.held[type_index(frame.meta.type_)] += 1;
        self.note(Fate::Held, &frame);
        // A frame is a slice of the framer's read buffer, and keeping it would keep the
        // whole buffer (up to twice a large frame, a whole chunk for a small one) for as
        // long as it is held: held frames get their own exact-size copy.
        let frame = Frame {
            bytes: bytes::Bytes::copy_from_slice(&frame.bytes),
            meta: frame.meta,
        };
        self.held.push_back(Held {
            frame,
            due,
            since: now,
        });
        vec![]
    }

    fn pop(&mut self) -> Option<Held> {
        let h = self.held.pop_front()?;
        let n = h.frame.bytes.len();
        self.held_bytes -= n;
        if let Some(b) = &self.budget {
            b.release(n);
        }
        Some(h)
    }

    fn release_all(&mut self, now: Instant) -> Vec<Output> {
        let mut out = Vec::with_capacity(self.held.len());
        while let Some(h) = self.pop() {
            out.push(self.released(h, now));
        }
        out
    }

    /// Keep only the last held event of each object (namespace/name), in the order of
    /// those last events; the WatchList end marker keeps its place.
    fn coalesce(&mut self) {
        let mut last: HashMap<(String, String), usize> = HashMap::new();
        for (i, h) in self.held.iter().enumerate() {
            if h.frame.meta.type_ != Some(EventType::Bookmark) {
                last.insert(
                    (h.frame.meta.namespace.clone(), h.frame.meta.name.clone()),
                    i,
                );
            }
        }
        let mut kept = VecDeque::with_capacity(last.len() + 1);
        for (i, h) in std::mem::take(&mut self.held).into_iter().enumerate() {
            let keep = h.frame.meta.type_ == Some(EventType::Bookmark)
                || last.get(&(h.frame.meta.namespace.clone(), h.frame.meta.name.clone()))
                    == Some(&i);
            if keep {
                kept.push_back(h);
            } else {
                let n = h.frame.bytes.len();
                self.held_bytes -= n;
                if let Some(b) = &self.budget {
                    b.release(n);
                }
                self.note(Fate::Dropped, &h.frame);
                self.stats.coalesced += 1;
                self.stats.dropped[type_index(h.frame.meta.type_)] += 1;
            }
        }
        self.held = kept;
    }
}
