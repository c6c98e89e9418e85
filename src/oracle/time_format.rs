//! Times in verdicts and reports as RFC 3339 with milliseconds, UTC
//! (`#[serde(with = "rfc3339")]`, `rfc3339_opt` for optional ones), as the trace writes them.

pub mod millis {
    use std::time::SystemTime;

    pub fn serialize<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_rfc3339_millis(*t).to_string())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let s: String = serde::Deserialize::deserialize(d)?;
        humantime::parse_rfc3339_weak(&s).map_err(serde::de::Error::custom)
    }
}

pub mod optional {
    use std::time::SystemTime;

    pub fn serialize<S: serde::Serializer>(
        t: &Option<SystemTime>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => super::millis::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        let s: Option<String> = serde::Deserialize::deserialize(d)?;
        s.map(|s| humantime::parse_rfc3339_weak(&s).map_err(serde::de::Error::custom))
            .transpose()
    }
}
