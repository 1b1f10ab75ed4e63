//! The PostgreSQL adapter, for several nodes sharing the work.
//!
//! Claims use `FOR UPDATE SKIP LOCKED` so concurrent workers never wait on
//! each other's rows; registrations `NOTIFY finality_jobs` so idle engines
//! wake at once instead of at their next idle check.

use crate::driver::{impl_conn, Dialect, Leased, Writer};
use crate::driver::{Backend, Writes};
use crate::error::{DbContext, Result};
use crate::model::NewAttempt;
use crate::wakeups::Wakeups;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions, PgRow};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use std::str::FromStr;
use std::sync::Once;
use std::time::Duration;

/// The NOTIFY channel that registrations and "poll now" signal on.
pub const WAKE_CHANNEL: &str = "finality_jobs";
/// The NOTIFY channel the sequencer signals on when the feed grew.
pub const FEED_CHANNEL: &str = "finality_feed";

/// The claim statement (public so its plan can be checked and documented).
pub const CLAIM: &str = "WITH due AS ( \
        SELECT payment_id FROM poll_jobs \
        WHERE next_poll_at IS NOT NULL AND next_poll_at <= $1 \
        ORDER BY next_poll_at LIMIT $2 \
        FOR UPDATE SKIP LOCKED) \
    UPDATE poll_jobs j SET due_at = j.next_poll_at, next_poll_at = $3, locked_until = $3, \
        locked_by = $4, lock_token = $5 \
    FROM due WHERE j.payment_id = due.payment_id \
    RETURNING j.payment_id, j.provider, j.provider_ref, j.merchant_ref, j.account, j.kind, j.registered_at, j.attempts, \
        j.errors, j.due_at, j.resume_at, j.lock_token";

/// [`CLAIM`] within one lane (provider `$6`, account `$7`): fair claiming.
/// The lane is a range of row values on the lane index (see
/// `finality_store::poll_queue::lanes` for why not equalities).
/// Written so its generic plan (a prepared statement's after a few runs)
/// reads the lane index in its order and updates rows by primary key: an
/// `UPDATE … FROM due` join was planned as a hash join over every row of
/// `poll_jobs` once the statement's limit was a parameter (0.4 s a claim
/// with 1,000,000 jobs).
pub const CLAIM_LANE: &str = "WITH due AS ( \
        SELECT payment_id FROM poll_jobs \
        WHERE next_poll_at IS NOT NULL \
        AND (provider, account, next_poll_at) >= ($6, $7, -9223372036854775807) \
        AND (provider, account, next_poll_at) <= ($6, $7, $1) \
        ORDER BY provider, account, next_poll_at LIMIT $2 \
        FOR UPDATE SKIP LOCKED) \
    UPDATE poll_jobs j SET due_at = j.next_poll_at, next_poll_at = $3, locked_until = $3, \
        locked_by = $4, lock_token = $5 \
    WHERE j.payment_id = ANY(ARRAY(SELECT payment_id FROM due)) \
    RETURNING j.payment_id, j.provider, j.provider_ref, j.merchant_ref, j.account, j.kind, j.registered_at, j.attempts, \
        j.errors, j.due_at, j.resume_at, j.lock_token";

/// Lease due webhooks: `next_attempt_at` moves to the lease end and
/// `attempts` (the fence) goes up by one.
const INBOX_CLAIM: &str = "WITH due AS ( \
        SELECT id FROM webhook_inbox \
        WHERE state IN ('received', 'failed') AND next_attempt_at <= $1 \
        ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
    UPDATE webhook_inbox w SET next_attempt_at = $3, attempts = w.attempts + 1 \
    FROM due WHERE w.id = due.id \
    RETURNING w.id, w.provider, w.account, w.event_id, w.provider_ref, w.merchant_ref, w.observed_status, w.provider_status, \
        w.occurred_at, w.received_at, w.state, w.reason, w.attempts, w.source, w.reported_amount, \
        w.reported_currency, w.reported_pieces";

