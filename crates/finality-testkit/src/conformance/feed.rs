//! Destinations, deliveries and pruning of [`finality_store::EventFeed`].

use super::support::*;
use super::Case;
use finality_core::{Status, Timestamp};
use finality_store::model::*;
use finality_store::{Report, Store};
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
/// What an event says beyond its transition (its payment, the reason and
/// actor of the transition), and what an admin does to a destination:
/// list, bounds, a position by time, one event by id, rewind, pause and
/// resume, redeliveries asked for and done.
pub async fn feed_details_and_replay(db: Arc<dyn Store>) {
    register(&*db, "pay_1", T0).await;
    register(&*db, "pay_2", T0).await;
    db.apply(
        &report("pay_1", Status::Processing, "e1"),
        Timestamp(T0.0 + 10),
    )
    .await
    .unwrap();
    let manual = Report {
        source: finality_core::Source::Manual,
        reason: Some("seen at the bank".into()),
        actor: Some("alice".into()),
        event_id: None,
        ..report("pay_1", Status::Succeeded, "m1")
    };
    db.apply(&manual, Timestamp(T0.0 + 20)).await.unwrap();
    db.apply(&report("pay_2", Status::Failed, "e2"), Timestamp(T0.0 + 30))
        .await
        .unwrap();
    let empty = db.feed_bounds().await.unwrap();
    assert_eq!((empty.head, empty.oldest), (0, None));
    db.sequence_feed(10).await.unwrap();
    let feed = db.feed_after(0, 10).await.unwrap();
    assert_eq!(feed.len(), 3);

    let details = db.event_details(&feed).await.unwrap();
    assert_eq!(details.len(), 3);
    let p = details[0].payment.as_ref().expect("the payment is read");
    assert_eq!(
        (
            p.id.as_str(),
            p.amount,
            p.currency.as_str(),
            p.provider.as_str()
        ),
        ("pay_1", 1250, "USD", "sim")
    );
    assert_eq!(p.metadata, serde_json::json!({"order": "pay_1"}));
    assert_eq!(
        (details[0].reason.as_deref(), details[0].actor.as_deref()),
        (None, None)
    );
    assert_eq!(details[1].reason.as_deref(), Some("seen at the bank"));
    assert_eq!(details[1].actor.as_deref(), Some("alice"));
    assert_eq!(
        details[2].payment.as_ref().map(|p| p.id.as_str()),
        Some("pay_2")
    );
    assert!(db.event_details(&[]).await.unwrap().is_empty());

    let b = db.feed_bounds().await.unwrap();
    assert_eq!((b.head, b.oldest), (3, Some((1, Timestamp(T0.0 + 10)))));
    assert_eq!(
        db.first_seq_since(Timestamp(T0.0 + 15)).await.unwrap(),
        Some(2)
    );
    assert_eq!(
        db.first_seq_since(Timestamp(T0.0 + 31)).await.unwrap(),
        None
    );
    let e2 = db.event_by_id(&feed[1].event_id).await.unwrap().unwrap();
    assert_eq!(e2, feed[1]);
    assert!(db.event_by_id("evt_nope").await.unwrap().is_none());

    assert_eq!(db.destination_rewind("http:x", 0).await.unwrap(), None);
    db.destination("http:x").await.unwrap();
    db.destination("nats").await.unwrap();
    assert!(db.destination_advance("http:x", 0, 3).await.unwrap());
    let failed = DestinationState {
        attempts: 2,
        failing_since: Some(T0),
        next_attempt_at: Some(Timestamp(T0.0 + 99)),
        last_error: Some("HTTP 500".into()),
        ..db.destination("nats").await.unwrap()
    };
    db.destination_failed(&failed).await.unwrap();
    let names: Vec<String> = db
        .destinations()
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["http:x", "nats"]);

    assert_eq!(db.destination_rewind("http:x", 1).await.unwrap(), Some(3));
    assert_eq!(db.destination_rewind("nats", 0).await.unwrap(), Some(0));
    let nats = db.destination("nats").await.unwrap();
    assert_eq!(
        (nats.attempts, nats.next_attempt_at, nats.last_error),
        (0, None, None),
        "a rewind clears the retry state"
    );
    assert_eq!(db.destination("http:x").await.unwrap().delivered_seq, 1);

    assert!(db
        .destination_pause("http:x", Some((Timestamp(T0.0 + 40), "root")))
        .await
        .unwrap());
    let d = db.destination("http:x").await.unwrap();
    assert_eq!(
        (d.paused_at, d.paused_by.as_deref()),
        (Some(Timestamp(T0.0 + 40)), Some("root"))
    );
    assert!(db.destination_pause("http:x", None).await.unwrap());
    let d = db.destination("http:x").await.unwrap();
    assert_eq!((d.paused_at, d.paused_by), (None, None));
    assert!(!db.destination_pause("http:none", None).await.unwrap());

    let r1 = db
        .request_redelivery("http:x", &feed[0].event_id, Timestamp(T0.0 + 50), "root")
        .await
        .unwrap();
    let r2 = db
        .request_redelivery("nats", &feed[1].event_id, Timestamp(T0.0 + 51), "root")
        .await
        .unwrap();
    assert_ne!(r1, r2);
    let pending = db.pending_redeliveries("http:x", 10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (
            pending[0].id,
            pending[0].event_id.as_str(),
            pending[0].requested_by.as_str()
        ),
        (r1, feed[0].event_id.as_str(), "root")
    );
    db.redelivery_done(r1, Timestamp(T0.0 + 60), "delivered")
        .await
        .unwrap();
    assert!(db
        .pending_redeliveries("http:x", 10)
        .await
        .unwrap()
        .is_empty());
    let all = db.redeliveries(10).await.unwrap();
    assert_eq!(
        all.iter().map(|r| r.id).collect::<Vec<_>>(),
        [r2, r1],
        "newest first"
    );
    assert_eq!(all[1].outcome.as_deref(), Some("delivered"));
    assert_eq!(all[1].done_at, Some(Timestamp(T0.0 + 60)));
    assert_eq!(all[0].outcome, None);
}

pub const CASES: &[(&str, Case)] = cases![feed_destinations_and_pruning, feed_details_and_replay,];
