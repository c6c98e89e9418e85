//! Watch streams: framing and per-event metadata, for JSON lines and protobuf frames.
//!
//! The gate (issue 4) must hold, delay and release events without changing a byte of
//! them, and decide from a few metadata fields (type, kind, namespace, name,
//! resourceVersion, labels) whether a fault applies. So the codecs split a stream into
//! [`Frame`]s — the original bytes of one event, plus its [`EventMeta`] — without decoding
//! whole objects: borrowed serde structs that skip everything but metadata for JSON
//! (`json.rs`), a small field walker for protobuf (`proto.rs`). Both accept chunks cut
//! anywhere, and report malformed input as an error, never a panic.
//!
//! Wire formats: PROTOCOL.md §A.5 and §B; recorded streams in `fixtures/kube-apiserver-1.28/`.

pub mod gate;
#[cfg(test)]
mod gate_props;
pub mod gzip;
pub mod json;
pub mod proto;
pub mod stream;
pub mod view;

use bytes::Bytes;

/// The watch event types (`watch.EventType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

impl EventType {
    pub fn parse(s: &str) -> Option<EventType> {
        Some(match s {
            "ADDED" => EventType::Added,
            "MODIFIED" => EventType::Modified,
            "DELETED" => EventType::Deleted,
            "BOOKMARK" => EventType::Bookmark,
            "ERROR" => EventType::Error,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
            EventType::Error => "ERROR",
        }
    }
}

/// What the gate needs to know about one event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventMeta {
    pub type_: Option<EventType>,
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub generation: Option<i64>,
    pub labels: Vec<(String, String)>,
    /// A BOOKMARK annotated `k8s.io/initial-events-end: "true"` (WatchList end marker).
    pub initial_events_end: bool,
    /// For ERROR events: the Status code (410 for Expired).
    pub status_code: Option<i64>,
}

/// One event: its exact bytes on the wire (including the newline or the length prefix)
/// and its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub bytes: Bytes,
    pub meta: EventMeta,
}

/// Why a stream could not be framed. The proxy ends such a stream with an ERROR event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("watch event of {size} bytes exceeds the {limit}-byte frame limit")]
    TooLarge { size: usize, limit: usize },
    #[error("malformed JSON watch event: {0}")]
    Json(String),
    #[error("malformed protobuf watch event: {0}")]
    Proto(String),
    #[error("unknown watch event type {0:?}")]
    UnknownType(String),
}

/// Largest event accepted by default: the apiserver's object limit is ~1.5 MiB in etcd
/// (3 MiB requests); 64 MiB leaves room for anything a real server sends.
pub const DEFAULT_MAX_FRAME: usize = 64 * 1024 * 1024;
