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
//! Wire formats: docs/PROTOCOL.md §A.5 and §B; recorded streams in
//! `fixtures/kube-apiserver-1.28/`.

pub mod gate;
#[cfg(test)]
mod gate_props;
pub mod gzip;
pub mod json;
pub mod proto;

pub mod view;

use bytes::Bytes;

/// The framing of a watch response, from its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Protobuf,
}

impl Format {
    pub fn from_content_type(ct: &str) -> Option<Format> {
        let media = ct.split(';').next().unwrap_or("").trim();
        match media {
            "application/json" => Some(Format::Json),
            "application/vnd.kubernetes.protobuf" if ct.contains("stream=watch") => {
                Some(Format::Protobuf)
            }
            _ => None,
        }
    }
}

/// One watch event in a stream's framing. `object` is the object's JSON text, or for
/// protobuf its `k8s\0` + Unknown envelope.
pub fn event(format: Format, type_: EventType, object: &[u8]) -> Bytes {
    match format {
        Format::Json => {
            let t = type_.as_str();
            let mut b = Vec::with_capacity(object.len() + t.len() + 22);
            b.extend_from_slice(b"{\"type\":\"");
            b.extend_from_slice(t.as_bytes());
            b.extend_from_slice(b"\",\"object\":");
            b.extend_from_slice(object);
            b.extend_from_slice(b"}\n");
            Bytes::from(b)
        }
        Format::Protobuf => Bytes::from(crate::protobuf::watch_frame(type_.as_str(), object)),
    }
}

/// The ERROR 410 `Expired` event that makes a client relist, in a stream's framing: the
/// one the apiserver sends for a resume point it no longer has
/// (`fixtures/kube-apiserver-1.28/cm-watch-expired*`), and the one the proxy sends when a
/// stream must end while it holds events.
pub fn expired_event(format: Format, message: &str) -> Bytes {
    let object = match format {
        Format::Json => crate::status::ApiError::expired(message)
            .to_status()
            .to_string()
            .into_bytes(),
        Format::Protobuf => {
            let mut status = crate::protobuf::Writer::default();
            status
                .message(1, |_| {})
                .string(2, "Failure")
                .string(3, message)
                .string(4, "Expired")
                .uint(6, 410);
            crate::protobuf::envelope("v1", "Status", &status.buf)
        }
    };
    event(format, EventType::Error, &object)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_events_parse_back_in_both_framings() {
        let j = expired_event(Format::Json, "gone");
        let f = json::JsonFramer::new(1 << 20).push(&j).unwrap();
        assert_eq!(
            (f[0].meta.type_, f[0].meta.status_code),
            (Some(EventType::Error), Some(410))
        );
        let p = expired_event(Format::Protobuf, "gone");
        let f = proto::ProtoFramer::new(1 << 20).push(&p).unwrap();
        assert_eq!(
            (
                f[0].meta.type_,
                f[0].meta.status_code,
                f[0].meta.kind.as_str()
            ),
            (Some(EventType::Error), Some(410), "Status")
        );
    }

    /// The simulator's expired event is byte for byte the recorded apiserver's.
    #[test]
    fn the_json_expired_event_is_the_recorded_one() {
        let rec = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/kube-apiserver-1.28/cm-watch-expired.body"
        ))
        .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&rec).unwrap();
        let msg = v["object"]["message"].as_str().unwrap();
        assert_eq!(expired_event(Format::Json, msg), Bytes::from(rec));
    }
}
