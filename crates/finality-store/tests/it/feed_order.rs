//! Feed positions follow commit order whoever gives them: two nodes'
//! inbox processors number their own events in their transactions, while
//! other writers' changes wait for the sequencers of both nodes, all at
//! once, on the same payments. A reader paging by cursor the whole time
//! (from the database, and from a node's memory) must read every event
//! exactly once, at positions 1, 2, 3, … with none skipped (a position
//! given before an earlier one became visible would be skipped for good),
//! and each payment's events in the order they happened.

use finality_core::{Source, Status, Timestamp};
use finality_store::{InboxOutcome, Report, Store};
use finality_testkit::conformance::{inbox_event, register, T0};
use finality_testkit::Backend;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
            // Status queries racing the webhooks for the same payments
            // (seen processing, before or after the webhook settled it),
            // and the other payments failed.
            for i in 0..2 * EACH {
                let r = Report {
                    payment_id: format!("pay_{i}"),
                    status: if i < EACH {
                        Status::Processing
                    } else {
                        Status::Failed
                    },
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
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            0
        }));
    }

    // Two readers page on from position 0 while all that runs: one reads
    // the database, one is node A (its own events from its memory).
    let total = Arc::new(AtomicUsize::new(usize::MAX));
    let readers: Vec<_> = [reader.clone(), a.clone()]
        .into_iter()
        .map(|node| {
            let total = total.clone();
            tokio::spawn(async move {
                let (mut read, mut cursor) = (Vec::new(), 0);
                let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
                while read.len() < total.load(Ordering::Acquire) {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "read {}",
                        read.len()
                    );
                    let page = node.feed_after(cursor, 10).await.unwrap();
                    if let Some(last) = page.last() {
                        cursor = last.seq;
                    } else {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    read.extend(page);
                }
                read
            })
        })
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !(hooks.is_finished() && others.is_finished()) {
        assert!(tokio::time::Instant::now() < deadline, "writers stuck");
        // A task that stopped early failed: its panic says why.
        if let Some(i) = tasks.iter().position(|t| t.is_finished()) {
            tasks.swap_remove(i).await.unwrap();
            panic!("a writer stopped before the end");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    hooks.await.unwrap();
    others.await.unwrap();
    // Whatever is still due is applied and numbered.
    while a.inbox_next_due().await.unwrap().is_some() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    done.store(true, Ordering::Release);
    let mut applied = 0;
    for t in tasks {
        applied += t.await.unwrap();
    }
    assert_eq!(applied, EACH, "every webhook applied once");
    a.sequence_feed(1000).await.unwrap();
    let all = reader.events_after(0, 100_000).await.unwrap();
    total.store(all.len(), Ordering::Release);

    for (name, r) in ["database", "node A"].into_iter().zip(readers) {
        let read = r.await.unwrap();
        let positions: Vec<i64> = read.iter().map(|e| e.seq).collect();
        assert_eq!(
            positions,
            (1..=all.len() as i64).collect::<Vec<_>>(),
            "{name}: every position read, in order, none skipped"
        );
        // Each payment's events in feed order form its history: each
        // starts from the status the one before ended in.
        let mut last: HashMap<&str, Status> = HashMap::new();
        for e in &read {
            if let Some(before) = last.insert(e.payment_id.as_str(), e.status) {
                assert_eq!(
                    e.previous_status,
                    Some(before),
                    "{name}: {} out of order at {}",
                    e.payment_id,
                    e.seq
                );
            }
        }
        assert_eq!(last.len(), 2 * EACH, "{name}: every payment");
        assert_eq!(
            reader.feed_after(positions.len() as i64, 10).await.unwrap(),
            [],
            "nothing after"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_skip_a_position_on_postgres() {
    readers_never_skip_a_position(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_skip_a_position_on_sqlite() {
    readers_never_skip_a_position(Backend::Sqlite).await;
}

/// Another node hears of positions the inbox processor gave (its
/// statement announces them at the commit, as the sequencer does): its
/// long-polling readers wake and learn the head without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_nodes_hear_the_inbox_positions() {
    let db = Backend::Postgres.open().await;
    let a = db.store.clone();
    let c: Arc<dyn Store> = finality_store::open(&db.url, 4).await.unwrap();
    register(&*a, "pay_h", T0).await;
    // A subscription starts the other node's LISTEN connection.
    let mut woken = c.subscribe_feed();
    // Until it has taken hold (it may start late on a
    // loaded machine): changes numbered by the sequencer, announced the
    // usual way, until the other node hears one.
    for i in 0.. {
        assert!(i < 40, "the other node never heard the sequencer");
        let id = format!("pay_w{i}");
        register(&*a, &id, T0).await;
        let r = Report {
            payment_id: id,
            status: Status::Processing,
            source: Source::StatusQuery,
            event_id: None,
            observed_at: T0,
            reason: None,
            actor: None,
        };
        a.apply(&r, Timestamp(T0.0 + 1)).await.unwrap();
        a.sequence_feed(1000).await.unwrap();
        let head = a.feed_head();
        tokio::time::sleep(Duration::from_millis(250)).await;
        if head.is_some() && c.feed_head() == head {
            break;
        }
    }
    woken.borrow_and_update();
    a.inbox_insert(&[inbox_event("evt_h", "ref_pay_h", Status::Succeeded)], T0)
        .await
        .unwrap();
    let taken = a
        .inbox_take_and_process(T0, 10, Timestamp(T0.0 + 60_000))
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    let head = a.feed_head().expect("this node knows its own head");
    tokio::time::timeout(Duration::from_secs(10), async {
        while c.feed_head() != Some(head) {
            woken.changed().await.unwrap();
        }
    })
    .await
    .expect("the other node heard the announcement");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_skip_a_position_on_mysql() {
    readers_never_skip_a_position(Backend::Mysql).await;
}
