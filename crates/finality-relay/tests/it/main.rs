//! Events out, end to end: the feed under concurrent writers, signed HTTP
//! pushes to a flaky receiver, and NATS JetStream with an outage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod feed;
mod http;
mod nats;

use finality_core::{Source, Status, Timestamp};
use finality_store::{Report, Store};
use finality_testkit::conformance::{register, T0};

/// Register `id` and move it pending → processing → succeeded (2 events).
pub async fn two_transitions(store: &dyn Store, id: &str) {
    register(store, id, Timestamp(T0.0 + 3_600_000)).await;
    for (i, s) in [Status::Processing, Status::Succeeded]
        .into_iter()
        .enumerate()
    {
        let r = Report {
            payment_id: id.into(),
            status: s,
            source: Source::Webhook,
            event_id: Some(format!("{id}_{i}")),
            observed_at: T0,
            reason: None,
            actor: None,
        };
        store.apply(&r, T0).await.unwrap();
    }
}
