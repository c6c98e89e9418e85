//! `coalesce`: like `freeze`, but when the window ends only the latest state of each
//! object is delivered (in resourceVersion order) — the intermediate states a client that
//! relisted would never have seen. The gate replaces the earlier states.

use serde::{Deserialize, Serialize};

use super::behaviour::Behaviour;
use super::random::Random;
use super::reads::Reads;
use crate::watch::gate::HoldMode;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Coalesce {}

impl Behaviour for Coalesce {
    fn name(&self) -> &'static str {
        "coalesce"
    }

    fn hold(&self, _random: &dyn Random) -> Option<HoldMode> {
        Some(HoldMode::Coalesce)
    }

    fn reads(&self) -> Reads {
        Reads::View
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::random::NoDraw;

    #[test]
    fn holds_to_replace_and_reads_from_the_view() {
        let c = Coalesce {};
        assert_eq!(c.hold(&NoDraw), Some(HoldMode::Coalesce));
        assert_eq!(c.reads(), Reads::View);
    }
}
