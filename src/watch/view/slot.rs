//! A view behind its own lock, its LIST items parsed off the serving thread: delivered
//! events of different streams never contend, and a read that needs the view before the
//! parse has run waits for it or parses it itself.

use std::sync::{Arc, Condvar, Mutex};

use super::chunks::join_chunks;
use super::encoding::Encoding;
use super::parse::{parse_json_list, parse_proto_list};
use super::store::{Applied, View};

/// One view behind its own lock; `parsed` wakes readers waiting for a parse.
pub(super) struct Slot {
    view: Mutex<View>,
    parsed: Condvar,
}

impl Slot {
    pub(super) fn new(view: View) -> Arc<Slot> {
        Arc::new(Slot {
            view: Mutex::new(view),
            parsed: Condvar::new(),
        })
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Parse the view's raw LIST pages (outside its lock: delivered events queue
    /// meanwhile), then apply the events that queued. Returns the change in bytes.
    pub(super) fn parse(&self) -> isize {
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
    pub(super) fn ensure_parsed(&self) -> isize {
        let delta = self.parse();
        let mut v = self.lock();
        while v.parsing {
            v = self.parsed.wait(v).unwrap_or_else(|p| p.into_inner());
        }
        delta
    }
}
