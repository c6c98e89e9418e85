//! `lag {delay, jitter}`: every target event arrives `delay` (± `jitter`) late, in
//! order — steady informer lag. The jitter is drawn once when the window opens (one draw
//! per decision: a seeded run repeats), and `resourceVersion=0` reads come from the
//! client's view, which is `delay` behind.

use serde::{Deserialize, Serialize};

use super::behaviour::Behaviour;
use super::random::Random;
use super::reads::Reads;
use crate::k8s::duration::GoDuration;
use crate::watch::gate::HoldMode;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Lag {
    pub delay: GoDuration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<GoDuration>,
}

impl Behaviour for Lag {
    fn name(&self) -> &'static str {
        "lag"
    }

    fn check(&self) -> Vec<(String, String)> {
        if self.delay.0.is_zero() {
            return vec![("delay".into(), "must be greater than zero".into())];
        }
        Vec::new()
    }

    fn hold(&self, random: &dyn Random) -> Option<HoldMode> {
        let j = self.jitter.map_or(0.0, |j| j.0.as_secs_f64());
        let delay = if j == 0.0 {
            self.delay.0
        } else {
            let off = random.uniform(-j, j);
            std::time::Duration::from_secs_f64((self.delay.0.as_secs_f64() + off).max(0.0))
        };
        Some(HoldMode::Lag(delay))
    }

    fn reads(&self) -> Reads {
        Reads::View
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    struct Fixed(f64);
    impl Random for Fixed {
        fn uniform(&self, lo: f64, hi: f64) -> f64 {
            self.0.clamp(lo, hi)
        }
        fn chance(&self, _p: f64) -> bool {
            true
        }
    }

    #[test]
    fn jitter_moves_the_delay_within_bounds() {
        let l: Lag = serde_json::from_str(r#"{"delay": "2s", "jitter": "500ms"}"#).unwrap();
        assert_eq!(
            l.hold(&Fixed(0.25)),
            Some(HoldMode::Lag(Duration::from_millis(2250)))
        );
        assert_eq!(
            l.hold(&Fixed(-9.0)),
            Some(HoldMode::Lag(Duration::from_millis(1500)))
        );
        let no_jitter: Lag = serde_json::from_str(r#"{"delay": "1s"}"#).unwrap();
        assert_eq!(
            no_jitter.hold(&Fixed(0.7)),
            Some(HoldMode::Lag(Duration::from_secs(1)))
        );
        let zero: Lag = serde_json::from_str(r#"{"delay": "0s"}"#).unwrap();
        assert_eq!(zero.check()[0].0, "delay");
    }
}
