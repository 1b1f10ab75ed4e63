//! The event feed: outbox rows given positions in commit order, read by
//! cursor, pushed to destinations that each keep their own cursor.

use crate::error::Result;
use crate::feed::rows::event_from_row;
use crate::model::*;
use finality_core::Timestamp;
pub use notice::{is_notice, NOTICE_TYPES};

mod memory;
pub(crate) mod notice;
pub(crate) mod replay;

pub(crate) mod rows;
pub(crate) mod sql;

/// The outbox, its feed order and the destinations that consume it.
#[async_trait::async_trait]
pub trait EventFeed: Send + Sync {
    /// A receiver that changes whenever the event feed grew (positions
    /// given, here or, on PostgreSQL, on another node): what pushers and
    /// long-polling feed readers wait on. Only a hint: a lost wake-up
    /// costs latency, never an event.
    fn subscribe_feed(&self) -> tokio::sync::watch::Receiver<u64>;

    /// A receiver that changes whenever this process committed a status
    /// change: what the feed sequencer waits on (not on every webhook
    /// stored or payment registered).
    fn subscribe_transitions(&self) -> tokio::sync::watch::Receiver<u64>;

    /// The highest feed position this process knows was given (by its own
    /// sequencer, or announced by another node's), if it knows: a reader
    /// whose cursor is there has nothing to read until the feed grows, so
    /// it waits without asking the database. `None`: ask.
    fn feed_head(&self) -> Option<i64> {
        None
    }

    /// Outbox rows after row id `seq`, in id order (not feed order).
    async fn events_after(&self, seq: i64, limit: u32) -> Result<Vec<OutboxEvent>>;

    /// Give feed positions to committed, unsequenced outbox rows (at most
    /// `limit`), in id order, one sequencer at a time. Returns how many.
    /// Every transition gets its position exactly once (here, or in the
    /// inbox processor's transaction), so that is where "time to final" is
    /// measured once per payment however many nodes run: the store records
    /// the payments these rows made final in `finality_time_to_final_seconds`.
    async fn sequence_feed(&self, limit: u32) -> Result<u64>;

    /// Events with a feed position above `cursor`, in feed order. Their
    /// `seq` is the feed position: the next cursor.
    async fn feed_after(&self, cursor: i64, limit: u32) -> Result<Vec<OutboxEvent>>;

    /// A destination's cursor and retry state (created at 0 if new).
    async fn destination(&self, name: &str) -> Result<DestinationState>;

    /// Move a destination's cursor from `from` to `to` (compare-and-set, so
    /// two pushers for one destination never both advance it); clears the
    /// retry state. Returns false if the cursor had moved.
    async fn destination_advance(&self, name: &str, from: i64, to: i64) -> Result<bool>;

    /// Record that the head event failed: retry at `next_attempt_at`.
    async fn destination_failed(&self, st: &DestinationState) -> Result<()>;

    /// Record delivery attempts (a pusher's group at once: one statement).
    async fn record_deliveries(&self, attempts: &[DeliveryAttempt]) -> Result<()>;

    /// A pusher's group done: its `attempts` recorded and the cursor moved
    /// from `from` to `to` as [`EventFeed::destination_advance`] does
    /// (false: it had moved). Recording is best effort (the attempts are
    /// for people to read): failing to record never holds the cursor
    /// back. On PostgreSQL one statement instead of two.
    async fn destination_delivered(
        &self,
        name: &str,
        from: i64,
        to: i64,
        attempts: &[DeliveryAttempt],
    ) -> Result<bool> {
        delivered_in_two(self, name, from, to, attempts).await
    }
    async fn deliveries(&self, destination: &str, limit: u32) -> Result<Vec<DeliveryAttempt>>;

    /// Delete events at or below feed position `max_seq` that occurred
    /// before `before` (delivered everywhere and past retention).
    async fn prune_events(&self, max_seq: i64, before: Timestamp) -> Result<u64>;

    /// What each event says beyond its transition (its payment as it is
    /// now, the transition's reason and actor), in the events' order: two
    /// reads for a whole page, so a consumer never asks per event.
    async fn event_details(&self, events: &[OutboxEvent]) -> Result<Vec<EventDetails>>;

    /// Every destination that has a cursor, by name.
    async fn destinations(&self) -> Result<Vec<DestinationState>>;

    /// The feed's head and its oldest kept event.
    async fn feed_bounds(&self) -> Result<FeedBounds>;

    /// The feed's current epoch and head, read together.
    async fn feed_epoch(&self) -> Result<FeedEpoch>;

    /// The last position the history of `epoch` shares with the current
    /// one: `Ok(None)` when this feed never had that epoch (a cursor of
    /// another database, or of a history rewound away entirely). For the
    /// current epoch, its head.
    async fn feed_epoch_parted(&self, epoch: &str) -> Result<Option<i64>>;

    /// The first feed position at or after `at` (by when the event
    /// occurred), if any: where a rewind to a time starts.
    async fn first_seq_since(&self, at: Timestamp) -> Result<Option<i64>>;

    /// One event by its id, with its feed position (`None`: unknown, pruned
    /// or not yet in the feed).
    async fn event_by_id(&self, event_id: &str) -> Result<Option<OutboxEvent>>;

    /// Set a destination's cursor to `to` whatever it was (a pusher in the
    /// middle of a group then fails its compare-and-set and reads again)
    /// and clear its retry state. Returns the cursor it had (`None`: no
    /// such destination).
    async fn destination_rewind(&self, name: &str, to: i64) -> Result<Option<i64>>;

    /// Pause (`Some((when, who))`) or resume (`None`) a destination.
    /// Resuming clears the retry state, so it is tried at once. Returns
    /// false if there is no such destination.
    async fn destination_pause(
        &self,
        name: &str,
        paused: Option<(Timestamp, &str)>,
    ) -> Result<bool>;

    /// Ask for one event to be sent again to `destination`; returns the
    /// request's id.
    async fn request_redelivery(
        &self,
        destination: &str,
        event_id: &str,
        at: Timestamp,
        by: &str,
    ) -> Result<i64>;

    /// Redeliveries of `destination` not yet done, oldest first.
    async fn pending_redeliveries(&self, destination: &str, limit: u32) -> Result<Vec<Redelivery>>;

    /// The newest redeliveries of every destination, newest first.
    async fn redeliveries(&self, limit: u32) -> Result<Vec<Redelivery>>;

    /// Record what came of a redelivery.
    async fn redelivery_done(&self, id: i64, at: Timestamp, outcome: &str) -> Result<()>;
}

/// [`EventFeed::destination_delivered`] in two steps: the attempts (a
/// failure only logged), then the cursor.
pub(crate) async fn delivered_in_two<F: EventFeed + ?Sized>(
    feed: &F,
    name: &str,
    from: i64,
    to: i64,
    attempts: &[DeliveryAttempt],
) -> Result<bool> {
    if let Err(e) = feed.record_deliveries(attempts).await {
        tracing::warn!(error = %e, "recording delivery attempts failed");
    }
    if from == to {
        return Ok(true);
    }
    feed.destination_advance(name, from, to).await
}
