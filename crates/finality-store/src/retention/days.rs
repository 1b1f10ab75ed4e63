//! The daily partitions' names, bounds and locks: what the partition role
//! and the online conversion both need.

use crate::driver::Fields;
use crate::error::Result;
use crate::retention::RowKind;

/// Days created ahead of today (a role that stops running leaves a week
/// before rows fall to the default partition).
pub const DAYS_AHEAD: u32 = 7;

/// One day, in the milliseconds the time columns hold.
pub const DAY_MS: i64 = 86_400_000;

/// How far ahead of the newest row (or the clock, if later) the
/// cut-over is put: far beyond how long the validation's scan and the
/// swap take, and beyond a clock off by hours.
pub(crate) const CUTOVER_AHEAD_MS: i64 = 24 * 60 * 60 * 1000;

/// One conversion's cut-over and swap at a time in the cluster (a session
/// lock, held on one connection for the whole step).
pub(crate) const TRY_SESSION_LOCK: &str =
    "SELECT pg_try_advisory_lock(hashtext('finality:partitions:convert'))::int AS got";

pub(crate) const SESSION_UNLOCK: &str =
    "SELECT pg_advisory_unlock(hashtext('finality:partitions:convert'))::int AS released";

/// A table partitioned by day on PostgreSQL.
#[derive(Debug)]
pub struct DailyTable {
    pub kind: RowKind,
    pub table: &'static str,
    /// The time column the range is on.
    pub col: &'static str,
    /// Its secondary index, kept on the partitioned table.
    pub(crate) index: &'static str,
    pub(crate) index_cols: &'static str,
}

/// The tables partitioned by day.
pub const DAILY: [DailyTable; 2] = [
    DailyTable {
        kind: RowKind::ProviderCalls,
        table: "poll_attempts",
        col: "started_at",
        index: "poll_attempts_payment",
        index_cols: "payment_id, id",
    },
    DailyTable {
        kind: RowKind::Deliveries,
        table: "delivery_attempts",
        col: "at",
        index: "delivery_attempts_destination",
        index_cols: "destination, id",
    },
];

/// The daily table holding `kind`, if that kind is partitioned at all.
pub fn daily(kind: RowKind) -> Option<&'static DailyTable> {
    DAILY.iter().find(|t| t.kind == kind)
}

/// The start (ms) of the UTC day holding `ms`.
pub fn day_start(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS) * DAY_MS
}

pub(crate) fn day_name(t: &DailyTable, start: i64) -> String {
    let day = chrono::DateTime::from_timestamp_millis(start)
        .map_or_else(|| "00000000".into(), |d| d.format("%Y%m%d").to_string());
    format!("{}_p{day}", t.table)
}

/// A name we generated or read from the catalog, quoted for DDL.
pub(crate) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A catalog boolean, selected as `::int` (the row interface reads
/// integers, not booleans).
pub(crate) fn flag(r: &impl Fields, col: &str) -> Result<bool> {
    Ok(r.int4(col, "pg_catalog")? != 0)
}

/// The cut-over a `CHECK ((col < N))` definition names.
pub(crate) fn cutover_of(def: &str) -> Option<i64> {
    let digits: String = def
        .rsplit('<')
        .next()?
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}
