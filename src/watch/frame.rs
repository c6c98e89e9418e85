//! What the codecs cut a stream into: frames, the errors that stop them, and the size
//! limit.

use bytes::Bytes;

use super::event::EventMeta;

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
