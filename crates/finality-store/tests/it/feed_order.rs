//! Feed positions follow commit order whoever gives them: two nodes'
//! inbox processors number their own events in their transactions, while
//! other writers' changes wait for the sequencers of both nodes, all at
//! once. A reader paging by cursor the whole time must read every event
//! exactly once, at positions 1, 2, 3, … with none skipped: a position
//! given before an earlier one became visible would be skipped for good.

use finality_core::{Source, Status, Timestamp};
use finality_store::{InboxOutcome, Report, Store};
use finality_testkit::conformance::{inbox_event, register, T0};
use finality_testkit::Backend;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Payments settled by webhook (through the inbox) and as many by other
/// writers.
const EACH: usize = 150;

async fn readers_never_skip_a_position(backend: Backend) {
    let db = backend.open().await;
    let a = db.store.clone();
    let b: Arc<dyn Store> = finality_store::open(&db.url, 4).await.unwrap();
    // Never sequences and never takes webhooks: it reads what the
    // database holds.
    let reader: Arc<dyn Store> = finality_store::open(&db.url, 4).await.unwrap();
    for i in 0..2 * EACH {
        register(&*a, &format!("pay_{i}"), T0).await;
    }
    let now = Timestamp(T0.0 + 1);
    let done = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();

    // Webhooks arrive in small bursts; each node's inbox processor takes
    // what is due.
    let hooks = {
        let a = a.clone();
        tokio::spawn(async move {
            for chunk in (0..EACH).collect::<Vec<_>>().chunks(5) {
                let evs: Vec<_> = chunk
                    .iter()
                    .map(|i| {
                        inbox_event(
                            &format!("evt_{i}"),
                            &format!("ref_pay_{i}"),
                            Status::Succeeded,
                        )
                    })
                    .collect();
                a.inbox_insert(&evs, now).await.unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    for node in [a.clone(), b.clone()] {
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let mut applied = 0;
            while !done.load(Ordering::Acquire) {
                let taken = node
                    .inbox_take_and_process(now, 7, Timestamp(now.0 + 60_000))
                    .await
                    .unwrap();
                applied += taken
                    .iter()
                    .filter(|(_, o)| matches!(o, InboxOutcome::Applied { .. }))
                    .count();
                if taken.is_empty() {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            applied
        }));
    }
    // Other writers' changes, numbered by either node's sequencer.
    let others = {
        let b = b.clone();
        tokio::spawn(async move {
            for i in EACH..2 * EACH {
                let r = Report {
                    payment_id: format!("pay_{i}"),
                    status: Status::Failed,
                    source: Source::StatusQuery,
                    event_id: None,
                    observed_at: T0,
                    reason: None,
                    actor: None,
                };
                b.apply(&r, now).await.unwrap();
            }
        })
    };
    for node in [a.clone(), b.clone()] {
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            while !done.load(Ordering::Acquire) {
                node.sequence_feed(1000).await.unwrap();
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            0
        }));
    }

    // The reader pages on from position 0 until it has every event.
    let mut read = Vec::new();
    let mut cursor = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while read.len() < 2 * EACH {
        assert!(
            tokio::time::Instant::now() < deadline,
            "read {} of {} events",
            read.len(),
            2 * EACH
        );
        // A writer that stopped early failed: its panic says why.
        if let Some(i) = tasks.iter().position(|t| t.is_finished()) {
            tasks.swap_remove(i).await.unwrap();
            panic!("a writer stopped before the end");
        }
        let page = reader.feed_after(cursor, 10).await.unwrap();
        if let Some(last) = page.last() {
            cursor = last.seq;
        } else {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        read.extend(page);
    }
    hooks.await.unwrap();
    others.await.unwrap();
    done.store(true, Ordering::Release);
    let mut applied = 0;
    for t in tasks {
        applied += t.await.unwrap();
    }
    assert_eq!(applied, EACH, "every webhook applied once");

    let positions: Vec<i64> = read.iter().map(|e| e.seq).collect();
    assert_eq!(
        positions,
        (1..=(2 * EACH) as i64).collect::<Vec<_>>(),
        "every position read, in order, none skipped"
    );
    let payments: HashSet<&str> = read.iter().map(|e| e.payment_id.as_str()).collect();
    assert_eq!(payments.len(), 2 * EACH, "each payment's event once");
    assert_eq!(
        reader.feed_after(cursor, 10).await.unwrap(),
        [],
        "nothing after"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_skip_a_position_on_postgres() {
    readers_never_skip_a_position(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_skip_a_position_on_sqlite() {
    readers_never_skip_a_position(Backend::Sqlite).await;
}
