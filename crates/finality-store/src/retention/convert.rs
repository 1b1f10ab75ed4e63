//! Partition DDL in the order that keeps writers running: short locks,
//! the conversion lock, a day created ahead, and the online conversion of
//! a populated table (cut-over check, validation, swap).

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::retention::days::{
    cutover_of, day_name, day_start, flag, ident, DailyTable, CUTOVER_AHEAD_MS, DAY_MS,
    SESSION_UNLOCK, TRY_SESSION_LOCK,
};
use finality_core::Timestamp;

/// Take the conversion's session lock on `conn`, without waiting.
pub(crate) async fn try_convert_lock(conn: &mut impl Conn) -> Result<bool> {
    conn.opt(stmt(TRY_SESSION_LOCK, "taking the conversion's lock"))
        .await?
        .map(|r| flag(&r, "got"))
        .transpose()
        .map(|g| g.unwrap_or(false))
}

/// Release it; a connection that may still hold it is not reused.
pub(crate) async fn release_convert_lock<B: Backend>(mut conn: sqlx::pool::PoolConnection<B::Db>) {
    if conn
        .run(stmt(SESSION_UNLOCK, "releasing the conversion's lock"))
        .await
        .is_err()
    {
        let _ = conn.detach();
    }
}

pub(crate) async fn is_partitioned<B: Backend>(store: &B, t: &DailyTable) -> Result<bool> {
    let mut conn = store.read().await?;
    Ok(relkind(&mut *conn, t).await?.as_deref() == Some("p"))
}

/// `r` for a plain table, `p` for a partitioned one, `None` for none.
pub(crate) async fn relkind(conn: &mut impl Conn, t: &DailyTable) -> Result<Option<String>> {
    conn.opt(
        stmt(
            "SELECT relkind::text AS kind FROM pg_class WHERE oid = to_regclass($1)",
            "checking whether a table is partitioned",
        )
        .text(t.table),
    )
    .await?
    .map(|r| r.text("kind", "pg_class"))
    .transpose()
}

/// Run one DDL statement under a short lock timeout, trying a few times:
/// waiting behind a long query would hold every writer behind it.
pub(crate) async fn with_short_lock<B: Backend>(
    store: &B,
    sql: &str,
    op: &'static str,
) -> Result<()> {
    with_short_locks::<B>(store, &[sql], op).await
}

/// Statements in one transaction under a short lock timeout (and a
/// statement timeout, for a scan made under a lock), tried a few times.
pub(crate) async fn with_short_locks<B: Backend>(
    store: &B,
    sqls: &[&str],
    op: &'static str,
) -> Result<()> {
    let mut last = None;
    for attempt in 0..5u64 {
        if attempt > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(200 * attempt)).await;
        }
        let mut tx = store.begin_write().await?;
        for set in [
            "SET LOCAL lock_timeout = '1s'",
            "SET LOCAL statement_timeout = '30s'",
        ] {
            tx.run(stmt(set, "setting lock and statement timeouts"))
                .await?;
        }
        let mut failed = None;
        for sql in sqls {
            if let Err(e) = tx.run(stmt(sql, op)).await {
                failed = Some(e);
                break;
            }
        }
        match failed {
            None => {
                tx.commit().await.op("committing a partition change")?;
                return Ok(());
            }
            Some(e) => {
                tracing::warn!(error = %e, attempt, "{op}: retrying");
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| crate::driver::corrupt("pg_class", "no attempt made")))
}

