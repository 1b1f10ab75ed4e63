//! The poll queue: due jobs leased to workers, their fenced completions
//! (one at a time or many in one transaction), "poll now", and the provider
//! id an adapter found for a payment registered by merchant reference.

pub mod lanes;
mod memory;
pub(crate) mod plan;
pub(crate) mod sql;

use crate::error::Result;
use crate::model::*;
use finality_core::Timestamp;

/// Leasing and finishing polls.
#[async_trait::async_trait]
pub trait PollQueue: Send + Sync {
    /// A receiver that changes whenever new work may be due sooner than the
    /// engine thought (a registration, a "poll now"). Only a hint: a lost
    /// wake-up costs latency, never correctness.
    fn subscribe(&self) -> tokio::sync::watch::Receiver<u64>;

    /// Lease up to `limit` due jobs to one worker, the round shared fairly
    /// between the lanes (provider, account) with due work (`lanes`).
    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<ClaimedJob>>;

    /// Finish a claimed poll, fenced by its lock token: record the attempt,
    /// apply what was observed, and reschedule, give up or drop the job.
    async fn complete(&self, c: &Completion) -> Result<CompleteOutcome>;

    /// Several completions in one transaction (one commit), locking in
    /// payment-id order so that concurrent batches lock rows in the same
    /// order. All or nothing: on an error none is written and the caller
    /// may retry them one by one.
    async fn complete_batch(&self, cs: &[Completion]) -> Result<Vec<CompleteOutcome>>;

    /// Make a payment's next poll due now (unparking a reviewed one).
    async fn poll_now(&self, payment_id: &str, now: Timestamp) -> Result<PollNow>;

    /// An early look at the payment `provider` knows as `provider_ref`, or
    /// registered with that merchant reference (a webhook naming it failed
    /// verification, so it may be true): its next poll made due now, the time it displaced kept so the look is
    /// not counted as an attempt and the job goes back there. Only when the
    /// job is unleased, not parked, not already due, has no look pending,
    /// and the payment has had fewer than `per_payment` early looks. The
    /// payment's id when the look was scheduled.
    async fn look_early(
        &self,
        scope: &finality_core::Scope,
        provider_ref: &str,
        now: Timestamp,
        per_payment: u32,
    ) -> Result<Option<String>>;

    /// Bring `provider`'s unleased, unparked jobs due after `by` forward to
    /// `by` (the provider's webhooks are down: poll sooner). Returns how many.
    async fn hurry(&self, provider: &str, by: Timestamp, now: Timestamp) -> Result<u64>;

    /// [`PollQueue::hurry`] for `scope`'s jobs alone (an account enabled
    /// again: its payments, deferred while it was disabled, are polled
    /// now rather than after the pause).
    async fn hurry_account(
        &self,
        scope: &finality_core::Scope,
        by: Timestamp,
        now: Timestamp,
    ) -> Result<u64>;

    /// The earliest `next_poll_at` of any unparked job (including leases,
    /// which fall due again when they expire); `None` when nothing is left.
    async fn next_due_at(&self) -> Result<Option<Timestamp>>;

    /// `worker` is alive at `now` (the other nodes watch for it to stop).
    async fn heartbeat(&self, worker: &str, now: Timestamp) -> Result<()>;

    /// Nodes whose last heartbeat is older than `cutoff` died: their leased
    /// polls fall due at `now` (lock tokens cleared, so a node that was
    /// only stalled is fenced) and the nodes are forgotten. Returns each
    /// dead node with how many polls it held.
    async fn release_dead(&self, cutoff: Timestamp, now: Timestamp) -> Result<Vec<(String, u64)>>;

    /// Hand back every lease `worker` holds (it is stopping) so another
    /// node takes them at once, and forget the node. Returns how many.
    async fn release_worker(&self, worker: &str, now: Timestamp) -> Result<u64>;

    /// Record the provider's id an adapter found for a payment registered
    /// by merchant reference alone, fenced by the poll's lock token, so
    /// later polls (and webhooks) use it.
    async fn record_provider_ref(
        &self,
        payment_id: &str,
        lock_token: i64,
        provider_ref: &str,
    ) -> Result<RefRecorded>;
}
