//! Daily time partitions on PostgreSQL for the two tables that only grow
//! (`poll_attempts`, `delivery_attempts`), so that retention drops a day of
//! rows whole instead of deleting them one by one.
//!
//! Layout of a partitioned table `T` (range on its time column, ms):
//! - `T_pYYYYMMDD`: one UTC day, created ahead by the retention role;
//! - `T_legacy`: the table as it was before the conversion, holding
//!   everything before the cut-over; dropped whole once all of it is past
//!   retention;
//! - `T_default`: the safety net for a row outside every day created (a
//!   role that did not run for a week, a clock far off, a restored day):
//!   an insert never fails for want of a partition; retention deletes its
//!   old rows one by one.
//!
//! An empty table is converted at once (a new database: at `migrate`). A
//! populated one is converted online, one short step at a time
//! ([`Partitions::convert_step`]): a unique index on `(id, time)` built
//! `CONCURRENTLY`; a `CHECK (time < cut-over)` added `NOT VALID` with the
//! cut-over an hour ahead, then validated (a scan that does not block
//! writes); then one short transaction renames the table, creates the
//! partitioned one under its name and attaches the old table as its first
//! partition without a scan (the validated check proves its range). Only
//! that transaction blocks writers, for milliseconds, under a lock timeout.
//!
//! `webhook_inbox` is not partitioned: its unique `(provider, event_id)`
//! is what deduplicates webhooks, and PostgreSQL has no unique index
//! spanning partitions; retention deletes its rows in batches.
//!
//! SQLite (one file, no partitions) and the in-memory store answer "not
//! partitioned", and retention deletes rows in batches there.
//!
//! Written by hand: this is DDL on finality's own tables, in the order that
//! keeps writers running; no crate manages PostgreSQL partitions.

pub use super::days::{daily, day_start, DailyTable, DAILY, DAYS_AHEAD, DAY_MS};
use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::retention::convert::{
    clear_stale_cutover, convert_empty, create_day, cut_over_and_swap, drop_cutover,
    is_partitioned, release_convert_lock, try_convert_lock, with_short_lock,
};
use crate::retention::days::{day_name, flag, ident};
use crate::retention::{LifeRow, RowKind, TableSpec};
use finality_core::Timestamp;
use serde::Serialize;

/// One partition of a daily table, or a detached one left to drop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Partition {
    pub table: &'static str,
    pub name: String,
    /// Its range of times (ms), `from` inclusive, `to` exclusive; `from`
    /// is `None` for the converted table (everything before `to`); both
    /// are `None` for the default partition and a detached one.
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub default: bool,
    /// False for a partition detached by a retention run that stopped
    /// before dropping it (the next run archives and drops it).
    pub attached: bool,
    /// The planner's estimate (`reltuples`), 0 when never analysed.
    pub rows_estimate: i64,
}

/// Where converting a table to partitions stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "step")]
pub enum Conversion {
    /// This store keeps the table as one (SQLite, memory).
    NotApplicable,
    Partitioned,
    /// More steps to go; the one just taken.
    Pending(String),
    /// Another session is taking a step now: try again later.
    Busy(String),
}

/// Time partitions: which tables have them, creating days ahead, the
/// online conversion, and dropping a day. Everything answers "not
/// partitioned" on a store without them.
#[async_trait::async_trait]
pub trait Partitions: Send + Sync {
    /// Whether `kind`'s table is partitioned by day here.
    async fn partitioned(&self, _kind: RowKind) -> Result<bool> {
        Ok(false)
    }
    /// Convert every empty daily table at once and create the days from
    /// `now`'s to `days` after it; the partitions created.
    async fn partitions_ahead(&self, _now: Timestamp, _days: u32) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    /// Take the next step converting `kind`'s table (each step short or
    /// not blocking writers; see the module's documentation).
    async fn convert_step(&self, _kind: RowKind, _now: Timestamp) -> Result<Conversion> {
        Ok(Conversion::NotApplicable)
    }
    /// The partitions of `kind`'s table, attached or left detached.
    async fn partitions(&self, _kind: RowKind) -> Result<Vec<Partition>> {
        Ok(Vec::new())
    }
    /// Take a partition out of its table: its rows are no longer seen
    /// and no row can be added to it (a short lock on the table).
    async fn partition_detach(&self, _p: &Partition) -> Result<()> {
        Ok(())
    }
    /// Rows of a (detached) partition after id `after`, in id order.
    async fn partition_page(
        &self,
        _kind: RowKind,
        _p: &Partition,
        _after: i64,
        _limit: u32,
    ) -> Result<Vec<LifeRow>> {
        Ok(Vec::new())
    }
    /// Drop a detached partition (never an attached one) if it holds
    /// exactly `rows` rows (what was archived); false when it does not
    /// (it stays, and the next run archives it again).
    async fn partition_drop(&self, _p: &Partition, _rows: u64) -> Result<bool> {
        Ok(false)
    }
}

