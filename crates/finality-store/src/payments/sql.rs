//! Payments on SQL: registration, reads, and every status change outside
//! polls, through the one transition writer.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::model::*;
use crate::payments::by_ref;
use crate::payments::decide::decide_report;
use crate::transition::write_changes;
use crate::PaymentStore;
use finality_core::{Kind, Scope, Status, Timestamp};

pub(crate) const PAYMENT_COLUMNS: &str =
    "id, provider, provider_ref, merchant_ref, account, kind, \
     amount, currency, metadata, status, status_source, created_at, updated_at, finalized_at";

pub(crate) fn payment_from_row(r: &impl Fields) -> Result<Payment> {
    let t = "payments";
    Ok(Payment {
        id: r.text("id", t)?,
        provider: r.text("provider", t)?,
        provider_ref: r.opt_text("provider_ref", t)?,
        merchant_ref: r.opt_text("merchant_ref", t)?,
        account: r.account("account", t)?,
        kind: r.parsed("kind", t)?,
        amount: r.int("amount", t)?,
        currency: r.text("currency", t)?,
        metadata: r.json("metadata", t)?,
        status: r.parsed("status", t)?,
        status_source: r.opt_parsed("status_source", t)?,
        created_at: Timestamp(r.int("created_at", t)?),
        updated_at: Timestamp(r.int("updated_at", t)?),
        finalized_at: r.opt_int("finalized_at", t)?.map(Timestamp),
    })
}

pub(crate) fn history_from_row(r: &impl Fields) -> Result<HistoryEntry> {
    let t = "status_history";
    Ok(HistoryEntry {
        from: r.opt_parsed("from_status", t)?,
        to: r.parsed("to_status", t)?,
        source: r.parsed("source", t)?,
        event_id: r.opt_text("event_id", t)?,
        reason: r.opt_text("reason", t)?,
        actor: r.opt_text("actor", t)?,
        observed_at: Timestamp(r.int("observed_at", t)?),
        at: Timestamp(r.int("at", t)?),
    })
}

pub(crate) fn attempt_from_row(r: &impl Fields) -> Result<AttemptRecord> {
    let t = "poll_attempts";
    Ok(AttemptRecord {
        id: r.int("id", t)?,
        attempt: NewAttempt {
            payment_id: r.text("payment_id", t)?,
            provider: r.text("provider", t)?,
            worker: r.text("worker", t)?,
            started_at: Timestamp(r.int("started_at", t)?),
            latency_ms: r.int("latency_ms", t)?,
            outcome: r.text("outcome", t)?,
            provider_status: r.opt_text("provider_status", t)?,
            error_class: r.opt_text("error_class", t)?,
            error: r.opt_text("error", t)?,
        },
    })
}

pub(crate) async fn fetch_payment<C: Conn>(conn: &mut C, id: &str) -> Result<Option<Payment>> {
    let sql = format!("SELECT {PAYMENT_COLUMNS} FROM payments WHERE id = $1");
    conn.opt(stmt(&sql, "reading a payment").text(id))
        .await?
        .as_ref()
        .map(payment_from_row)
        .transpose()
}

/// Lock the payment row for the rest of the transaction.
pub(crate) async fn lock_payment<C: Conn>(
    conn: &mut C,
    id: &str,
) -> Result<Option<(Status, Kind)>> {
    let Some(r) = conn
        .opt(stmt(C::SQL.lock_payment, "locking a payment").text(id))
        .await?
    else {
        return Ok(None);
    };
    Ok(Some((
        r.parsed("status", "payments")?,
        r.parsed("kind", "payments")?,
    )))
}

