//! Webhook rows into the inbox, and the inbox processor's write that also
//! numbers its events where the backend can do it in one statement.

use super::{stmt, Conn, Writes};
use crate::error::Result;
use crate::model::{InboxState, NewInboxEvent};
use finality_core::Timestamp;

/// What [`InboxRows::write_numbered`] did.
pub enum NumberedWrite<R> {
    /// Nothing: the backend has no such statement; the caller writes the
    /// changes and the outcomes, then numbers, step by step.
    NotHere,
    /// Everything written and the new events numbered: their rows (the
    /// event's columns plus its payment's `provider` and `created_at`).
    Numbered(Vec<R>),
    /// Everything written, but the events were left without positions: an
    /// earlier change of one of these payments waits unnumbered, and its
    /// event must come first, so the caller numbers them all, in id order,
    /// in this transaction.
    Unnumbered,
}

/// Webhook rows into the inbox inside the caller's transaction; whether
/// each was new (false: a redelivery of a stored event, or a second copy
/// earlier in the same batch). PostgreSQL writes a whole batch in one
/// array statement; SQLite, in process, a row at a time (the default).
#[async_trait::async_trait]
pub trait InboxRows: Conn {
    /// The insert is one statement, atomic on its own: run without an
    /// explicit transaction, it saves the `BEGIN` and `COMMIT` round trips
    /// (PostgreSQL; its commit is as durable as a transaction's).
    const ONE_STATEMENT: bool = false;

    /// A row at a time.
    async fn insert_inbox(
        &mut self,
        events: &[NewInboxEvent],
        now: Timestamp,
    ) -> Result<Vec<bool>> {
        let mut fresh = Vec::with_capacity(events.len());
        for e in events {
            let due = (e.state == InboxState::Received).then_some(now.0);
            let n = self
                .run(
                    stmt(
                        "INSERT INTO webhook_inbox (provider, event_id, provider_ref, merchant_ref, \
                         observed_status, provider_status, occurred_at, raw_body, headers, \
                         received_at, state, reason, next_attempt_at, source, reported_amount, \
                         reported_currency, account, reported_pieces) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, \
                         $16, $17, $18) ON CONFLICT DO NOTHING",
                        "storing a webhook",
                    )
                    .text(&e.provider)
                    .text(&e.event_id)
                    .opt_text(e.provider_ref.as_deref())
                    .opt_text(e.merchant_ref.as_deref())
                    .opt_text(e.observed.map(|s| s.as_str()))
                    .opt_text(e.provider_status.as_deref())
                    .opt_int(e.occurred_at.map(|t| t.0))
                    .bytes(&e.raw_body)
                    .json(&e.headers)
                    .int(now.0)
                    .text(e.state.as_str())
                    .opt_text(e.reason.as_deref())
                    .opt_int(due)
                    .text(e.source.as_str())
                    .opt_int(e.reported.amount)
                    .opt_text(e.reported.currency.as_deref())
                    .text(e.account.as_deref().unwrap_or_default())
                    .opt_text(crate::amounts::to_text(&e.reported.pieces).as_deref()),
                )
                .await?;
            fresh.push(n == 1);
        }
        Ok(fresh)
    }

    /// Status changes, webhook rows' outcomes `(id, state, reason)` and
    /// the feed positions of the new events in one statement, where the
    /// backend can (PostgreSQL), announcing the position reached as
    /// `origin`.
    async fn write_numbered(
        &mut self,
        _writes: &Writes,
        _marks: &[(i64, &str, Option<&str>)],
        _now: Timestamp,
        _origin: &str,
    ) -> Result<NumberedWrite<Self::Row>> {
        Ok(NumberedWrite::NotHere)
    }
}
