//! Property tests of the book: for random sequences of arming, counting, opening,
//! closing, disarming and delays, the book agrees with a plain model of what a schedule
//! means — a window fires at exactly its count's matching request and never again, only
//! what is open is listed (oldest first), a later opening is another generation, a
//! disarm takes only what it names, and the run is idle only with nothing open or to come.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use tokio::time::Instant;

use super::*;

const NAMES: [&str; 4] = ["a", "b", "c", "d"];
const CLIENTS: [&str; 3] = ["*", "ctl", "other"];

#[derive(Debug, Clone)]
enum Op {
    /// Arm window NAMES[n] for client CLIENTS[c], firing at the `count`th matching
    /// request of class `class`.
    Arm {
        n: usize,
        c: usize,
        class: u8,
        count: u64,
    },
    /// A request of this class.
    Count(u8),
    Open {
        n: usize,
        c: usize,
        after_ms: u16,
    },
    Close(usize),
    Disarm(usize),
    Delay,
    DelayOver,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..4usize, 0..3usize, 0..2u8, 1..4u64)
            .prop_map(|(n, c, class, count)| Op::Arm { n, c, class, count }),
        4 => (0..2u8).prop_map(Op::Count),
        2 => (0..4usize, 0..3usize, 0..300u16).prop_map(|(n, c, after_ms)| Op::Open { n, c, after_ms }),
        2 => (0..4usize).prop_map(Op::Close),
        1 => (0..4usize).prop_map(Op::Disarm),
        1 => Just(Op::Delay),
        1 => Just(Op::DelayOver),
    ]
}

/// A freeze of configmaps named `name` for `client`. The class of request it counts and
/// the count that fires it ride in its `duration` (seconds: class × 10 + count), where
/// the test's `counts` reads them: the book never looks there.
fn window(name: &str, client: &str, class: u8, count: u64) -> Window {
    Window::parse(&format!(
        r#"{{"name": "{name}", "client": "{client}", "resources": ["configmaps"],
            "fault": {{"freeze": {{}}}}, "duration": "{}s"}}"#,
        u64::from(class) * 10 + count
    ))
    .expect("a valid window")
}

/// (class, count) of a window made by `window`.
fn trigger_of(w: &Window) -> (u8, u64) {
    let secs = w.duration.map_or(0, |d| d.0.as_secs());
    ((secs / 10) as u8, secs % 10)
}

/// The model: what a schedule means, written the plain way.
#[derive(Default)]
struct Model {
    /// name → (client, opened, generation)
    open: BTreeMap<String, (String, Instant, u64)>,
    /// (id, name, class, count, seen), in arming order
    armed: Vec<(u64, String, u8, u64, u64)>,
    last_generation: u64,
    delayed: usize,
}

/// What is open and armed in the book is the model's, and so is what each client is
/// shown.
fn agrees(book: &Book, m: &Model) -> Result<(), TestCaseError> {
    let armed: Vec<(u64, u64)> = book.armed().iter().map(|a| (a.id, a.seen)).collect();
    let want: Vec<(u64, u64)> = m.armed.iter().map(|a| (a.0, a.4)).collect();
    prop_assert_eq!(armed, want);
    prop_assert_eq!(
        book.active_names(),
        m.open.keys().cloned().collect::<Vec<_>>()
    );
    for (name, (_, _, g)) in &m.open {
        prop_assert!(book.is_open(name, *g));
        prop_assert!(!book.is_open(name, *g + 1));
    }
    for client in ["ctl", "other", "x"] {
        let listed = book.windows_for(client, "configmaps", Some("ns"));
        let mut want: Vec<(Instant, String)> = m
            .open
            .iter()
            .filter(|(_, o)| o.0 == "*" || o.0 == client)
            .map(|(n, o)| (o.1, n.clone()))
            .collect();
        want.sort_by_key(|w| w.0);
        let got: Vec<(Instant, String)> = listed
            .iter()
            .map(|a| (a.opened, a.window.name.clone()))
            .collect();
        prop_assert_eq!(got, want, "only what is open for it, oldest first");
        prop_assert!(book.windows_for(client, "secrets", None).is_empty());
    }
    prop_assert_eq!(book.idle(), m.open.is_empty() && m.delayed == 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_book_keeps_to_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        let mut book = Book::default();
        let mut m = Model::default();
        let start = Instant::now();
        let mut now = start;
        for o in ops {
            match o {
                Op::Arm { n, c, class, count } => {
                    let id = book.arm(window(NAMES[n], CLIENTS[c], class, count));
                    prop_assert!(m.armed.iter().all(|a| a.0 < id), "ids grow");
                    m.armed.push((id, NAMES[n].into(), class, count, 0));
                }
                Op::Count(class) => {
                    let due = book.count(|w| {
                        let (c, count) = trigger_of(w);
                        (c == class).then_some(count)
                    });
                    let mut want = Vec::new();
                    m.armed.retain_mut(|a| {
                        if a.2 != class {
                            return true;
                        }
                        a.4 += 1;
                        if a.4 >= a.3 {
                            want.push(a.1.clone());
                            false
                        } else {
                            true
                        }
                    });
                    let got: Vec<String> = due.iter().map(|w| w.name.clone()).collect();
                    prop_assert_eq!(got, want, "fires at its count, in arming order, once");
                }
                Op::Open { n, c, after_ms } => {
                    now += Duration::from_millis(u64::from(after_ms));
                    let g = book.open(window(NAMES[n], CLIENTS[c], 0, 1), None, now);
                    prop_assert!(g > m.last_generation, "a later opening is another generation");
                    m.last_generation = g;
                    m.open.insert(NAMES[n].into(), (CLIENTS[c].into(), now, g));
                    prop_assert_eq!(book.opened_at(NAMES[n]), Some(now));
                }
                Op::Close(n) => {
                    let closed = book.close(NAMES[n]).map(|a| a.generation);
                    prop_assert_eq!(closed, m.open.remove(NAMES[n]).map(|o| o.2));
                }
                Op::Disarm(n) => {
                    let ids = book.disarm(NAMES[n]);
                    let want: Vec<u64> =
                        m.armed.iter().filter(|a| a.1 == NAMES[n]).map(|a| a.0).collect();
                    m.armed.retain(|a| a.1 != NAMES[n]);
                    prop_assert_eq!(ids, want, "takes what it names, only");
                }
                Op::Delay => {
                    book.delay();
                    m.delayed += 1;
                }
                Op::DelayOver => {
                    book.delay_over();
                    m.delayed = m.delayed.saturating_sub(1);
                }
            }
            // After every step: what is open and armed is the model's.
            agrees(&book, &m)?;
        }
    }
}
