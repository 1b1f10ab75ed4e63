//! Canonical statuses, operation kinds and the sources of a status change.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The canonical status of a payment, refund or payout. Provider-specific
/// vocabularies are mapped onto these by the provider adapters.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    PartialOrd,
    Ord,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Processing,
    Succeeded,
    Failed,
    Cancelled,
    /// After `succeeded`: refunded, charged back or reversed by the provider.
    Reversed,
    /// Finality gave up (attempts or age exhausted) and a human must decide.
    /// Not final: a later webhook, poll or a human can still settle it.
    NeedsReview,
}

impl Status {
    pub const ALL: [Status; 7] = [
        Status::Pending,
        Status::Processing,
        Status::Succeeded,
        Status::Failed,
        Status::Cancelled,
        Status::Reversed,
        Status::NeedsReview,
    ];

    /// The final statuses: the one list the console's forms, the sweep's
    /// and retention's SQL ([`Status::FINAL_SQL`]) and [`Status::is_final`]
    /// are written from.
    pub const FINAL: [Status; 4] = [
        Status::Succeeded,
        Status::Failed,
        Status::Cancelled,
        Status::Reversed,
    ];

    /// [`Status::FINAL`] as an SQL list, for `status IN …` (a test holds the
    /// two together).
    pub const FINAL_SQL: &'static str = "('succeeded', 'failed', 'cancelled', 'reversed')";

    /// Final statuses end polling: only a definitive provider answer or a
    /// human produces one, and no non-final report may replace them.
    pub fn is_final(self) -> bool {
        Self::FINAL.contains(&self)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Processing => "processing",
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::Reversed => "reversed",
            Status::NeedsReview => "needs_review",
        }
    }

    /// How far along the life of an operation a status is. Used only to tell
    /// a stale report (behind the current status) from a contradictory one.
    pub(crate) fn progress(self) -> u8 {
        match self {
            Status::Pending => 0,
            Status::Processing => 1,
            Status::NeedsReview => 2,
            Status::Succeeded | Status::Failed | Status::Cancelled => 3,
            Status::Reversed => 4,
        }
    }
}

/// A name that matched no variant of a finality enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}` (expected one of: {expected})")]
pub struct ParseEnumError {
    pub what: &'static str,
    pub value: String,
    pub expected: &'static str,
}

macro_rules! str_enum {
    ($ty:ident, $what:literal, $expected:literal, [$($variant:ident),*]) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = ParseEnumError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $(if s == $ty::$variant.as_str() { return Ok($ty::$variant); })*
                Err(ParseEnumError { what: $what, value: s.to_string(), expected: $expected })
            }
        }
    };
}

str_enum!(
    Status,
    "status",
    "pending, processing, succeeded, failed, cancelled, reversed, needs_review",
    [
        Pending,
        Processing,
        Succeeded,
        Failed,
        Cancelled,
        Reversed,
        NeedsReview
    ]
);

/// What kind of money movement is tracked; each has its own transition table.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    #[default]
    Payment,
    Refund,
    Payout,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Payment, Kind::Refund, Kind::Payout];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Payment => "payment",
            Kind::Refund => "refund",
            Kind::Payout => "payout",
        }
    }
}

str_enum!(
    Kind,
    "kind",
    "payment, refund, payout",
    [Payment, Refund, Payout]
);

/// Where a status change came from; recorded on every history row and event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Webhook,
    StatusQuery,
    Sweep,
    Manual,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Webhook => "webhook",
            Source::StatusQuery => "status_query",
            Source::Sweep => "sweep",
            Source::Manual => "manual",
        }
    }
}

str_enum!(
    Source,
    "source",
    "webhook, status_query, sweep, manual",
    [Webhook, StatusQuery, Sweep, Manual]
);

#[cfg(test)]
mod tests {
    #[test]
    fn the_final_sql_list_is_the_final_list() {
        let names: Vec<String> = super::Status::FINAL
            .iter()
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        assert_eq!(super::Status::FINAL_SQL, format!("({})", names.join(", ")));
    }

    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Status::ALL {
            assert_eq!(s.as_str().parse::<Status>(), Ok(s));
        }
        for k in Kind::ALL {
            assert_eq!(k.as_str().parse::<Kind>(), Ok(k));
        }
        let err = "done".parse::<Status>().unwrap_err();
        assert!(err.to_string().contains("unknown status `done`"));
    }
}