pub(crate) async fn create_day<B: Backend>(
    store: &B,
    t: &DailyTable,
    name: &str,
    from: i64,
    to: i64,
) -> Result<()> {
    // Rows of that day already in the default partition (the role did not
    // run for a while, a restored day) would make the attach fail after
    // scanning it: skip the day, its rows stay where they are.
    let probe = format!(
        "SELECT 1 AS one FROM {} WHERE {col} >= {from} AND {col} < {to} LIMIT 1",
        ident(&format!("{}_default", t.table)),
        col = t.col
    );
    let mut conn = store.read().await?;
    if conn
        .opt(stmt(
            &probe,
            "looking for a day's rows in the default partition",
        ))
        .await?
        .is_some()
    {
        return Err(crate::StoreError::Schema {
            table: t.table,
            detail: format!(
                "{name}: the default partition holds rows of that day; they stay there"
            ),
        });
    }
    drop(conn);
    // Made on its own, then attached: attaching locks the partitioned
    // table only against other schema changes (writers go on), where
    // `CREATE TABLE … PARTITION OF` would lock out every writer while it
    // checks the default partition.
    let create = format!(
        "CREATE TABLE IF NOT EXISTS {} (LIKE {} INCLUDING DEFAULTS)",
        ident(name),
        ident(t.table)
    );
    let attach = format!(
        "ALTER TABLE {} ATTACH PARTITION {} FOR VALUES FROM ({from}) TO ({to})",
        ident(t.table),
        ident(name)
    );
    with_short_locks::<B>(store, &[&create, &attach], "creating a day partition").await
}

/// The statements that put a partitioned table in place under `t`'s name,
/// once the old table is renamed away.
pub(crate) fn create_parent(t: &DailyTable, like: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE {} (LIKE {} INCLUDING DEFAULTS) PARTITION BY RANGE ({})",
            ident(t.table),
            ident(like),
            t.col
        ),
        // The sequence follows the table that keeps handing out ids.
        format!(
            "ALTER SEQUENCE {} OWNED BY {}.id",
            ident(&format!("{}_id_seq", t.table)),
            ident(t.table)
        ),
    ]
}

pub(crate) fn parent_keys(t: &DailyTable) -> Vec<String> {
    vec![
        format!(
            "ALTER TABLE {} ADD CONSTRAINT {} PRIMARY KEY (id, {})",
            ident(t.table),
            ident(&format!("{}_pkey", t.table)),
            t.col
        ),
        format!(
            "CREATE INDEX {} ON {} ({})",
            ident(t.index),
            ident(t.table),
            t.index_cols
        ),
    ]
}

pub(crate) fn default_partition(t: &DailyTable) -> String {
    format!(
        "CREATE TABLE {} PARTITION OF {} DEFAULT",
        ident(&format!("{}_default", t.table)),
        ident(t.table)
    )
}

/// Serialises the swaps and empty conversions between nodes (and with
/// `migrate` on another).
pub(crate) const CONVERT_LOCK: &str =
    "SELECT pg_advisory_xact_lock(hashtext('finality:partitions'))";

/// An empty table becomes a partitioned one in one transaction (a new
/// database, at `migrate`); false when it has rows (the online steps) or
/// is busy (its lock not free at once: never wait behind a writer here).
pub(crate) async fn convert_empty<B: Backend>(
    store: &B,
    t: &DailyTable,
    now: Timestamp,
) -> Result<bool> {
    let newest = format!(
        "SELECT 1 AS one FROM {} ORDER BY id DESC LIMIT 1",
        ident(t.table)
    );
    {
        let mut conn = store.read().await?;
        match relkind(&mut *conn, t).await?.as_deref() {
            Some("r") => {}
            // Already partitioned (another node got here first), or no table.
            Some(_) => return Ok(true),
            None => return Ok(false),
        }
        // Checked without a lock first: a populated table is never locked
        // here (the online conversion is for it).
        if conn
            .opt(stmt(&newest, "checking a table is empty"))
            .await?
            .is_some()
        {
            return Ok(false);
        }
    }
    let mut tx = store.begin_write().await?;
    tx.run(stmt(CONVERT_LOCK, "serialising partition conversions"))
        .await?;
    let lock = format!(
        "LOCK TABLE {} IN ACCESS EXCLUSIVE MODE NOWAIT",
        ident(t.table)
    );
    if tx
        .run(stmt(&lock, "locking a table to partition it"))
        .await
        .is_err()
    {
        return Ok(false);
    }
    if relkind(&mut *tx, t).await?.as_deref() != Some("r") {
        return Ok(true);
    }
    if tx
        .opt(stmt(&newest, "checking a table is empty"))
        .await?
        .is_some()
    {
        return Ok(false);
    }
    let old = format!("{}_unpartitioned", t.table);
    let mut sqls = vec![format!(
        "ALTER TABLE {} RENAME TO {}",
        ident(t.table),
        ident(&old)
    )];
    sqls.extend(create_parent(t, &old));
    sqls.push(format!("DROP TABLE {}", ident(&old)));
    sqls.extend(parent_keys(t));
    sqls.push(default_partition(t));
    let start = day_start(now.0);
    sqls.push(format!(
        "CREATE TABLE {} PARTITION OF {} FOR VALUES FROM ({start}) TO ({})",
        ident(&day_name(t, start)),
        ident(t.table),
        start + DAY_MS
    ));
    for sql in &sqls {
        tx.run(stmt(sql, "partitioning an empty table")).await?;
    }
    tx.commit().await.op("committing a table's partitioning")?;
    tracing::info!(table = t.table, "partitioned by day (it was empty)");
    Ok(true)
}

