//! The statements whose SQL differs per backend, as data each backend
//! fills in once.

/// The statements whose SQL differs per backend: row locks (`FOR UPDATE`
/// on PostgreSQL; SQLite's single writer already holds the database), the
/// claim statements, and the wake-up.
#[derive(Debug)]
pub struct Dialect {
    pub lock_payment: &'static str,
    pub lock_job: &'static str,
    pub claim: &'static str,
    /// The claim within one lane: `$6` the provider, `$7` the account.
    pub claim_lane: &'static str,
    /// The lanes with due work (`poll_queue::lanes`).
    pub due_lanes: &'static str,
    pub lock_inbox: &'static str,
    pub inbox_claim: &'static str,
    pub lock_feed: &'static str,
    pub lock_bucket: &'static str,
    /// Run after a registration or "poll now" inside the transaction, so
    /// other processes' engines wake at commit (PostgreSQL `NOTIFY`).
    pub notify: Option<&'static str>,
    /// The sequencer's whole round as one statement returning the rows it
    /// numbered (PostgreSQL's `finality_sequence_feed_rows`); without it
    /// the round is run statement by statement.
    pub sequence_feed: Option<&'static str>,
    /// Without `sequence_feed`: give the next positions (from `$1` + 1)
    /// to at most `$2` unsequenced outbox rows, in id order, reading them
    /// without waiting on rows other transactions are still writing.
    pub number_outbox: &'static str,
    /// Whether a statement can hold several writes as `WITH` parts
    /// (PostgreSQL; one round trip instead of several).
    pub writable_cte: bool,
    /// Run after retention deleted rows: gives freed pages back to the
    /// file system (SQLite's incremental vacuum); none on PostgreSQL.
    pub reclaim_space: Option<&'static str>,
    /// Whether `poll_attempts` and `delivery_attempts` are partitioned by
    /// day (PostgreSQL; see `partitions`).
    pub time_partitions: bool,
    /// Appended to a `SELECT` that must lock its rows (`FOR UPDATE`;
    /// nothing on SQLite, whose write transaction holds the database).
    pub row_lock: &'static str,
    /// Appended to a `SELECT` that takes rows no one else holds (`FOR
    /// UPDATE SKIP LOCKED`; nothing on SQLite).
    pub skip_locked: &'static str,
}

/// The sequencer's numbering as one statement (SQLite's, and PostgreSQL's
/// without its function): the unsequenced rows joined, ranked by id.
pub const NUMBER_OUTBOX: &str = "UPDATE outbox SET feed_seq = $1 + t.rn \
     FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM outbox \
           WHERE feed_seq IS NULL ORDER BY id LIMIT $2) AS t \
     WHERE outbox.id = t.id";

/// `$from, $from+1, …` for `n` values: an `IN (…)` list for the portable
/// statements that take a batch (PostgreSQL's own use arrays instead).
pub fn placeholders(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}
