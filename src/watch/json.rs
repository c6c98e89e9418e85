//! JSON watch streams: one compact `{"type":…,"object":…}` per line (`json.Encoder`; kube-rs
//! requires the newline framing). Lines are found by scanning for `\n`, which never occurs
//! inside compact JSON (strings escape it).

use std::borrow::Cow;
use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use serde::Deserialize;

use super::event::{EventMeta, EventType};
use super::frame::{CodecError, Frame};

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    type_: Cow<'a, str>,
    #[serde(borrow, default)]
    object: Option<RawObject<'a>>,
}

#[derive(Deserialize)]
struct RawObject<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    metadata: Option<RawMeta<'a>>,
    /// Status objects (ERROR events) carry a code. Everything else (spec, status, data,
    /// ...) is skipped by serde without being materialized.
    #[serde(default)]
    code: Option<i64>,
}

#[derive(Deserialize)]
struct RawMeta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uid: Option<Cow<'a, str>>,
    #[serde(rename = "resourceVersion", borrow, default)]
    resource_version: Option<Cow<'a, str>>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(borrow, default)]
    labels: Option<BTreeMap<Cow<'a, str>, Cow<'a, str>>>,
    #[serde(borrow, default)]
    annotations: Option<BTreeMap<Cow<'a, str>, Cow<'a, str>>>,
}

/// Parse one event line (without requiring the trailing newline).
pub fn parse_event(line: &[u8]) -> Result<EventMeta, CodecError> {
    let ev: RawEvent<'_> =
        serde_json::from_slice(line).map_err(|e| CodecError::Json(e.to_string()))?;
    let type_ =
        EventType::parse(&ev.type_).ok_or_else(|| CodecError::UnknownType(ev.type_.to_string()))?;
    let mut meta = EventMeta {
        type_: Some(type_),
        ..Default::default()
    };
    if let Some(o) = ev.object {
        meta.api_version = o.api_version.map(Cow::into_owned).unwrap_or_default();
        meta.kind = o.kind.map(Cow::into_owned).unwrap_or_default();
        meta.status_code = o.code.filter(|_| type_ == EventType::Error);
        if let Some(m) = o.metadata {
            meta.name = m.name.map(Cow::into_owned).unwrap_or_default();
            meta.namespace = m.namespace.map(Cow::into_owned).unwrap_or_default();
            meta.uid = m.uid.map(Cow::into_owned).unwrap_or_default();
            meta.resource_version = m.resource_version.map(Cow::into_owned).unwrap_or_default();
            meta.generation = m.generation;
            meta.labels = m
                .labels
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            meta.initial_events_end = type_ == EventType::Bookmark
                && m.annotations.is_some_and(|a| {
                    a.get("k8s.io/initial-events-end")
                        .is_some_and(|v| v == "true")
                });
        }
    }
    Ok(meta)
}

/// Splits a JSON watch stream into frames, whatever the chunk boundaries.
pub struct JsonFramer {
    buf: BytesMut,
    max_frame: usize,
}

impl JsonFramer {
    pub fn new(max_frame: usize) -> JsonFramer {
        JsonFramer {
            buf: BytesMut::new(),
            max_frame,
        }
    }

