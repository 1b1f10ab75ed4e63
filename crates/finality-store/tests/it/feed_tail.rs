//! The feed's newest events are served from the memory of the node that
//! numbered them. Two nodes sequencing in turn on one database (so each
//! node's memory has gaps the other filled): every read of every cursor on
//! either node equals a read from the database, on both backends. The
//! details the inbox processor's node holds with its events equal a read.

use finality_core::{Source, Status, Timestamp};
use finality_store::{OutboxEvent, Report, Store};
use finality_testkit::conformance::{inbox_event, register, T0};
use finality_testkit::Backend;
use std::sync::Arc;

fn succeeded(id: &str) -> Report {
    Report {
        payment_id: id.into(),
        status: Status::Succeeded,
        source: Source::Webhook,
        event_id: Some(format!("evt_{id}")),
        observed_at: T0,
        reason: None,
        actor: None,
    }
}

fn positions(v: &[OutboxEvent]) -> Vec<i64> {
    v.iter().map(|e| e.seq).collect()
}

async fn two_nodes_read_what_the_database_holds(backend: Backend) {
    let db = backend.open().await;
    let a = db.store.clone();
    let b: Arc<dyn Store> = finality_store::open(&db.url, 4).await.unwrap();
    // Never sequences: its reads always come from the database.
    let truth: Arc<dyn Store> = finality_store::open(&db.url, 4).await.unwrap();

    let mut made = 0;
    // Rounds of 1–4 changes, numbered by A, A, B, A, B, B, …
    for round in 0..12usize {
        let writer = if round % 3 == 0 { &b } else { &a };
        for _ in 0..(round % 4 + 1) {
            made += 1;
            let id = format!("pay_{made}");
            register(&**writer, &id, T0).await;
            writer
                .apply(&succeeded(&id), Timestamp(T0.0 + 1))
                .await
                .unwrap();
        }
        let sequencer = if [2, 4, 5, 9].contains(&round) {
            &b
        } else {
            &a
        };
        sequencer.sequence_feed(1000).await.unwrap();

        let all = truth.feed_after(0, 1000).await.unwrap();
        assert_eq!(
            positions(&all),
            (1..=made as i64).collect::<Vec<_>>(),
            "round {round}: gapless positions"
        );
        for cursor in 0..=made as i64 {
            for limit in [1, 3, 1000] {
                let want = truth.feed_after(cursor, limit).await.unwrap();
                for (name, node) in [("A", &a), ("B", &b)] {
                    // What the database holds, in order, from the cursor on;
                    // cut short only where this node heard of no more (a
                    // node without a listener, as here, learns only its
                    // own positions), never empty while there is more.
                    let got = node.feed_after(cursor, limit).await.unwrap();
                    let at = format!("round {round}, node {name}, after {cursor}, limit {limit}");
                    assert_eq!(got[..], want[..got.len()], "{at}");
                    assert_eq!(got.is_empty(), want.is_empty(), "{at}");
                }
            }
        }
        // Paging on from the start, each node reads the whole feed.
        for node in [&a, &b] {
            let (mut cursor, mut read) = (0, Vec::new());
            loop {
                let page = node.feed_after(cursor, 3).await.unwrap();
                let Some(last) = page.last() else { break };
                cursor = last.seq;
                read.extend(page);
            }
            assert_eq!(read, all, "round {round}");
        }
    }

    // Pruned events are not served from memory either.
    let later = Timestamp(T0.0 + 1_000_000);
    assert!(a.prune_events(5, later).await.unwrap() > 0);
    assert_eq!(
        positions(&a.feed_after(0, 3).await.unwrap()),
        positions(&truth.feed_after(0, 3).await.unwrap())
    );
    assert_eq!(positions(&a.feed_after(0, 3).await.unwrap()), [6, 7, 8]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_read_what_postgres_holds() {
    two_nodes_read_what_the_database_holds(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_read_what_sqlite_holds() {
    two_nodes_read_what_the_database_holds(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_read_what_mysql_holds() {
    two_nodes_read_what_the_database_holds(Backend::Mysql).await;
}

/// Events the inbox processor numbered are held with what they say beyond
/// the transition (on PostgreSQL, whose numbering statement returns it): a
/// pusher or a reader at the head gets, with no read, exactly what a read
/// of the database gives.
async fn held_details_equal_a_read(backend: Backend) {
    let db = backend.open().await;
    let node = db.store.clone();
    // Never numbers: its details always come from the database.
    let truth: Arc<dyn Store> = finality_store::open(&db.url, 4).await.unwrap();
    let ids: Vec<String> = (0..3).map(|i| format!("pay_d{i}")).collect();
    for id in &ids {
        register(&*node, id, T0).await;
    }
    let rows: Vec<_> = ids
        .iter()
        .map(|id| {
            inbox_event(
                &format!("evt_{id}"),
                &format!("ref_{id}"),
                Status::Succeeded,
            )
        })
        .collect();
    node.inbox_insert(&rows, T0).await.unwrap();
    let now = Timestamp(T0.0 + 7);
    let done = node
        .inbox_take_and_process(now, 10, Timestamp(now.0 + 60_000))
        .await
        .unwrap();
    assert_eq!(done.len(), 3);
    let events = node.feed_after(0, 10).await.unwrap();
    assert_eq!(events.len(), 3, "numbered in the applying transaction");
    let read = truth.event_details(&events).await.unwrap();
    assert_eq!(node.event_details(&events).await.unwrap(), read);
    let p = read[0].payment.as_ref().expect("the payment is read");
    assert_eq!(
        (p.amount, p.currency.as_str(), &p.metadata),
        (1250, "USD", &serde_json::json!({"order": "pay_d0"}))
    );

    if matches!(backend, Backend::Postgres) {
        // Held, not read: the registered fields changed behind the
        // store's back (nothing in finality changes them) are not seen.
        let pg = finality_store::postgres::PgStore::connect(&db.url, 1)
            .await
            .unwrap();
        sqlx::query("UPDATE payments SET metadata = '{\"changed\": true}'")
            .execute(pg.pool())
            .await
            .unwrap();
        let held = node.event_details(&events).await.unwrap();
        assert_eq!(held, read, "served from the tail");
        let again = truth.event_details(&events).await.unwrap();
        assert_eq!(
            again[0].payment.as_ref().map(|p| p.metadata.clone()),
            Some(serde_json::json!({"changed": true})),
            "a read sees the database"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_details_equal_a_read_on_postgres() {
    held_details_equal_a_read(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_details_equal_a_read_on_sqlite() {
    held_details_equal_a_read(Backend::Sqlite).await;
}
