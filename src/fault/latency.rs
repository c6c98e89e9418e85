//! `latency {verbs, delay}`: matching requests of the target are delayed before they
//! are forwarded — a slow apiserver.

use serde::{Deserialize, Serialize};

use super::behaviour::{Behaviour, Request, RequestAction};
use super::random::Random;
use crate::k8s::duration::GoDuration;
use crate::k8s::request::Verb;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// Verbs to delay (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verbs: Vec<Verb>,
    pub delay: GoDuration,
}

impl Behaviour for Latency {
    fn name(&self) -> &'static str {
        "latency"
    }

    fn on_request(&self, r: &Request<'_>, _random: &dyn Random) -> RequestAction {
        if self.verbs.is_empty() || self.verbs.contains(&r.verb) {
            RequestAction::Delay(self.delay.0)
        } else {
            RequestAction::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::random::NoDraw;
    use std::time::Duration;

    #[test]
    fn delays_the_verbs_it_names() {
        let l: Latency = serde_json::from_str(r#"{"verbs": ["list"], "delay": "250ms"}"#).unwrap();
        let r = |verb| Request {
            verb,
            group: "",
            resource: "configmaps",
            name: None,
            precondition: false,
            window: "w",
        };
        assert!(
            matches!(l.on_request(&r(Verb::List), &NoDraw), RequestAction::Delay(d) if d == Duration::from_millis(250))
        );
        assert!(matches!(
            l.on_request(&r(Verb::Get), &NoDraw),
            RequestAction::Pass
        ));
    }
}
