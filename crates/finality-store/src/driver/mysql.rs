//! The MySQL and MariaDB adapter: the database many payments teams already
//! run, for several nodes sharing the work.
//!
//! Claims lock their rows with `FOR UPDATE SKIP LOCKED` (MySQL 8.0,
//! MariaDB 10.6) and then update them by key: MySQL has no
//! `UPDATE … RETURNING` and cannot update a table it selects from in a
//! subquery, so a claim is three statements in one transaction
//! ([`mysql_sql::Steps`]). Every connection runs `READ COMMITTED` (what
//! PostgreSQL runs; InnoDB's default `REPEATABLE READ` takes gap locks that
//! make concurrent inserts wait on each other), `ANSI_QUOTES` and
//! `PIPES_AS_CONCAT`, so the roles' statements mean what they mean on
//! PostgreSQL.
//!
//! There is no `LISTEN`/`NOTIFY`: a node learns of other nodes' feed
//! positions by reading `feed_state` every [`FEED_LOOK`] (one primary-key
//! read), and of other nodes' registrations at its engine's next idle
//! check; its own are signalled in process, as on SQLite.

use super::mysql_sql::{self, Steps, Translated};
use super::{Arg, Backend, Conn, Dialect, Leased, Stmt, Writer, Writes};
use crate::error::{DbContext, Result};
use crate::model::NewAttempt;
use crate::wakeups::Wakeups;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions, MySqlRow};
use sqlx::{MySql, MySqlConnection, MySqlPool, Row, Transaction, TypeInfo, ValueRef};
use std::str::FromStr;
use std::sync::Once;
use std::time::Duration;

/// How often a node reads the feed's head for positions other nodes
/// numbered (readers long-polling on this node wake within it).
pub const FEED_LOOK: Duration = Duration::from_millis(100);

/// The claim: due jobs locked (skipping those another worker holds),
/// leased, and read back.
pub const CLAIM: &str = "SELECT payment_id FROM poll_jobs \
        WHERE next_poll_at IS NOT NULL AND next_poll_at <= $1 \
        ORDER BY next_poll_at LIMIT $2 FOR UPDATE SKIP LOCKED ;; \
    UPDATE poll_jobs SET due_at = next_poll_at, next_poll_at = $3, locked_until = $3, \
        locked_by = $4, lock_token = $5 WHERE payment_id IN ({keys}) ;; \
    SELECT payment_id, provider, provider_ref, merchant_ref, account, kind, registered_at, \
        attempts, errors, due_at, resume_at, lock_token FROM poll_jobs \
        WHERE payment_id IN ({keys})";

/// [`CLAIM`] within one lane (provider `$6`, account `$7`), on the lane
/// index `(provider, account, next_poll_at)`.
pub const CLAIM_LANE: &str = "SELECT payment_id FROM poll_jobs \
        WHERE provider = $6 AND account = $7 AND next_poll_at IS NOT NULL \
        AND next_poll_at <= $1 \
        ORDER BY provider, account, next_poll_at LIMIT $2 FOR UPDATE SKIP LOCKED ;; \
    UPDATE poll_jobs SET due_at = next_poll_at, next_poll_at = $3, locked_until = $3, \
        locked_by = $4, lock_token = $5 WHERE payment_id IN ({keys}) ;; \
    SELECT payment_id, provider, provider_ref, merchant_ref, account, kind, registered_at, \
        attempts, errors, due_at, resume_at, lock_token FROM poll_jobs \
        WHERE payment_id IN ({keys})";

/// Lease due webhooks: `next_attempt_at` moves to the lease end and
/// `attempts` (the fence) goes up by one.
const INBOX_CLAIM: &str = "SELECT id FROM webhook_inbox \
        WHERE state IN ('received', 'failed') AND next_attempt_at <= $1 \
        ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED ;; \
    UPDATE webhook_inbox SET next_attempt_at = $3, attempts = attempts + 1 \
        WHERE id IN ({keys}) ;; \
    SELECT id, provider, account, event_id, provider_ref, merchant_ref, observed_status, provider_status, \
        occurred_at, received_at, state, reason, attempts, source, reported_amount, \
        reported_currency, reported_pieces FROM webhook_inbox WHERE id IN ({keys})";

