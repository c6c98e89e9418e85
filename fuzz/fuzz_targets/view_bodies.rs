//! LIST bodies and watch frames feeding client views, and the answers built from them:
//! any bytes, never panic, never grow past the cap.
#![no_main]
use libfuzzer_sys::fuzz_target;
use stalemate::watch::view::{Encoding, Read, ViewKey, Views};

fuzz_target!(|data: &[u8]| {
    let views = Views::new(1 << 16);
    let key = ViewKey {
        client: "c".into(),
        resource: "configmaps".into(),
        namespace: None,
        label_selector: String::new(),
        field_selector: String::new(),
    };
    let (list, events) = data.split_at(data.len() / 2);
    for enc in [Encoding::Json, Encoding::Protobuf] {
        views.feed_list(key.clone(), enc, true, list.to_vec().into());
        let meta = match enc {
            Encoding::Json => stalemate::watch::json::parse_event(events).ok(),
            Encoding::Protobuf => {
                stalemate::watch::proto::parse_event(events.get(4..).unwrap_or(&[])).ok()
            }
        };
        if let Some(m) = meta {
            views.apply(&key, enc, &m, events);
        }
        for name in [None, Some("a")] {
            let _ = views.answer(&Read {
                key: ViewKey {
                    namespace: name.map(|_| "ns".to_string()),
                    ..key.clone()
                },
                name,
                accept_json: true,
                accept_protobuf: true,
            });
        }
        assert!(views.bytes() <= 1 << 16);
    }
});
