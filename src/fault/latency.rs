//! `latency {verbs, delay}`: matching requests of the target are delayed before they
//! are forwarded — a slow apiserver.

use serde::{Deserialize, Serialize};

use super::{Behaviour, Random, Request, RequestAction};
use crate::duration::GoDuration;
use crate::request::Verb;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
