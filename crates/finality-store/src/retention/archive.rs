//! Archiving settled payments (each with its history, calls and webhooks)
//! and restoring archived rows, re-checked under lock so a payment that
//! reopened in between is never taken.

use crate::driver::Backend;
use crate::driver::{placeholders, stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::retention::{
    bind_owned, col_list, row_json, tombstone, values, with_texts, PaymentBundle, TableSpec,
    Tombstone, AUDIT_LOG, PAYMENTS, POLL_ATTEMPTS, STATUS_HISTORY, WEBHOOK_INBOX,
};
use finality_core::Timestamp;
use serde_json::Value;

/// A final payment retention may take: final (`Status::is_final`) before
/// `$1`, no poll job, no event left in the outbox (events are pruned
/// first, after delivery).
pub(crate) fn archivable() -> String {
    format!(
        "p.finalized_at IS NOT NULL AND p.finalized_at < $1 \
         AND p.status IN {} \
         AND NOT EXISTS (SELECT 1 FROM poll_jobs j WHERE j.payment_id = p.id) \
         AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payment_id = p.id) \
         AND NOT EXISTS (SELECT 1 FROM payment_flags f WHERE f.payment_id = p.id \
           AND f.closed_at IS NULL)",
        finality_core::Status::FINAL_SQL
    )
}

pub(crate) async fn archivable_payments<B: Backend>(
    store: &B,
    before: Timestamp,
    after: Option<(i64, String)>,
    limit: u32,
) -> Result<Vec<PaymentBundle>> {
    let (after_at, after_id) = after.unwrap_or((i64::MIN, String::new()));
    let sql = format!(
        "SELECT {} FROM payments p WHERE {} \
         AND (p.finalized_at > $2 OR (p.finalized_at = $2 AND p.id > $3)) \
         ORDER BY p.finalized_at, p.id LIMIT $4",
        col_list(&PAYMENTS, "p."),
        archivable()
    );
    let mut conn = store.read().await?;
    let rows = conn
        .all(
            stmt(&sql, "reading payments for archiving")
                .int(before.0)
                .int(after_at)
                .text(&after_id)
                .int(i64::from(limit)),
        )
        .await?;
    let mut out: Vec<PaymentBundle> = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push(PaymentBundle {
            id: r.text("id", "payments")?,
            finalized_at: r.int("finalized_at", "payments")?,
            updated_at: r.int("updated_at", "payments")?,
            payment: row_json(r, &PAYMENTS)?,
            history: Vec::new(),
            attempts: Vec::new(),
            audit: Vec::new(),
        });
    }
    if out.is_empty() {
        return Ok(out);
    }
    let ids: Vec<&str> = out.iter().map(|b| b.id.as_str()).collect();
    let list = placeholders(1, ids.len());
    let mut related = std::collections::HashMap::new();
    for (spec, order) in [
        (&STATUS_HISTORY, "payment_id, id"),
        (&POLL_ATTEMPTS, "payment_id, id"),
        (&AUDIT_LOG, "payment_id, id"),
    ] {
        let sql = format!(
            "SELECT {} FROM {} WHERE payment_id IN ({list}) ORDER BY {order}",
            col_list(spec, ""),
            spec.name
        );
        let rows = conn
            .all(with_texts(
                stmt(&sql, "reading an archived payment's rows"),
                &ids,
            ))
            .await?;
        for r in &rows {
            let pid = r.text("payment_id", spec.name)?;
            related
                .entry((spec.name, pid))
                .or_insert_with(Vec::new)
                .push(row_json(r, spec)?);
        }
    }
    for b in &mut out {
        let mut take = |t: &'static str| related.remove(&(t, b.id.clone())).unwrap_or_default();
        b.history = take("status_history");
        b.attempts = take("poll_attempts");
        b.audit = take("audit_log");
    }
    Ok(out)
}