/// Register a payment inside the caller's own transaction: the payment and
/// its first poll commit or roll back with the caller's data.
pub(crate) async fn register_in<C: Conn>(
    conn: &mut C,
    p: &NewPayment,
    now: Timestamp,
    first_poll_at: Timestamp,
) -> Result<Registered> {
    let provider_ref = p.provider_ref.as_ref().map(|r| r.as_str());
    let merchant_ref = p.merchant_ref.as_ref().map(|r| r.as_str());
    let inserted = conn
        .run(
            stmt(
                "INSERT INTO payments (id, provider, provider_ref, merchant_ref, kind, amount, \
                 currency, metadata, status, created_at, updated_at, account) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $9, $10) \
                 ON CONFLICT DO NOTHING",
                "registering a payment",
            )
            .text(p.id.as_str())
            .text(&p.provider)
            .opt_text(provider_ref)
            .opt_text(merchant_ref)
            .text(p.kind.as_str())
            .int(p.amount.minor)
            .text(p.amount.currency.as_str())
            .json(&p.metadata)
            .int(now.0)
            .text(p.account.as_deref().unwrap_or_default()),
        )
        .await?;
    let scope = Scope::new(p.provider.as_str(), p.account.as_deref());
    if inserted == 1 {
        conn.run(
            stmt(
                "INSERT INTO poll_jobs (payment_id, provider, provider_ref, merchant_ref, kind, \
                 registered_at, next_poll_at, account) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                "scheduling the first poll",
            )
            .text(p.id.as_str())
            .text(&p.provider)
            .opt_text(provider_ref)
            .opt_text(merchant_ref)
            .text(p.kind.as_str())
            .int(now.0)
            .int(first_poll_at.0)
            .text(p.account.as_deref().unwrap_or_default()),
        )
        .await?;
        // Webhooks that beat the registration are applied now.
        conn.run(
            stmt(
                "UPDATE webhook_inbox SET state = 'received', next_attempt_at = $3 \
                 WHERE provider = $1 AND state = 'orphaned' \
                 AND (provider_ref = $2 OR merchant_ref = $4) AND account = $5",
                "handing orphaned webhooks to processing",
            )
            .text(&p.provider)
            .opt_text(provider_ref)
            .int(now.0)
            .opt_text(merchant_ref)
            .text(scope.account_key()),
        )
        .await?;
        if let Some(sql) = C::SQL.notify {
            conn.run(stmt(sql, "notifying workers")).await?;
        }
        return Ok(Registered::Created(Payment::pending(p, now)));
    }
    match fetch_payment(conn, p.id.as_str()).await? {
        Some(existing) if existing.same_body(p) => Ok(Registered::Existing(existing)),
        Some(existing) => Ok(Registered::Conflict(existing)),
        None => {
            let (other_id, other_ref) = by_ref::holder(conn, &scope, provider_ref, merchant_ref)
                .await?
                .unwrap_or_default();
            let field = if provider_ref.is_some() && other_ref.as_deref() == provider_ref {
                "provider_ref"
            } else {
                "merchant_ref"
            };
            Ok(Registered::RefTaken { other_id, field })
        }
    }
}

/// `apply` inside an open transaction.
pub(crate) async fn apply_in<C: Conn>(
    conn: &mut C,
    r: &Report,
    now: Timestamp,
) -> Result<ApplyOutcome> {
    let Some((current, kind)) = lock_payment(conn, &r.payment_id).await? else {
        return Ok(ApplyOutcome::NotFound);
    };
    let (out, change) = decide_report(r, kind, current, now);
    if let Some(change) = change {
        write_changes(conn, &[change]).await?;
    }
    Ok(out)
}

#[async_trait::async_trait]
impl<B: Backend> PaymentStore for B {
    async fn register(
        &self,
        p: &NewPayment,
        now: Timestamp,
        first_poll_at: Timestamp,
    ) -> Result<Registered> {
        let mut tx = self.begin_write().await?;
        let out = register_in(&mut *tx, p, now, first_poll_at).await?;
        tx.commit().await.op("committing a registration")?;
        if matches!(out, Registered::Created(_)) {
            self.wakeups().bump();
        }
        Ok(out)
    }

    async fn apply(&self, report: &Report, now: Timestamp) -> Result<ApplyOutcome> {
        let mut tx = self.begin_write().await?;
        let out = apply_in(&mut *tx, report, now).await?;
        tx.commit().await.op("committing a status change")?;
        if matches!(out, ApplyOutcome::Applied { .. }) {
            self.wakeups().bump_transitions();
        }
        Ok(out)
    }

