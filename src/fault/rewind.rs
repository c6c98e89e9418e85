//! `rewind {by | at}`: time travel. A real HA control plane may answer a
//! `resourceVersion=0` LIST from an apiserver whose watch cache is behind (KEP-2340
//! allows it), so a controller that restarts, or starts a new informer, can see the
//! cluster as it was seconds ago — older than what it saw before (kubernetes#59848).
//!
//! While the window is open, the target's `resourceVersion=0` LIST, GET and WATCH are
//! answered from the client's view **as it was** `by` ago, or when the window named `at`
//! opened (the view keeps a bounded record of what it delivered); the list's
//! resourceVersion is that point's. A watch the client then starts from it gets the
//! events since, from the proxy's record, held with everything after them until the
//! window ends (the client stays in the past meanwhile), then live. Where the record
//! does not reach back that far, the read goes upstream and the trace says why.
//! Opening the window resets the target's open watches (as an apiserver failover does),
//! so the client comes back; pair it with `restart` for controllers that list only at
//! start.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::behaviour::{Behaviour, StreamEnd};
use super::random::Random;
use super::reads::Reads;
pub use super::reads::To;
use crate::k8s::duration::GoDuration;
use crate::watch::gate::HoldMode;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rewind {
    /// How far back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<GoDuration>,
    /// Back to when the window of this name last opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

impl Rewind {
    pub fn to(&self) -> To {
        match (&self.at, self.by) {
            (Some(w), _) => To::At(w.clone()),
            (None, b) => To::By(b.map_or(Duration::ZERO, |b| b.0)),
        }
    }
}

impl Behaviour for Rewind {
    fn name(&self) -> &'static str {
        "rewind"
    }

    fn check(&self) -> Vec<(String, String)> {
        match (&self.by, &self.at) {
            (Some(_), Some(_)) | (None, None) => {
                vec![(
                    "by".into(),
                    "give exactly one of by (a duration) and at (a window name)".into(),
                )]
            }
            (Some(b), None) if b.0.is_zero() => {
                vec![("by".into(), "must be greater than zero".into())]
            }
            (None, Some(w)) if w.is_empty() => {
                vec![(
                    "at".into(),
                    "name the window whose opening to go back to".into(),
                )]
            }
            _ => Vec::new(),
        }
    }

    /// The client stays in the past until the window ends: what happened since the
    /// rewound point, and everything live, is held until then.
    fn hold(&self, _random: &dyn Random) -> Option<HoldMode> {
        Some(HoldMode::Freeze)
    }

    fn ends_streams(&self) -> Option<StreamEnd> {
        Some(StreamEnd::Reset)
    }

    fn reads(&self) -> Reads {
        Reads::Rewound(self.to())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_or_at_exactly_one() {
        let by: Rewind = serde_json::from_str(r#"{"by": "5s"}"#).unwrap();
        assert!(by.check().is_empty());
        assert_eq!(by.reads(), Reads::Rewound(To::By(Duration::from_secs(5))));
        let at: Rewind = serde_json::from_str(r#"{"at": "f1"}"#).unwrap();
        assert_eq!(at.to(), To::At("f1".into()));
        for bad in [
            r#"{}"#,
            r#"{"by": "1s", "at": "x"}"#,
            r#"{"by": "0s"}"#,
            r#"{"at": ""}"#,
        ] {
            let r: Rewind = serde_json::from_str(bad).unwrap();
            assert_eq!(r.check().len(), 1, "{bad}");
        }
        assert_eq!(by.ends_streams(), Some(StreamEnd::Reset));
    }
}