pub(crate) async fn archive_payments<B: Backend>(
    store: &B,
    payments: &[(&PaymentBundle, String)],
    before: Timestamp,
    now: Timestamp,
) -> Result<Vec<String>> {
    let mut gone = Vec::new();
    let mut tx = store.begin_write().await?;
    for chunk in payments.chunks(200) {
        let ids: Vec<&str> = chunk.iter().map(|(b, _)| b.id.as_str()).collect();
        let list = placeholders(2, ids.len());
        // Locked and re-checked: a payment reopened or changed since it
        // was read stays (its archived copy is only a copy).
        let sql = format!(
            "SELECT p.id, p.provider, p.account, p.provider_ref, p.merchant_ref, p.status, \
             p.finalized_at, p.updated_at FROM payments p \
             WHERE p.id IN ({list}) AND {} ORDER BY p.id{}",
            archivable(),
            <B::Conn as Conn>::SQL.row_lock
        );
        let rows = tx
            .all(with_texts(
                stmt(&sql, "locking payments to archive").int(before.0),
                &ids,
            ))
            .await?;
        // What each payment's other rows are now (count, newest id):
        // they must be what the file holds.
        let mut now_rows: std::collections::HashMap<(&str, String), (i64, i64)> =
            std::collections::HashMap::new();
        for spec in [&STATUS_HISTORY, &POLL_ATTEMPTS, &AUDIT_LOG] {
            let sql = format!(
                "SELECT payment_id, COUNT(*) AS n, MAX(id) AS m FROM {} \
                 WHERE payment_id IN ({}) GROUP BY payment_id",
                spec.name,
                placeholders(1, ids.len())
            );
            for r in tx
                .all(with_texts(
                    stmt(&sql, "checking an archived payment's rows"),
                    &ids,
                ))
                .await?
            {
                now_rows.insert(
                    (spec.name, r.text("payment_id", spec.name)?),
                    (r.int("n", spec.name)?, r.int("m", spec.name)?),
                );
            }
        }
        let mut take: Vec<(String, &str, Locked)> = Vec::new();
        for r in &rows {
            let id = r.text("id", "payments")?;
            let Some((b, file)) = chunk.iter().find(|(b, _)| b.id == id) else {
                continue;
            };
            if r.int("updated_at", "payments")? != b.updated_at {
                continue;
            }
            let unchanged = [
                (&STATUS_HISTORY, &b.history),
                (&POLL_ATTEMPTS, &b.attempts),
                (&AUDIT_LOG, &b.audit),
            ]
            .iter()
            .all(|(spec, read)| {
                let was = (!read.is_empty()).then(|| {
                    let max = read
                        .iter()
                        .filter_map(|v| v.get("id").and_then(Value::as_i64))
                        .max()
                        .unwrap_or(0);
                    (read.len() as i64, max)
                });
                was == now_rows.get(&(spec.name, id.clone())).copied()
            });
            if !unchanged {
                continue;
            }
            take.push((
                id,
                file.as_str(),
                Locked {
                    provider: r.text("provider", "payments")?,
                    account: r.account("account", "payments")?,
                    provider_ref: r.opt_text("provider_ref", "payments")?,
                    merchant_ref: r.opt_text("merchant_ref", "payments")?,
                    status: r.text("status", "payments")?,
                    finalized_at: r.int("finalized_at", "payments")?,
                },
            ));
        }
        if take.is_empty() {
            continue;
        }
        let ids: Vec<&str> = take.iter().map(|(id, _, _)| id.as_str()).collect();
        // Exactly the rows in the file, by id: a row committed since
        // the check (an audit row or a provider call, which wait on no
        // lock of the payment's) stays, with its payment id.
        for spec in [&AUDIT_LOG, &POLL_ATTEMPTS, &STATUS_HISTORY] {
            let row_ids: Vec<i64> = chunk
                .iter()
                .filter(|(b, _)| ids.contains(&b.id.as_str()))
                .flat_map(|(b, _)| b.rows_of(spec))
                .filter_map(|v| v.get("id").and_then(Value::as_i64))
                .collect();
            for part in row_ids.chunks(500) {
                let sql = format!(
                    "DELETE FROM {} WHERE id IN ({})",
                    spec.name,
                    placeholders(1, part.len())
                );
                let mut q = stmt(&sql, "deleting archived payments' rows");
                for id in part {
                    q = q.int(*id);
                }
                tx.run(q).await?;
            }
        }
        let sql = format!(
            "DELETE FROM payments WHERE id IN ({})",
            placeholders(1, ids.len())
        );
        tx.run(with_texts(stmt(&sql, "deleting archived payments"), &ids))
            .await?;
        for (id, file, p) in &take {
            tx.run(
                stmt(
                    "INSERT INTO archived_payments (id, provider, provider_ref, merchant_ref, \
                     status, finalized_at, archived_at, archive, account) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO UPDATE \
                     SET archived_at = $7, archive = $8",
                    "leaving a tombstone",
                )
                .text(id)
                .text(&p.provider)
                .opt_text(p.provider_ref.as_deref())
                .opt_text(p.merchant_ref.as_deref())
                .text(&p.status)
                .int(p.finalized_at)
                .int(now.0)
                .text(file)
                .text(p.account.as_deref().unwrap_or_default()),
            )
            .await?;
        }
        gone.extend(take.into_iter().map(|(id, _, _)| id));
    }
    tx.commit().await.op("committing archived payments")?;
    Ok(gone)
}