/// The sequencer's numbering in two steps. The unsequenced rows are read
/// by a plain (consistent) read, which sees committed rows and waits on
/// none; then numbered by key, ranked in id order (`{rank}`). A join or a
/// subquery inside the `UPDATE` would read `outbox` with locks, waiting on
/// rows other transactions are still inserting while holding
/// `feed_state`, which those transactions then wait for: a deadlock.
const NUMBER_OUTBOX: &str = "SELECT id FROM outbox WHERE feed_seq IS NULL ORDER BY id LIMIT $2 ;; \
    UPDATE outbox SET feed_seq = $1 + CASE id {rank} END WHERE id IN ({keys})";

/// Row locks with `FOR UPDATE`, claims in steps, no NOTIFY.
static DIALECT: Dialect = Dialect {
    lock_payment: "SELECT status, kind FROM payments WHERE id = $1 FOR UPDATE",
    lock_job: "SELECT attempts FROM poll_jobs WHERE payment_id = $1 AND lock_token = $2 FOR UPDATE",
    claim: CLAIM,
    claim_lane: CLAIM_LANE,
    due_lanes: crate::poll_queue::lanes::DUE_LANES_SQLITE,
    lock_inbox: "SELECT id FROM webhook_inbox WHERE id = $1 AND attempts = $2 \
        AND state IN ('received', 'failed') FOR UPDATE",
    inbox_claim: INBOX_CLAIM,
    lock_feed: "SELECT last_seq FROM feed_state WHERE id = 1 FOR UPDATE",
    lock_bucket: "SELECT tokens, updated_at FROM rate_buckets WHERE provider = $1 FOR UPDATE",
    notify: None,
    skip_locked: " FOR UPDATE SKIP LOCKED",
    row_lock: " FOR UPDATE",
    reclaim_space: None,
    time_partitions: false,
    writable_cte: false,
    sequence_feed: None,
    number_outbox: NUMBER_OUTBOX,
};

/// How long one statement may wait for a row lock before failing
/// (`innodb_lock_wait_timeout`): the server's default is 50 s.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// A store on MySQL 8.0 or MariaDB 10.6 and later.
#[derive(Debug, Clone)]
pub struct MySqlStore {
    pool: MySqlPool,
    wake: Wakeups,
    listener: std::sync::Arc<Once>,
}

/// Pool options whose connections speak the roles' SQL (see the module's
/// doc): ANSI quotes, `||` as concatenation, `READ COMMITTED`, UTC, and
/// lock waits bounded by [`LOCK_WAIT`].
pub fn pool_options(max: u32) -> MySqlPoolOptions {
    MySqlPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(10))
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                let set = format!(
                    "SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, \
                     ',ANSI_QUOTES,PIPES_AS_CONCAT,STRICT_TRANS_TABLES'), \
                     SESSION innodb_lock_wait_timeout = {}, time_zone = '+00:00'",
                    LOCK_WAIT.as_secs()
                );
                sqlx::Executor::execute(&mut *conn, set.as_str()).await?;
                sqlx::Executor::execute(
                    &mut *conn,
                    "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
                )
                .await?;
                // The lanes are found by a recursive `WITH`, one step per
                // lane: both servers stop one at 1,000 steps by default
                // (MariaDB's variable, else MySQL's).
                let deep = "SET SESSION max_recursive_iterations = 1000000000";
                if sqlx::Executor::execute(&mut *conn, deep).await.is_err() {
                    sqlx::Executor::execute(
                        &mut *conn,
                        "SET SESSION cte_max_recursion_depth = 1000000000",
                    )
                    .await?;
                }
                Ok(())
            })
        })
}

impl MySqlStore {
    /// Connect to the database a `mysql://user:password@host:port/db` URL
    /// names, with a pool of at most `max_connections`.
    pub async fn connect(url: &str, max_connections: u32) -> crate::Result<Self> {
        let opts = MySqlConnectOptions::from_str(url).map_err(|e| crate::StoreError::Url {
            url: "mysql://…".into(),
            detail: e.to_string(),
        })?;
        Self::connect_with(opts, max_connections).await
    }

    /// Connect with `opts` as given (an embedding application's own).
    pub async fn connect_with(
        opts: MySqlConnectOptions,
        max_connections: u32,
    ) -> crate::Result<Self> {
        let pool = pool_options(max_connections.max(2))
            .connect_with(opts)
            .await
            .op("connecting to MySQL")?;
        Ok(Self::from_pool(pool))
    }

