//! Replay and redelivery as the pusher carries them out: a paused
//! destination gets nothing and raises nothing; a rewind sends everything
//! after the position again, in feed order, skipping none; a redelivery
//! sends one event once; a rewind to a time starts at the first event
//! since then.

use super::*;
use async_trait::async_trait;
use finality_relay::{Event, SinkError};
use finality_testkit::testing;
use std::sync::Mutex;

/// Records what it is sent (the pusher's logic is under test here; the
/// channels themselves are in `channels.rs`).
#[derive(Default)]
struct Recorder {
    got: Mutex<Vec<(String, i64)>>,
}

#[async_trait]
impl Sink for Recorder {
    fn name(&self) -> &str {
        "rec"
    }
    async fn deliver(&self, e: &Event) -> Result<Option<u16>, SinkError> {
        self.got
            .lock()
            .unwrap()
            .push((e.outbox.event_id.clone(), e.outbox.seq));
        Ok(Some(200))
    }
}

fn seqs(r: &Recorder) -> Vec<i64> {
    r.got.lock().unwrap().iter().map(|(_, s)| *s).collect()
}

/// Rounds until nothing more is delivered.
async fn drain(p: &Pusher) {
    while p.push_once().await.unwrap() > 0 {}
}

/// A clock the test moves, so the pusher's state check interval passes
/// without sleeping.
fn clock() -> Arc<finality_core::VirtualClock> {
    Arc::new(finality_core::VirtualClock::new(T0))
}

#[tokio::test]
async fn pause_rewind_and_redeliver_on_both_stores() {
    for db in [testing::sqlite().await, testing::postgres(4).await] {
        let store = db.store.clone();
        make_payments(&*store, "r", 0..10).await;
        finality_relay::sequencer::sequence_all(&*store)
            .await
            .unwrap();
        let head = store.feed_bounds().await.unwrap().head;
        assert_eq!(head, 22, "8 payments × 2 transitions + 2 × 3");
        let rec = Arc::new(Recorder::default());
        let clock = clock();
        let step = || clock.advance(Duration::from_secs(2));
        let p = Pusher::new(
            store.clone(),
            clock.clone(),
            rec.clone(),
            PushConfig::default(),
        );

        // Paused before anything was sent: nothing is, and no failure.
        store.destination("rec").await.unwrap();
        assert!(store
            .destination_pause("rec", Some((T0, "ops")))
            .await
            .unwrap());
        drain(&p).await;
        assert!(seqs(&rec).is_empty());
        let st = store.destination("rec").await.unwrap();
        assert_eq!(
            (st.delivered_seq, st.attempts, st.paused_by.as_deref()),
            (0, 0, Some("ops"))
        );

        // Resumed: everything, in feed order.
        assert!(store.destination_pause("rec", None).await.unwrap());
        step();
        drain(&p).await;
        assert_eq!(seqs(&rec), (1..=head).collect::<Vec<_>>());

        // Rewound to 10: 11..=head again, in order, none skipped.
        rec.got.lock().unwrap().clear();
        assert_eq!(
            store.destination_rewind("rec", 10).await.unwrap(),
            Some(head)
        );
        step();
        drain(&p).await;
        assert_eq!(seqs(&rec), (11..=head).collect::<Vec<_>>());

        // One event redelivered, once.
        rec.got.lock().unwrap().clear();
        let e7 = store.feed_after(6, 1).await.unwrap().remove(0);
        store
            .request_redelivery("rec", &e7.event_id, T0, "ops")
            .await
            .unwrap();
        step();
        p.push_once().await.unwrap();
        step();
        p.push_once().await.unwrap();
        assert_eq!(*rec.got.lock().unwrap(), vec![(e7.event_id.clone(), 7)]);
        let done = store.redeliveries(10).await.unwrap();
        assert_eq!(done[0].outcome.as_deref(), Some("delivered"));

        // An unknown event: recorded as not sent, never retried.
        store
            .request_redelivery("rec", "evt_nope", T0, "ops")
            .await
            .unwrap();
        step();
        p.push_once().await.unwrap();
        let done = store.redeliveries(10).await.unwrap();
        assert!(done[0].outcome.as_deref().unwrap().starts_with("not sent"));
        assert!(store
            .pending_redeliveries("rec", 10)
            .await
            .unwrap()
            .is_empty());

        // To a time: the first event at or after it.
        let at = Timestamp(T0.0 + 2000);
        let first = store.first_seq_since(at).await.unwrap().unwrap();
        let feed = store.feed_after(0, 100).await.unwrap();
        let expect = feed.iter().find(|e| e.occurred_at >= at).unwrap().seq;
        assert_eq!(first, expect);
        assert!(feed
            .iter()
            .filter(|e| e.seq < first)
            .all(|e| e.occurred_at < at));
        let bounds = store.feed_bounds().await.unwrap();
        assert_eq!(bounds.oldest.map(|o| o.0), Some(1));
    }
}