pub(crate) fn cutover_name(t: &DailyTable) -> String {
    format!("{}_cutover", t.table)
}

/// Drop the cut-over check of an unconverted table, if there is one.
pub(crate) async fn drop_cutover<B: Backend>(store: &B, t: &DailyTable) -> Result<()> {
    let sql = format!(
        "ALTER TABLE {} DROP CONSTRAINT IF EXISTS {}",
        ident(t.table),
        ident(&cutover_name(t))
    );
    with_short_lock::<B>(store, &sql, "dropping the cut-over check").await
}

/// A cut-over check exists only while a conversion holds its lock; one
/// found with the lock free was left by a conversion that stopped (a
/// crash), and would refuse rows once its time comes: dropped.
pub(crate) async fn clear_stale_cutover<B: Backend>(store: &B, t: &DailyTable) -> Result<()> {
    let mut conn = store.read().await?;
    let exists = conn
        .opt(
            stmt(
                "SELECT 1 AS one FROM pg_constraint WHERE conrelid = to_regclass($1) AND conname = $2",
                "looking for a cut-over check",
            )
            .text(t.table)
            .text(&cutover_name(t)),
        )
        .await?
        .is_some();
    if !exists {
        return Ok(());
    }
    let got = try_convert_lock(&mut *conn).await?;
    if !got {
        return Ok(());
    }
    let result = drop_cutover::<B>(store, t).await;
    release_convert_lock::<B>(conn).await;
    tracing::warn!(
        table = t.table,
        "dropped a cut-over check left by a conversion that stopped"
    );
    result
}

/// The cut-over check, validated, then the swap (the caller holds the
/// conversion's session lock and drops the check if this fails).
pub(crate) async fn cut_over_and_swap<B: Backend>(
    store: &B,
    t: &DailyTable,
    now: Timestamp,
) -> Result<()> {
    // One left by a conversion that stopped: start again.
    drop_cutover::<B>(store, t).await?;
    // Ahead of the newest row as well as of this node's clock (another
    // node's clock may be ahead of it).
    let newest_sql = format!(
        "SELECT max({col}) AS newest FROM (SELECT {col} FROM {} ORDER BY id DESC LIMIT 1000) n",
        ident(t.table),
        col = t.col
    );
    let mut conn = store.unbounded().await?;
    let newest = conn
        .opt(stmt(&newest_sql, "reading the newest row's time"))
        .await?
        .map(|r| r.opt_int("newest", t.table))
        .transpose()?
        .flatten()
        .unwrap_or(now.0);
    let cutover = newest.max(now.0) + CUTOVER_AHEAD_MS;
    let add = format!(
        "ALTER TABLE {} ADD CONSTRAINT {} CHECK ({} < {cutover}) NOT VALID",
        ident(t.table),
        ident(&cutover_name(t)),
        t.col
    );
    with_short_lock::<B>(store, &add, "adding the cut-over check").await?;
    let validate = format!(
        "ALTER TABLE {} VALIDATE CONSTRAINT {}",
        ident(t.table),
        ident(&cutover_name(t))
    );
    conn.run(stmt(
        &validate,
        "validating the cut-over check (a row at or after it?)",
    ))
    .await?;
    drop(conn);
    swap::<B>(store, t, cutover).await
}