/// A `finality_feed` payload: the position reached and, from nodes since
/// migration 0017, the announcing process (`"N origin"`); `None` when it
/// says neither (an announcement without a position: ask the database).
fn feed_announcement(payload: &str) -> Option<(i64, Option<&str>)> {
    match payload.split_once(' ') {
        Some((head, origin)) => Some((head.parse().ok()?, Some(origin))),
        None => Some((payload.parse().ok()?, None)),
    }
}

/// A store on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    wake: Wakeups,
    listener: std::sync::Arc<Once>,
    held: std::sync::Arc<super::held::Held<Postgres>>,
}

/// How long one statement may run before PostgreSQL cancels it
/// (`[database] statement_timeout`): a statement stuck behind a lock or on
/// a sick server fails, is logged and retried, instead of holding a pool
/// connection (and the work waiting on it) for good. The statements of
/// requests and workers are bounded (claims by `batch_size`, scans and
/// deletes by chunks), so 30 s is far above any healthy one; migrations
/// and the partition conversion's whole-table steps run without it.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether a URL's `options` already set the statement timeout (then it
/// wins over `[database] statement_timeout`).
pub(super) fn sets_statement_timeout(opts: &PgConnectOptions) -> bool {
    opts.get_options()
        .is_some_and(|o| o.contains("statement_timeout") || o.contains("statement-timeout"))
}

/// A pool of at most `max` connections, each running `SET
/// statement_timeout` to `timeout` when given (after connecting, not as a
/// startup `options` parameter, which PgBouncer refuses unless told to
/// ignore it).
///
/// A connection idle for less than [`super::held::FRESH`] is handed out
/// without sqlx's test round trip (`test_before_acquire` pings every
/// connection taken, which at thousands of statements a second costs a
/// wake-up of PostgreSQL each and a round trip on every request's path);
/// one idle longer is tested first, so a connection broken while idle
/// (a restarted server) is still found by the test. sqlx tests each
/// connection when it is handed back too.
pub(super) fn pool_options(max: u32, timeout: Option<Duration>) -> PgPoolOptions {
    let pool = PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for < super::held::FRESH {
                    return Ok(true);
                }
                sqlx::Connection::ping(conn).await.map(|()| true)
            })
        });
    let Some(t) = timeout else { return pool };
    let set: std::sync::Arc<str> = format!("SET statement_timeout = {}", t.as_millis()).into();
    pool.after_connect(move |conn, _meta| {
        let set = set.clone();
        Box::pin(async move { sqlx::Executor::execute(conn, &*set).await.map(|_| ()) })
    })
}

impl PgStore {
    /// Connect with a pool of at most `max_connections`, statements bounded
    /// by [`DEFAULT_STATEMENT_TIMEOUT`].
    pub async fn connect(url: &str, max_connections: u32) -> crate::Result<Self> {
        Self::connect_timed(url, max_connections, DEFAULT_STATEMENT_TIMEOUT).await
    }

    /// [`PgStore::connect`] with statements bounded by `statement_timeout`
    /// (zero: unbounded, the server's or role's own setting stands).
    pub async fn connect_timed(
        url: &str,
        max_connections: u32,
        statement_timeout: Duration,
    ) -> crate::Result<Self> {
        let opts = PgConnectOptions::from_str(url).map_err(|e| crate::StoreError::Url {
            url: "postgres://…".into(),
            detail: e.to_string(),
        })?;
        let timeout = (!statement_timeout.is_zero() && !sets_statement_timeout(&opts))
            .then_some(statement_timeout);
        Self::connect_pool(opts, max_connections, timeout).await
    }

    /// Connect with `opts` as given (an embedding application's own
    /// settings; no statement timeout is added).
    pub async fn connect_with(opts: PgConnectOptions, max_connections: u32) -> crate::Result<Self> {
        Self::connect_pool(opts, max_connections, None).await
    }

