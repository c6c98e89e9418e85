//! One view: the objects as its client was shown them, and the record of how they
//! changed (what `rewind` rebuilds an earlier view from).

use std::collections::BTreeMap;

use bytes::Bytes;
use tokio::time::Instant;

use super::encoding::Encoding;
use super::parse::event_object;
use crate::watch::{EventMeta, EventType};

/// A LIST page as it arrived: its chunks (shared with what went to the client, not
/// copied), parsed later.
#[derive(Debug, Clone)]
pub(super) struct RawPage {
    pub(super) chunks: Vec<Bytes>,
    pub(super) len: usize,
}

#[derive(Debug, Clone)]
pub(super) struct View {
    pub(super) encoding: Encoding,
    pub(super) api_version: String,
    /// The object kind (`ConfigMap`); lists are `{kind}List`.
    pub(super) kind: String,
    pub(super) rv: String,
    /// (namespace, name) → object bytes.
    pub(super) objects: BTreeMap<(String, String), Bytes>,
    /// Bytes held: objects, raw pages and pending events.
    pub(super) bytes: usize,
    /// A WatchList stream is sending its initial events: not answerable yet.
    pub(super) filling: bool,
    /// A WatchList restarted while this view was complete: the new view fills here and
    /// replaces this one at the end marker; until then this one answers.
    pub(super) next: Option<Box<View>>,
    /// LIST pages whose items are not parsed yet.
    pub(super) raw_pages: Vec<RawPage>,
    /// Events delivered while the pages are not parsed yet: applied after them, in order.
    pub(super) pending: Vec<(EventMeta, Bytes, Instant)>,
    /// A thread has taken the raw pages and is parsing them.
    pub(super) parsing: bool,
    /// The pages did not parse: the view is unusable and is dropped.
    pub(super) broken: bool,
    /// The changes since the view was built (bounded by `history_cap`): enough to
    /// rebuild it as it was at any time since `horizon` (`rewind`).
    history: std::collections::VecDeque<Change>,
    history_bytes: usize,
    pub(super) history_cap: usize,
    /// The earliest time the view can be rebuilt for.
    pub(super) horizon: Instant,
    /// Reads answered as of an earlier point: their resourceVersion → what a watch from
    /// there must be given (the view's resourceVersion then, and the changes since).
    pub(super) rewinds: std::collections::VecDeque<(String, Rewind)>,
}

/// One change a view went through, kept so the view can be rebuilt as it was earlier.
#[derive(Debug, Clone)]
struct Change {
    at: Instant,
    /// The view's resourceVersion before it.
    rv_before: String,
    key: (String, String),
    /// The object before it (`None`: it did not exist).
    prev: Option<Bytes>,
    /// The event as it was delivered (replayed to a client sent back in time).
    frame: Bytes,
}

impl Change {
    fn size(&self) -> usize {
        self.frame.len() + self.prev.as_ref().map_or(0, Bytes::len)
    }
}

/// What a client sent back in time must be given by a watch that continues from there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewind {
    /// Where the upstream watch starts: the view's resourceVersion now.
    pub upstream_rv: String,
    /// The framing of `replay` (the view's encoding).
    pub format: crate::watch::Format,
    /// The events between the rewound point and `upstream_rv`, as delivered, in order.
    pub replay: Vec<Bytes>,
}

/// What applying an event did to a view.
pub(super) enum Applied {
    Ok,
    /// The event's object could not be read: the view cannot follow its client anymore.
    Broken,
}

impl View {
    pub(super) fn new(encoding: Encoding) -> View {
        View {
            encoding,
            api_version: String::new(),
            kind: String::new(),
            rv: String::new(),
            objects: BTreeMap::new(),
            bytes: 0,
            filling: false,
            next: None,
            raw_pages: Vec::new(),
            pending: Vec::new(),
            parsing: false,
            broken: false,
            history: Default::default(),
            history_bytes: 0,
            history_cap: 0,
            horizon: Instant::now(),
            rewinds: Default::default(),
        }
    }

    /// Remember a change (the view's own, not a filling one), within its cap: past it
    /// the oldest go, and the view can no longer be rebuilt for before them.
    fn record(&mut self, change: Change) {
        let n = change.size();
        if n > self.history_cap {
            self.drop_history();
            self.horizon = change.at;
            return;
        }
        self.history_bytes += n;
        self.bytes += n;
        self.history.push_back(change);
        while self.history_bytes > self.history_cap {
            let Some(old) = self.history.pop_front() else {
                break;
            };
            self.history_bytes -= old.size();
            self.bytes -= old.size();
            self.horizon = old.at;
        }
    }