    async fn get(&self, id: &str) -> Result<Option<PaymentView>> {
        let mut conn = self.read().await?;
        // The payment and its counted pieces in one read.
        let sql = format!("SELECT {PAYMENT_COLUMNS}, pieces FROM payments WHERE id = $1");
        let Some(row) = conn.opt(stmt(&sql, "reading a payment").text(id)).await? else {
            return Ok(None);
        };
        let payment = payment_from_row(&row)?;
        let pieces =
            crate::amounts::from_text(row.opt_text("pieces", "payments")?.as_deref(), "payments")?;
        let t = "poll_jobs";
        let poll = conn
            .opt(
                stmt(
                    "SELECT attempts, errors, next_poll_at, locked_by, last_error FROM poll_jobs \
                     WHERE payment_id = $1",
                    "reading a poll job",
                )
                .text(id),
            )
            .await?
            .map(|r| -> Result<PollState> {
                Ok(PollState {
                    attempts: r.count("attempts", t)?,
                    errors: r.count("errors", t)?,
                    next_poll_at: r.opt_int("next_poll_at", t)?.map(Timestamp),
                    locked_by: r.opt_text("locked_by", t)?,
                    last_error: r.opt_text("last_error", t)?,
                })
            })
            .transpose()?;
        let history = conn
            .all(
                stmt(
                    "SELECT from_status, to_status, source, event_id, reason, actor, observed_at, at \
                     FROM status_history WHERE payment_id = $1 ORDER BY id",
                    "reading status history",
                )
                .text(id),
            )
            .await?
            .iter()
            .map(history_from_row)
            .collect::<Result<Vec<_>>>()?;
        let flags = crate::flags::sql::flags_of_in(&mut *conn, id).await?;
        Ok(Some(PaymentView {
            payment,
            poll,
            history,
            pieces,
            flags,
        }))
    }