    async fn connect_pool(
        opts: PgConnectOptions,
        max_connections: u32,
        timeout: Option<Duration>,
    ) -> crate::Result<Self> {
        let pool = pool_options(max_connections.max(2), timeout)
            .connect_with(opts)
            .await
            .op("connecting to PostgreSQL")?;
        Ok(Self::from_pool(pool))
    }

    /// Wrap an existing pool (an application embedding finality).
    pub fn from_pool(pool: PgPool) -> Self {
        let size = pool.options().get_max_connections();
        PgStore {
            pool,
            wake: Wakeups::new(),
            listener: std::sync::Arc::new(Once::new()),
            held: std::sync::Arc::new(super::held::Held::new(size)),
        }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// LISTEN once per store, forwarding every NOTIFY to the local wake-up
    /// signal. Reconnects after errors; ends when the store is dropped.
    fn listen(&self) {
        let pool = self.pool.clone();
        let weak = self.wake.downgrade();
        self.listener.call_once(|| {
            tokio::spawn(async move {
                // Retries as data: 1 s doubling to 30 s while the server is
                // away (polls still run; LISTEN only makes them sooner).
                let retry = finality_core::Schedule::Exponential {
                    base: Duration::from_secs(1),
                    factor: 2.0,
                    cap: Duration::from_secs(30),
                    jitter: 0.2,
                };
                let mut failures = 0u32;
                loop {
                    let mut listener = match PgListener::connect_with(&pool).await {
                        // Reconnecting is this loop's (with backoff), so
                        // that a lost connection is always seen here.
                        Ok(mut l) => {
                            l.eager_reconnect(false);
                            l
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "LISTEN connection failed; retrying");
                            tokio::time::sleep(retry.delay(failures, 0.0)).await;
                            failures = failures.saturating_add(1);
                            continue;
                        }
                    };
                    if let Err(e) = listener.listen_all([WAKE_CHANNEL, FEED_CHANNEL]).await {
                        tracing::warn!(error = %e, "LISTEN failed; retrying");
                        tokio::time::sleep(retry.delay(failures, 0.0)).await;
                        failures = failures.saturating_add(1);
                        continue;
                    }
                    failures = 0;
                    // Whatever was announced before LISTEN took hold is
                    // unknown here: readers ask the database once.
                    if let Some(wake) = weak.upgrade() {
                        wake.bump();
                        wake.feed_grew_unknown();
                    }
                    loop {
                        let got =
                            tokio::time::timeout(Duration::from_secs(5), listener.try_recv()).await;
                        let Some(wake) = weak.upgrade() else {
                            return;
                        };
                        match got {
                            // The connection was lost: what was sent
                            // meanwhile is lost, so wake everyone and LISTEN
                            // again on a new connection.
                            Ok(Ok(None)) => {
                                tracing::warn!("LISTEN connection lost; reconnecting");
                                wake.bump();
                                wake.feed_grew_unknown();
                                break;
                            }
                            Ok(Ok(Some(n))) if n.channel() == FEED_CHANNEL => {
                                // The sequencer announces the position it
                                // reached and which process it runs in
                                // (this one's own round reports itself,
                                // once its rows are in the feed tail).
                                match feed_announcement(n.payload()) {
                                    Some((_, origin)) if origin == Some(wake.origin()) => {}
                                    Some((head, _)) => wake.feed_grew_to(head),
                                    None => wake.feed_grew_unknown(),
                                }
                            }
                            Ok(Ok(Some(_))) => wake.bump(),
                            Ok(Err(e)) => {
                                tracing::warn!(error = %e, "LISTEN connection lost; reconnecting");
                                // A NOTIFY may have been missed: wake anyway.
                                wake.bump();
                                wake.feed_grew_unknown();
                                break;
                            }
                            Err(_elapsed) => {}
                        }
                    }
                }
            });
        });
    }
}

