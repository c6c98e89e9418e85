//! `partition {mode, verbs}`: the apiserver unreachable for the target, as a dead network
//! makes it — not an error it answers.
//!
//! - `blackhole` (default): connections are accepted, then nothing gets through either
//!   way: requests and watches hang until the client's own timeouts, HTTP/2 PINGs go
//!   unanswered (client-go's health check gives up on the connection), new connections
//!   hang before their TLS handshake (the client's dial timeout gives up), leader-election
//!   renewals hang until the lease is lost.
//! - `refuse`: new connections are reset at once, open ones are dropped with a reset —
//!   an apiserver whose host is up and whose port is closed.
//!
//! At the window's end, connections work again; what was sent into a blackhole and is
//! still awaited then goes through, as TCP would deliver it.
//!
//! Whole (every resource, every namespace, no `verbs`) and aimed at `*` or at a client
//! recognised by its `listener`, the partition acts on the listeners' connections
//! (`listen/network.rs`): leases too, whatever `*` leaves out elsewhere. Narrowed to some
//! resources, namespaces or verbs — or aimed at a client recognised by its user agent or
//! service account, which no connection says before its first request — a blackhole acts
//! on those requests instead: each hangs until the window closes and the target's open
//! watches of those resources deliver nothing until then. A refusal is of connections
//! only, so it must be whole and aimed at `*` or a listener's client.

use serde::{Deserialize, Serialize};

use super::behaviour::{Behaviour, Request, RequestAction};
use super::random::Random;
use crate::k8s::request::Verb;
use crate::listen::network::Link;
use crate::watch::gate::HoldMode;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Partition {
    #[serde(default)]
    pub mode: Mode,
    /// Only these verbs' requests hang (a blackhole narrowed to them; all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verbs: Vec<Verb>,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Blackhole,
    Refuse,
}

impl Partition {
    /// Whether a window of it over `resources` and `namespaces` is the whole network
    /// (and so acts on connections).
    pub fn whole(&self, resources: &[String], namespaces: &[String]) -> bool {
        resources == ["*"] && namespaces.is_empty() && self.verbs.is_empty()
    }

    /// What the partition does to the connections of the listeners it covers.
    pub fn link(&self) -> Link {
        match self.mode {
            Mode::Blackhole => Link::Blackhole,
            Mode::Refuse => Link::Refuse,
        }
    }
}

impl Behaviour for Partition {
    fn name(&self) -> &'static str {
        "partition"
    }

    fn check(&self) -> Vec<(String, String)> {
        match self.mode {
            Mode::Refuse if !self.verbs.is_empty() => vec![(
                "verbs".into(),
                "a refusal is of connections, which carry every verb: give no verbs with mode refuse"
                    .into(),
            )],
            _ => Vec::new(),
        }
    }

    /// A request that got through before the link went down (or of a client no
    /// connection names) hangs until the window closes.
    fn on_request(&self, r: &Request<'_>, _random: &dyn Random) -> RequestAction {
        match self.mode {
            Mode::Blackhole if self.verbs.is_empty() || self.verbs.contains(&r.verb) => {
                RequestAction::UntilClosed
            }
            _ => RequestAction::Pass,
        }
    }

    /// The target's open watches deliver nothing while it lasts (a narrowed blackhole's
    /// streams; a whole one's cannot write anyway).
    fn hold(&self, _random: &dyn Random) -> Option<HoldMode> {
        match self.mode {
            Mode::Blackhole if self.verbs.is_empty() || self.verbs.contains(&Verb::Watch) => {
                Some(HoldMode::Freeze)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::random::NoDraw;

    fn request(verb: Verb) -> Request<'static> {
        Request {
            verb,
            group: "",
            resource: "configmaps",
            name: None,
            precondition: false,
            window: "p",
        }
    }

    #[test]
    fn a_blackhole_hangs_requests_and_holds_watches_a_refusal_does_neither() {
        let p: Partition = serde_json::from_str(r#"{}"#).unwrap();
        let b: &dyn Behaviour = &p;
        assert!(matches!(
            b.on_request(&request(Verb::Get), &NoDraw),
            RequestAction::UntilClosed
        ));
        assert_eq!(b.hold(&NoDraw), Some(HoldMode::Freeze));
        assert_eq!(p.link(), Link::Blackhole);

        let r: Partition = serde_json::from_str(r#"{"mode": "refuse"}"#).unwrap();
        assert_eq!(r.link(), Link::Refuse);
        assert!(matches!(
            r.on_request(&request(Verb::Get), &NoDraw),
            RequestAction::Pass
        ));
        assert_eq!(r.hold(&NoDraw), None);
    }

    #[test]
    fn narrowed_to_verbs_only_those_hang() {
        let p: Partition = serde_json::from_str(r#"{"verbs": ["update", "patch"]}"#).unwrap();
        assert!(matches!(
            p.on_request(&request(Verb::Patch), &NoDraw),
            RequestAction::UntilClosed
        ));
        assert!(matches!(
            p.on_request(&request(Verb::List), &NoDraw),
            RequestAction::Pass
        ));
        assert_eq!(p.hold(&NoDraw), None, "watches are not among its verbs");
        assert!(p.check().is_empty());
        let r: Partition = serde_json::from_str(r#"{"mode": "refuse", "verbs": ["get"]}"#).unwrap();
        assert_eq!(r.check()[0].0, "verbs");
        assert!(serde_json::from_str::<Partition>(r#"{"mode": "drop"}"#).is_err());
    }
}
