//! The schedule's `clients`: the names windows are aimed at, and how each is recognised
//! (a [`ClientMatcher`]). Recognising a request is the proxy's business (it knows the
//! listener a connection came in on and reads the request's headers); windows only ever
//! see a client's name, already decided, or [`OTHER`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The client name of requests no schedule client matches.
pub const OTHER: &str = "other";

/// How a client is recognised. All given matchers must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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

    /// The listener this client is recognised by alone (no user agent, no service
    /// account): its connections are its own from their first byte, before any request
    /// says whose they are (a `partition` acts on them).
    pub fn listener_alone(&self) -> Option<&str> {
        match (&self.user_agent, &self.service_account) {
            (None, None) => self.listener.as_deref(),
            _ => None,
        }
    }
}

/// Whether `name` is a client of `clients` (or `*`, everyone).
pub fn defines(clients: &BTreeMap<String, ClientMatcher>, name: &str) -> bool {
    name == "*" || clients.contains_key(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_the_named_clients_and_everyone() {
        let specs: BTreeMap<String, ClientMatcher> = serde_json::from_str(
            r#"{"sc": {"userAgent": "^source-controller/"}, "gc": {"serviceAccount": "kube-system:gc"}, "lc": {"listener": "127.0.0.1:7444"}}"#,
        )
        .unwrap();
        assert!(defines(&specs, "sc") && defines(&specs, "*") && !defines(&specs, "ghost"));
        assert_eq!(specs["lc"].listener_alone(), Some("127.0.0.1:7444"));
        assert_eq!(specs["sc"].listener_alone(), None);
    }
}
