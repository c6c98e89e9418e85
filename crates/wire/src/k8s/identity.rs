//! Who a request is from, in the schedule's terms: a client named in `clients`, matched
//! by the listener it came in on, a `User-Agent` regex, or the service account in its
//! bearer token — or `other`.
//!
//! The token is read without verifying it (the upstream verifies; the proxy only needs a
//! name to match windows by) and is never logged (docs/DESIGN.md "Vocabulary").

use std::collections::BTreeMap;

use base64::Engine as _;
use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The client name of requests no schedule client matches.
pub const OTHER: &str = "other";

/// How a client is recognised. All given matchers must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClientMatcher {
    /// Regular expression on the User-Agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// `namespace:name` of the service account in the bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// The listener the client connected to: its address (`127.0.0.1:7444`), or the
    /// name `stalemate run` and `explore` give theirs (`controller`, `workload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener: Option<String>,
}

impl ClientMatcher {
    /// Problems as (field, message).
    pub fn check(&self) -> Vec<(String, String)> {
        let mut errs = Vec::new();
        if let Some(re) = &self.user_agent
            && let Err(e) = regex::Regex::new(re)
        {
            errs.push(("userAgent".into(), format!("not a regular expression: {e}")));
        }
        if let Some(sa) = &self.service_account
            && sa.split(':').count() != 2
        {
            errs.push((
                "serviceAccount".into(),
                format!("{sa:?} is not NAMESPACE:NAME"),
            ));
        }
        errs
    }
}

struct Client {
    /// Shared: every request of this client carries it (labels, activity keys).
    name: std::sync::Arc<str>,
    user_agent: Option<regex::Regex>,
    service_account: Option<String>,
    listener: Option<String>,
}

/// The key a listener's requests count under in the proxy's client activity (besides
/// their client's): `listener:NAME`.
pub fn listener_key(name: &str) -> std::sync::Arc<str> {
    format!("listener:{name}").into()
}

/// [`OTHER`], made once: most requests belong to no schedule client.
fn other() -> std::sync::Arc<str> {
    static OTHER_NAME: std::sync::LazyLock<std::sync::Arc<str>> =
        std::sync::LazyLock::new(|| OTHER.into());
    OTHER_NAME.clone()
}

/// A schedule's clients, compiled for matching.
pub struct Clients {
    clients: Vec<Client>,
    specs: BTreeMap<String, ClientMatcher>,
    /// Names of listeners, for `listener` matchers that name one, with each one's
    /// activity key (`listener:NAME`), made once.
    listener_names: std::sync::RwLock<
        std::collections::HashMap<std::net::SocketAddr, (String, std::sync::Arc<str>)>,
    >,
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
    pub fn name_listener(&self, addr: std::net::SocketAddr, name: &str) {
        self.listener_names
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(addr, (name.to_string(), listener_key(name)));
    }

    /// The activity key (`listener:NAME`) of the listener at `addr`, if it has a name.
    pub fn listener_key(&self, addr: std::net::SocketAddr) -> Option<std::sync::Arc<str>> {
        self.listener_names
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&addr)
            .map(|(_, key)| key.clone())
    }

    /// The listener a client is recognised by alone (no user agent, no service account):
    /// its connections are its own from their first byte (a `partition` acts on them).
    pub fn listener_of(&self, name: &str) -> Option<&str> {
        let m = self.specs.get(name)?;
        match (&m.user_agent, &m.service_account) {
            (None, None) => m.listener.as_deref(),
            _ => None,
        }
    }

    /// Whether the listener at `addr` is the one `l` names: its address, or its name.
    pub fn is_listener(&self, addr: std::net::SocketAddr, l: &str) -> bool {
        addr.to_string() == l
            || self
                .listener_names
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(&addr)
                .is_some_and(|(name, _)| name == l)
    }

    /// Whether `name` is a client (or `*`, everyone).
    pub fn defines(&self, name: &str) -> bool {
        name == "*" || self.specs.contains_key(name)
    }

    /// The client a request belongs to, or [`OTHER`]. `listener` is the local address the
    /// request arrived on (formatted only when a client is matched by it).
    pub fn identify(
        &self,
        headers: &HeaderMap,
        listener: std::net::SocketAddr,
    ) -> std::sync::Arc<str> {
        // Every request passes here: without clients there is nothing to decode.
        if self.clients.is_empty() {
            return other();
        }
        let ua = headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let sa = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' ').map(|(_, t)| t.trim()))
            .and_then(jwt_subject)
            .and_then(|sub| {
                sub.strip_prefix("system:serviceaccount:")
                    .map(str::to_string)
            });
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
                                .get_or_init(|| {
                                    self.listener_names
                                        .read()
                                        .unwrap_or_else(|p| p.into_inner())
                                        .get(&listener)
                                        .map(|(name, _)| name.clone())
                                })
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

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// The `sub` claim of a JWT, read without verifying the signature.
pub fn jwt_subject(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_header, payload, _sig) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = b64().decode(payload.trim_end_matches('=')).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims["sub"].as_str().map(str::to_string)
}

/// An unsigned JWT (`alg: none`) with the given subject: for tests of what reads a token
/// without verifying it. A real apiserver (and the simulator) refuses it.
pub fn unsigned_jwt(sub: &str) -> String {
    let enc = |v: &Value| b64().encode(v.to_string());
    format!(
        "{}.{}.",
        enc(&json!({"alg": "none", "typ": "JWT"})),
        enc(&json!({"sub": sub, "iss": "stalemate-sim"}))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifies_clients() {
        let specs: BTreeMap<String, ClientMatcher> = serde_json::from_str(
            r#"{"sc": {"userAgent": "^source-controller/"}, "gc": {"serviceAccount": "kube-system:gc"}, "lc": {"listener": "127.0.0.1:7444"}}"#,
        )
        .unwrap();
        let c = Clients::new(&specs);
        let l: std::net::SocketAddr = "127.0.0.1:7443".parse().unwrap();
        let mut h = HeaderMap::new();
        h.insert("user-agent", "source-controller/v1.2 flux".parse().unwrap());
        assert_eq!(&*c.identify(&h, l), "sc");
        let mut h = HeaderMap::new();
        let tok = unsigned_jwt("system:serviceaccount:kube-system:gc");
        h.insert("authorization", format!("Bearer {tok}").parse().unwrap());
        assert_eq!(&*c.identify(&h, l), "gc");
        assert_eq!(&*c.identify(&HeaderMap::new(), l), "other");
        let second: std::net::SocketAddr = "127.0.0.1:7444".parse().unwrap();
        assert_eq!(&*c.identify(&HeaderMap::new(), second), "lc");
        assert!(c.defines("sc") && c.defines("*") && !c.defines("ghost"));
        // A listener named by the proxy that owns it.
        let specs: BTreeMap<String, ClientMatcher> =
            serde_json::from_str(r#"{"workload": {"listener": "workload"}}"#).unwrap();
        let c = Clients::new(&specs);
        let third: std::net::SocketAddr = "127.0.0.1:7555".parse().unwrap();
        assert_eq!(&*c.identify(&HeaderMap::new(), third), "other");
        c.name_listener(third, "workload");
        assert_eq!(&*c.identify(&HeaderMap::new(), third), "workload");
        assert_eq!(jwt_subject("a.b"), None);
        assert_eq!(jwt_subject("a.!!!.c"), None);
    }
}
