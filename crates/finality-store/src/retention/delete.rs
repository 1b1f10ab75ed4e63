//! Deleting settled rows in id order behind per-kind cursors, re-checked
//! in the delete itself, and giving the space back.

use crate::driver::Backend;
use crate::driver::{placeholders, stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::retention::{col_list, life_rows, LifeRow, RowKind, SETTLED_INBOX};
use finality_core::Timestamp;

pub(crate) async fn life_page<B: Backend>(
    store: &B,
    kind: RowKind,
    after: i64,
    limit: u32,
) -> Result<Vec<LifeRow>> {
    let t = kind.spec();
    let from = crate::retention::partitions::row_table(store, kind).await?;
    let sql = format!(
        "SELECT {} FROM {from} WHERE id > $1 AND {} ORDER BY id LIMIT $2",
        col_list(t, ""),
        kind.filter()
    );
    let mut conn = store.read().await?;
    let rows = conn
        .all(
            stmt(&sql, "reading rows for retention")
                .int(after)
                .int(i64::from(limit)),
        )
        .await?;
    life_rows(&rows, kind)
}

pub(crate) async fn life_remove<B: Backend>(
    store: &B,
    kind: RowKind,
    rows: &[(i64, Option<String>)],
    before: Timestamp,
    now: Timestamp,
) -> Result<u64> {
    if rows.is_empty() {
        return Ok(0);
    }
    let from = crate::retention::partitions::row_table(store, kind).await?;
    // Webhook rows by the state they were read in; others all at once.
    let mut groups: std::collections::BTreeMap<Option<&str>, Vec<i64>> =
        std::collections::BTreeMap::new();
    for (id, state) in rows {
        let key = if kind == RowKind::Webhooks {
            state.as_deref()
        } else {
            None
        };
        groups.entry(key).or_default().push(*id);
    }
    let mut total = 0;
    // The body's replacement: empty (the column is NOT NULL).
    let empty: &[u8] = &[];
    let mut tx = store.begin_write().await?;
    for (state, ids) in &groups {
        for chunk in ids.chunks(500) {
            // The parameters before the ids: the cut-off, then the
            // empty body and the time (bodies) or the state read.
            let (sql, op, first_id) = match kind {
                RowKind::WebhookBodies => (
                    "UPDATE webhook_inbox SET raw_body = $2, headers = '{}', \
                     body_dropped_at = $3 WHERE body_dropped_at IS NULL \
                     AND state <> 'received' AND received_at < $1"
                        .to_string(),
                    "dropping webhook bodies past retention",
                    4,
                ),
                RowKind::Webhooks => (
                    format!(
                        "DELETE FROM webhook_inbox WHERE {SETTLED_INBOX} AND state = $2 \
                         AND received_at < $1"
                    ),
                    "deleting webhooks past retention",
                    3,
                ),
                _ => (
                    format!("DELETE FROM {from} WHERE {} < $1", kind.time_col()),
                    "deleting rows past retention",
                    2,
                ),
            };
            let sql = format!("{sql} AND id IN ({})", placeholders(first_id, chunk.len()));
            let mut q = stmt(&sql, op).int(before.0);
            q = match kind {
                RowKind::WebhookBodies => q.bytes(empty).int(now.0),
                RowKind::Webhooks => q.opt_text(*state),
                _ => q,
            };
            for id in chunk {
                q = q.int(*id);
            }
            total += tx.run(q).await?;
        }
    }
    tx.commit().await.op("committing retention")?;
    Ok(total)
}

pub(crate) async fn hold_day<B: Backend>(
    store: &B,
    kind: &str,
    day: &str,
    until: Timestamp,
) -> Result<()> {
    let mut conn = store.read().await?;
    conn.run(
        stmt(
            "INSERT INTO archive_holds (kind, day, until) VALUES ($1, $2, $3) \
             ON CONFLICT (kind, day) DO UPDATE SET until = $3",
            "holding a restored day",
        )
        .text(kind)
        .text(day)
        .int(until.0),
    )
    .await?;
    Ok(())
}

pub(crate) async fn held_days<B: Backend>(
    store: &B,
    kind: &str,
    now: Timestamp,
) -> Result<Vec<String>> {
    let mut conn = store.read().await?;
    conn.all(
        stmt(
            "SELECT day FROM archive_holds WHERE kind = $1 AND until > $2 ORDER BY day",
            "reading held days",
        )
        .text(kind)
        .int(now.0),
    )
    .await?
    .iter()
    .map(|r| r.text("day", "archive_holds"))
    .collect()
}

pub(crate) async fn life_cursor<B: Backend>(store: &B, kind: RowKind) -> Result<i64> {
    let mut conn = store.read().await?;
    let r = conn
        .opt(
            stmt(
                "SELECT after_id FROM lifecycle_cursors WHERE kind = $1",
                "reading a retention cursor",
            )
            .text(kind.as_str()),
        )
        .await?;
    r.map_or(Ok(0), |r| r.int("after_id", "lifecycle_cursors"))
}

pub(crate) async fn life_cursor_move<B: Backend>(
    store: &B,
    kind: RowKind,
    from: i64,
    to: i64,
) -> Result<bool> {
    let mut conn = store.read().await?;
    conn.run(
        stmt(
            "INSERT INTO lifecycle_cursors (kind, after_id) VALUES ($1, 0) \
             ON CONFLICT (kind) DO NOTHING",
            "creating a retention cursor",
        )
        .text(kind.as_str()),
    )
    .await?;
    let n = conn
        .run(
            stmt(
                "UPDATE lifecycle_cursors SET after_id = $3 WHERE kind = $1 AND after_id = $2",
                "moving a retention cursor",
            )
            .text(kind.as_str())
            .int(from)
            .int(to),
        )
        .await?;
    Ok(n == 1)
}

pub(crate) async fn life_cursor_rewind<B: Backend>(
    store: &B,
    kind: RowKind,
    to: i64,
) -> Result<()> {
    let mut conn = store.read().await?;
    conn.run(
        stmt(
            "UPDATE lifecycle_cursors SET after_id = $2 WHERE kind = $1 AND after_id > $2",
            "rewinding a retention cursor",
        )
        .text(kind.as_str())
        .int(to),
    )
    .await?;
    Ok(())
}

pub(crate) async fn reclaim_space<B: Backend>(store: &B) -> Result<()> {
    if let Some(sql) = <B::Conn as Conn>::SQL.reclaim_space {
        let mut conn = store.read().await?;
        conn.run(stmt(sql, "giving freed pages back")).await?;
    }
    Ok(())
}
