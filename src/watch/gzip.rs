//! Gzip-encoded watch streams (`Content-Encoding: gzip`; WatchList compression is on by
//! default from 1.37, PROTOCOL.md §A.6): decoded incrementally, chunk by chunk, so the
//! framers see the plain event stream as soon as each compressed block arrives.

use std::io::Write;

use flate2::write::GzDecoder;

use super::CodecError;

pub struct GzipStream {
    dec: GzDecoder<Vec<u8>>,
}

impl Default for GzipStream {
    fn default() -> Self {
        GzipStream {
            dec: GzDecoder::new(Vec::new()),
        }
    }
}

impl GzipStream {
    /// Feed compressed bytes; returns the plain bytes they completed.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<u8>, CodecError> {
        self.dec
            .write_all(chunk)
            .map_err(|e| CodecError::Json(format!("gzip: {e}")))?;
        self.dec
            .flush()
            .map_err(|e| CodecError::Json(format!("gzip: {e}")))?;
        Ok(std::mem::take(self.dec.get_mut()))
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
}
