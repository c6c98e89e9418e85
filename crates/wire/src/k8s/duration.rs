//! Go-style durations (`1500ms`, `2s`, `1m30s`), the one parser for flags, schedules,
//! oracles and the simulator's misbehaviour endpoints.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

/// The longest duration a schedule may give anywhere. Longer ones are refused when the
/// schedule is read, so no clock arithmetic downstream can overflow (a window delaying
/// events by 500000000000y would otherwise panic a serving thread at its first event).
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 60 * 60);

/// Parse a duration; the error says what was expected.
pub fn parse(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("{s:?} is not a duration like 1500ms, 2s or 1m30s ({e})"))
}

/// How a duration is written back (`1s500ms`).
pub fn format(d: Duration) -> String {
    humantime::format_duration(d).to_string().replace(' ', "")
}

/// A duration in a schedule or oracle config: Go-style, at most [`MAX_DURATION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct GoDuration(#[serde(serialize_with = "ser_duration")] pub Duration);

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(*d))
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let d = parse(&s).map_err(serde::de::Error::custom)?;
        if d > MAX_DURATION {
            return Err(serde::de::Error::custom(format!(
                "{s:?} is longer than the 24h a schedule may give"
            )));
        }
        Ok(GoDuration(d))
    }
}

/// In the schedule's JSON Schema (`stalemate check --schema`): a string of Go-style
/// duration units, so an editor flags `"2"` or `"soon"`; the 24h cap is left to
/// `stalemate check`, which says why.
impl schemars::JsonSchema for GoDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GoDuration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A Go-style duration: 1500ms, 2s, 1m30s, 1h (at most 24h).",
            "pattern": DURATION_PATTERN,
        })
    }
}

/// What [`parse`] (humantime) accepts, as a regular expression: `0`, or number-unit
/// pairs with optional fractions and spaces. Kept beside `parse` and tested against it.
const DURATION_PATTERN: &str = r"^(0|\s*([0-9]+(\.[0-9]*)?\s*(nanos|nsec|ns|usec|us|µs|millis|msec|ms|seconds|second|secs|sec|s|minutes|minute|mins|min|m|hours|hour|hrs|hr|h|days|day|d|weeks|week|wks|wk|w|months|month|M|years|year|yrs|yr|y)\s*)+)$";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations_and_refuses_the_absurd() {
        assert_eq!(parse("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse("soon").unwrap_err().contains("not a duration"));
        let ok: GoDuration = serde_json::from_str("\"24h\"").unwrap();
        assert_eq!(ok.0, MAX_DURATION);
        let e = serde_json::from_str::<GoDuration>("\"25h\"").unwrap_err();
        assert!(e.to_string().contains("longer than the 24h"), "{e}");
        assert!(serde_json::from_str::<GoDuration>("\"500000000000y\"").is_err());
        assert_eq!(serde_json::to_string(&ok).unwrap(), "\"1day\"");
    }

    #[test]
    fn the_schema_pattern_accepts_what_parse_accepts() {
        let re = regex::Regex::new(DURATION_PATTERN).unwrap();
        for s in [
            "0", "1500ms", "2s", "1m30s", "1h", "24h", "1.5s", "2 s", "1m 30s", "3µs", "1day",
        ] {
            assert!(parse(s).is_ok() && re.is_match(s), "{s}");
        }
        for s in ["", "2", "soon", "1x", "-1s", "s", "1s!", "00"] {
            assert!(parse(s).is_err() && !re.is_match(s), "{s}");
        }
    }
}
