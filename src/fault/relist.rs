//! `relist {how: expired|close}`: the target's watches open when the window opens end —
//! with an ERROR 410 `Expired` event (`expired`, the client relists) or a reset
//! (`close`, as a crashed apiserver: client-go relists, kube-rs resumes). Streams started
//! while it is open (the client's relist) are left alone, or the client would loop.

use serde::{Deserialize, Serialize};

use super::behaviour::{Behaviour, StreamEnd};

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Relist {
    #[serde(default)]
    pub how: RelistHow,
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum RelistHow {
    #[default]
    Expired,
    Close,
}

impl Behaviour for Relist {
    fn name(&self) -> &'static str {
        "relist"
    }

    fn ends_streams(&self) -> Option<StreamEnd> {
        Some(match self.how {
            RelistHow::Expired => StreamEnd::Expired,
            RelistHow::Close => StreamEnd::Reset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_by_default() {
        let r: Relist = serde_json::from_str("{}").unwrap();
        assert_eq!(r.ends_streams(), Some(StreamEnd::Expired));
        let r: Relist = serde_json::from_str(r#"{"how": "close"}"#).unwrap();
        assert_eq!(r.ends_streams(), Some(StreamEnd::Reset));
        assert!(serde_json::from_str::<Relist>(r#"{"how": "closed"}"#).is_err());
    }
}