pub(crate) async fn archived_payment<B: Backend>(store: &B, id: &str) -> Result<Option<Tombstone>> {
    let mut conn = store.read().await?;
    conn.opt(
        stmt(
            "SELECT id, provider, provider_ref, status, finalized_at, archived_at, archive \
             FROM archived_payments WHERE id = $1",
            "reading an archived payment",
        )
        .text(id),
    )
    .await?
    .as_ref()
    .map(tombstone)
    .transpose()
}

pub(crate) async fn archived_by_ref<B: Backend>(
    store: &B,
    scope: &finality_core::Scope,
    provider_ref: &str,
) -> Result<Option<Tombstone>> {
    let mut conn = store.read().await?;
    crate::payments::by_ref::tombstone_row(&mut *conn, scope, provider_ref)
        .await?
        .as_ref()
        .map(tombstone)
        .transpose()
}

pub(crate) async fn restore_rows<B: Backend>(
    store: &B,
    table: &TableSpec,
    rows: &[Value],
) -> Result<u64> {
    let cols = col_list(table, "");
    let key = table.cols[0].0;
    // A webhook whose row stayed when its body went gets the body back;
    // every other row already present is kept as it is.
    let on_conflict = if table.name == WEBHOOK_INBOX.name {
        "DO UPDATE SET raw_body = excluded.raw_body, headers = excluded.headers, \
         body_dropped_at = NULL \
         WHERE webhook_inbox.body_dropped_at IS NOT NULL AND excluded.body_dropped_at IS NULL"
    } else {
        "DO NOTHING"
    };
    // Any other unique key already taken (a redelivery stored as new
    // after its row went, a reference registered again) keeps the row
    // that is there.
    let target = if table.name == WEBHOOK_INBOX.name {
        format!("({key})")
    } else {
        String::new()
    };
    let sql = format!(
        "INSERT INTO {} ({cols}) VALUES ({}) ON CONFLICT {target} {on_conflict}",
        table.name,
        placeholders(1, table.cols.len())
    );
    let mut n = 0;
    let mut tx = store.begin_write().await?;
    for row in rows {
        let vals = values(table, row)?;
        // A history row needs its payment (a foreign key): one whose
        // reference another payment took meanwhile was not restored,
        // and its history is not either.
        if table.name == STATUS_HISTORY.name {
            let pid = row.get("payment_id").and_then(Value::as_str).unwrap_or("");
            let there = tx
                .opt(
                    stmt(
                        "SELECT id FROM payments WHERE id = $1",
                        "checking a restored row's payment",
                    )
                    .text(pid),
                )
                .await?;
            if there.is_none() {
                continue;
            }
        }
        if table.name == WEBHOOK_INBOX.name {
            let (Some(p), Some(e), Some(id)) = (
                row.get("provider").and_then(Value::as_str),
                row.get("event_id").and_then(Value::as_str),
                row.get("id").and_then(Value::as_i64),
            ) else {
                continue;
            };
            let taken = tx
                .opt(
                    stmt(
                        "SELECT id FROM webhook_inbox WHERE provider = $1 AND event_id = $2 \
                         AND id <> $3 AND account = $4",
                        "checking a restored webhook's key",
                    )
                    .text(p)
                    .text(e)
                    .int(id)
                    .text(
                        row.get("account")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                    ),
                )
                .await?;
            if taken.is_some() {
                continue;
            }
        }
        n += tx
            .run(bind_owned(stmt(&sql, "restoring archived rows"), &vals))
            .await?;
        if table.name == "payments" {
            if let Some(id) = row.get("id").and_then(Value::as_str) {
                tx.run(
                    stmt(
                        "DELETE FROM archived_payments WHERE id = $1 \
                         AND EXISTS (SELECT 1 FROM payments WHERE id = $1)",
                        "removing a restored payment's tombstone",
                    )
                    .text(id),
                )
                .await?;
            }
        }
    }
    tx.commit().await.op("committing restored rows")?;
    Ok(n)
}

/// A payment as locked for archiving: what its tombstone keeps.
struct Locked {
    provider: String,
    account: Option<String>,
    provider_ref: Option<String>,
    merchant_ref: Option<String>,
    status: String,
    finalized_at: i64,
}
