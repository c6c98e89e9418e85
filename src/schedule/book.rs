//! The windows' book: which windows are open (and since when, in which opening), which
//! wait for their trigger (and how far their counts are), and which resources windows
//! need views of. The engine's pure core: no locks, no tasks, no clock — the time comes
//! in with each call — so what it decides follows from the calls alone, and its
//! invariants are tested as properties (`book_props.rs`). The engine (`engine.rs`) is
//! the shell: it keeps the book behind one lock, runs the timers, and tells the streams,
//! the oracles, the trace, the metrics and the network what changed.

use std::collections::{BTreeMap, HashMap, HashSet};

use tokio::time::Instant;

use super::Window;
use crate::fault::HoldMode;

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
#[derive(Debug, Clone)]
pub struct Armed {
    /// What the engine knows its timer by, if it has one.
    pub id: u64,
    pub window: Window,
    /// Matching requests or events counted so far.
    pub seen: u64,
}

/// The book (module docs).
#[derive(Debug, Default)]
pub struct Book {
    active: BTreeMap<String, Active>,
    armed: Vec<Armed>,
    next_armed: u64,
    generation: u64,
    /// When each window last opened (what `rewind {at}` goes back to).
    last_opened: HashMap<String, Instant>,
    /// Windows triggered with a `delay` that have not opened yet.
    delayed: usize,
    /// Resources a window that reads from views has named (in the file or at run time):
    /// only these need client views (`--views named`).
    view_resources: HashSet<String>,
    /// Resources a `rewind` window has named: their views keep their past.
    rewind_resources: HashSet<String>,
}

impl Book {
    /// Arm `w` (its trigger not fired yet); returns its id.
    pub fn arm(&mut self, w: Window) -> u64 {
        self.next_armed += 1;
        let id = self.next_armed;
        self.armed.push(Armed {
            id,
            window: w,
            seen: 0,
        });
        id
    }

    /// A timer fired for the last time: no longer armed.
    pub fn unarm(&mut self, id: u64) {
        self.armed.retain(|a| a.id != id);
    }

    /// Cancel every armed window named `name`; returns their ids (their timers are to
    /// be stopped).
    pub fn disarm(&mut self, name: &str) -> Vec<u64> {
        let ids: Vec<u64> = self
            .armed
            .iter()
            .filter(|a| a.window.name == name)
            .map(|a| a.id)
            .collect();
        self.armed.retain(|a| a.window.name != name);
        ids
    }

    /// Count one request or event toward the armed windows' triggers: `counts` says,
    /// for a window it matches, the count that fires it (`None`: not counted). Returns
    /// the windows whose count it reaches, disarmed, in the order they were armed.
    pub fn count(&mut self, counts: impl Fn(&Window) -> Option<u64>) -> Vec<Window> {
        let mut due = Vec::new();
        self.armed.retain_mut(|a| match counts(&a.window) {
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
    }

    /// A window triggered with a delay: it is to come (the run is not idle).
    pub fn delay(&mut self) {
        self.delayed += 1;
    }

    /// A delayed window's delay is over (it opened, or could not).
    pub fn delay_over(&mut self) {
        self.delayed = self.delayed.saturating_sub(1);
    }

    /// No window open, and none triggered that waits out its delay.
    pub fn idle(&self) -> bool {
        self.active.is_empty() && self.delayed == 0
    }

    /// Note what views a window needs, from when it is submitted or opens: a window that
    /// may answer reads from views, and a `rewind` (its views keep their past).
    pub fn note_views(&mut self, w: &Window) {
        if w.fault.uses_views() {
            self.view_resources.extend(w.resources.iter().cloned());
        }
        if matches!(w.fault.behaviour().reads(), crate::fault::Reads::Rewound(_)) {
            self.rewind_resources.extend(w.resources.iter().cloned());
        }
    }

    /// Whether a window that reads from views named `resource` (or `*`, which does not
    /// cover leases).
    pub fn may_use_view(&self, resource: &str) -> bool {
        named(&self.view_resources, resource)
    }

    /// Whether a `rewind` window named `resource` (or `*`, which does not cover leases).
    pub fn may_rewind(&self, resource: &str) -> bool {
        named(&self.rewind_resources, resource)
    }

    /// Open `w` now, replacing an opening of the same name; returns its generation,
    /// higher than any before.
    pub fn open(&mut self, w: Window, hold: Option<HoldMode>, now: Instant) -> u64 {
        self.generation += 1;
        let generation = self.generation;
        self.last_opened.insert(w.name.clone(), now);
        self.active.insert(
            w.name.clone(),
            Active {
                window: w,
                opened: now,
                generation,
                hold,
            },
        );
        generation
    }

    /// Close the window `name`; what was open, if it was.
    pub fn close(&mut self, name: &str) -> Option<Active> {
        self.active.remove(name)
    }

    /// Whether opening `generation` of window `name` is still open (a later opening of
    /// the same name is another).
    pub fn is_open(&self, name: &str, generation: u64) -> bool {
        self.active
            .get(name)
            .is_some_and(|a| a.generation == generation)
    }

    /// When the window `name` last opened.
    pub fn opened_at(&self, name: &str) -> Option<Instant> {
        self.last_opened.get(name).copied()
    }

    /// The open windows, by name.
    pub fn active(&self) -> impl Iterator<Item = &Active> {
        self.active.values()
    }

    pub fn active_names(&self) -> Vec<String> {
        self.active.keys().cloned().collect()
    }

    /// The armed windows, in the order they were armed.
    pub fn armed(&self) -> &[Armed] {
        &self.armed
    }

    /// The open windows that target a stream, oldest first.
    pub fn windows_for(
        &self,
        client: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Vec<Active> {
        let mut v: Vec<Active> = self
            .active
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
}

fn named(set: &HashSet<String>, resource: &str) -> bool {
    set.contains(resource) || (set.contains("*") && resource != "leases.coordination.k8s.io")
}

#[cfg(test)]
#[path = "book_props.rs"]
mod props;