/// Parse one side of `FOR VALUES FROM (…) TO (…)`: a number, or `None`
/// for `MINVALUE`/`MAXVALUE`.
pub(crate) fn bound_after(expr: &str, key: &str) -> Option<i64> {
    let rest = &expr[expr.find(key)? + key.len()..];
    let inner = rest.trim_start().strip_prefix('(')?;
    let inner = &inner[..inner.find(')')?];
    inner.trim().trim_matches('\'').parse().ok()
}

#[async_trait::async_trait]
impl<B: Backend> Partitions for B {
    async fn partitioned(&self, kind: RowKind) -> Result<bool> {
        let Some(t) = daily(kind).filter(|_| <B::Conn as Conn>::SQL.time_partitions) else {
            return Ok(false);
        };
        is_partitioned::<B>(self, t).await
    }

    async fn partitions_ahead(&self, now: Timestamp, days: u32) -> Result<Vec<String>> {
        if !<B::Conn as Conn>::SQL.time_partitions {
            return Ok(Vec::new());
        }
        let mut created = Vec::new();
        for t in &DAILY {
            if !is_partitioned::<B>(self, t).await? && !convert_empty::<B>(self, t, now).await? {
                clear_stale_cutover::<B>(self, t).await?;
                continue;
            }
            let have = self.partitions(t.kind).await?;
            // Nothing before the converted table's end (it holds that).
            let floor = have
                .iter()
                .filter(|p| p.attached && p.from.is_none() && !p.default)
                .filter_map(|p| p.to)
                .max()
                .unwrap_or(i64::MIN);
            for d in 0..=i64::from(days) {
                let start = day_start(now.0) + d * DAY_MS;
                let (from, to) = (start.max(floor), start + DAY_MS);
                let name = day_name(t, start);
                if to <= from || have.iter().any(|p| p.name == name) {
                    continue;
                }
                // A day the default partition already has rows of (the
                // role did not run for a while) cannot be created; those
                // rows stay in the default partition, which retention
                // deletes from row by row. Not an error for the run.
                match create_day::<B>(self, t, &name, from, to).await {
                    Ok(()) => created.push(name),
                    Err(e) => tracing::warn!(partition = %name, error = %e,
                        "creating a day partition failed; its rows go to the default partition"),
                }
            }
        }
        Ok(created)
    }

