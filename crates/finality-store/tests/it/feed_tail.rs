//! The feed's newest events are served from the memory of the node that
//! numbered them. Two nodes sequencing in turn on one database (so each
//! node's memory has gaps the other filled): every read of every cursor on
//! either node equals a read from the database, on both backends.

use finality_core::{Source, Status, Timestamp};
use finality_store::{OutboxEvent, Report, Store};
use finality_testkit::conformance::{register, T0};
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
