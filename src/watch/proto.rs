//! Protobuf watch streams (`application/vnd.kubernetes.protobuf;stream=watch`): each event
//! is a 4-byte big-endian length and a `WatchEvent{type = 1, object = 2 (RawExtension{raw =
//! 1})}`, where `raw` is `k8s\0` + `runtime.Unknown` (docs/PROTOCOL.md §B). ObjectMeta is
//! field 1 of every object; a Status (ERROR events) carries its code in field 6.

use bytes::{Buf, Bytes, BytesMut};

use super::event::{EventMeta, EventType};
use super::frame::{CodecError, Frame};
use crate::k8s::protobuf::{Fields, Wire, unwrap_unknown};

fn bad(e: impl std::fmt::Display) -> CodecError {
    CodecError::Proto(e.to_string())
}

fn string(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Parse one WatchEvent message (without its length prefix).
pub fn parse_event(msg: &[u8]) -> Result<EventMeta, CodecError> {
    let mut meta = EventMeta::default();
    let mut raw: &[u8] = &[];
    for f in Fields::new(msg) {
        match f.map_err(bad)? {
            (1, Wire::Bytes(t)) => {
                let t = std::str::from_utf8(t).map_err(bad)?;
                meta.type_ = Some(
                    EventType::parse(t).ok_or_else(|| CodecError::UnknownType(t.to_string()))?,
                );
            }
            (2, Wire::Bytes(ext)) => {
                for g in Fields::new(ext) {
                    if let (1, Wire::Bytes(r)) = g.map_err(bad)? {
                        raw = r;
                    }
                }
            }
            _ => {}
        }
    }
    let Some(type_) = meta.type_ else {
        return Err(CodecError::Proto("watch event without a type".into()));
    };
    if raw.is_empty() {
        return Ok(meta);
    }
    let (api_version, kind, object) = unwrap_unknown(raw).map_err(bad)?;
    meta.api_version = api_version;
    meta.kind = kind;
    for f in Fields::new(object) {
        match f.map_err(bad)? {
            (1, Wire::Bytes(m)) if meta.kind != "Status" => object_meta(m, &mut meta)?,
            (6, Wire::Varint(code)) if meta.kind == "Status" && type_ == EventType::Error => {
                meta.status_code = Some(code as i64)
            }
            _ => {}
        }
    }
    Ok(meta)
}

fn map_entry(b: &[u8]) -> Result<(String, String), CodecError> {
    let (mut k, mut v) = (String::new(), String::new());
    for f in Fields::new(b) {
        match f.map_err(bad)? {
            (1, Wire::Bytes(x)) => k = string(x),
            (2, Wire::Bytes(x)) => v = string(x),
            _ => {}
        }
    }
    Ok((k, v))
}

fn object_meta(m: &[u8], meta: &mut EventMeta) -> Result<(), CodecError> {
    for f in Fields::new(m) {
        match f.map_err(bad)? {
            (1, Wire::Bytes(x)) => meta.name = string(x),
            (3, Wire::Bytes(x)) => meta.namespace = string(x),
            (5, Wire::Bytes(x)) => meta.uid = string(x),
            (6, Wire::Bytes(x)) => meta.resource_version = string(x),
            (7, Wire::Varint(g)) => meta.generation = Some(g as i64),
            (11, Wire::Bytes(e)) => meta.labels.push(map_entry(e)?),
            (12, Wire::Bytes(e)) => {
                let (k, v) = map_entry(e)?;
                if k == "k8s.io/initial-events-end"
                    && v == "true"
                    && meta.type_ == Some(EventType::Bookmark)
                {
                    meta.initial_events_end = true;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Splits a protobuf watch stream into length-prefixed frames, whatever the chunking.
pub struct ProtoFramer {
    buf: BytesMut,
    max_frame: usize,
}

impl ProtoFramer {
    pub fn new(max_frame: usize) -> ProtoFramer {
        ProtoFramer {
            buf: BytesMut::new(),
            max_frame,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Frame>, CodecError> {
        self.buf.extend_from_slice(chunk);
        let mut frames = Vec::new();
        while self.buf.len() >= 4 {
            let len = (&self.buf[..4]).get_u32() as usize;
            if len > self.max_frame {
                return Err(CodecError::TooLarge {
                    size: len,
                    limit: self.max_frame,
                });
            }
            if self.buf.len() < 4 + len {
                break;
            }
            let bytes: Bytes = self.buf.split_to(4 + len).freeze();
            let meta = parse_event(&bytes[4..])?;
            frames.push(Frame { bytes, meta });
        }
        Ok(frames)
    }

    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(body: &[u8], chunk: usize) -> Vec<Frame> {
        let mut f = ProtoFramer::new(super::super::frame::DEFAULT_MAX_FRAME);
        let mut out = Vec::new();
        for c in body.chunks(chunk.max(1)) {
            out.extend(f.push(c).unwrap());
        }
        assert_eq!(f.pending(), 0);
        out
    }

    #[test]
    fn recorded_protobuf_watch_matches_the_json_one() {
        let body = include_bytes!("../../fixtures/kube-apiserver-1.28/cm-watch-protobuf.body");
        let frames = all(body, usize::MAX);
        let joined: Vec<u8> = frames.iter().flat_map(|f| f.bytes.to_vec()).collect();
        assert_eq!(joined, body, "frames are the original bytes");
        for chunk in [1, 3, 4, 5, 100] {
            assert_eq!(all(body, chunk), frames, "chunk {chunk}");
        }
        let first = &frames[0].meta;
        assert_eq!(
            (
                first.type_,
                first.kind.as_str(),
                first.api_version.as_str(),
                first.name.as_str(),
                first.namespace.as_str()
            ),
            (
                Some(EventType::Added),
                "ConfigMap",
                "v1",
                "cm-0",
                "fixtures"
            )
        );
        assert_eq!(first.uid, "9164fad8-e7a4-4a7a-8c8c-5ebf71582438");
        assert_eq!(first.labels, [("i".to_string(), "0".to_string())]);
        let types: Vec<_> = frames.iter().map(|f| f.meta.type_.unwrap()).collect();
        assert_eq!(
            types,
            [
                EventType::Added,
                EventType::Added,
                EventType::Added,
                EventType::Modified,
                EventType::Deleted
            ]
        );
        let rvs: Vec<u64> = frames
            .iter()
            .map(|f| f.meta.resource_version.parse().unwrap())
            .collect();
        assert!(rvs.windows(2).all(|w| w[0] < w[1]), "{rvs:?}");
    }

    #[test]
    fn expired_and_watchlist() {
        let f = all(
            include_bytes!("../../fixtures/kube-apiserver-1.28/cm-watch-expired-protobuf.body"),
            7,
        );
        assert_eq!(
            (f.len(), f[0].meta.type_, f[0].meta.status_code),
            (1, Some(EventType::Error), Some(410))
        );
        let f = all(
            include_bytes!("../../fixtures/kube-apiserver-1.28/cm-watchlist-protobuf.body"),
            9,
        );
        let end: Vec<_> = f.iter().filter(|f| f.meta.initial_events_end).collect();
        assert_eq!(end.len(), 1);
        assert_eq!(end[0].meta.type_, Some(EventType::Bookmark));
        assert!(!end[0].meta.resource_version.is_empty());
    }

    #[test]
    fn malformed_frames_are_errors() {
        let mut f = ProtoFramer::new(16);
        assert!(matches!(
            f.push(&[0, 0, 1, 0]),
            Err(CodecError::TooLarge { .. })
        ));
        let mut f = ProtoFramer::new(1024);
        assert!(
            f.push(&[0, 0, 0, 3, 0x0a, 0x05, b'A']).is_err(),
            "truncated field inside a frame"
        );
        let mut f = ProtoFramer::new(1024);
        assert!(
            f.push(&[0, 0, 0, 6, 0x0a, 0x04, b'N', b'O', b'P', b'E'])
                .is_err(),
            "unknown type"
        );
        let mut f = ProtoFramer::new(1024);
        assert!(f.push(&[0, 0, 0, 2, 0x12, 0x00]).is_err(), "no type");
    }

    #[test]
    fn mutated_recorded_frames_never_panic() {
        use rand::{Rng, SeedableRng};
        let body = include_bytes!("../../fixtures/kube-apiserver-1.28/cm-watch-protobuf.body");
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..20_000 {
            let mut b = body.to_vec();
            for _ in 0..rng.random_range(1..6) {
                let i = rng.random_range(0..b.len());
                b[i] = rng.random();
            }
            let mut f = ProtoFramer::new(4096);
            let _ = f.push(&b);
            let mut j = super::super::json::JsonFramer::new(4096);
            let _ = j.push(&b);
        }
    }
}