    async fn convert_step(&self, kind: RowKind, now: Timestamp) -> Result<Conversion> {
        let Some(t) = daily(kind).filter(|_| <B::Conn as Conn>::SQL.time_partitions) else {
            return Ok(Conversion::NotApplicable);
        };
        if is_partitioned::<B>(self, t).await? || convert_empty::<B>(self, t, now).await? {
            return Ok(Conversion::Partitioned);
        }
        let key = format!("{}_legacy_key", t.table);
        let mut conn = self.unbounded().await?;
        // 1. The unique (id, time) index the partitioned table's key needs,
        //    built without blocking writes; a failed build left invalid is
        //    dropped and built again.
        let index = conn
            .opt(
                stmt(
                    "SELECT i.indisvalid::int AS valid FROM pg_index i \
                     WHERE i.indexrelid = to_regclass($1)",
                    "reading the conversion's index",
                )
                .text(&key),
            )
            .await?;
        match index {
            None => {
                let sql = format!(
                    "CREATE UNIQUE INDEX CONCURRENTLY {} ON {} (id, {})",
                    ident(&key),
                    ident(t.table),
                    t.col
                );
                conn.run(stmt(&sql, "building the (id, time) index for partitions"))
                    .await?;
                return Ok(Conversion::Pending(format!("built index {key}")));
            }
            Some(r) if !flag(&r, "valid")? => {
                // Invalid while a build runs (another node's run that
                // outlived its lease): leave it to finish.
                let building = conn
                    .opt(
                        stmt(
                            "SELECT 1 AS one FROM pg_stat_progress_create_index \
                             WHERE index_relid = to_regclass($1)",
                            "checking for an index build in progress",
                        )
                        .text(&key),
                    )
                    .await?;
                if building.is_some() {
                    return Ok(Conversion::Pending(format!(
                        "index {key} is being built by another session"
                    )));
                }
                let sql = format!("DROP INDEX CONCURRENTLY IF EXISTS {}", ident(&key));
                conn.run(stmt(&sql, "dropping a failed index build"))
                    .await?;
                return Ok(Conversion::Pending(format!(
                    "dropped index {key} left invalid by a failed build"
                )));
            }
            Some(_) => {}
        }
        // 2. The cut-over and the swap, in one step under a session lock
        //    (one conversion at a time in the cluster): a check that every
        //    row is before the cut-over, added without a scan; validated by
        //    a scan that lets writes go on; then the swap. The check refuses
        //    rows at or after the cut-over until the swap, so it never
        //    outlives this step: on any failure it is dropped here, and one
        //    left by a crash is dropped by the next `migrate` or run
        //    ([`clear_stale_cutover`]).
        let got = try_convert_lock(&mut *conn).await?;
        if !got {
            return Ok(Conversion::Busy(
                "another session is converting a table".into(),
            ));
        }
        let result = cut_over_and_swap::<B>(self, t, now).await;
        if result.is_err() {
            // Never leave a check that would refuse rows after its time.
            let _ = drop_cutover::<B>(self, t).await;
        }
        release_convert_lock::<B>(conn).await;
        result?;
        Ok(Conversion::Partitioned)
    }

    async fn partitions(&self, kind: RowKind) -> Result<Vec<Partition>> {
        let Some(t) = daily(kind).filter(|_| <B::Conn as Conn>::SQL.time_partitions) else {
            return Ok(Vec::new());
        };
        let mut conn = self.read().await?;
        let rows = conn
            .all(
                stmt(
                    "SELECT c.relname::text AS name, pg_get_expr(c.relpartbound, c.oid) AS bound, \
                        GREATEST(c.reltuples, 0)::bigint AS rows, \
                        COALESCE(c.relispartition AND i.inhparent = to_regclass($1), false)::int AS attached \
                     FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid \
                     WHERE c.relkind = 'r' \
                       AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass($1)) \
                       AND c.relname ~ ('^' || $1 || '_(p[0-9]{8}|legacy|default)$') \
                     ORDER BY c.relname",
                    "listing partitions",
                )
                .text(t.table),
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let attached = flag(&r, "attached")?;
            let bound = r.opt_text("bound", "pg_class")?.unwrap_or_default();
            let default = attached && bound.trim() == "DEFAULT";
            out.push(Partition {
                table: t.table,
                name: r.text("name", "pg_class")?,
                from: attached.then(|| bound_after(&bound, "FROM")).flatten(),
                to: attached.then(|| bound_after(&bound, "TO")).flatten(),
                default,
                attached,
                rows_estimate: r.int("rows", "pg_class")?,
            });
        }
        // In time order: the converted table first, the default last.
        out.sort_by_key(|p| (p.default, p.attached && p.from.is_some(), p.from));
        Ok(out)
    }

