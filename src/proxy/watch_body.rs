//! The body of a watch response on its way to the client, whatever is inside it (a gated
//! stream, or the upstream's own when it cannot be framed): keeps the watch counted and
//! its place on its upstream connection while the client holds it, ends it cleanly at
//! shutdown, and — for an ungated stream — ends it cleanly when the upstream connection
//! is lost, as the client would have seen direct.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{self, HeaderMap};
use http_body::Frame;

use crate::listen::{Body, BodyError};
use crate::upstream::error;
use crate::watch::Format;

/// What ends a watch when the proxy shuts down.
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// A watch's response body as the client gets it.
pub struct WatchBody {
    inner: Body,
    gauge: prometheus::IntGauge,
    shutdown: Shutdown,
    /// The watch's place on its upstream connection.
    _slot: Option<crate::upstream::WatchSlot>,
    /// `inner` is the upstream's body itself (an ungated watch): a lost upstream
    /// connection ends it cleanly. (A gated stream has made that choice already.)
    upstream_body: bool,
}

impl WatchBody {
    /// `gauge` is incremented now and decremented when the client lets go.
    pub fn new(
        inner: Body,
        gauge: prometheus::IntGauge,
        shutdown: Shutdown,
        slot: Option<crate::upstream::WatchSlot>,
        upstream_body: bool,
    ) -> WatchBody {
        gauge.inc();
        WatchBody {
            inner,
            gauge,
            shutdown,
            _slot: slot,
            upstream_body,
        }
    }
}

impl Drop for WatchBody {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

impl http_body::Body for WatchBody {
    type Data = Bytes;
    type Error = BodyError;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if self.shutdown.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            // The upstream connection went away under an ungated watch: end it cleanly,
            // as the client would see it direct (`upstream::error::WatchEnd`).
            Poll::Ready(Some(Err(e)))
                if self.upstream_body && error::watch_end(&*e) == error::WatchEnd::Lost =>
            {
                tracing::debug!(error = %e, "upstream watch connection lost; ending the stream");
                Poll::Ready(None)
            }
            r => r,
        }
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// How a watch response can be framed: (format, gzip-encoded), or why it cannot be
/// (`content-encoding`, `media-type`: the reason label of
/// `stalemate_watch_streams_ungated_total`).
pub fn framing(h: &HeaderMap) -> Result<(Format, bool), &'static str> {
    let gzip = match h
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
    {
        None => false,
        Some(e) if e.is_empty() || e == "identity" => false,
        Some(e) if e == "gzip" || e == "x-gzip" => true,
        Some(_) => return Err("content-encoding"),
    };
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(Format::from_content_type)
        .map(|f| (f, gzip))
        .ok_or("media-type")
}
