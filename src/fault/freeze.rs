//! `freeze`: no watch events (and no bookmarks) for the target until the window ends,
//! then every held event, in order; `resourceVersion=0` reads answered from the client's
//! view. The classic informer-lag window: writes still go upstream, so real 409s happen.

use serde::{Deserialize, Serialize};

use super::{Behaviour, HoldMode, Random, Reads};

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::Fault;
    use crate::fault::NoDraw;

    #[test]
    fn holds_everything_and_reads_from_the_view() {
        let f: Fault = serde_json::from_str(r#"{"freeze": {}}"#).unwrap();
        assert_eq!(f.behaviour().hold(&NoDraw), Some(HoldMode::Freeze));
        assert_eq!(f.behaviour().reads(), Reads::View);
        assert!(f.uses_views() && f.behaviour().ends_streams().is_none());
        assert!(serde_json::from_str::<Freeze>(r#"{"for": "1s"}"#).is_err());
    }
}
