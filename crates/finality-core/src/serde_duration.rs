//! `humantime` strings ("30s", "1m", "7days") for lists of durations, which
//! `humantime-serde` does not cover.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;

pub fn serialize<S: Serializer>(v: &[Duration], s: S) -> Result<S::Ok, S::Error> {
    v.iter()
        .map(|d| humantime_serde::re::humantime::format_duration(*d).to_string())
        .collect::<Vec<_>>()
        .serialize(s)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
    let raw = Vec::<String>::deserialize(d)?;
    raw.iter()
        .map(|s| {
            humantime_serde::re::humantime::parse_duration(s)
                .map_err(|e| serde::de::Error::custom(format!("invalid duration `{s}`: {e}")))
        })
        .collect()
}
