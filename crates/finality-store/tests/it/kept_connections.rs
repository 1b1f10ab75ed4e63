//! The webhook inbox keeps its connection between batches (no pool test
//! round trips per batch, `driver::held`): a kept connection killed under
//! it costs at most the one batch that finds it dead (answered 503 by the
//! service, retried by the provider), and one idle past a second is never
//! used blind.

use finality_core::{Status, Timestamp};
use finality_store::postgres::PgStore;
use finality_store::{NewInboxEvent, WebhookInbox};
use finality_testkit::conformance::inbox_event;
use sqlx::postgres::PgConnectOptions;
use std::str::FromStr;
use std::time::Duration;

fn row(event_id: &str) -> NewInboxEvent {
    inbox_event(event_id, &format!("ref_{event_id}"), Status::Succeeded)
}

/// Kill every connection of the store named `app` (and only its own: other
/// tests share the database).
async fn kill(admin: &PgStore, app: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = $1) t",
    )
    .bind(app)
    .fetch_one(admin.pool())
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_kept_connection_costs_at_most_one_batch() {
    let db = finality_testkit::testing::postgres(2).await;
    let admin = PgStore::connect(&db.url, 2).await.unwrap();
    let app = format!("kept_{}", uuid::Uuid::new_v4().simple());
    let opts = PgConnectOptions::from_str(&db.url)
        .unwrap()
        .application_name(&app);
    let pg = PgStore::connect_with(opts, 8).await.unwrap();
    let now = Timestamp(1_000);

    assert_eq!(pg.inbox_insert(&[row("a")], now).await.unwrap(), [true]);
    // The same connection again (kept): the unique key still decides.
    assert_eq!(
        pg.inbox_insert(&[row("a"), row("b")], now).await.unwrap(),
        [false, true]
    );

    // Killed within a second of its last use: the next batch may find it
    // dead, and fails whole (nothing stored, the caller answers 503)...
    assert!(
        kill(&admin, &app).await >= 1,
        "the kept connection was open"
    );
    let first = pg.inbox_insert(&[row("c")], now).await;
    // ...and the batch after it is stored on a new connection.
    let fresh = match first {
        Ok(fresh) => fresh,
        Err(_) => pg.inbox_insert(&[row("c")], now).await.unwrap(),
    };
    assert_eq!(fresh, [true]);

    // Killed, then idle past a second: the dead connection is not used; the
    // first batch is stored.
    assert!(kill(&admin, &app).await >= 1);
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert_eq!(
        pg.inbox_insert(&[row("d"), row("c")], now).await.unwrap(),
        [true, false]
    );
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_inbox")
        .fetch_one(pg.pool())
        .await
        .unwrap();
    assert_eq!(stored, 4);
}
