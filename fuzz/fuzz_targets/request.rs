//! Request classification: any path and query, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path, query) = match text.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (text, None),
    };
    for m in [
        http::Method::GET,
        http::Method::POST,
        http::Method::PATCH,
        http::Method::DELETE,
    ] {
        let _ = stalemate::k8s::request::classify(&m, path, query);
    }
});
