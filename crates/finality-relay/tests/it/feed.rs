//! The pull feed never skips: 8 writers commit transitions concurrently on
//! PostgreSQL (out of sequence order) while a reader pages the feed.

use super::*;
use finality_relay::sequencer::sequence_all;
use finality_testkit::testing;
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

async fn round(store: Arc<dyn Store>, round: usize) {
    let stop = CancellationToken::new();
    // The sequencer runs all the time, as in production.
    let seq = tokio::spawn(finality_relay::sequencer::run(
        store.clone(),
        std::time::Duration::from_millis(1),
        stop.clone(),
    ));
    let start = store
        .feed_after(0, 1_000_000)
        .await
        .unwrap()
        .last()
        .map_or(0, |e| e.seq);
    // The reader pages with a small limit while writers write.
    let reader = {
        let store = store.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut cursor = start;
            let mut seen = Vec::new();
            loop {
                let page = store.feed_after(cursor, 7).await.unwrap();
                if page.is_empty() {
                    if stop.is_cancelled() {
                        return seen;
                    }
                    tokio::task::yield_now().await;
                    continue;
                }
                for e in page {
                    assert!(e.seq > cursor, "feed went backwards");
                    cursor = e.seq;
                    seen.push(e);
                }
            }
        })
    };
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..25 {
                    two_transitions(&*store, &format!("r{round}_w{w}_{i}")).await;
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    // Everything committed; let the sequencer and reader catch up, then stop.
    sequence_all(&*store).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    stop.cancel();
    seq.await.unwrap();
    let seen = reader.await.unwrap();

    let prefix = format!("r{round}_");
    let all: Vec<_> = store
        .events_after(0, 1_000_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.payment_id.starts_with(&prefix))
        .collect();
    assert_eq!(all.len(), 400);
    let mut count: HashMap<&str, usize> = HashMap::new();
    for e in &seen {
        *count.entry(e.event_id.as_str()).or_default() += 1;
    }
    for e in &all {
        assert_eq!(
            count.get(e.event_id.as_str()),
            Some(&1),
            "event {} seen {:?} times",
            e.event_id,
            count.get(e.event_id.as_str())
        );
    }
    assert_eq!(seen.len(), 400, "nothing extra");
    // Per payment, processing comes before succeeded.
    let mut last: HashMap<&str, Status> = HashMap::new();
    for e in &seen {
        if let Some(prev) = last.insert(e.payment_id.as_str(), e.status) {
            assert_eq!(
                (prev, e.status),
                (Status::Processing, Status::Succeeded),
                "order of {}",
                e.payment_id
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_feed_never_skips_under_concurrent_writers() {
    let db = testing::postgres(16).await;
    for r in 0..15 {
        round(db.store.clone(), r).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_feed_never_skips_under_concurrent_writers() {
    let db = testing::sqlite().await;
    for r in 0..3 {
        round(db.store.clone(), r).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_feed_never_skips_under_concurrent_writers() {
    let db = testing::mysql(16).await;
    for r in 0..10 {
        round(db.store.clone(), r).await;
    }
}

/// Why positions are needed: ids are handed out before commit, so on
/// PostgreSQL a later id can commit first. Shown directly.
#[tokio::test]
async fn postgres_ids_commit_out_of_order_but_positions_do_not() {
    let db = testing::postgres(4).await;
    let testing::Backend::Postgres(pg) = &db.backend else {
        unreachable!()
    };
    register(&*db.store, "slow", T0).await;
    register(&*db.store, "fast", T0).await;
    let mut slow = pg.pool().begin().await.unwrap();
    sqlx::query("INSERT INTO outbox (event_id, payment_id, type, status, source, occurred_at) VALUES ('e_slow', 'slow', 'payment.failed', 'failed', 'manual', 0)")
        .execute(&mut *slow).await.unwrap();
    let mut fast = pg.pool().begin().await.unwrap();
    sqlx::query("INSERT INTO outbox (event_id, payment_id, type, status, source, occurred_at) VALUES ('e_fast', 'fast', 'payment.failed', 'failed', 'manual', 0)")
        .execute(&mut *fast).await.unwrap();
    fast.commit().await.unwrap();
    sequence_all(&*db.store).await.unwrap();
    let page = db.store.feed_after(0, 10).await.unwrap();
    assert_eq!(
        page.iter().map(|e| e.event_id.as_str()).collect::<Vec<_>>(),
        ["e_fast"]
    );
    let cursor = page[0].seq;
    slow.commit().await.unwrap();
    sequence_all(&*db.store).await.unwrap();
    // The late commit (lower id) comes after the cursor: not skipped.
    let page = db.store.feed_after(cursor, 10).await.unwrap();
    assert_eq!(
        page.iter().map(|e| e.event_id.as_str()).collect::<Vec<_>>(),
        ["e_slow"]
    );
}
