//! The stretch of time a settlement report covers (`--period FROM..UNTIL`,
//! or a fetched day's bounds): which payments the report should list.

use finality_core::Timestamp;

/// The stretch of time a report covers: payments that became final here as
/// succeeded within it (`from` inclusive, `until` exclusive) are expected
/// in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub from: Timestamp,
    pub until: Timestamp,
}

/// A `--period` that cannot be used, naming what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeriodError {
    #[error("`{0}`: expected FROM..UNTIL (e.g. 2026-11-30..2026-12-01)")]
    Shape(String),
    #[error("`{0}` is neither a date (2026-11-30) nor an RFC 3339 time")]
    Time(String),
    #[error("`{0}`: UNTIL must be after FROM")]
    Order(String),
}

impl std::str::FromStr for Period {
    type Err = PeriodError;
    /// `FROM..UNTIL`, each an RFC 3339 time or a date (midnight UTC):
    /// `2026-11-30..2026-12-01` is the 30th of November.
    fn from_str(s: &str) -> Result<Self, PeriodError> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| PeriodError::Shape(s.to_string()))?;
        let from = parse_time(a.trim())?;
        let until = parse_time(b.trim())?;
        if until <= from {
            return Err(PeriodError::Order(s.to_string()));
        }
        Ok(Period { from, until })
    }
}

fn parse_time(s: &str) -> Result<Timestamp, PeriodError> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(Timestamp(t.timestamp_millis()));
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| Timestamp(t.and_utc().timestamp_millis()))
        .ok_or_else(|| PeriodError::Time(s.to_string()))
}
