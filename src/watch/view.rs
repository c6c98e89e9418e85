//! Client views: per client and query, the objects as that client has been shown them —
//! its last full LIST plus every watch event the proxy delivered since.
//!
//! A `resourceVersion=0` read may legally be answered from any cache, however old
//! (PROTOCOL.md §A.2): a real apiserver serves it from its watch cache. During a window a
//! stale client must not escape its staleness through such a read, or it would notice
//! what the window hides; so the proxy answers it from the view instead, with the view's
//! resourceVersion as the list's (invariant 2: never newer than the items it returns).
//! Consistent reads still go upstream, unless the window sets `staleConsistentReads` (a
//! contract violation, counted as such).
//!
//! ```text
//!  LIST response ──tee──► feed_list (commit when the last page arrives)
//!  delivered watch frame ─► apply (ADDED/MODIFIED insert, DELETED remove, BOOKMARK rv)
//!  RV=0 GET/LIST in a window ◄── answer (JSON, or protobuf if the view holds protobuf)
//! ```
//!
//! Objects are kept as the bytes the upstream sent (JSON object text, or the typed
//! protobuf message without its `runtime.Unknown` envelope), never as trees; items of a
//! LIST are slices of its body, so a view costs about one copy of what it was shown (a
//! body stays alive until its last item is replaced: up to twice the accounted bytes). The total is
//! capped (`--max-view-bytes`); a view that would exceed it is dropped and its reads go
//! upstream, which the API contract allows.
//!
//! The serving threads pay as little as possible for this:
//! - each view has its own lock (delivered events of different streams never contend),
//!   and the total size is kept as a running sum, not re-added per event;
//! - a LIST is only scanned for its metadata on its way to the client; its items are
//!   parsed by a blocking-pool thread right after (events delivered meanwhile queue in
//!   the view, in order, and are applied after the items), or by a read that needs the
//!   view first;
//! - views are kept only where a window could use them ([`ViewsMode`]): by default for
//!   the resources a staleness window names (`Engine::may_use_view`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use tokio::time::Instant;

use bytes::Bytes;

use super::view_parse::{
    event_object, json_list_meta, json_with_type, parse_json_list, parse_proto_list, proto_envelope,
};
use super::{EventMeta, EventType};
use crate::protobuf::Writer;

/// The query a view answers: a client's list/watch of one resource, in one namespace (or
/// all), with one pair of selectors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ViewKey {
    pub client: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub label_selector: String,
    pub field_selector: String,
}

/// How a view's objects are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Json,
    Protobuf,
}

/// Which views are kept (`--views`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ViewsMode {
    /// Views of the resources a staleness window names — in the schedule, or at run time
    /// (a view of a resource a runtime window names starts at its client's next LIST).
    #[default]
    Named,
    /// Views of every resource every client lists or watches.
    All,
    /// No views: reads during windows go upstream.
    Off,
}

/// A LIST page as it arrived: its chunks (shared with what went to the client, not
/// copied), parsed later.
#[derive(Debug, Clone)]
struct RawPage {
    chunks: Vec<Bytes>,
    len: usize,
}

#[derive(Debug, Clone)]
struct View {
    encoding: Encoding,
    api_version: String,
    /// The object kind (`ConfigMap`); lists are `{kind}List`.
    kind: String,
    rv: String,
    /// (namespace, name) → object bytes.
    objects: BTreeMap<(String, String), Bytes>,
    /// Bytes held: objects, raw pages and pending events.
    bytes: usize,
    /// A WatchList stream is sending its initial events: not answerable yet.
    filling: bool,
    /// A WatchList restarted while this view was complete: the new view fills here and
    /// replaces this one at the end marker; until then this one answers.
    next: Option<Box<View>>,
    /// LIST pages whose items are not parsed yet.
    raw_pages: Vec<RawPage>,
    /// Events delivered while the pages are not parsed yet: applied after them, in order.
    pending: Vec<(EventMeta, Bytes, Instant)>,
    /// A thread has taken the raw pages and is parsing them.
    parsing: bool,
    /// The pages did not parse: the view is unusable and is dropped.
    broken: bool,
    /// The changes since the view was built (bounded by `history_cap`): enough to
    /// rebuild it as it was at any time since `horizon` (`rewind`).
    history: std::collections::VecDeque<Change>,
    history_bytes: usize,
    history_cap: usize,
    /// The earliest time the view can be rebuilt for.
    horizon: Instant,
    /// Reads answered as of an earlier point: their resourceVersion → what a watch from
    /// there must be given (the view's resourceVersion then, and the changes since).
    rewinds: std::collections::VecDeque<(String, Rewind)>,
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
    pub format: super::Format,
    /// The events between the rewound point and `upstream_rv`, as delivered, in order.
    pub replay: Vec<Bytes>,
}

/// Rewinds remembered per view (a client rarely has more than one in flight).
const MAX_REWINDS: usize = 8;

/// The chunks of a body as one contiguous buffer (no copy when there is one chunk).
pub fn join_chunks(chunks: &[Bytes]) -> Bytes {
    match chunks {
        [one] => one.clone(),
        _ => {
            let mut all = Vec::with_capacity(chunks.iter().map(Bytes::len).sum());
            for c in chunks {
                all.extend_from_slice(c);
            }
            Bytes::from(all)
        }
    }
}

/// What applying an event did to a view.
enum Applied {
    Ok,
    /// The event's object could not be read: the view cannot follow its client anymore.
    Broken,
}

