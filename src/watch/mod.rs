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

mod event;
mod frame;
pub mod gate;
#[cfg(test)]
mod gate_props;
pub mod gzip;
pub mod json;
pub mod proto;

pub mod view;

use bytes::Bytes;

pub use event::{EventMeta, EventType};
pub use frame::{CodecError, DEFAULT_MAX_FRAME, Frame};

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
        Format::Protobuf => Bytes::from(crate::k8s::protobuf::watch_frame(type_.as_str(), object)),
    }
}

/// The ERROR 410 `Expired` event that makes a client relist, in a stream's framing: the
/// one the apiserver sends for a resume point it no longer has
/// (`fixtures/kube-apiserver-1.28/cm-watch-expired*`), and the one the proxy sends when a
/// stream must end while it holds events.
pub fn expired_event(format: Format, message: &str) -> Bytes {
    let object = match format {
        Format::Json => crate::k8s::status::ApiError::expired(message)
            .to_status()
            .to_string()
            .into_bytes(),
        Format::Protobuf => {
            let mut status = crate::k8s::protobuf::Writer::default();
            status
                .message(1, |_| {})
                .string(2, "Failure")
                .string(3, message)
                .string(4, "Expired")
                .uint(6, 410);
            crate::k8s::protobuf::envelope("v1", "Status", &status.buf)
        }
    };
    event(format, EventType::Error, &object)
}

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
