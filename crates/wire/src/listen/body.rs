//! Response bodies: the type every handler returns, one fed from a channel for streams a
//! task produces (watch events), and the empty and whole ones.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;
use http_body_util::combinators::BoxBody;
use tokio::sync::mpsc;

/// Errors a response body can end with. An error aborts the stream (HTTP/1.1: the
/// connection is closed; HTTP/2: RST_STREAM), which is how an apiserver crash looks.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;
/// The response body type every handler returns: bodies stay streams.
pub type Body = BoxBody<Bytes, BodyError>;

/// Frames sent into the channel are flushed to the client as they arrive; an `Err`
/// aborts the stream; dropping the sender ends it cleanly.
pub struct ChannelBody {
    rx: mpsc::Receiver<Result<Bytes, BodyError>>,
}

impl ChannelBody {
    /// A body and the sender that feeds it. `depth` bounds how many frames may wait
    /// for a slow client before the producer blocks.
    pub fn channel(depth: usize) -> (mpsc::Sender<Result<Bytes, BodyError>>, Body) {
        let (tx, rx) = mpsc::channel(depth.max(1));
        (tx, http_body_util::BodyExt::boxed(ChannelBody { rx }))
    }
}

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        self.rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

/// No body. Zero-sized, so boxing it allocates nothing (most requests are GETs).
pub fn empty() -> Body {
    use http_body_util::BodyExt;
    http_body_util::Empty::new()
        .map_err(|never| match never {})
        .boxed()
}

/// A whole body in one piece.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    use http_body_util::BodyExt;
    http_body_util::Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}
