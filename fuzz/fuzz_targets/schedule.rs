//! Schedule files and control-API window objects: any text gets a value or errors with a
//! location, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(errs) = stalemate::schedule::Schedule::parse(text, "fuzz") {
        assert!(!errs.is_empty());
    }
    let _ = stalemate::schedule::Window::parse(text);
});
