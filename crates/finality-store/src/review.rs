//! What the people who settle payments by hand read and leave behind: the
//! review queue (oldest first, with the reason each payment is there), the
//! webhooks received for one payment, the inbox rows that failed or found
//! no payment, and the audit trail of every manual action.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::inbox::{inbox_from_row, INBOX_COLUMNS};
use crate::model::*;
use crate::payments::{apply_in, payment_from_row, PAYMENT_COLUMNS};
use finality_core::{Kind, Status, Timestamp};
use serde_json::Value;

/// Which payments of the review queue to list, oldest in review first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewFilter {
    pub provider: Option<String>,
    pub kind: Option<Kind>,
    /// The exact reason recorded when the payment entered review (the
    /// reasons come from a few templates, so equal reasons group well).
    pub reason: Option<String>,
    /// Only payments in review since at least this time (an age filter).
    pub entered_before: Option<Timestamp>,
    /// Keyset cursor: the `(since, id)` of the last item of the previous page.
    pub after: Option<(Timestamp, String)>,
    pub limit: u32,
}

/// One payment waiting for a person.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewItem {
    pub payment: Payment,
    /// Why it is in review: the reason of the transition that put it there.
    pub reason: Option<String>,
    /// When it entered review.
    pub since: Timestamp,
}

/// A manual action about to be recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAudit {
    pub at: Timestamp,
    /// The API token's name: who acted, as authenticated (never a name the
    /// caller typed).
    pub actor: String,
    pub role: String,
    /// `resolve`, `poll_now`, `sign_in`, …
    pub action: String,
    pub payment_id: Option<String>,
    /// What was asked (status, reason, note, …).
    pub detail: Value,
    /// What came of it; [`Review::apply_manual`] fills it from the outcome.
    pub outcome: String,
    pub remote_addr: Option<String>,
}

/// A recorded manual action.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    pub id: i64,
    pub entry: NewAudit,
}

/// Which audit records to list, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditFilter {
    pub actor: Option<String>,
    pub payment_id: Option<String>,
    /// Keyset cursor: records with a smaller id than this.
    pub before_id: Option<i64>,
    pub limit: u32,
}

/// The review desk's reads, and the audit trail.
#[async_trait::async_trait]
pub trait Review: Send + Sync {
    /// Payments in `needs_review`, oldest in review first.
    async fn review_queue(&self, f: &ReviewFilter) -> Result<Vec<ReviewItem>>;
    /// How many payments are in review for each reason, most first.
    async fn review_counts(&self) -> Result<Vec<(Option<String>, i64)>>;
    /// Inbox rows naming this payment's provider reference, or naming only
    /// its merchant reference, oldest first (at most `limit`).
    async fn inbox_for_payment(&self, p: &Payment, limit: u32) -> Result<Vec<InboxEvent>>;
    /// Inbox rows in `state`, newest first, below `before_id` when given.
    async fn inbox_in_state(
        &self,
        state: InboxState,
        before_id: Option<i64>,
        limit: u32,
    ) -> Result<Vec<InboxEvent>>;
    /// A person's status change: `apply` and its audit record in one
    /// transaction (the outcome filled in from what `apply` did), so a
    /// settlement never exists without the record of who made it.
    async fn apply_manual(
        &self,
        report: &Report,
        audit: &NewAudit,
        now: Timestamp,
    ) -> Result<ApplyOutcome>;
    /// A person's "poll now", with its audit record in the same
    /// transaction (the outcome filled in from what it did).
    async fn poll_now_manual(&self, id: &str, audit: &NewAudit, now: Timestamp) -> Result<PollNow>;
    /// Record an action that changes no status (a sign-in).
    async fn audit_append(&self, audit: &NewAudit) -> Result<i64>;
    async fn audit_list(&self, f: &AuditFilter) -> Result<Vec<AuditRecord>>;
}

/// What an audit record says came of a status change.
pub fn outcome_text(out: &ApplyOutcome) -> String {
    match out {
        ApplyOutcome::Applied { from, to } => format!("changed from {from} to {to}"),
        ApplyOutcome::Unchanged => "unchanged: it already had that status".into(),
        ApplyOutcome::Ignored { current, reason } => format!("refused: it is {current} ({reason})"),
        ApplyOutcome::NotFound => "refused: no such payment".into(),
    }
}

/// What an audit record says came of a "poll now".
pub fn poll_now_outcome(out: PollNow) -> &'static str {
    match out {
        PollNow::Scheduled => "scheduled",
        PollNow::InFlight => "in flight already",
        PollNow::AlreadyFinal => "refused: already final",
        PollNow::NotFound => "refused: no such payment",
    }
}

fn prefixed(cols: &str, table: &str) -> String {
    cols.split(", ")
        .map(|c| format!("{table}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `needs_review` payments joined with the transition that put each
/// there (its newest history row).
const QUEUE_FROM: &str = "FROM payments p JOIN status_history h ON h.id = \
     (SELECT MAX(id) FROM status_history WHERE payment_id = p.id) \
     WHERE p.status = 'needs_review'";

const AUDIT_COLUMNS: &str = "id, at, actor, role, action, payment_id, detail, outcome, remote_addr";

fn audit_from_row(r: &impl Fields) -> Result<AuditRecord> {
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

async fn insert_audit<C: Conn>(conn: &mut C, a: &NewAudit, outcome: &str) -> Result<i64> {
    let row = conn
        .opt(
            stmt(
                "INSERT INTO audit_log (at, actor, role, action, payment_id, detail, outcome, \
                 remote_addr) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                "recording a manual action",
            )
            .int(a.at.0)
            .text(&a.actor)
            .text(&a.role)
            .text(&a.action)
            .opt_text(a.payment_id.as_deref())
            .json(&a.detail)
            .text(outcome)
            .opt_text(a.remote_addr.as_deref()),
        )
        .await?;
    match row {
        Some(r) => r.int("id", "audit_log"),
        None => Ok(0),
    }
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
             UNION SELECT {INBOX_COLUMNS} FROM webhook_inbox WHERE provider = $1 \
             AND merchant_ref = $3 AND provider_ref IS NULL ORDER BY id LIMIT $4"
        );
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "reading a payment's webhooks")
                .text(&p.provider)
                .opt_text(p.provider_ref.as_deref())
                .opt_text(p.merchant_ref.as_deref())
                .int(i64::from(limit)),
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
        let out = crate::poll_queue::poll_now_in(&mut *tx, id, now).await?;
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

/// The in-memory store's version of the queue's order and filters.
pub(crate) fn queue_matches(f: &ReviewFilter, item: &ReviewItem) -> bool {
    item.payment.status == Status::NeedsReview
        && f.provider
            .as_ref()
            .is_none_or(|v| &item.payment.provider == v)
        && f.kind.is_none_or(|k| item.payment.kind == k)
        && f.reason
            .as_ref()
            .is_none_or(|r| item.reason.as_ref() == Some(r))
        && f.entered_before.is_none_or(|t| item.since <= t)
        && f.after.as_ref().is_none_or(|(t, id)| {
            item.since > *t || (item.since == *t && item.payment.id.as_str() > id.as_str())
        })
}