    async fn list(&self, f: &ListFilter) -> Result<Vec<Payment>> {
        let sql = format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments \
             WHERE (CAST($1 AS TEXT) IS NULL OR status = $1) \
               AND (CAST($2 AS TEXT) IS NULL OR provider = $2) \
               AND (CAST($3 AS TEXT) IS NULL OR id > $3) \
             ORDER BY id LIMIT $4"
        );
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "listing payments")
                .opt_text(f.status.map(Status::as_str))
                .opt_text(f.provider.as_deref())
                .opt_text(f.after_id.as_deref())
                .int(i64::from(f.limit)),
        )
        .await?
        .iter()
        .map(payment_from_row)
        .collect()
    }

    async fn attempts(&self, id: &str) -> Result<Vec<AttemptRecord>> {
        let mut conn = self.read().await?;
        conn.all(
            stmt(
                "SELECT id, payment_id, provider, worker, started_at, latency_ms, outcome, \
                 provider_status, error_class, error FROM poll_attempts WHERE payment_id = $1 \
                 ORDER BY id",
                "reading provider calls",
            )
            .text(id),
        )
        .await?
        .iter()
        .map(attempt_from_row)
        .collect()
    }

    async fn status_counts(&self) -> Result<Vec<(Status, i64)>> {
        let mut conn = self.read().await?;
        conn.all(stmt(
            "SELECT status, COUNT(*) AS n FROM payments GROUP BY status ORDER BY status",
            "counting payments by status",
        ))
        .await?
        .iter()
        .map(|r| Ok((r.parsed("status", "payments")?, r.int("n", "payments")?)))
        .collect()
    }

    async fn newest_registration(&self, provider: &str) -> Result<Option<Timestamp>> {
        let mut conn = self.read().await?;
        // The created_at index read backwards, stopping at the first row of
        // this provider: the newest payments are where it starts.
        let row = conn
            .opt(
                stmt(
                    "SELECT created_at FROM payments WHERE provider = $1 \
                     ORDER BY created_at DESC LIMIT 1",
                    "finding the newest registration",
                )
                .text(provider),
            )
            .await?;
        row.map(|r| Ok(Timestamp(r.int("created_at", "payments")?)))
            .transpose()
    }

    async fn stats_rows(&self, since: Timestamp) -> Result<Vec<crate::stats::StatsRow>> {
        let mut conn = self.read().await?;
        let t = "payments";
        conn.all(
            stmt(
                // Calls from a day before the payment on: PostgreSQL
                // skips the day partitions before it.
                "SELECT p.provider, p.account, p.status, p.status_source, p.created_at, p.finalized_at, \
                 (SELECT COUNT(*) FROM poll_attempts a WHERE a.payment_id = p.id \
                  AND a.started_at >= p.created_at - 86400000) AS calls \
                 FROM payments p WHERE p.created_at >= $1",
                "reading payments for statistics",
            )
            .int(since.0),
        )
        .await?
        .iter()
        .map(|r| {
            Ok(crate::stats::StatsRow {
                provider: r.text("provider", t)?,
                account: r.account("account", t)?,
                status: r.parsed("status", t)?,
                source: r.opt_parsed("status_source", t)?,
                created_at: Timestamp(r.int("created_at", t)?),
                finalized_at: r.opt_int("finalized_at", t)?.map(Timestamp),
                calls: r.int("calls", t)?,
            })
        })
        .collect()
    }

    async fn error_counts(&self, since: Timestamp) -> Result<Vec<crate::stats::ErrorCount>> {
        let mut conn = self.read().await?;
        let t = "poll_attempts";
        conn.all(
            stmt(
                "SELECT p.provider, p.account, a.error_class, COUNT(*) AS n FROM payments p \
                 JOIN poll_attempts a ON a.payment_id = p.id \
                 WHERE p.created_at >= $1 AND a.error_class IS NOT NULL \
                 AND a.started_at >= $1 - 86400000 \
                 GROUP BY p.provider, p.account, a.error_class \
                 ORDER BY p.provider, p.account, a.error_class",
                "counting provider errors",
            )
            .int(since.0),
        )
        .await?
        .iter()
        .map(|r| {
            Ok(crate::stats::ErrorCount {
                provider: r.text("provider", t)?,
                account: r.account("account", t)?,
                class: r.text("error_class", t)?,
                n: r.int("n", t)?,
            })
        })
        .collect()
    }

    async fn find_by_ref(&self, scope: &Scope, provider_ref: &str) -> Result<Option<String>> {
        let mut conn = self.read().await?;
        by_ref::by_either_ref(&mut *conn, scope, provider_ref).await
    }
}

/// Record the provider's id on a payment (and its poll job) that had none.
pub(crate) async fn write_provider_ref<C: Conn>(
    conn: &mut C,
    id: &str,
    provider_ref: &str,
) -> Result<()> {
    for sql in [
        "UPDATE payments SET provider_ref = $2 WHERE id = $1 AND provider_ref IS NULL",
        "UPDATE poll_jobs SET provider_ref = $2 WHERE payment_id = $1 AND provider_ref IS NULL",
    ] {
        conn.run(
            stmt(sql, "recording a provider reference")
                .text(id)
                .text(provider_ref),
        )
        .await?;
    }
    Ok(())
}

/// Register a payment inside the caller's own PostgreSQL transaction: the
/// payment and its first poll commit or roll back with the caller's data.
pub async fn register_in_pg(
    conn: &mut sqlx::PgConnection,
    p: &NewPayment,
    now: Timestamp,
    first_poll_at: Timestamp,
) -> Result<Registered> {
    register_in(conn, p, now, first_poll_at).await
}

/// [`register_in_pg`] on SQLite.
pub async fn register_in_sqlite(
    conn: &mut sqlx::SqliteConnection,
    p: &NewPayment,
    now: Timestamp,
    first_poll_at: Timestamp,
) -> Result<Registered> {
    register_in(conn, p, now, first_poll_at).await
}

/// [`register_in_pg`] on MySQL or MariaDB (the connection must come from
/// a pool built with `finality_store::mysql::pool_options`).
pub async fn register_in_mysql(
    conn: &mut sqlx::MySqlConnection,
    p: &NewPayment,
    now: Timestamp,
    first_poll_at: Timestamp,
) -> Result<Registered> {
    register_in(conn, p, now, first_poll_at).await
}
