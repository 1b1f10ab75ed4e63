//! The webhook inbox: verified events stored at acknowledgement, then
//! applied through the same path as every other status change.

pub(crate) mod decide;
mod memory;
pub(crate) mod sql;
pub(crate) mod write;

use crate::error::Result;
use crate::model::*;
use finality_core::Timestamp;

/// Storing and processing webhook events.
#[async_trait::async_trait]
pub trait WebhookInbox: Send + Sync {
    /// A receiver that changes whenever webhooks may be waiting to be
    /// applied: stored here, or a registration, "poll now" or another
    /// node's announcement (a registration may adopt orphans); not a
    /// status change. What the inbox processor waits on, so a status
    /// change it committed itself does not wake it again.
    fn subscribe_inbox(&self) -> tokio::sync::watch::Receiver<u64>;

    /// Put verified webhook events into the inbox, each in one transaction
    /// with the others of its request; `true` for each event that was new,
    /// `false` for a duplicate (decided by the unique constraint).
    async fn inbox_insert(&self, events: &[NewInboxEvent], now: Timestamp) -> Result<Vec<bool>>;

    /// Lease up to `limit` received or failed events due for processing.
    async fn inbox_claim(
        &self,
        now: Timestamp,
        limit: u32,
        lease_until: Timestamp,
    ) -> Result<Vec<InboxEvent>>;

    /// Apply one claimed event through `apply` (source `webhook`) and record
    /// the result on the inbox row, in one transaction.
    async fn inbox_process(&self, ev: &InboxEvent, now: Timestamp) -> Result<InboxOutcome>;

    /// Take the events due now (up to `limit`) and apply them, all in one
    /// transaction: no lease is needed, since the rows stay locked until
    /// the commit and a crash rolls everything back. The fast path of the
    /// inbox processor; on an error it falls back to claiming with a
    /// lease and processing one at a time, where failures are recorded.
    async fn inbox_take_and_process(
        &self,
        now: Timestamp,
        limit: u32,
        lease_until: Timestamp,
    ) -> Result<Vec<(InboxEvent, InboxOutcome)>> {
        let evs = self.inbox_claim(now, limit, lease_until).await?;
        let out = self.inbox_process_batch(&evs, now).await?;
        Ok(evs.into_iter().zip(out).collect())
    }

    /// Apply several claimed events in one transaction (one commit for a
    /// burst); all or nothing. On an error the caller processes them one
    /// at a time, so one bad event cannot hold the others back.
    async fn inbox_process_batch(
        &self,
        evs: &[InboxEvent],
        now: Timestamp,
    ) -> Result<Vec<InboxOutcome>> {
        let mut out = Vec::with_capacity(evs.len());
        for ev in evs {
            out.push(self.inbox_process(ev, now).await?);
        }
        Ok(out)
    }

    /// Record a processing failure; the event is retried at `retry_at`.
    async fn inbox_fail(&self, ev: &InboxEvent, error: &str, retry_at: Timestamp) -> Result<()>;

    /// Send orphaned events whose payment now exists back to processing (a
    /// backstop for the hand-over done at registration).
    async fn inbox_adopt_orphans(&self, now: Timestamp) -> Result<u64>;

    /// Send `scope`'s parked events (verified while its account was not
    /// configured or was disabled) to processing: the account is there
    /// now. How many were sent.
    async fn inbox_unpark(&self, scope: &finality_core::Scope, now: Timestamp) -> Result<u64>;

    /// The scopes (at most `limit`) with parked events now: what a node
    /// looks at every round, so an event parked while its account was
    /// being added or enabled (a request that saw it absent a moment
    /// before) is not left behind by the one unpark that ran already.
    async fn inbox_parked_scopes(&self, limit: u32) -> Result<Vec<finality_core::Scope>>;

    /// The webhook row of `provider` with this event id (the first stored,
    /// should two accounts' events share it).
    async fn inbox_get(&self, provider: &str, event_id: &str) -> Result<Option<InboxEvent>>;
    async fn inbox_next_due(&self) -> Result<Option<Timestamp>>;
    async fn inbox_counts(&self) -> Result<Vec<(InboxState, i64)>>;
}
