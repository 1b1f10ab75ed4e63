//! The review queue and the audit trail on SQL.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::inbox::write::{inbox_from_row, INBOX_COLUMNS};
use crate::model::*;
use crate::payments::sql::{apply_in, payment_from_row, PAYMENT_COLUMNS};
use crate::review::audit_sql::insert_audit;
use crate::review::{
    outcome_text, poll_now_outcome, AuditFilter, AuditRecord, NewAudit, ReviewFilter, ReviewItem,
};
use crate::Review;
use finality_core::{Kind, Timestamp};

pub(crate) fn prefixed(cols: &str, table: &str) -> String {
    cols.split(", ")
        .map(|c| format!("{table}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `needs_review` payments joined with the transition that put each
/// there (its newest history row).
pub(crate) const QUEUE_FROM: &str = "FROM payments p JOIN status_history h ON h.id = \
     (SELECT MAX(id) FROM status_history WHERE payment_id = p.id) \
     WHERE p.status = 'needs_review'";

pub(crate) const AUDIT_COLUMNS: &str =
    "id, at, actor, role, action, payment_id, detail, outcome, remote_addr";

pub(crate) fn audit_from_row(r: &impl Fields) -> Result<AuditRecord> {
    let t = "audit_log";
    Ok(AuditRecord {
        id: r.int("id", t)?,
        entry: NewAudit {
            at: Timestamp(r.int("at", t)?),
            actor: r.text("actor", t)?,
            role: r.text("role", t)?,
            action: r.text("action", t)?,
            payment_id: r.opt_text("payment_id", t)?,
            detail: r.json("detail", t)?,
            outcome: r.text("outcome", t)?,
            remote_addr: r.opt_text("remote_addr", t)?,
        },
    })
}

#[async_trait::async_trait]
impl<B: Backend> Review for B {
    async fn review_queue(&self, f: &ReviewFilter) -> Result<Vec<ReviewItem>> {
        let sql = format!(
            "SELECT {}, h.reason AS review_reason, h.at AS review_since {} \
               AND (CAST($1 AS TEXT) IS NULL OR p.provider = $1) \
               AND (CAST($2 AS TEXT) IS NULL OR p.kind = $2) \
               AND (CAST($3 AS TEXT) IS NULL OR h.reason = $3) \
               AND (CAST($4 AS BIGINT) IS NULL OR h.at <= $4) \
               AND (CAST($5 AS BIGINT) IS NULL OR h.at > $5 OR (h.at = $5 AND p.id > $6)) \
             ORDER BY h.at, p.id LIMIT $7",
            prefixed(PAYMENT_COLUMNS, "p"),
            QUEUE_FROM
        );
        let (after_at, after_id) = match &f.after {
            Some((t, id)) => (Some(t.0), Some(id.as_str())),
            None => (None, None),
        };
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "reading the review queue")
                .opt_text(f.provider.as_deref())
                .opt_text(f.kind.map(Kind::as_str))
                .opt_text(f.reason.as_deref())
                .opt_int(f.entered_before.map(|t| t.0))
                .opt_int(after_at)
                .opt_text(after_id)
                .int(i64::from(f.limit)),
        )
        .await?
        .iter()
        .map(|r| {
            Ok(ReviewItem {
                payment: payment_from_row(r)?,
                reason: r.opt_text("review_reason", "status_history")?,
                since: Timestamp(r.int("review_since", "status_history")?),
            })
        })
        .collect()
    }

    async fn review_counts(&self) -> Result<Vec<(Option<String>, i64)>> {
        let sql = format!(
            "SELECT h.reason AS reason, COUNT(*) AS n {} GROUP BY h.reason \
             ORDER BY n DESC, CASE WHEN h.reason IS NULL THEN 1 ELSE 0 END, h.reason",
            QUEUE_FROM
        );
        let mut conn = self.read().await?;
        conn.all(stmt(&sql, "counting the review queue by reason"))
            .await?
            .iter()
            .map(|r| {
                Ok((
                    r.opt_text("reason", "status_history")?,
                    r.int("n", "status_history")?,
                ))
            })
            .collect()
    }

    async fn inbox_for_payment(&self, p: &Payment, limit: u32) -> Result<Vec<InboxEvent>> {
        // Two indexed lookups rather than one `OR`, which would scan.
        let sql = format!(
            "SELECT {INBOX_COLUMNS} FROM webhook_inbox WHERE provider = $1 AND provider_ref = $2 \
             AND account = $5 \
             UNION SELECT {INBOX_COLUMNS} FROM webhook_inbox WHERE provider = $1 \
             AND merchant_ref = $3 AND provider_ref IS NULL AND account = $5 ORDER BY id LIMIT $4"
        );
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "reading a payment's webhooks")
                .text(&p.provider)
                .opt_text(p.provider_ref.as_deref())
                .opt_text(p.merchant_ref.as_deref())
                .int(i64::from(limit))
                .text(p.account.as_deref().unwrap_or_default()),
        )
        .await?
        .iter()
        .map(inbox_from_row)
        .collect()
    }

    async fn inbox_in_state(
        &self,
        state: InboxState,
        before_id: Option<i64>,
        limit: u32,
    ) -> Result<Vec<InboxEvent>> {
        let sql = format!(
            "SELECT {INBOX_COLUMNS} FROM webhook_inbox WHERE state = $1 \
             AND (CAST($2 AS BIGINT) IS NULL OR id < $2) ORDER BY id DESC LIMIT $3"
        );
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "listing webhooks by state")
                .text(state.as_str())
                .opt_int(before_id)
                .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(inbox_from_row)
        .collect()
    }

    async fn apply_manual(
        &self,
        report: &Report,
        audit: &NewAudit,
        now: Timestamp,
    ) -> Result<ApplyOutcome> {
        let mut tx = self.begin_write().await?;
        let out = apply_in(&mut *tx, report, now).await?;
        insert_audit(&mut *tx, audit, &outcome_text(&out)).await?;
        tx.commit().await.op("committing a manual status change")?;
        if matches!(out, ApplyOutcome::Applied { .. }) {
            self.wakeups().bump_transitions();
        }
        Ok(out)
    }

    async fn poll_now_manual(&self, id: &str, audit: &NewAudit, now: Timestamp) -> Result<PollNow> {
        let mut tx = self.begin_write().await?;
        let out = crate::poll_queue::sql::poll_now_in(&mut *tx, id, now).await?;
        insert_audit(&mut *tx, audit, poll_now_outcome(out)).await?;
        tx.commit().await.op("committing poll now")?;
        self.wakeups().bump();
        Ok(out)
    }

    async fn audit_append(&self, audit: &NewAudit) -> Result<i64> {
        let mut tx = self.begin_write().await?;
        let id = insert_audit(&mut *tx, audit, &audit.outcome).await?;
        tx.commit()
            .await
            .op("committing a manual action's record")?;
        Ok(id)
    }

    async fn audit_list(&self, f: &AuditFilter) -> Result<Vec<AuditRecord>> {
        let sql = format!(
            "SELECT {AUDIT_COLUMNS} FROM audit_log \
             WHERE (CAST($1 AS TEXT) IS NULL OR actor = $1) \
               AND (CAST($2 AS TEXT) IS NULL OR payment_id = $2) \
               AND (CAST($3 AS BIGINT) IS NULL OR id < $3) \
             ORDER BY id DESC LIMIT $4"
        );
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "reading the audit trail")
                .opt_text(f.actor.as_deref())
                .opt_text(f.payment_id.as_deref())
                .opt_int(f.before_id)
                .int(i64::from(f.limit)),
        )
        .await?
        .iter()
        .map(audit_from_row)
        .collect()
    }
}
