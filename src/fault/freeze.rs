//! `freeze`: no watch events (and no bookmarks) for the target until the window ends,
//! then every held event, in order; `resourceVersion=0` reads answered from the client's
//! view. The classic informer-lag window: writes still go upstream, so real 409s happen.

use serde::{Deserialize, Serialize};

use super::behaviour::Behaviour;
use super::random::Random;
use super::reads::Reads;
use crate::watch::gate::HoldMode;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Freeze {}

impl Behaviour for Freeze {
    fn name(&self) -> &'static str {
        "freeze"
    }

    fn hold(&self, _random: &dyn Random) -> Option<HoldMode> {
        Some(HoldMode::Freeze)
    }

    fn reads(&self) -> Reads {
        Reads::View
    }
}