/// Row locks with `FOR UPDATE`; registrations and "poll now" NOTIFY.
static DIALECT: Dialect = Dialect {
    lock_payment: "SELECT status, kind FROM payments WHERE id = $1 FOR UPDATE",
    lock_job: "SELECT attempts FROM poll_jobs WHERE payment_id = $1 AND lock_token = $2 FOR UPDATE",
    claim: CLAIM,
    claim_lane: CLAIM_LANE,
    due_lanes: crate::poll_queue::lanes::DUE_LANES,
    lock_inbox: "SELECT id FROM webhook_inbox WHERE id = $1 AND attempts = $2 \
        AND state IN ('received', 'failed') FOR UPDATE",
    inbox_claim: INBOX_CLAIM,
    lock_feed: "SELECT last_seq FROM feed_state WHERE id = 1 FOR UPDATE",
    lock_bucket: "SELECT tokens, updated_at FROM rate_buckets WHERE provider = $1 FOR UPDATE",
    notify: Some("SELECT pg_notify('finality_jobs', '')"),
    skip_locked: " FOR UPDATE SKIP LOCKED",
    row_lock: " FOR UPDATE",
    reclaim_space: None,
    time_partitions: true,
    writable_cte: true,
    sequence_feed: Some(
        "SELECT feed_seq AS id, event_id, payment_id, type, status, previous_status, source, \
         occurred_at, provider, created_at FROM finality_sequence_feed_rows($1, $2)",
    ),
    number_outbox: super::NUMBER_OUTBOX,
};

#[async_trait::async_trait]
impl Backend for PgStore {
    type Db = Postgres;
    type Conn = PgConnection;
    /// Concurrent transactions commit together (group commit).
    const WRITERS: usize = 2;

    fn pool(&self) -> &sqlx::Pool<Postgres> {
        &self.pool
    }
    fn wakeups(&self) -> &Wakeups {
        &self.wake
    }
    fn held(&self) -> Option<&super::held::Held<Postgres>> {
        Some(&self.held)
    }
    async fn begin_write(&self) -> Result<Transaction<'static, Postgres>> {
        self.pool.begin().await.op("starting a transaction")
    }
    async fn run_migrations(&self) -> Result<()> {
        // On a connection of their own without the statement timeout (an
        // index built over a large table may take longer), closed after.
        let opts = (*self.pool.connect_options()).clone();
        let pool = pool_options(1, Some(Duration::ZERO))
            .connect_with(opts)
            .await
            .op("connecting to migrate")?;
        let run = sqlx::migrate!("migrations/postgres").run(&pool).await;
        pool.close().await;
        run?;
        Ok(())
    }
    async fn unbounded(&self) -> Result<sqlx::pool::PoolConnection<Postgres>> {
        let mut conn = self.read().await?;
        // Never back in the pool with the timeout lifted.
        conn.close_on_drop();
        sqlx::Executor::execute(&mut *conn, "SET statement_timeout = 0")
            .await
            .op("lifting the statement timeout")?;
        Ok(conn)
    }
    fn start_listener(&self) {
        self.listen();
    }
}

impl_conn! { conn = PgConnection, db = Postgres, row = PgRow, dialect = &DIALECT }

#[async_trait::async_trait]
impl Writer for PgConnection {
    async fn insert_attempts(&mut self, attempts: &[&NewAttempt]) -> Result<()> {
        super::pg_arrays::insert_attempts(self, attempts).await
    }
    async fn lock_leases(&mut self, ids: &[&str]) -> Result<Vec<Leased>> {
        super::pg_arrays::lock_leases(self, ids).await
    }
    async fn write(&mut self, w: &Writes) -> Result<()> {
        super::pg_arrays::write(self, w).await
    }
}

#[cfg(test)]
mod tests {
    use super::feed_announcement;

    #[test]
    fn feed_announcements_old_and_new() {
        assert_eq!(feed_announcement("42 abc"), Some((42, Some("abc"))));
        assert_eq!(
            feed_announcement("42"),
            Some((42, None)),
            "a node before 0017"
        );
        assert_eq!(feed_announcement(""), None);
        assert_eq!(feed_announcement("x abc"), None);
    }
}