    /// Wrap an existing pool (build it from [`pool_options`]: the roles'
    /// statements need its session settings).
    pub fn from_pool(pool: MySqlPool) -> Self {
        MySqlStore {
            pool,
            wake: Wakeups::new(),
            listener: std::sync::Arc::new(Once::new()),
        }
    }

    pub fn pool(&self) -> &MySqlPool {
        &self.pool
    }

    /// Read the feed's head every [`FEED_LOOK`], once per store, telling
    /// readers here of positions other nodes numbered. Ends when the store
    /// is dropped.
    fn look_at_feed(&self) {
        let pool = self.pool.clone();
        let weak = self.wake.downgrade();
        self.listener.call_once(|| {
            tokio::spawn(async move {
                let mut seen: Option<i64> = None;
                let mut tick = tokio::time::interval(FEED_LOOK);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let Some(wake) = weak.upgrade() else {
                        return;
                    };
                    let head: std::result::Result<Option<i64>, _> =
                        sqlx::query_scalar("SELECT last_seq FROM feed_state WHERE id = 1")
                            .fetch_optional(&pool)
                            .await;
                    match head {
                        Ok(Some(h)) if seen.is_some_and(|s| h > s) => {
                            seen = Some(h);
                            wake.feed_grew_to(h);
                        }
                        Ok(Some(h)) => seen = Some(h),
                        Ok(None) => {}
                        Err(e) => {
                            tracing::debug!(error = %e, "reading the feed's head failed");
                        }
                    }
                }
            });
        });
    }
}

#[async_trait::async_trait]
impl Backend for MySqlStore {
    type Db = MySql;
    type Conn = MySqlConnection;
    /// InnoDB commits concurrent transactions together (group commit).
    const WRITERS: usize = 2;

    fn pool(&self) -> &sqlx::Pool<MySql> {
        &self.pool
    }
    fn wakeups(&self) -> &Wakeups {
        &self.wake
    }
    async fn begin_write(&self) -> Result<Transaction<'static, MySql>> {
        self.pool.begin().await.op("starting a transaction")
    }
    async fn run_migrations(&self) -> Result<()> {
        sqlx::migrate!("migrations/mysql").run(&self.pool).await?;
        Ok(())
    }
    fn start_listener(&self) {
        self.look_at_feed();
    }
}

/// A key the first step of [`Steps`] found.
enum Key {
    Int(i64),
    Text(String),
}

fn key_of(row: &MySqlRow) -> Result<Key> {
    let raw = row
        .try_get_raw(0)
        .map_err(|e| super::corrupt("a claimed row", e))?;
    let name = raw.type_info().name().to_string();
    if name.contains("INT") {
        row.try_get_unchecked::<i64, _>(0).map(Key::Int)
    } else {
        row.try_get_unchecked::<String, _>(0).map(Key::Text)
    }
    .map_err(|e| super::corrupt("a claimed row", e))
}

/// A translated statement with its arguments bound in its order; an index
/// past the statement's own arguments is a key from `keys`.
fn bound<'q>(
    t: &'q Translated,
    args: &'q [Arg<'q>],
    keys: &'q [Key],
) -> sqlx::query::Query<'q, MySql, sqlx::mysql::MySqlArguments> {
    let mut q = sqlx::query::<MySql>(&t.sql);
    for &i in &t.order {
        q = match args.get(i) {
            Some(Arg::Text(v)) => q.bind(*v),
            Some(Arg::Int(v)) => q.bind(*v),
            Some(Arg::Int4(v)) => q.bind(*v),
            Some(Arg::Real(v)) => q.bind(*v),
            Some(Arg::Flag(v)) => q.bind(*v),
            Some(Arg::Json(v)) => q.bind(sqlx::types::Json(*v)),
            Some(Arg::Bytes(v)) => q.bind(*v),
            None => match keys.get(i - args.len()) {
                Some(Key::Int(k)) => q.bind(*k),
                Some(Key::Text(k)) => q.bind(k.as_str()),
                None => q.bind(None::<i64>),
            },
        };
    }
    q
}

/// Run [`Steps`] in the caller's transaction, or in one of their own:
/// the rows of the last step (none when the first locked none) and how
/// many keys it locked.
async fn run_steps(
    conn: &mut MySqlConnection,
    s: &Stmt<'_>,
    steps: &Steps,
) -> Result<(Vec<MySqlRow>, u64)> {
    if sqlx::Connection::is_in_transaction(&*conn) {
        return steps_in(conn, s, steps).await;
    }
    let mut tx = sqlx::Connection::begin(&mut *conn).await.op(s.op)?;
    let out = steps_in(&mut tx, s, steps).await?;
    tx.commit().await.op(s.op)?;
    Ok(out)
}

