//! Feed positions for committed transitions that have none, one
//! transaction at a time under the `feed_state` lock (the inbox processor
//! numbers its own events under the same lock, in its own transaction);
//! see `migrations/*/0003_event_feed.sql` and `docs/EVENTS.md` for why a
//! reader paging by position then never skips an event.

use finality_store::EventFeed;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Sequence until nothing is left; returns how many rows got positions.
pub async fn sequence_all(store: &dyn EventFeed) -> finality_store::Result<u64> {
    let mut total = 0;
    loop {
        let n = store.sequence_feed(1000).await?;
        total += n;
        if n < 1000 {
            return Ok(total);
        }
    }
}

/// Run the sequencer until `shutdown`: as soon as this process commits a
/// status change without a feed position, and every `interval` for
/// transitions committed by other nodes.
pub async fn run(store: Arc<dyn EventFeed>, interval: Duration, shutdown: CancellationToken) {
    let mut wake = store.subscribe_transitions();
    while !shutdown.is_cancelled() {
        if let Err(e) = sequence_all(&*store).await {
            tracing::error!(error = %e, "sequencing the event feed failed");
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = wake.changed() => {}
            _ = shutdown.cancelled() => {}
        }
    }
}
