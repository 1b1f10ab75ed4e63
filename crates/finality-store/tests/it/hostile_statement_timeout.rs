//! Hostile traffic ("Hostile traffic cannot change…"): before, PostgreSQL
//! statements had no timeout, so one stuck behind a lock or on a sick
//! server held its pool connection, and the work waiting on it, for good.

use finality_store::postgres::PgStore;
use std::time::Duration;

async fn show(pg: &PgStore) -> String {
    sqlx::query_scalar("SHOW statement_timeout")
        .fetch_one(pg.pool())
        .await
        .unwrap()
}

/// Every connection of a store opened by URL has the configured timeout;
/// a statement running past it is cancelled with PostgreSQL's own error; a
/// timeout in the URL's options wins; zero means none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_past_the_timeout_are_cancelled() {
    let db = finality_testkit::testing::postgres(2).await;
    let pg = PgStore::connect(&db.url, 2).await.unwrap();
    assert_eq!(show(&pg).await, "30s", "the default");

    let pg = PgStore::connect_timed(&db.url, 2, Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(show(&pg).await, "300ms");
    let e = sqlx::query("SELECT pg_sleep(2)")
        .execute(pg.pool())
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("statement timeout"),
        "PostgreSQL cancels it: {e}"
    );
    // The connection is still good for the next statement.
    let one: i32 = sqlx::query_scalar("SELECT 1")
        .fetch_one(pg.pool())
        .await
        .unwrap();
    assert_eq!(one, 1);

    let url = format!("{}%20-c%20statement_timeout%3D7s", db.url);
    let pg = PgStore::connect_timed(&url, 2, Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(show(&pg).await, "7s", "the URL's own setting wins");

    let pg = PgStore::connect_timed(&db.url, 2, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(show(&pg).await, "0", "zero: no limit");
}

/// Migrations run on a connection without the timeout (an index over a
/// large table may take longer than any one request should): under a 1 ms
/// timeout, running them on the store's pool fails, and the store's own
/// migrate still applies every one (what runs after them, today's
/// partitions, is held to the timeout like any statement).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_not_cut_off() {
    let db = finality_testkit::testing::postgres(2).await;
    let admin = PgStore::connect(&db.url, 2).await.unwrap();
    let head = db.url.split('?').next().unwrap().to_string();
    let fresh = || async {
        let schema = format!("m_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE SCHEMA {schema}"))
            .execute(admin.pool())
            .await
            .unwrap();
        (
            schema.clone(),
            format!("{head}?options=-c%20search_path%3D{schema}"),
        )
    };
    let tiny = Duration::from_millis(1);

    let (_, url) = fresh().await;
    {
        use sqlx::{ConnectOptions, Connection};
        use std::str::FromStr;
        // One connection of its own, not a pool: a migration cut off leaves
        // sqlx's advisory lock (one per database) held by its session, and
        // a pool may keep that session open (its close() waited for good
        // in one run in three), so every other test's migrations in this
        // database would wait. Closing the socket ends the session and
        // frees the lock.
        let mut conn = sqlx::postgres::PgConnectOptions::from_str(&url)
            .unwrap()
            .options([("statement_timeout", "1ms")])
            .connect()
            .await
            .unwrap();
        let e = sqlx::migrate!("migrations/postgres")
            .run(&mut conn)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("statement timeout"), "{e}");
        let _ = conn.close_hard().await;
    }

    let (schema, url) = fresh().await;
    let pg = PgStore::connect_timed(&url, 2, tiny).await.unwrap();
    let _ = finality_store::Store::migrate(&pg).await;
    let applied: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {schema}._sqlx_migrations WHERE success"
    ))
    .fetch_one(admin.pool())
    .await
    .unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres"))
        .unwrap()
        .count() as i64;
    assert_eq!(
        applied, files,
        "every migration applied under a 1 ms timeout"
    );
}
