//! Client views: per client and query, the objects as that client has been shown them —
//! its last full LIST plus every watch event the proxy delivered since.
//!
//! A `resourceVersion=0` read may legally be answered from any cache, however old
//! (docs/PROTOCOL.md §A.2): a real apiserver serves it from its watch cache. During a
//! window a stale client must not escape its staleness through such a read, or it would
//! notice what the window hides; so the proxy answers it from the view instead, with the
//! view's resourceVersion as the list's (invariant 2: never newer than the items it
//! returns). Consistent reads still go upstream, unless the window sets
//! `staleConsistentReads` (a contract violation, counted as such).
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
//!
//! Here: the map of views, what feeds them and the cap. `store.rs` one view and its
//! record of changes; `slot.rs` its lock and the parse off the serving thread;
//! `parse.rs` what views are fed, read without building trees; `answer.rs` which view
//! answers a read, and the body it answers with; `key.rs` the query a view answers,
//! `encoding.rs` how its objects are encoded, `chunks.rs` a chunked body made one buffer.

mod answer;
mod chunks;
mod encoding;
mod key;
mod parse;
mod slot;
mod store;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tokio::time::Instant;

use bytes::Bytes;

use super::event::{EventMeta, EventType};
pub use answer::{Answer, Read};
use answer::{Scope, answer_from, candidates};
pub use chunks::join_chunks;
pub use encoding::Encoding;
pub use key::ViewKey;
use parse::{json_list_meta, json_with_type, parse_proto_list, proto_envelope};
use slot::Slot;
pub use store::Rewind;

/// A WatchList answered from a view ([`Views::watch_list`]).
#[derive(Debug, Clone)]
pub struct WatchList {
    /// The resourceVersion its initial state is at: the end marker's.
    pub rv: String,
    /// Its initial events and end marker, in the view's framing: delivered at once.
    pub initial: Vec<Bytes>,
    /// Where the upstream watch starts, and what comes before it (held by the window).
    pub rewind: Rewind,
}
use store::{Applied, RawPage, View};

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

/// Rewinds remembered per view (a client rarely has more than one in flight).
const MAX_REWINDS: usize = 8;

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

    /// A WatchList (`sendInitialEvents=true`) answered from the view covering `read`, as
    /// a watch cache behind the upstream would: as the view is, or as it was at `at` (a
    /// `rewind`). Its initial events, at the view's resourceVersion then, go to the
    /// client at once; the upstream watch continues from where the view is now, after
    /// the changes since a rewound point (held by the window like the upstream's). `Err`
    /// says why not — the WatchList then goes upstream.
    pub fn watch_list(&self, read: &Read<'_>, at: Option<Instant>) -> Result<WatchList, String> {
        let (_, slot, scope) = self.covering(read).ok_or_else(|| {
            format!(
                "no view of {} for this client (one starts at its next LIST or WatchList)",
                read.key.resource
            )
        })?;
        let v = slot.lock();
        let wanted = match v.encoding {
            Encoding::Json => read.accept_json,
            Encoding::Protobuf => read.accept_protobuf,
        };
        if !wanted {
            return Err("the view holds another encoding than the watch asks for".into());
        }
        let format = match v.encoding {
            Encoding::Json => super::Format::Json,
            Encoding::Protobuf => super::Format::Protobuf,
        };
        let (initial, rv, replay) = match at {
            None => (answer::initial_events(&v, &scope), v.rv.clone(), vec![]),
            Some(t) => {
                let (objects, rv, replay) = v.at(t)?;
                let mut past = View::new(v.encoding);
                past.api_version = v.api_version.clone();
                past.kind = v.kind.clone();
                past.rv = rv.clone();
                past.objects = objects;
                let replay = replay
                    .into_iter()
                    .filter(|(k, _)| scope.covers(k))
                    .map(|(_, f)| f)
                    .collect();
                (answer::initial_events(&past, &scope), rv, replay)
            }
        };
        Ok(WatchList {
            rv,
            initial,
            rewind: Rewind {
                upstream_rv: v.rv.clone(),
                format,
                replay,
            },
        })
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
