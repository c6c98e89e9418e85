//! Protobuf watch framing (4-byte length + WatchEvent): any bytes, any chunking, never
//! panic; frames are exactly the bytes consumed.
#![no_main]
use libfuzzer_sys::fuzz_target;
use stalemate::watch::proto::{ProtoFramer, parse_event};

fuzz_target!(|data: &[u8]| {
    let _ = parse_event(data);
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let step = usize::from(cut).max(1);
    let mut framer = ProtoFramer::new(1 << 16);
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
