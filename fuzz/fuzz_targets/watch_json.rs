//! JSON watch framing: any bytes, cut into chunks anywhere, never panic; the frames
//! returned are exactly the bytes consumed, in order.
#![no_main]
use libfuzzer_sys::fuzz_target;
use stalemate::watch::json::JsonFramer;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let step = usize::from(cut).max(1);
    let mut framer = JsonFramer::new(1 << 16);
    let mut out = Vec::new();
    for chunk in rest.chunks(step) {
        match framer.push(chunk) {
            Ok(frames) => {
                for f in frames {
                    out.extend_from_slice(&f.bytes);
                }
            }
            Err(_) => return,
        }
    }
    assert!(
        rest.starts_with(&out),
        "frames are the input's bytes, in order"
    );
});
