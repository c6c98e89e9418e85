//! A LIST response body on its way to the client, copied (by reference: its chunks are
//! shared) as it passes, so the client's view can be rebuilt from it when it ends.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{self, HeaderMap};
use http_body::Frame;
use http_body_util::BodyExt;

use crate::listen::{Body, BodyError};
use crate::watch::view::{Encoding, ViewKey, Views};

/// Wrap a successful LIST response body so that the client's view (`key`) is rebuilt
/// from it; the body as it is when it cannot feed a view (a Table or
/// PartialObjectMetadata, an unknown media type, an encoding other than gzip).
pub fn tee(
    body: Body,
    headers: &HeaderMap,
    key: ViewKey,
    first_page: bool,
    views: Arc<Views>,
) -> Body {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let encoding = match ct.split(';').next().unwrap_or("").trim() {
        _ if ct.contains("as=") => None,
        "application/json" => Some(Encoding::Json),
        "application/vnd.kubernetes.protobuf" => Some(Encoding::Protobuf),
        _ => None,
    };
    let gzip = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().eq_ignore_ascii_case("gzip"));
    match (encoding, gzip) {
        (Some(encoding), None | Some(true)) => ListTee {
            inner: body,
            chunks: Vec::new(),
            len: 0,
            limit: views.max_bytes(),
            gzip: gzip == Some(true),
            encoding,
            first_page,
            key: Some(key),
            views,
        }
        .boxed(),
        _ => body,
    }
}

/// A LIST response body on its way to the client, copied as it passes so the client's
/// view can be rebuilt from it when it ends. The client gets every frame at once; the
/// copy stops (and no view is made) past the views' memory cap.
struct ListTee {
    inner: Body,
    /// The body's chunks as they passed (shared with what went to the client, not
    /// copied), and their total length.
    chunks: Vec<Bytes>,
    len: usize,
    limit: usize,
    gzip: bool,
    encoding: Encoding,
    first_page: bool,
    key: Option<ViewKey>,
    views: Arc<Views>,
}

impl ListTee {
    fn finish(&mut self) {
        let Some(key) = self.key.take() else { return };
        let chunks = std::mem::take(&mut self.chunks);
        let chunks = if self.gzip {
            use std::io::Read;
            let gz = crate::watch::view::join_chunks(&chunks);
            let mut out = Vec::new();
            let mut d = flate2::read::GzDecoder::new(&gz[..]).take(self.limit as u64 + 1);
            if d.read_to_end(&mut out).is_err() || out.len() > self.limit {
                return;
            }
            vec![Bytes::from(out)]
        } else {
            chunks
        };
        self.views
            .feed_list_chunks(key, self.encoding, self.first_page, chunks);
    }
}

impl http_body::Body for ListTee {
    type Data = Bytes;
    type Error = BodyError;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    if self.len + d.len() > self.limit {
                        self.key = None;
                        self.chunks = Vec::new();
                    } else if self.key.is_some() {
                        self.len += d.len();
                        self.chunks.push(d.clone());
                    }
                }
            }
            Poll::Ready(None) => self.finish(),
            Poll::Ready(Some(Err(_))) => self.key = None,
            Poll::Pending => {}
        }
        // hyper stops polling once the body says it has ended; the copy is complete then.
        if matches!(r, Poll::Ready(Some(Ok(_)))) && self.inner.is_end_stream() {
            self.finish();
        }
        r
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
