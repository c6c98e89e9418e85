//! Gzip-encoded watch streams: any bytes, any chunking, never panic, never more than
//! the limit in memory (decompression bombs are errors).
#![no_main]
use libfuzzer_sys::fuzz_target;
use stalemate::watch::gzip::GzipStream;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let mut g = GzipStream::with_limit(1 << 20);
    for chunk in rest.chunks(usize::from(cut).max(1)) {
        if g.push(chunk).is_err() {
            return;
        }
    }
});
