//! Who a request is from, in the schedule's terms: a client named in `clients`, matched
//! by the listener it came in on, a `User-Agent` regex, or the service account in its
//! bearer token — or `other`. Here, not in the schedule engine, because the listener a
//! connection arrived on is the proxy's: the engine is told a client's name, already
//! decided, and never sees a socket.
//!
//! ```text
//!  server binds a listener ─► name_listener(addr, "workload")
//!  request on addr ─► identify(headers, addr) ─► "workload" (or "other") ─► the engine
//! ```
//!
//! What the wire says (the User-Agent, the token's subject) is read by `k8s/identity.rs`.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, LazyLock, RwLock};

use http::HeaderMap;
use serde_json::Value;

use crate::k8s::identity::{service_account, user_agent};
use crate::schedule::{ClientMatcher, OTHER};

struct Client {
    /// Shared: every request of this client carries it (labels, activity keys).
    name: Arc<str>,
    user_agent: Option<regex::Regex>,
    service_account: Option<String>,
    listener: Option<String>,
}

/// The key a listener's requests count under in the proxy's client activity (besides
/// their client's): `listener:NAME`.
pub fn listener_key(name: &str) -> Arc<str> {
    format!("listener:{name}").into()
}

/// [`OTHER`], made once: most requests belong to no schedule client.
fn other() -> Arc<str> {
    static OTHER_NAME: LazyLock<Arc<str>> = LazyLock::new(|| OTHER.into());
    OTHER_NAME.clone()
}

/// A schedule's clients, compiled for matching, and the names of the proxy's listeners.
pub struct Clients {
    clients: Vec<Client>,
    specs: BTreeMap<String, ClientMatcher>,
    /// Names of listeners, for `listener` matchers that name one, with each one's
    /// activity key (`listener:NAME`), made once.
    listener_names: RwLock<HashMap<SocketAddr, (String, Arc<str>)>>,
}

impl Clients {
    pub fn new(specs: &BTreeMap<String, ClientMatcher>) -> Clients {
        Clients {
            clients: specs
                .iter()
                .map(|(name, m)| Client {
                    name: name.as_str().into(),
                    user_agent: m
                        .user_agent
                        .as_ref()
                        .and_then(|r| regex::Regex::new(r).ok()),
                    service_account: m.service_account.clone(),
                    listener: m.listener.clone(),
                })
                .collect(),
            specs: specs.clone(),
            listener_names: Default::default(),
        }
    }

    /// Call the listener at `addr` `name` (what `listener` matchers may say).
    pub fn name_listener(&self, addr: SocketAddr, name: &str) {
        self.listener_names
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(addr, (name.to_string(), listener_key(name)));
    }

    /// The activity key (`listener:NAME`) of the listener at `addr`, if it has a name.
    pub fn listener_key(&self, addr: SocketAddr) -> Option<Arc<str>> {
        self.listener_names
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&addr)
            .map(|(_, key)| key.clone())
    }

    /// The listener a client is recognised by alone (see
    /// [`ClientMatcher::listener_alone`]).
    pub fn listener_of(&self, name: &str) -> Option<&str> {
        self.specs.get(name)?.listener_alone()
    }

    /// Whether the listener at `addr` is the one `l` names: its address, or its name.
    pub fn is_listener(&self, addr: SocketAddr, l: &str) -> bool {
        addr.to_string() == l || self.name_of(addr).is_some_and(|name| name == l)
    }

    fn name_of(&self, addr: SocketAddr) -> Option<String> {
        self.listener_names
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&addr)
            .map(|(name, _)| name.clone())
    }

    /// The client a request belongs to, or [`OTHER`]. `listener` is the local address the
    /// request arrived on (formatted only when a client is matched by it).
    pub fn identify(&self, headers: &HeaderMap, listener: SocketAddr) -> Arc<str> {
        // Every request passes here: without clients there is nothing to decode.
        if self.clients.is_empty() {
            return other();
        }
        let ua = user_agent(headers);
        let sa = service_account(headers);
        let listener_addr = std::cell::OnceCell::new();
        let listener_name = std::cell::OnceCell::new();
        for c in &self.clients {
            let ok = c.user_agent.as_ref().is_none_or(|r| r.is_match(ua))
                && c.service_account
                    .as_ref()
                    .is_none_or(|want| sa.as_deref() == Some(want.as_str()))
                && c.listener.as_ref().is_none_or(|l| {
                    *l == *listener_addr.get_or_init(|| listener.to_string())
                        || Some(l)
                            == listener_name
                                .get_or_init(|| self.name_of(listener))
                                .as_ref()
                });
            if ok {
                return c.name.clone();
            }
        }
        other()
    }

    /// The client names.
    pub fn names(&self) -> Vec<String> {
        self.specs.keys().cloned().collect()
    }

    /// How a client is recognised (`null` for `other`).
    pub fn matcher(&self, name: &str) -> Value {
        self.specs
            .get(name)
            .and_then(|m| serde_json::to_value(m).ok())
            .unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::identity::unsigned_jwt;

    #[test]
    fn identifies_clients() {
        let specs: BTreeMap<String, ClientMatcher> = serde_json::from_str(
            r#"{"sc": {"userAgent": "^source-controller/"}, "gc": {"serviceAccount": "kube-system:gc"}, "lc": {"listener": "127.0.0.1:7444"}}"#,
        )
        .unwrap();
        let c = Clients::new(&specs);
        let l: SocketAddr = "127.0.0.1:7443".parse().unwrap();
        let mut h = HeaderMap::new();
        h.insert("user-agent", "source-controller/v1.2 flux".parse().unwrap());
        assert_eq!(&*c.identify(&h, l), "sc");
        let mut h = HeaderMap::new();
        let tok = unsigned_jwt("system:serviceaccount:kube-system:gc");
        h.insert("authorization", format!("Bearer {tok}").parse().unwrap());
        assert_eq!(&*c.identify(&h, l), "gc");
        assert_eq!(&*c.identify(&HeaderMap::new(), l), "other");
        let second: SocketAddr = "127.0.0.1:7444".parse().unwrap();
        assert_eq!(&*c.identify(&HeaderMap::new(), second), "lc");
        // A listener named by the proxy that owns it.
        let specs: BTreeMap<String, ClientMatcher> =
            serde_json::from_str(r#"{"workload": {"listener": "workload"}}"#).unwrap();
        let c = Clients::new(&specs);
        let third: SocketAddr = "127.0.0.1:7555".parse().unwrap();
        assert_eq!(&*c.identify(&HeaderMap::new(), third), "other");
        c.name_listener(third, "workload");
        assert_eq!(&*c.identify(&HeaderMap::new(), third), "workload");
    }
}
