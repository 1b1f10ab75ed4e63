//! Destinations, deliveries and pruning of [`finality_store::EventFeed`].

use super::support::*;
use super::Case;
use finality_core::{Status, Timestamp};
use finality_store::model::*;
use finality_store::Store;
use std::sync::Arc;

/// Feed positions follow commit order, destinations advance by
/// compare-and-set, and pruning keeps what a destination still lacks.
pub async fn feed_destinations_and_pruning(db: Arc<dyn Store>) {
    for id in ["pay_1", "pay_2", "pay_3"] {
        register(&*db, id, T0).await;
        db.apply(&report(id, Status::Succeeded, id), Timestamp(T0.0 + 1))
            .await
            .unwrap();
    }
    assert!(
        db.feed_after(0, 10).await.unwrap().is_empty(),
        "no position before sequencing"
    );
    assert_eq!(db.sequence_feed(2).await.unwrap(), 2);
    assert_eq!(db.sequence_feed(10).await.unwrap(), 1);
    assert_eq!(db.sequence_feed(10).await.unwrap(), 0);
    let feed = db.feed_after(0, 10).await.unwrap();
    assert_eq!(feed.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(feed[0].payment_id, "pay_1");

    let d = db.destination("http:x").await.unwrap();
    assert_eq!((d.delivered_seq, d.attempts), (0, 0));
    assert!(db.destination_advance("http:x", 0, 2).await.unwrap());
    assert!(
        !db.destination_advance("http:x", 0, 3).await.unwrap(),
        "stale cursor refused"
    );
    let failed = DestinationState {
        attempts: 3,
        failing_since: Some(T0),
        next_attempt_at: Some(Timestamp(T0.0 + 9)),
        last_error: Some("HTTP 500".into()),
        ..db.destination("http:x").await.unwrap()
    };
    db.destination_failed(&failed).await.unwrap();
    assert_eq!(db.destination("http:x").await.unwrap(), failed);

    // A pusher's group done: its attempts recorded and the cursor moved
    // together; with a stale cursor refused, the attempts still recorded.
    let tried = |seq: i64| DeliveryAttempt {
        destination: "http:x".into(),
        event_id: format!("evt_{seq}"),
        feed_seq: seq,
        at: T0,
        status_code: Some(200),
        latency_ms: 1,
        error: None,
    };
    assert!(db
        .destination_delivered("http:x", 2, 3, &[tried(3)])
        .await
        .unwrap());
    let d = db.destination("http:x").await.unwrap();
    assert_eq!(
        (d.delivered_seq, d.attempts, d.last_error),
        (3, 0, None),
        "moved, retry state cleared"
    );
    assert!(
        !db.destination_delivered("http:x", 2, 3, &[tried(3)])
            .await
            .unwrap(),
        "stale cursor refused"
    );
    assert_eq!(db.deliveries("http:x", 10).await.unwrap().len(), 2);

    // Past retention, but only what every destination has is deleted.
    let later = Timestamp(T0.0 + 1_000_000);
    assert_eq!(db.prune_events(2, later).await.unwrap(), 2);
    let left = db.feed_after(0, 10).await.unwrap();
    assert_eq!(left.iter().map(|e| e.seq).collect::<Vec<_>>(), [3]);
    assert_eq!(
        db.prune_events(3, T0).await.unwrap(),
        0,
        "not yet past retention"
    );
}

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![feed_destinations_and_pruning,];