impl View {
    fn new(encoding: Encoding) -> View {
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
    fn at(
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
    fn size(&self) -> usize {
        self.bytes + self.next.as_ref().map_or(0, |n| n.bytes)
    }

    fn insert(&mut self, key: (String, String), obj: Bytes) {
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
    fn apply(&mut self, meta: &EventMeta, frame: &[u8], at: Instant) -> Applied {
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

/// One view behind its own lock; `parsed` wakes readers waiting for a parse.
struct Slot {
    view: Mutex<View>,
    parsed: Condvar,
}

impl Slot {
    fn new(view: View) -> Arc<Slot> {
        Arc::new(Slot {
            view: Mutex::new(view),
            parsed: Condvar::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Parse the view's raw LIST pages (outside its lock: delivered events queue
    /// meanwhile), then apply the events that queued. Returns the change in bytes.
    fn parse(&self) -> isize {
        let (pages, encoding, before) = {
            let mut v = self.lock();
            if v.raw_pages.is_empty() || v.parsing {
                return 0;
            }
            v.parsing = true;
            (std::mem::take(&mut v.raw_pages), v.encoding, v.size())
        };
        let raw_len: usize = pages.iter().map(|p| p.len).sum();
        let mut items = Vec::new();
        let mut failed = None;
        for p in pages {
            let body = join_chunks(&p.chunks);
            let page = match encoding {
                Encoding::Json => parse_json_list(&body),
                Encoding::Protobuf => parse_proto_list(&body, true),
            };
            match page {
                Ok(page) => items.extend(page.items),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let mut v = self.lock();
        v.parsing = false;
        v.bytes -= raw_len;
        if let Some(e) = failed {
            tracing::debug!(error = %e, "a LIST body did not parse; no view from it");
            v.broken = true;
        } else {
            for (k, obj) in items {
                v.insert(k, obj);
            }
            for (meta, frame, at) in std::mem::take(&mut v.pending) {
                v.bytes -= frame.len();
                if let Applied::Broken = v.apply(&meta, &frame, at) {
                    v.broken = true;
                    break;
                }
            }
        }
        let after = v.size();
        drop(v);
        self.parsed.notify_all();
        after as isize - before as isize
    }

    /// Wait until nobody is parsing the view, parsing it here if that is still to do.
    /// Returns the change in bytes.
    fn ensure_parsed(&self) -> isize {
        let delta = self.parse();
        let mut v = self.lock();
        while v.parsing {
            v = self.parsed.wait(v).unwrap_or_else(|p| p.into_inner());
        }
        delta
    }
}

/// A read answered from a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub encoding: Encoding,
    /// 200, or 404 for a GET of an object the view does not hold.
    pub code: u16,
    pub body: Bytes,
    /// The view's resourceVersion.
    pub rv: String,
}

/// What a read wants from a view.
#[derive(Debug, Clone)]
pub struct Read<'a> {
    pub key: ViewKey,
    /// A GET of this name; a LIST when `None`.
    pub name: Option<&'a str>,
    pub accept_protobuf: bool,
    pub accept_json: bool,
}

/// Which resources' views keep their past.
type HistoryPolicy = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// Every view, and the streams' lag, shared by the proxy.
pub struct Views {
    views: Arc<RwLock<HashMap<ViewKey, Arc<Slot>>>>,
    /// Paged LISTs in progress, committed when the last page arrives.
    pages: Mutex<HashMap<ViewKey, View>>,
    /// Bytes of all committed views, kept as a running sum.
    total: Arc<AtomicUsize>,
    max_bytes: usize,
    mode: ViewsMode,
    /// Whether views of a resource keep their past (a `rewind` window could use it).
    history_for: std::sync::OnceLock<HistoryPolicy>,
    /// (client, resource) → stream id → when its oldest held event arrived.
    held_since: Mutex<HashMap<(String, String), HashMap<u64, Instant>>>,
    next_stream: std::sync::atomic::AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Add `delta` to a running total of bytes.
fn account(total: &AtomicUsize, delta: isize) {
    if delta >= 0 {
        total.fetch_add(delta as usize, Ordering::Relaxed);
    } else {
        let d = delta.unsigned_abs();
        let _ = total.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
            Some(t.saturating_sub(d))
        });
    }
}

impl Views {
    /// Views of every resource, up to `max_bytes` (0: none).
    pub fn new(max_bytes: usize) -> Views {
        Views::with_mode(max_bytes, ViewsMode::All)
    }

    pub fn with_mode(max_bytes: usize, mode: ViewsMode) -> Views {
        Views {
            views: Arc::new(RwLock::new(HashMap::new())),
            pages: Mutex::new(HashMap::new()),
            total: Arc::new(AtomicUsize::new(0)),
            max_bytes,
            mode: if max_bytes == 0 { ViewsMode::Off } else { mode },
            history_for: std::sync::OnceLock::new(),
            held_since: Mutex::new(HashMap::new()),
            next_stream: std::sync::atomic::AtomicU64::new(1),
        }
    }

    pub fn enabled(&self) -> bool {
        self.mode != ViewsMode::Off
    }

    /// Keep the past of views of the resources `f` says (what `rewind` needs: up to a
    /// quarter of `--max-view-bytes` per view). Without it, no view keeps its past.
    pub fn keep_history_for(&self, f: impl Fn(&str) -> bool + Send + Sync + 'static) {
        let _ = self.history_for.set(Box::new(f));
    }

    fn history_cap(&self, resource: &str) -> usize {
        match self.history_for.get() {
            Some(f) if f(resource) => self.max_bytes / 4,
            _ => 0,
        }
    }

    /// Which views are kept.
    pub fn mode(&self) -> ViewsMode {
        self.mode
    }

    /// The cap on all views' bytes (`--max-view-bytes`).
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Bytes held by all views.
    pub fn bytes(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    fn account(&self, delta: isize) {
        account(&self.total, delta);
    }

    fn slot(&self, key: &ViewKey) -> Option<Arc<Slot>> {
        self.views
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<ViewKey, Arc<Slot>>> {
        self.views.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Drop `key`'s view if it is still `slot` (it may have been replaced meanwhile).
    fn drop_view(&self, key: &ViewKey, slot: &Arc<Slot>) {
        let mut views = self.write();
        if views.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            views.remove(key);
            drop(views);
            self.account(-(slot.lock().size() as isize));
        }
    }

    /// Put `view` in place of whatever `key` had.
    fn install(&self, key: ViewKey, slot: Arc<Slot>) {
        let size = slot.lock().size() as isize;
        let old = self.write().insert(key, slot);
        let old = old.map_or(0, |o| o.lock().size() as isize);
        self.account(size - old);
    }

    /// A LIST response body went to the client. `first_page`: the request had no
    /// `continue` token. Malformed bodies are ignored (the client got them as they were).
    pub fn feed_list(&self, key: ViewKey, encoding: Encoding, first_page: bool, body: Bytes) {
        self.feed_list_chunks(key, encoding, first_page, vec![body]);
    }

    /// [`Views::feed_list`] with the body as the chunks it arrived in. Only the metadata
    /// is read here (from the first chunk when that holds everything before `items` —
    /// the usual case); the items are parsed off this thread when the view commits.
    pub fn feed_list_chunks(
        &self,
        key: ViewKey,
        encoding: Encoding,
        first_page: bool,
        chunks: Vec<Bytes>,
    ) {
        if !self.enabled() {
            return;
        }
        let len: usize = chunks.iter().map(Bytes::len).sum();
        let page = match encoding {
            Encoding::Json => match chunks.first().map(|c| json_list_meta(c)) {
                Some(Ok(page)) => Ok(page),
                _ if chunks.len() > 1 => json_list_meta(&join_chunks(&chunks)),
                Some(Err(e)) => Err(e),
                None => Err("not a JSON list: empty".to_string()),
            },
            Encoding::Protobuf => parse_proto_list(&join_chunks(&chunks), false),
        };
        let page = match page {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!(error = %e, resource = %key.resource, "a LIST body did not parse; no view from it");
                return;
            }
        };
        let mut pages = lock(&self.pages);
        let mut view = if first_page {
            View::new(encoding)
        } else {
            match pages.remove(&key) {
                Some(v) if v.encoding == encoding => v,
                _ => return,
            }
        };
        if first_page {
            view.api_version = page.api_version;
            view.kind = page.kind;
            view.rv = page.rv;
        }
        view.bytes += len;
        view.raw_pages.push(RawPage { chunks, len });
        if !page.continue_.is_empty() {
            if view.bytes <= self.max_bytes {
                pages.insert(key, view);
            }
            return;
        }
        drop(pages);
        if self.bytes() + view.bytes > self.max_bytes {
            tracing::info!(resource = %key.resource, client = %key.client, bytes = view.bytes, "view dropped: --max-view-bytes reached; its reads go upstream");
            if let Some(old) = self.slot(&key) {
                self.drop_view(&key, &old);
            }
            return;
        }
        view.history_cap = self.history_cap(&key.resource);
        view.horizon = Instant::now();
        let slot = Slot::new(view);
        self.install(key.clone(), slot.clone());
        // Parse the items now, off the serving thread (a read that comes first parses
        // them itself). Without a runtime (tests), the first use parses them.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (views, total) = (self.views.clone(), self.total.clone());
            rt.spawn_blocking(move || {
                let delta = slot.parse();
                // Counted only while it is still the key's view (a dropped view's bytes
                // already left the total).
                let installed = views
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&key)
                    .is_some_and(|s| Arc::ptr_eq(s, &slot));
                if installed {
                    account(&total, delta);
                }
            });
        }
    }

    /// A WatchList stream (`sendInitialEvents=true`) starts: its view is rebuilt from the
    /// initial events. A complete view keeps answering until their end marker (the
    /// initial events may be held by a window); a new one answers nothing until then.
    pub fn start_watch_list(&self, key: &ViewKey, encoding: Encoding) {
        if !self.enabled() {
            return;
        }
        let mut fresh = View::new(encoding);
        fresh.history_cap = self.history_cap(&key.resource);
        fresh.filling = true;
        if let Some(slot) = self.slot(key) {
            let mut v = slot.lock();
            if !v.filling && v.encoding == encoding {
                v.next = Some(Box::new(fresh));
                return;
            }
        }
        self.install(key.clone(), Slot::new(fresh));
    }

    /// A watch frame was delivered to the client.
    pub fn apply(&self, key: &ViewKey, encoding: Encoding, meta: &EventMeta, frame: &[u8]) {
        if !self.enabled() {
            return;
        }
        let Some(slot) = self.slot(key) else {
            return;
        };
        let mut v = slot.lock();
        if v.encoding != encoding || v.broken {
            drop(v);
            self.drop_view(key, &slot);
            return;
        }
        let before = v.size();
        let applied = v.apply(meta, frame, Instant::now());
        let after = v.size();
        drop(v);
        self.account(after as isize - before as isize);
        if let Applied::Broken = applied {
            self.drop_view(key, &slot);
        } else if after > self.max_bytes || self.bytes() > self.max_bytes {
            tracing::info!(resource = %key.resource, client = %key.client, "view dropped: --max-view-bytes reached; its reads go upstream");
            self.drop_view(key, &slot);
        }
    }

    /// Answer a read from a view, if one covers it: the view of the same query, or for a
    /// namespaced read, the same client's all-namespaces view with the same selectors.
    /// A GET is answered only from a view without selectors (elsewhere, absence means
    /// nothing). A view whose items are still being parsed is waited for.
    pub fn answer(&self, read: &Read<'_>) -> Option<Answer> {
        let (_, slot, scope) = self.covering(read)?;
        let v = slot.lock();
        answer_from(&v, read, &scope)
    }

    /// Answer a read from the view as it was at `t` (a `rewind`), with that point's
    /// resourceVersion; a watch from there is then given the changes since
    /// ([`Views::rewound_watch`]). `Err` says why it cannot be (no view, the record does
    /// not reach back that far, …): the read then goes upstream.
    pub fn answer_at(&self, read: &Read<'_>, t: Instant) -> Result<Answer, String> {
        let (_, slot, scope) = self.covering(read).ok_or_else(|| {
            format!(
                "no view of {} for this client (one starts at its next LIST)",
                read.key.resource
            )
        })?;
        let mut v = slot.lock();
        let (objects, rv, replay) = v.at(t)?;
        let upstream_rv = v.rv.clone();
        let mut past = View::new(v.encoding);
        past.api_version = v.api_version.clone();
        past.kind = v.kind.clone();
        past.rv = rv.clone();
        past.objects = objects;
        let answer = answer_from(&past, read, &scope)
            .ok_or_else(|| "the view cannot answer in the encoding asked for".to_string())?;
        if rv != upstream_rv {
            v.rewinds.retain(|(r, _)| *r != rv);
            if v.rewinds.len() >= MAX_REWINDS {
                v.rewinds.pop_front();
            }
            let format = match v.encoding {
                Encoding::Json => super::Format::Json,
                Encoding::Protobuf => super::Format::Protobuf,
            };
            let replay = replay
                .into_iter()
                .filter(|(k, _)| scope.covers(k))
                .map(|(_, f)| f)
                .collect();
            v.rewinds.push_back((
                rv,
                Rewind {
                    upstream_rv,
                    format,
                    replay,
                },
            ));
        }
        Ok(answer)
    }

    /// A watch of `key` from `rv` while a `rewind` window is open: from `"0"`, the view as
    /// it was at `t` as ADDED events, then the changes since; from the resourceVersion a
    /// rewound read answered with, the changes since. Either way the upstream watch then
    /// starts where the view is now. `None`: nothing to rewind, forward it as it is.
    pub fn rewound_watch(&self, key: &ViewKey, rv: &str, t: Instant) -> Option<Rewind> {
        let read = Read {
            key: key.clone(),
            name: None,
            accept_json: true,
            accept_protobuf: true,
        };
        let (_, slot, scope) = self.covering(&read)?;
        let v = slot.lock();
        if rv == "0" {
            let (objects, _, replay) = v.at(t).ok()?;
            let format = match v.encoding {
                Encoding::Json => super::Format::Json,
                Encoding::Protobuf => super::Format::Protobuf,
            };
            let mut frames: Vec<Bytes> = objects
                .iter()
                .filter(|(k, _)| scope.covers(k))
                .map(|(_, o)| {
                    let object = match v.encoding {
                        Encoding::Json => json_with_type(&v.api_version, &v.kind, o),
                        Encoding::Protobuf => proto_envelope(&v.api_version, &v.kind, o),
                    };
                    super::event(format, EventType::Added, &object)
                })
                .collect();
            frames.extend(
                replay
                    .into_iter()
                    .filter(|(k, _)| scope.covers(k))
                    .map(|(_, f)| f),
            );
            return Some(Rewind {
                upstream_rv: v.rv.clone(),
                format,
                replay: frames,
            });
        }
        v.rewinds
            .iter()
            .rev()
            .find(|(r, _)| r == rv)
            .map(|(_, rw)| rw.clone())
    }

    /// The view that answers `read` (its own query's, or its client's all-namespaces one,
    /// or for a single-object field selector the same without it), parsed; with what of
    /// it the read wants.
    fn covering(&self, read: &Read<'_>) -> Option<(ViewKey, Arc<Slot>, Scope)> {
        for (k, scope) in candidates(read) {
            let Some(slot) = self.slot(&k) else { continue };
            let delta = slot.ensure_parsed();
            self.account(delta);
            let v = slot.lock();
            if v.broken || v.filling || v.kind.is_empty() {
                continue;
            }
            drop(v);
            return Some((k, slot, scope));
        }
        None
    }

    /// A new stream id, for [`Views::set_held_since`].
    pub fn stream_id(&self) -> u64 {
        self.next_stream
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Record when a stream's oldest held event arrived (`None`: nothing held).
    pub fn set_held_since(
        &self,
        client: &str,
        resource: &str,
        stream: u64,
        since: Option<Instant>,
    ) {
        let mut m = lock(&self.held_since);
        let k = (client.to_string(), resource.to_string());
        match since {
            Some(t) => {
                m.entry(k).or_default().insert(stream, t);
            }
            None => {
                if let Some(s) = m.get_mut(&k) {
                    s.remove(&stream);
                }
            }
        }
    }

    /// How far behind each (client, resource) is: the age of its oldest held event, in
    /// seconds (0 when nothing is held). Every pair ever seen is reported.
    pub fn lag(&self, now: Instant) -> Vec<(String, String, f64)> {
        lock(&self.held_since)
            .iter()
            .map(|((c, r), streams)| {
                let oldest = streams.values().min();
                (
                    c.clone(),
                    r.clone(),
                    oldest.map_or(0.0, |t| now.saturating_duration_since(*t).as_secs_f64()),
                )
            })
            .collect()
    }
}

/// Build the answer to `read` from a parsed view.
/// Which of a view a read wants: a namespace of an all-namespaces view, one object of an
/// unselected one (a `metadata.name=X` field selector).
#[derive(Debug, Clone, Default)]
struct Scope {
    namespace: Option<String>,
    name: Option<String>,
}

impl Scope {
    fn covers(&self, (ns, name): &(String, String)) -> bool {
        self.namespace.as_ref().is_none_or(|n| n == ns)
            && self.name.as_ref().is_none_or(|n| n == name)
    }
}

/// The views that may answer `read`, best first: its own query's; the same client's
/// all-namespaces one; for a single-object field selector, the unselected ones.
fn candidates(read: &Read<'_>) -> Vec<(ViewKey, Scope)> {
    let k = &read.key;
    let ns = k.namespace.clone();
    let mut out = vec![(k.clone(), Scope::default())];
    if ns.is_some() {
        out.push((
            ViewKey {
                namespace: None,
                ..k.clone()
            },
            Scope {
                namespace: ns.clone(),
                name: None,
            },
        ));
    }
    if let Some(name) = crate::request::single_name_from_field_selector(&k.field_selector) {
        let plain = ViewKey {
            field_selector: String::new(),
            ..k.clone()
        };
        out.push((
            plain.clone(),
            Scope {
                namespace: None,
                name: Some(name.clone()),
            },
        ));
        if ns.is_some() {
            out.push((
                ViewKey {
                    namespace: None,
                    ..plain
                },
                Scope {
                    namespace: ns,
                    name: Some(name),
                },
            ));
        }
    }
    out
}

fn answer_from(view: &View, read: &Read<'_>, scope: &Scope) -> Option<Answer> {
    let ok = match view.encoding {
        Encoding::Json => read.accept_json,
        Encoding::Protobuf => read.accept_protobuf,
    };
    if !ok {
        return None;
    }
    let ns = read.key.namespace.clone().unwrap_or_default();
    if let Some(name) = read.name {
        if !read.key.label_selector.is_empty() || !read.key.field_selector.is_empty() {
            return None;
        }
        return Some(match view.objects.get(&(ns.clone(), name.to_string())) {
            Some(obj) => Answer {
                encoding: view.encoding,
                code: 200,
                body: match view.encoding {
                    Encoding::Json => json_with_type(&view.api_version, &view.kind, obj),
                    Encoding::Protobuf => proto_envelope(&view.api_version, &view.kind, obj),
                },
                rv: view.rv.clone(),
            },
            None => Answer {
                encoding: Encoding::Json,
                code: 404,
                body: Bytes::new(),
                rv: view.rv.clone(),
            },
        });
    }
    let items = view
        .objects
        .iter()
        .filter(|(k, _)| scope.covers(k))
        .map(|(_, o)| o);
    let list_kind = format!("{}List", view.kind);
    let body = match view.encoding {
        Encoding::Json => {
            let head = serde_json::json!({
                "kind": list_kind,
                "apiVersion": view.api_version,
                "metadata": {"resourceVersion": view.rv},
            });
            let mut out = serde_json::to_vec(&head).unwrap_or_default();
            out.pop();
            out.extend_from_slice(b",\"items\":[");
            for (i, o) in items.enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(o);
            }
            out.extend_from_slice(b"]}");
            Bytes::from(out)
        }
        Encoding::Protobuf => {
            let mut list = Writer::default();
            list.message(1, |lm| {
                lm.string(1, "").string(2, &view.rv).string(3, "");
            });
            for o in items {
                list.bytes(2, o);
            }
            proto_envelope(&view.api_version, &list_kind, &list.buf)
        }
    };
    Some(Answer {
        encoding: view.encoding,
        code: 200,
        body,
        rv: view.rv.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::unwrap_unknown;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/kube-apiserver-1.28/");

    fn key(ns: Option<&str>) -> ViewKey {
        ViewKey {
            client: "c".into(),
            resource: "configmaps".into(),
            namespace: ns.map(str::to_string),
            label_selector: String::new(),
            field_selector: String::new(),
        }
    }

    fn read(ns: Option<&str>, name: Option<&'static str>) -> Read<'static> {
        Read {
            key: key(ns),
            name,
            accept_json: true,
            accept_protobuf: true,
        }
    }

    fn json_line(t: &str, name: &str, rv: u64) -> Vec<u8> {
        let (ns, name) = name.split_once('/').unwrap_or(("a", name));
        format!(
            "{{\"type\":\"{t}\",\"object\":{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"{ns}\",\"resourceVersion\":\"{rv}\"}},\"data\":{{\"v\":\"{rv}\"}}}}}}\n"
        )
        .into_bytes()
    }

    fn apply_line(v: &Views, k: &ViewKey, line: &[u8]) {
        let meta = super::super::json::parse_event(line).unwrap();
        v.apply(k, Encoding::Json, &meta, line);
    }

    #[test]
    fn a_list_in_chunks_answers_as_the_whole_body_does() {
        let list = std::fs::read(format!("{FIX}cm-list-json-limit.body")).unwrap();
        let last = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"584"},"items":[{"metadata":{"name":"cm-9","namespace":"fixtures"},"data":{"x":"y"}}]}"#;
        let whole = Views::new(1 << 20);
        whole.feed_list(key(None), Encoding::Json, true, Bytes::from(list.clone()));
        whole.feed_list(key(None), Encoding::Json, false, Bytes::from_static(last));
        let want = whole.answer(&read(None, None)).unwrap();
        // Cuts inside the metadata (the first chunk cannot be scanned alone), right
        // after it, and through the items.
        for cuts in [
            vec![10],
            vec![list.len() / 3, list.len() / 2],
            vec![1, 2, 3, 700],
        ] {
            let mut chunks = Vec::new();
            let mut at = 0;
            for c in cuts.iter().chain([&list.len()]) {
                chunks.push(Bytes::copy_from_slice(&list[at..*c]));
                at = *c;
            }
            let v = Views::new(1 << 20);
            v.feed_list_chunks(key(None), Encoding::Json, true, chunks);
            let tail = vec![
                Bytes::from_static(&last[..40]),
                Bytes::from_static(&last[40..]),
            ];
            v.feed_list_chunks(key(None), Encoding::Json, false, tail);
            assert_eq!(v.answer(&read(None, None)).unwrap(), want, "cuts {cuts:?}");
            assert_eq!(v.bytes(), whole.bytes());
        }
    }

    #[test]
    fn json_list_then_events_then_answers() {
        let v = Views::new(1 << 20);
        let k = key(None);
        let list = std::fs::read(format!("{FIX}cm-list-json-limit.body")).unwrap();
        // A paged list is not a view until its last page.
        v.feed_list(k.clone(), Encoding::Json, true, list.into());
        assert!(v.answer(&read(None, None)).is_none());
        let last = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"584"},"items":[{"metadata":{"name":"cm-9","namespace":"fixtures"},"data":{"x":"y"}}]}"#;
        v.feed_list(k.clone(), Encoding::Json, false, Bytes::from_static(last));
        let a = v.answer(&read(None, None)).unwrap();
        let body: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        assert_eq!(body["kind"], "ConfigMapList");
        assert_eq!(body["metadata"]["resourceVersion"], "584");
        let names: Vec<&str> = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["cm-0", "cm-9"], "both pages, in key order");
        // A GET gets kind/apiVersion even though list items lacked them.
        let g = v.answer(&read(Some("fixtures"), Some("cm-9"))).unwrap();
        let obj: serde_json::Value = serde_json::from_slice(&g.body).unwrap();
        assert_eq!(
            (obj["kind"].as_str(), obj["data"]["x"].as_str()),
            (Some("ConfigMap"), Some("y"))
        );
        assert_eq!(
            v.answer(&read(Some("fixtures"), Some("nope")))
                .unwrap()
                .code,
            404
        );
        // Delivered events move it forward; namespace filtering from the cluster view.
        apply_line(&v, &k, &json_line("ADDED", "x", 600));
        apply_line(&v, &k, &json_line("MODIFIED", "x", 601));
        apply_line(&v, &k, &json_line("DELETED", "fixtures/cm-0", 602));
        let all = v.answer(&read(None, None)).unwrap();
        let all: serde_json::Value = serde_json::from_slice(&all.body).unwrap();
        let names: Vec<&str> = all["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["x", "cm-9"], "a/x, fixtures/cm-9");
        let a = v.answer(&read(Some("a"), None)).unwrap();
        let body: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        assert_eq!(body["metadata"]["resourceVersion"], "602");
        assert_eq!(body["items"].as_array().unwrap().len(), 1);
        assert_eq!(body["items"][0]["data"]["v"], "601");
        // JSON views answer only clients that accept JSON.
        let mut r = read(None, None);
        r.accept_json = false;
        assert!(v.answer(&r).is_none());
    }

    #[test]
    fn protobuf_list_round_trips() {
        let v = Views::new(1 << 20);
        let body = std::fs::read(format!("{FIX}cm-list-protobuf.body")).unwrap();
        let body = Bytes::from(body);
        let original = parse_proto_list(&body, true).unwrap();
        v.feed_list(key(None), Encoding::Protobuf, true, body.clone());
        let a = v.answer(&read(None, None)).unwrap();
        assert_eq!(a.encoding, Encoding::Protobuf);
        let again = parse_proto_list(&a.body.clone(), true).unwrap();
        assert_eq!(
            (
                again.api_version.as_str(),
                again.kind.as_str(),
                again.rv.as_str()
            ),
            ("v1", "ConfigMap", original.rv.as_str())
        );
        let mut want = original.items.clone();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(again.items, want);
        // A GET is the typed object in its envelope, like the recorded GET.
        let (ns, name) = want[0].0.clone();
        let g = v
            .answer(&Read {
                key: key(Some(Box::leak(ns.into_boxed_str()))),
                name: Some(Box::leak(name.into_boxed_str())),
                accept_json: false,
                accept_protobuf: true,
            })
            .unwrap();
        let (av, kind, raw) = unwrap_unknown(&g.body).unwrap();
        assert_eq!(
            (av.as_str(), kind.as_str(), raw),
            ("v1", "ConfigMap", &want[0].1[..])
        );
    }

    #[test]
    fn protobuf_watch_frames_feed_the_view() {
        let v = Views::new(1 << 20);
        let k = key(None);
        v.start_watch_list(&k, Encoding::Protobuf);
        assert!(v.answer(&read(None, None)).is_none(), "filling");
        let stream = std::fs::read(format!("{FIX}cm-watchlist-protobuf.body")).unwrap();
        let frames = super::super::proto::ProtoFramer::new(1 << 24)
            .push(&stream)
            .unwrap();
        for f in &frames {
            v.apply(&k, Encoding::Protobuf, &f.meta, &f.bytes);
        }
        let a = v.answer(&read(None, None)).unwrap();
        let page = parse_proto_list(&a.body.clone(), true).unwrap();
        let added = frames
            .iter()
            .filter(|f| f.meta.type_ == Some(EventType::Added))
            .count();
        assert!(added > 0);
        assert_eq!(page.items.len(), added);
        assert_eq!(page.rv, frames.last().unwrap().meta.resource_version);
    }

    #[test]
    fn a_restarted_watch_list_replaces_the_view_only_at_its_end_marker() {
        let v = Views::new(1 << 20);
        let k = key(None);
        v.start_watch_list(&k, Encoding::Json);
        apply_line(&v, &k, &json_line("ADDED", "old", 1));
        apply_line(&v, &k, &json_line("ADDED", "gone", 2));
        let end = |rv: u64| {
            format!(r#"{{"type":"BOOKMARK","object":{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}}"#).into_bytes()
        };
        apply_line(&v, &k, &end(2));
        let names = |v: &Views| -> Vec<String> {
            let a = v.answer(&read(None, None)).unwrap();
            let body: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(names(&v), ["gone", "old"]);
        // The client re-watches (its initial events may be held by a window): the old
        // view answers until the new one is complete, then the new one replaces it.
        v.start_watch_list(&k, Encoding::Json);
        apply_line(&v, &k, &json_line("ADDED", "old", 5));
        assert_eq!(names(&v), ["gone", "old"]);
        apply_line(&v, &k, &end(5));
        assert_eq!(
            names(&v),
            ["old"],
            "no ghost of the object deleted in between"
        );
    }

    /// Events delivered before a LIST's items are parsed wait in the view, and are
    /// applied after the items, in order.
    #[test]
    fn events_before_the_parse_are_applied_after_it() {
        let v = Views::new(1 << 20);
        let k = key(None);
        let list = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a","namespace":"a","resourceVersion":"4"},"data":{"v":"4"}}]}"#;
        v.feed_list(k.clone(), Encoding::Json, true, Bytes::from_static(list));
        let slot = v.slot(&k).unwrap();
        assert_eq!(
            slot.lock().raw_pages.len(),
            1,
            "no runtime here: not parsed yet"
        );
        apply_line(&v, &k, &json_line("MODIFIED", "a", 6));
        apply_line(&v, &k, &json_line("ADDED", "b", 7));
        apply_line(&v, &k, &json_line("DELETED", "b", 8));
        assert_eq!(
            slot.lock().pending.len(),
            3,
            "queued, not parsed on this thread"
        );
        let a = v.answer(&read(None, None)).unwrap();
        let body: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        assert_eq!(body["metadata"]["resourceVersion"], "8");
        assert_eq!(body["items"].as_array().unwrap().len(), 1);
        assert_eq!(body["items"][0]["data"]["v"], "6");
        let s = slot.lock();
        assert!(s.pending.is_empty() && s.raw_pages.is_empty());
        assert_eq!(v.bytes(), s.size(), "the running total follows");
    }

    /// Inside a runtime the items are parsed by a blocking-pool thread, not the caller.
    #[tokio::test]
    async fn lists_are_parsed_off_the_calling_thread() {
        let v = Views::new(1 << 20);
        let k = key(None);
        let list = std::fs::read(format!("{FIX}cm-list-protobuf.body")).unwrap();
        v.feed_list(k.clone(), Encoding::Protobuf, true, Bytes::from(list));
        let slot = v.slot(&k).unwrap();
        for _ in 0..200 {
            if slot.lock().raw_pages.is_empty() && !slot.lock().parsing {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let s = slot.lock();
        assert!(
            s.raw_pages.is_empty() && !s.objects.is_empty(),
            "parsed in the background"
        );
        assert_eq!(v.bytes(), s.size());
    }

    #[test]
    fn views_off_keep_nothing() {
        for v in [Views::with_mode(1 << 20, ViewsMode::Off), Views::new(0)] {
            assert!(!v.enabled());
            v.feed_list(key(None), Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}"#));
            assert!(v.answer(&read(None, None)).is_none());
            assert_eq!(v.bytes(), 0);
        }
    }

    /// A view keeps its past (when asked to): it answers as it was at an earlier time,
    /// with that point's resourceVersion, and a watch from there gets the changes since.
    #[test]
    fn rewinds_rebuild_the_view_as_it_was() {
        let v = Views::new(1 << 20);
        v.keep_history_for(|r| r == "configmaps");
        let k = key(None);
        v.feed_list(k.clone(), Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"x","namespace":"a","resourceVersion":"9"},"data":{"v":"9"}}]}"#));
        assert!(v.answer(&read(None, None)).is_some(), "parsed");
        let t0 = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        apply_line(&v, &k, &json_line("MODIFIED", "x", 11));
        let t1 = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        apply_line(&v, &k, &json_line("ADDED", "y", 12));
        apply_line(&v, &k, &json_line("MODIFIED", "x", 13));
        let names_values = |a: &Answer| -> (String, Vec<(String, String)>) {
            let b: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
            let items = b["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    (
                        i["metadata"]["name"].as_str().unwrap().to_string(),
                        i["data"]["v"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            (
                b["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                items,
            )
        };
        let at0 = v.answer_at(&read(None, None), t0).unwrap();
        assert_eq!(
            names_values(&at0),
            ("10".into(), vec![("x".into(), "9".into())])
        );
        let at1 = v.answer_at(&read(None, None), t1).unwrap();
        assert_eq!(
            names_values(&at1),
            ("11".into(), vec![("x".into(), "11".into())])
        );
        // Now it is as it is.
        assert_eq!(
            names_values(&v.answer(&read(None, None)).unwrap()).1,
            [("x".into(), "13".into()), ("y".into(), "12".into())]
        );
        // A watch from the rewound point gets the changes since, from the view's own
        // record, and the upstream from where the view is now.
        let w = v.rewound_watch(&k, "10", t0).unwrap();
        assert_eq!(w.upstream_rv, "13");
        let rvs: Vec<u64> = w
            .replay
            .iter()
            .map(|f| {
                super::super::json::parse_event(f)
                    .unwrap()
                    .resource_version
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(rvs, [11, 12, 13]);
        // From resourceVersion 0: the past as ADDED events, then the changes since.
        let w = v.rewound_watch(&k, "0", t1).unwrap();
        let evs: Vec<(String, String)> = w
            .replay
            .iter()
            .map(|f| {
                let m = super::super::json::parse_event(f).unwrap();
                (m.type_.unwrap().as_str().to_string(), m.resource_version)
            })
            .collect();
        assert_eq!(
            evs,
            [
                ("ADDED".into(), "11".into()),
                ("ADDED".into(), "12".into()),
                ("MODIFIED".into(), "13".into())
            ]
        );
        // Before the view existed: it cannot say, and says so.
        let before = t0
            .checked_sub(std::time::Duration::from_secs(3600))
            .unwrap();
        assert!(
            v.answer_at(&read(None, None), before)
                .unwrap_err()
                .contains("reaches back")
        );
        // Views of resources no rewind names keep no past.
        let plain = Views::new(1 << 20);
        plain.feed_list(k.clone(), Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[]}"#));
        assert!(plain.answer(&read(None, None)).is_some());
        let later = Instant::now();
        apply_line(&plain, &k, &json_line("ADDED", "x", 11));
        assert!(
            plain
                .answer_at(&read(None, None), later)
                .unwrap_err()
                .contains("keeps no past"),
            "never the present passed off as the past"
        );
    }

    #[test]
    fn the_cap_drops_views_instead_of_growing() {
        let v = Views::new(300);
        let k = key(None);
        v.feed_list(k.clone(), Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}"#));
        assert!(v.answer(&read(None, None)).is_some());
        for i in 0..5 {
            apply_line(&v, &k, &json_line("ADDED", &format!("o{i}"), 2 + i));
        }
        assert!(v.answer(&read(None, None)).is_none());
        assert!(v.bytes() <= 300);
        // Disabled views hold nothing.
        let off = Views::new(0);
        off.feed_list(k, Encoding::Json, true, Bytes::from_static(br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}"#));
        assert!(off.answer(&read(None, None)).is_none());
    }

    #[test]
    fn list_metadata_is_scanned_without_parsing_items() {
        let body = br#" { "kind" : "ConfigMapList", "apiVersion":"v1", "metadata": {"resourceVersion": "9", "continue": "c\"x"}, "items": [{"metadata": {"name": "a\"}b"}}, [1, {"x": "]"}]] } "#;
        let p = json_list_meta(body).unwrap();
        assert_eq!(
            (
                p.kind.as_str(),
                p.api_version.as_str(),
                p.rv.as_str(),
                p.continue_.as_str()
            ),
            ("ConfigMap", "v1", "9", "c\"x")
        );
        // The recorded list, pretty-printed as the apiserver sends it to curl.
        let rec = std::fs::read(format!("{FIX}cm-list-json-limit.body")).unwrap();
        let p = json_list_meta(&rec).unwrap();
        assert_eq!(p.rv, "584");
        assert!(p.continue_.starts_with("eyJ2Ijoi"));
        for bad in [
            &b"{\"items\": [1"[..],
            b"{\"kind\": \"x\"}",
            b"{1: 2}",
            b"{\"a\" 1}",
        ] {
            assert!(
                json_list_meta(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn malformed_bodies_leave_no_view_and_do_not_panic() {
        let v = Views::new(1 << 20);
        for body in [&b"{"[..], b"[]", b"{\"items\":[1]}", b"k8s\0\xff", b""] {
            v.feed_list(key(None), Encoding::Json, true, Bytes::from_static(body));
            v.feed_list(
                key(None),
                Encoding::Protobuf,
                true,
                Bytes::from_static(body),
            );
            assert!(v.answer(&read(None, None)).is_none());
        }
        // Metadata first, then broken items: accepted on the way through (the items are
        // not scanned then), refused when a read needs the view.
        let broken = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"}},{"#;
        assert!(json_list_meta(broken).is_ok());
        v.feed_list(key(None), Encoding::Json, true, Bytes::from_static(broken));
        assert!(v.answer(&read(None, None)).is_none());
        assert_eq!(v.bytes(), 0);
    }
}