/// The conversion's last step: the populated table becomes the first
/// partition (range up to the validated cut-over, so no scan), under a
/// lock held for milliseconds.
pub(crate) async fn swap<B: Backend>(store: &B, t: &DailyTable, cutover: i64) -> Result<()> {
    let legacy = format!("{}_legacy", t.table);
    let mut sqls = vec![
        format!(
            "ALTER TABLE {} RENAME TO {}",
            ident(t.table),
            ident(&legacy)
        ),
        format!(
            "ALTER INDEX {} RENAME TO {}",
            ident(t.index),
            ident(&format!(
                "{}_legacy_{}",
                t.table,
                &t.index[t.table.len() + 1..]
            ))
        ),
        format!(
            "ALTER TABLE {} DROP CONSTRAINT {}",
            ident(&legacy),
            ident(&format!("{}_pkey", t.table))
        ),
        format!(
            "ALTER TABLE {} ADD CONSTRAINT {} PRIMARY KEY USING INDEX {}",
            ident(&legacy),
            ident(&format!("{}_legacy_pkey", t.table)),
            ident(&format!("{}_legacy_key", t.table))
        ),
    ];
    sqls.extend(create_parent(t, &legacy));
    sqls.extend(parent_keys(t));
    sqls.push(format!(
        "ALTER TABLE {} ATTACH PARTITION {} FOR VALUES FROM (MINVALUE) TO ({cutover})",
        ident(t.table),
        ident(&legacy)
    ));
    sqls.push(format!(
        "ALTER TABLE {} DROP CONSTRAINT {}",
        ident(&legacy),
        ident(&cutover_name(t))
    ));
    // The rest of the cut-over's day, then the default.
    let next = day_start(cutover) + DAY_MS;
    sqls.push(format!(
        "CREATE TABLE {} PARTITION OF {} FOR VALUES FROM ({cutover}) TO ({next})",
        ident(&day_name(t, day_start(cutover))),
        ident(t.table)
    ));
    sqls.push(default_partition(t));
    let mut tx = store.begin_write().await?;
    tx.run(stmt(CONVERT_LOCK, "serialising partition conversions"))
        .await?;
    tx.run(stmt(
        "SET LOCAL lock_timeout = '2s'",
        "setting a lock timeout",
    ))
    .await?;
    let lock = format!("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE", ident(t.table));
    tx.run(stmt(&lock, "locking the table for the swap"))
        .await?;
    // Under the lock: still the plain table, with this cut-over's check
    // validated (what lets the attach skip its scan).
    let state = tx
        .opt(
            stmt(
                "SELECT c.relkind::text AS kind, \
                    (SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k WHERE k.conrelid = c.oid \
                     AND k.conname = $2 AND k.convalidated) AS def \
                 FROM pg_class c WHERE c.oid = to_regclass($1)",
                "checking the table before the swap",
            )
            .text(t.table)
            .text(&cutover_name(t)),
        )
        .await?;
    let ready = match state {
        Some(r) => {
            r.text("kind", "pg_class")? == "r"
                && r.opt_text("def", "pg_class")?.and_then(|d| cutover_of(&d)) == Some(cutover)
        }
        None => false,
    };
    if !ready {
        return Err(crate::StoreError::Schema {
            table: t.table,
            detail: "changed by another session before the swap; not swapped".into(),
        });
    }
    for sql in &sqls {
        tx.run(stmt(sql, "swapping in the partitioned table"))
            .await?;
    }
    tx.commit().await.op("committing the partition swap")?;
    tracing::info!(
        table = t.table,
        cutover,
        "partitioned by day (converted online)"
    );
    Ok(())
}