    fn drop_history(&mut self) {
        self.bytes -= self.history_bytes;
        self.history_bytes = 0;
        self.history.clear();
    }

    /// The objects and resourceVersion as they were at `t`, and the changes since.
    #[allow(clippy::type_complexity)]
    pub(super) fn at(
        &self,
        t: Instant,
    ) -> Result<
        (
            BTreeMap<(String, String), Bytes>,
            String,
            Vec<((String, String), Bytes)>,
        ),
        String,
    > {
        if self.history_cap == 0 {
            return Err(
                "the view keeps no past (no rewind window named its resource when it was built)"
                    .into(),
            );
        }
        if t < self.horizon {
            return Err(format!(
                "the view's record reaches back only {:.1}s",
                Instant::now()
                    .saturating_duration_since(self.horizon)
                    .as_secs_f64()
            ));
        }
        let mut objects = self.objects.clone();
        let mut rv = self.rv.clone();
        let mut replay = Vec::new();
        for c in self.history.iter().rev().take_while(|c| c.at > t) {
            match &c.prev {
                Some(p) => {
                    objects.insert(c.key.clone(), p.clone());
                }
                None => {
                    objects.remove(&c.key);
                }
            }
            rv = c.rv_before.clone();
            replay.push((c.key.clone(), c.frame.clone()));
        }
        replay.reverse();
        Ok((objects, rv, replay))
    }

    /// Items not parsed yet: events must queue.
    fn unparsed(&self) -> bool {
        !self.raw_pages.is_empty() || self.parsing
    }

    /// Bytes held, including a view being filled.
    pub(super) fn size(&self) -> usize {
        self.bytes + self.next.as_ref().map_or(0, |n| n.bytes)
    }

    pub(super) fn insert(&mut self, key: (String, String), obj: Bytes) {
        self.bytes += obj.len();
        if let Some(old) = self.objects.insert(key, obj) {
            self.bytes -= old.len();
        }
    }

    fn remove(&mut self, key: &(String, String)) {
        if let Some(old) = self.objects.remove(key) {
            self.bytes -= old.len();
        }
    }

    /// A delivered event (delivered at `at`); queued while the LIST items are not
    /// parsed yet.
    pub(super) fn apply(&mut self, meta: &EventMeta, frame: &[u8], at: Instant) -> Applied {
        let ends_fill = meta.initial_events_end;
        let encoding = self.encoding;
        let filling_next = self.next.is_some();
        let view: &mut View = match &mut self.next {
            Some(n) => n,
            None => self,
        };
        if view.unparsed() {
            view.bytes += frame.len();
            view.pending
                .push((meta.clone(), Bytes::copy_from_slice(frame), at));
            return Applied::Ok;
        }
        let k = (meta.namespace.clone(), meta.name.clone());
        // A view still being filled by initial events has no past worth keeping.
        let remember = !filling_next && !view.filling && view.history_cap > 0;
        let prev = match meta.type_ {
            Some(EventType::Added | EventType::Modified | EventType::Deleted) if remember => {
                Some(view.objects.get(&k).cloned())
            }
            _ => None,
        };
        let rv_before = view.rv.clone();
        match meta.type_ {
            Some(EventType::Added | EventType::Modified) => match event_object(encoding, frame) {
                Some(obj) => {
                    if view.kind.is_empty() {
                        view.kind = meta.kind.clone();
                        view.api_version = meta.api_version.clone();
                    }
                    view.insert(k.clone(), obj);
                }
                None => return Applied::Broken,
            },
            Some(EventType::Deleted) => view.remove(&k),
            Some(EventType::Bookmark) => {
                if ends_fill {
                    view.filling = false;
                }
            }
            Some(EventType::Error) | None => return Applied::Ok,
        }
        if !meta.resource_version.is_empty() {
            view.rv = meta.resource_version.clone();
        }
        if let Some(prev) = prev {
            view.record(Change {
                at,
                rv_before,
                key: k,
                prev,
                frame: Bytes::copy_from_slice(frame),
            });
        }
        if ends_fill && view.filling {
            // Built now: its past starts here.
            view.horizon = at;
        }
        if ends_fill && let Some(next) = self.next.take() {
            let cap = self.history_cap;
            *self = *next;
            self.history_cap = cap;
            self.horizon = at;
        }
        Applied::Ok
    }
}