async fn steps_in(
    conn: &mut MySqlConnection,
    s: &Stmt<'_>,
    steps: &Steps,
) -> Result<(Vec<MySqlRow>, u64)> {
    let lock = mysql_sql::translate(&steps.lock);
    let locked = bound(&lock, &s.args, &[])
        .fetch_all(&mut *conn)
        .await
        .op(s.op)?;
    let keys = locked.iter().map(key_of).collect::<Result<Vec<_>>>()?;
    if keys.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let marks = (0..keys.len())
        .map(|i| format!("${}", s.args.len() + i + 1))
        .collect::<Vec<_>>()
        .join(", ");
    // `{rank}`: each key's place (1, 2, …) in the first step's order.
    let rank = (0..keys.len())
        .map(|i| format!("WHEN ${} THEN {}", s.args.len() + i + 1, i + 1))
        .collect::<Vec<_>>()
        .join(" ");
    let mut rows = Vec::new();
    for (i, step) in steps.then.iter().enumerate() {
        let step = step.replace("{keys}", &marks).replace("{rank}", &rank);
        let t = mysql_sql::translate(&step);
        let q = bound(&t, &s.args, &keys);
        if i + 1 == steps.then.len() {
            rows = q.fetch_all(&mut *conn).await.op(s.op)?;
        } else {
            q.execute(&mut *conn).await.op(s.op)?;
        }
    }
    Ok((rows, keys.len() as u64))
}

#[async_trait::async_trait]
impl Conn for MySqlConnection {
    type Row = MySqlRow;
    const SQL: &'static Dialect = &DIALECT;

    async fn run(&mut self, s: Stmt<'_>) -> Result<u64> {
        if let Some(steps) = mysql_sql::steps(s.sql) {
            return Ok(run_steps(self, &s, &steps).await?.1);
        }
        let t = mysql_sql::translate(s.sql);
        bound(&t, &s.args, &[])
            .execute(&mut *self)
            .await
            .map(|r| r.rows_affected())
            .op(s.op)
    }
    async fn all(&mut self, s: Stmt<'_>) -> Result<Vec<MySqlRow>> {
        if let Some(steps) = mysql_sql::steps(s.sql) {
            return Ok(run_steps(self, &s, &steps).await?.0);
        }
        if let Some((insert, table, cols)) = mysql_sql::insert_returning(s.sql) {
            let t = mysql_sql::translate(&insert);
            let done = bound(&t, &s.args, &[]).execute(&mut *self).await.op(s.op)?;
            if done.rows_affected() == 0 {
                return Ok(Vec::new());
            }
            let id = i64::try_from(done.last_insert_id()).unwrap_or(i64::MAX);
            return sqlx::query(&format!("SELECT {cols} FROM {table} WHERE id = ?"))
                .bind(id)
                .fetch_all(&mut *self)
                .await
                .op(s.op);
        }
        let t = mysql_sql::translate(s.sql);
        bound(&t, &s.args, &[]).fetch_all(&mut *self).await.op(s.op)
    }
    async fn opt(&mut self, s: Stmt<'_>) -> Result<Option<MySqlRow>> {
        if mysql_sql::steps(s.sql).is_some() || mysql_sql::insert_returning(s.sql).is_some() {
            return Ok(self.all(s).await?.into_iter().next());
        }
        let t = mysql_sql::translate(s.sql);
        bound(&t, &s.args, &[])
            .fetch_optional(&mut *self)
            .await
            .op(s.op)
    }
}

impl super::InboxRows for MySqlConnection {}

// A statement per table and batch (`mysql_writer`).
#[async_trait::async_trait]
impl Writer for MySqlConnection {
    async fn insert_attempts(&mut self, attempts: &[&NewAttempt]) -> Result<()> {
        super::mysql_writer::insert_attempts(self, attempts).await
    }
    async fn lock_leases(&mut self, ids: &[&str]) -> Result<Vec<Leased>> {
        super::mysql_writer::lock_leases(self, ids).await
    }
    async fn write(&mut self, w: &Writes) -> Result<()> {
        super::mysql_writer::write(self, w).await
    }
}
