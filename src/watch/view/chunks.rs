//! A body that arrived in chunks, made one buffer.

use bytes::Bytes;

/// The chunks of a body as one contiguous buffer (no copy when there is one chunk).
pub fn join_chunks(chunks: &[Bytes]) -> Bytes {
    match chunks {
        [one] => one.clone(),
        _ => {
            let mut all = Vec::with_capacity(chunks.iter().map(Bytes::len).sum());
            for c in chunks {
                all.extend_from_slice(c);
            }
            Bytes::from(all)
        }
    }
}