    /// Add a chunk; returns every frame it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Frame>, CodecError> {
        let scan_from = self.buf.len();
        self.buf.extend_from_slice(chunk);
        let mut frames = Vec::new();
        let mut search = scan_from;
        while let Some(pos) = self.buf[search..].iter().position(|b| *b == b'\n') {
            let end = search + pos + 1;
            let bytes: Bytes = self.buf.split_to(end).freeze();
            search = 0;
            let line = &bytes[..bytes.len() - 1];
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if line.len() > self.max_frame {
                return Err(CodecError::TooLarge {
                    size: line.len(),
                    limit: self.max_frame,
                });
            }
            let meta = parse_event(line)?;
            frames.push(Frame { bytes, meta });
        }
        if self.buf.len() > self.max_frame {
            return Err(CodecError::TooLarge {
                size: self.buf.len(),
                limit: self.max_frame,
            });
        }
        Ok(frames)
    }

    /// Bytes of an incomplete event at the end of the stream (a truncated stream).
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CR_WATCH: &[u8] = include_bytes!("../../fixtures/kube-apiserver-1.28/cr-watch-json.body");

    fn all(body: &[u8], chunk: usize) -> Vec<Frame> {
        let mut f = JsonFramer::new(super::super::frame::DEFAULT_MAX_FRAME);
        let mut out = Vec::new();
        for c in body.chunks(chunk.max(1)) {
            out.extend(f.push(c).unwrap());
        }
        assert_eq!(f.pending(), 0);
        out
    }

    #[test]
    fn recorded_cr_watch() {
        let frames = all(CR_WATCH, usize::MAX);
        let got: Vec<(EventType, &str, &str, Option<i64>)> = frames
            .iter()
            .map(|f| {
                (
                    f.meta.type_.unwrap(),
                    f.meta.name.as_str(),
                    f.meta.resource_version.as_str(),
                    f.meta.generation,
                )
            })
            .collect();
        use EventType::*;
        assert_eq!(
            got,
            [
                (Added, "podinfo", "573", Some(1)),
                (Modified, "podinfo", "574", Some(2)),
                (Modified, "podinfo", "575", Some(2)),
                (Modified, "podinfo", "576", Some(2)),
                (Modified, "podinfo", "578", Some(3)),
                (Deleted, "podinfo", "579", Some(3)),
            ]
        );
        let f = &frames[0];
        assert_eq!(
            (
                f.meta.kind.as_str(),
                f.meta.api_version.as_str(),
                f.meta.namespace.as_str()
            ),
            ("GitRepository", "source.testbed.example.com/v1", "fixtures")
        );
        assert_eq!(f.meta.labels, [("app".to_string(), "podinfo".to_string())]);
        // Frames are the original bytes, newline included.
        let joined: Vec<u8> = frames.iter().flat_map(|f| f.bytes.to_vec()).collect();
        assert_eq!(joined, CR_WATCH);
    }

    #[test]
    fn any_chunking_gives_the_same_frames() {
        let whole = all(CR_WATCH, usize::MAX);
        for chunk in [1, 2, 3, 7, 64, 333, 1000] {
            assert_eq!(all(CR_WATCH, chunk), whole, "chunk size {chunk}");
        }
    }

    #[test]
    fn errors_bookmarks_and_expired() {
        let f = all(
            include_bytes!("../../fixtures/kube-apiserver-1.28/cm-watch-expired.body"),
            5,
        );
        assert_eq!(
            (f.len(), f[0].meta.type_, f[0].meta.status_code),
            (1, Some(EventType::Error), Some(410))
        );
        let f = all(
            include_bytes!("../../fixtures/kube-apiserver-1.28/cm-watchlist-json.body"),
            17,
        );
        let types: Vec<_> = f.iter().map(|f| f.meta.type_.unwrap()).collect();
        assert_eq!(
            types,
            [
                EventType::Added,
                EventType::Added,
                EventType::Added,
                EventType::Added,
                EventType::Bookmark,
                EventType::Modified
            ]
        );
        assert!(f[4].meta.initial_events_end);
        assert_eq!(f[4].meta.resource_version, "5295");
        assert!(!f[5].meta.initial_events_end);
        let legacy = all(
            include_bytes!("../../fixtures/kube-apiserver-1.28/legacy-watch-path.body"),
            100,
        );
        assert_eq!(legacy.len(), 3);
    }

    #[test]
    fn large_objects_and_escapes() {
        let big = "x".repeat(20 * 1024 * 1024);
        let line = format!(
            "{{\"type\":\"ADDED\",\"object\":{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"a\\\"b\",\"resourceVersion\":\"9\"}},\"data\":{{\"k\":\"{big}\"}}}}}}\n"
        );
        let f = all(line.as_bytes(), 1 << 20);
        assert_eq!(
            (f[0].meta.name.as_str(), f[0].meta.resource_version.as_str()),
            ("a\"b", "9")
        );
        let mut small = JsonFramer::new(1024);
        assert!(matches!(
            small.push(line.as_bytes()),
            Err(CodecError::TooLarge { .. })
        ));
    }

    #[test]
    fn malformed_lines_are_errors() {
        for bad in [
            &b"{\n"[..],
            b"[1]\n",
            b"{\"type\":\"NOPE\",\"object\":{}}\n",
            b"{\"object\":{}}\n",
            b"\xff\xfe\n",
        ] {
            let mut f = JsonFramer::new(1024);
            assert!(f.push(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
