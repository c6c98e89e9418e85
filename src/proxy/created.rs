//! What a create made: the object's name and uid, read from the apiserver's answer as it
//! passes to the client (the body is passed on untouched; a copy of its first MiB is
//! kept). Explore on a shared cluster deletes between trials only what it saw its own
//! clients create — by uid, never "whatever is new" — so somebody else's objects, or
//! those another controller made, are left alone.

use bytes::Bytes;
use http_body::Frame;
use serde_json::Value;

use crate::k8s::protobuf::{Fields, Wire, unwrap_unknown};
use crate::listen::{Body, BodyError};

/// More than any object a create answers with; past it nothing is recorded.
const MAX_COPY: usize = 1024 * 1024;

/// Told of the created object's (namespace, name, uid) once the answer has passed.
pub type OnCreated = Box<dyn FnOnce(String, String, String) + Send + Sync>;

/// `body`, passed on as it is; `on_created` hears what it says was made.
pub fn tee(body: Body, protobuf: bool, on_created: OnCreated) -> Body {
    use http_body_util::BodyExt;
    Tee {
        inner: body,
        copy: Vec::new(),
        protobuf,
        on_created: Some(on_created),
    }
    .boxed()
}

struct Tee {
    inner: Body,
    copy: Vec<u8>,
    protobuf: bool,
    on_created: Option<OnCreated>,
}

impl Tee {
    fn finish(&mut self) {
        let Some(f) = self.on_created.take() else {
            return;
        };
        if self.copy.len() > MAX_COPY {
            return;
        }
        if let Some((ns, name, uid)) = identity(&self.copy, self.protobuf) {
            f(ns, name, uid);
        }
    }
}

impl http_body::Body for Tee {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            std::task::Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref()
                    && self.copy.len() <= MAX_COPY
                {
                    self.copy.extend_from_slice(d);
                }
                if self.inner.is_end_stream() {
                    self.finish();
                }
            }
            std::task::Poll::Ready(None) => self.finish(),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// (namespace, name, uid) of the object a body holds.
fn identity(body: &[u8], protobuf: bool) -> Option<(String, String, String)> {
    if protobuf {
        let (_, _, raw) = unwrap_unknown(body).ok()?;
        let meta = Fields::new(raw).flatten().find_map(|f| match f {
            (1, Wire::Bytes(m)) => Some(m),
            _ => None,
        })?;
        let (mut ns, mut name, mut uid) = (String::new(), String::new(), String::new());
        for f in Fields::new(meta).flatten() {
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            match f {
                (1, Wire::Bytes(b)) => name = text(b),
                (3, Wire::Bytes(b)) => ns = text(b),
                (5, Wire::Bytes(b)) => uid = text(b),
                _ => {}
            }
        }
        return (!uid.is_empty()).then_some((ns, name, uid));
    }
    let v: Value = serde_json::from_slice(body).ok()?;
    let m = &v["metadata"];
    let s = |k: &str| m[k].as_str().unwrap_or("").to_string();
    let uid = s("uid");
    (!uid.is_empty()).then(|| (s("namespace"), s("name"), uid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn the_body_passes_and_the_created_object_is_named() {
        let json = br#"{"kind":"ConfigMap","metadata":{"name":"a","namespace":"d","uid":"u-1"}}"#;
        let body = http_body_util::Full::new(Bytes::from_static(json))
            .map_err(|never| match never {})
            .boxed();
        let seen = Arc::new(Mutex::new(None));
        let s = seen.clone();
        let out = tee(
            body,
            false,
            Box::new(move |ns, name, uid| *s.lock().unwrap() = Some((ns, name, uid))),
        );
        let got = out.collect().await.unwrap().to_bytes();
        assert_eq!(&got[..], &json[..]);
        assert_eq!(
            seen.lock().unwrap().clone(),
            Some(("d".into(), "a".into(), "u-1".into()))
        );
    }

    #[test]
    fn protobuf_answers_are_read_too() {
        // ObjectMeta{name = 1: "a", namespace = 3: "d", uid = 5: "u"}.
        let meta = [&[0x0a, 1][..], b"a", &[0x1a, 1], b"d", &[0x2a, 1], b"u"].concat();
        let object = [&[0x0a, meta.len() as u8][..], &meta].concat();
        let body = crate::k8s::protobuf::envelope("v1", "Pod", &object);
        assert_eq!(
            identity(&body, true),
            Some(("d".into(), "a".into(), "u".into()))
        );
        assert_eq!(identity(b"{}", false), None);
    }
}
