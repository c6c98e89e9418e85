//! Gzip-encoded watch streams (`Content-Encoding: gzip`; WatchList compression is on by
//! default from 1.37, docs/PROTOCOL.md §A.6): decoded incrementally, chunk by chunk, so the
//! framers see the plain event stream as soon as each compressed block arrives.

use std::io::Write;

use flate2::write::GzDecoder;

use super::frame::CodecError;

pub struct GzipStream {
    dec: GzDecoder<Bounded>,
}

/// The decoder's output buffer, refusing to grow past a limit: a few compressed bytes
/// can expand to gigabytes (a decompression bomb), and the framer's own cap would only
/// see them after they were all in memory.
struct Bounded {
    buf: Vec<u8>,
    limit: usize,
}

impl Write for Bounded {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > self.limit {
            return Err(std::io::Error::other(format!(
                "more than {} bytes decompressed without the framer draining them",
                self.limit
            )));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Default for GzipStream {
    fn default() -> Self {
        GzipStream::with_limit(super::frame::DEFAULT_MAX_FRAME)
    }
}

impl GzipStream {
    /// A decoder whose single `push` may produce at most `limit` plain bytes.
    pub fn with_limit(limit: usize) -> Self {
        GzipStream {
            dec: GzDecoder::new(Bounded {
                buf: Vec::new(),
                limit,
            }),
        }
    }

    /// Feed compressed bytes; returns the plain bytes they completed.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<u8>, CodecError> {
        self.dec
            .write_all(chunk)
            .map_err(|e| CodecError::Json(format!("gzip: {e}")))?;
        self.dec
            .flush()
            .map_err(|e| CodecError::Json(format!("gzip: {e}")))?;
        Ok(std::mem::take(&mut self.dec.get_mut().buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::json::JsonFramer;

    #[test]
    fn gzipped_stream_in_small_chunks_gives_the_plain_frames() {
        let plain = include_bytes!("../../fixtures/kube-apiserver-1.28/cr-watch-json.body");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(plain).unwrap();
        let gz = enc.finish().unwrap();
        let mut g = GzipStream::default();
        let mut f = JsonFramer::new(crate::watch::DEFAULT_MAX_FRAME);
        let mut frames = Vec::new();
        for c in gz.chunks(13) {
            frames.extend(f.push(&g.push(c).unwrap()).unwrap());
        }
        assert_eq!(frames.len(), 6);
        let joined: Vec<u8> = frames.iter().flat_map(|f| f.bytes.to_vec()).collect();
        assert_eq!(joined, plain);
        assert!(GzipStream::default().push(b"not gzip at all").is_err());
    }

    #[test]
    fn a_decompression_bomb_is_an_error_not_an_allocation() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![b' '; 8 << 20]).unwrap();
        let bomb = enc.finish().unwrap();
        assert!(bomb.len() < 64 << 10, "{}", bomb.len());
        let e = GzipStream::with_limit(1 << 20).push(&bomb).unwrap_err();
        assert!(
            e.to_string()
                .contains("more than 1048576 bytes decompressed"),
            "{e}"
        );
    }
}
