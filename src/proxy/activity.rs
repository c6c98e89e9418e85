//! What each client is doing right now, as a session needs it to tell a controller that
//! is still starting from one that is busy or idle: when it made its first request and
//! its last, how many of its requests are in flight (from arrival to response headers),
//! how many of its WatchList streams (`sendInitialEvents=true`) have not yet delivered
//! their initial state (the `k8s.io/initial-events-end` bookmark), and when it last
//! wrote something that is not a heartbeat (a Lease renewal or an Event is not work).
//!
//! A plain watch is counted as delivered once its headers arrive: after a LIST (an
//! informer's way) the LIST was its initial state; from `resourceVersion=0` its initial
//! ADDED events follow at once.
//!
//! Each request counts for its schedule client and, when it came in on a named listener,
//! for `listener:NAME` too: a session's controller is its listener's, whatever a
//! schedule calls it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::k8s::request::Verb;

/// Writes that are heartbeats or records, not work: a controller renewing its leader
/// lease every two seconds, or recording an event, is not reconciling.
const NOT_WORK: &[&str] = &[
    "leases.coordination.k8s.io",
    "events",
    "events.events.k8s.io",
];

/// One client's activity.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Snapshot {
    pub first_request: Option<SystemTime>,
    pub last_request: Option<SystemTime>,
    /// Requests sent and not yet answered (watches count until their headers arrive).
    pub in_flight: usize,
    /// WatchList streams still delivering their initial state.
    pub initial_pending: usize,
    pub last_write: Option<SystemTime>,
}

impl Snapshot {
    /// It has started, and nothing it asked for is on its way to it.
    pub fn settled(&self) -> bool {
        self.first_request.is_some() && self.in_flight == 0 && self.initial_pending == 0
    }
}

#[derive(Default)]
pub struct ClientActivity {
    clients: Mutex<HashMap<String, Snapshot>>,
}

/// The keys a request counts under: its client, and its listener's (`listener:NAME`,
/// made once when the listener was named: every request passes here twice).
#[derive(Debug, Clone)]
pub struct Keys {
    client: Arc<str>,
    listener: Option<Arc<str>>,
}

impl Keys {
    pub fn new(client: Arc<str>, listener: Option<Arc<str>>) -> Keys {
        Keys { client, listener }
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        std::iter::once(&*self.client).chain(self.listener.as_deref())
    }
}

impl ClientActivity {
    fn with<R>(&self, keys: &Keys, mut f: impl FnMut(&mut Snapshot) -> R) -> Option<R> {
        let mut m = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = None;
        for k in keys.iter() {
            // Every request looks its keys up twice (arrival, answer): a client already
            // known is not copied into the map again.
            let s = match m.get_mut(k) {
                Some(s) => s,
                None => m.entry(k.to_string()).or_default(),
            };
            out = Some(f(s));
        }
        out
    }

    /// A request arrived; it is in flight until the guard is dropped.
    pub fn started(self: &Arc<Self>, keys: Keys, verb: Verb, resource: &str) -> InFlight {
        let now = SystemTime::now();
        let work = verb.is_write() && !NOT_WORK.contains(&resource.split('/').next().unwrap_or(""));
        self.with(&keys, |s| {
            s.first_request.get_or_insert(now);
            s.last_request = Some(now);
            s.in_flight += 1;
            if work {
                s.last_write = Some(now);
            }
        });
        InFlight {
            activity: self.clone(),
            keys,
        }
    }

    /// A WatchList stream began delivering its initial state.
    pub fn initial_state(self: &Arc<Self>, keys: Keys) -> Arc<InitialState> {
        self.with(&keys, |s| s.initial_pending += 1);
        Arc::new(InitialState {
            activity: self.clone(),
            keys,
            done: AtomicBool::new(false),
        })
    }

    pub fn of(&self, client: &str) -> Snapshot {
        let m = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        m.get(client).copied().unwrap_or_default()
    }
}

/// A request in flight; dropped when it has been answered.
pub struct InFlight {
    activity: Arc<ClientActivity>,
    keys: Keys,
}

impl InFlight {
    pub fn keys(&self) -> &Keys {
        &self.keys
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.activity
            .with(&self.keys, |s| s.in_flight = s.in_flight.saturating_sub(1));
    }
}

/// A WatchList stream's initial state, still on its way until [`InitialState::done`] or
/// the stream ends.
pub struct InitialState {
    activity: Arc<ClientActivity>,
    keys: Keys,
    done: AtomicBool,
}

impl InitialState {
    /// The initial-events-end bookmark was delivered.
    pub fn done(&self) {
        if !self.done.swap(true, Ordering::SeqCst) {
            self.activity.with(&self.keys, |s| {
                s.initial_pending = s.initial_pending.saturating_sub(1)
            });
        }
    }
}

impl Drop for InitialState {
    fn drop(&mut self) {
        self.done();
    }
}

impl std::fmt::Debug for InitialState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitialState")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_settles_when_its_requests_and_initial_states_are_in() {
        let a = Arc::new(ClientActivity::default());
        let keys = || {
            Keys::new(
                "c".into(),
                Some(crate::proxy::identity::listener_key("controller")),
            )
        };
        assert!(!a.of("c").settled(), "no request yet");
        let list = a.started(keys(), Verb::List, "configmaps");
        assert!(!a.of("listener:controller").settled());
        let initial = a.initial_state(keys());
        drop(list);
        assert!(!a.of("c").settled(), "a WatchList still delivering");
        initial.done();
        assert!(a.of("c").settled() && a.of("listener:controller").settled());
        assert!(a.of("c").last_write.is_none(), "a LIST is not a write");
        drop(a.started(keys(), Verb::Update, "leases.coordination.k8s.io"));
        assert!(
            a.of("c").last_write.is_none(),
            "a lease renewal is not work"
        );
        drop(a.started(keys(), Verb::Patch, "widgets.example.com/status"));
        assert!(a.of("listener:controller").last_write.is_some());
    }
}