    async fn partition_detach(&self, p: &Partition) -> Result<()> {
        if !p.attached {
            return Ok(());
        }
        let sql = format!(
            "ALTER TABLE {} DETACH PARTITION {}",
            ident(p.table),
            ident(&p.name)
        );
        with_short_lock::<B>(self, &sql, "detaching a partition past retention").await
    }

    async fn partition_page(
        &self,
        kind: RowKind,
        p: &Partition,
        after: i64,
        limit: u32,
    ) -> Result<Vec<LifeRow>> {
        let t: &'static TableSpec = kind.spec();
        let cols = t
            .cols
            .iter()
            .map(|(c, _)| *c)
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT {cols} FROM {} WHERE id > $1 ORDER BY id LIMIT $2",
            ident(&p.name)
        );
        let mut conn = self.read().await?;
        let rows = conn
            .all(
                stmt(&sql, "reading a partition for its archive")
                    .int(after)
                    .int(i64::from(limit)),
            )
            .await?;
        crate::retention::life_rows(&rows, kind)
    }

    async fn partition_drop(&self, p: &Partition, rows: u64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        // Detached, so no lock on the partitioned table; checked again
        // here so an attached partition is never dropped.
        let row = tx
            .opt(
                stmt(
                    "SELECT c.relispartition::int AS attached FROM pg_class c \
                     WHERE c.oid = to_regclass($1) AND c.relkind = 'r'",
                    "checking a partition before dropping it",
                )
                .text(&p.name),
            )
            .await?;
        let Some(row) = row else {
            return Ok(false);
        };
        if flag(&row, "attached")? {
            return Err(crate::StoreError::Schema {
                table: p.table,
                detail: format!("{} is attached again; not dropped", p.name),
            });
        }
        let count_sql = format!("SELECT count(*) AS n FROM {}", ident(&p.name));
        let n = tx
            .opt(stmt(&count_sql, "counting a partition's rows"))
            .await?
            .map(|r| r.int("n", "partition"))
            .transpose()?
            .unwrap_or(0);
        if u64::try_from(n).ok() != Some(rows) {
            tracing::warn!(partition = %p.name, rows = n, archived = rows,
                "a detached partition's rows differ from its archive; kept for the next run");
            return Ok(false);
        }
        let sql = format!("DROP TABLE {}", ident(&p.name));
        tx.run(stmt(&sql, "dropping a partition past retention"))
            .await?;
        tx.commit().await.op("committing a partition's drop")?;
        Ok(true)
    }
}

/// The table retention's row-by-row path reads and deletes for `kind`: a
/// partitioned table's default partition (its days go whole, the
/// converted table once all of it is past retention), else the table.
pub(crate) async fn row_table<B: Backend>(store: &B, kind: RowKind) -> Result<String> {
    match daily(kind).filter(|_| <B::Conn as Conn>::SQL.time_partitions) {
        Some(t) if is_partitioned::<B>(store, t).await? => Ok(format!("{}_default", t.table)),
        _ => Ok(kind.spec().name.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retention::days::cutover_of;

    #[test]
    fn bounds_parse_from_the_catalogs_text() {
        let e = "FOR VALUES FROM ('1764547200000') TO ('1764633600000')";
        assert_eq!(bound_after(e, "FROM"), Some(1_764_547_200_000));
        assert_eq!(bound_after(e, "TO"), Some(1_764_633_600_000));
        let m = "FOR VALUES FROM (MINVALUE) TO ('17')";
        assert_eq!(bound_after(m, "FROM"), None);
        assert_eq!(bound_after(m, "TO"), Some(17));
        assert_eq!(
            cutover_of("CHECK ((started_at < '1764547200000'::bigint)) NOT VALID"),
            Some(1_764_547_200_000)
        );
        assert_eq!(cutover_of("CHECK ((at < 42))"), Some(42));
    }

    #[test]
    fn days_are_utc() {
        assert_eq!(day_start(DAY_MS + 5), DAY_MS);
        assert_eq!(day_start(-1), -DAY_MS);
        assert_eq!(day_name(&DAILY[0], DAY_MS), "poll_attempts_p19700102");
    }
}
