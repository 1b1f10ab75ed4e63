//! What the people who settle payments by hand read and leave behind: the
//! review queue (oldest first, with the reason each payment is there), the
//! webhooks received for one payment, the inbox rows that failed or found
//! no payment, and the audit trail of every manual action.

pub(crate) mod audit_sql;
mod memory;
pub(crate) mod sql;

use crate::error::Result;
use crate::model::*;
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
