//! PostgreSQL daily partitions: a new database is partitioned from the
//! start; a populated table made before partitions (the shape migration
//! 0001 gave it) is converted online while rows keep being inserted, loses
//! none of them and refuses none; a detached day is dropped only when it
//! holds exactly what was archived.

use finality_core::Timestamp;
use finality_store::retention::partitions::{day_start, Conversion, DAY_MS};
use finality_store::retention::RowKind;
use finality_testkit::testing::{self, Backend};
use sqlx::PgPool;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn pool(db: &testing::TestDb) -> PgPool {
    match &db.backend {
        Backend::Postgres(pg) => pg.pool().clone(),
        Backend::Sqlite(_) | Backend::Mysql(_) => unreachable!("a PostgreSQL test"),
    }
}

async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

async fn relkind(pool: &PgPool, table: &str) -> String {
    sqlx::query_scalar("SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)")
        .bind(table)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// `YYYYMMDD` of a time, as day partitions are named.
fn finality_store_day(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap()
        .format("%Y%m%d")
        .to_string()
}

fn wall() -> Timestamp {
    finality_core::Clock::now(&finality_core::SystemClock)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_database_is_partitioned_by_day() {
    let db = testing::postgres(4).await;
    let pool = pool(&db);
    for table in ["poll_attempts", "delivery_attempts"] {
        assert_eq!(relkind(&pool, table).await, "p", "{table}");
    }
    let store = &db.store;
    assert!(store.partitioned(RowKind::ProviderCalls).await.unwrap());
    assert!(!store.partitioned(RowKind::Webhooks).await.unwrap());
    let now = wall();
    store.partitions_ahead(now, 3).await.unwrap();
    let parts = store.partitions(RowKind::ProviderCalls).await.unwrap();
    let days: Vec<_> = parts.iter().filter(|p| !p.default).collect();
    assert_eq!(days.len(), 4, "today and three ahead: {parts:?}");
    assert_eq!(days[0].from, Some(day_start(now.0)));
    assert!(parts.last().unwrap().default, "{parts:?}");
    // Created once: a second call creates nothing.
    assert!(store.partitions_ahead(now, 3).await.unwrap().is_empty());
    // A day whose rows already went to the default partition (the role did
    // not run) is skipped, its rows left where they are; the rest is made.
    let day5 = day_start(now.0) + 5 * DAY_MS;
    sqlx::query(
        "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, outcome) \
         VALUES ('early', 'sim', 'w', $1, 1, 'unknown')",
    )
    .bind(day5 + 7)
    .execute(&pool)
    .await
    .unwrap();
    let made: Vec<String> = store
        .partitions_ahead(now, 6)
        .await
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("poll_attempts"))
        .collect();
    assert_eq!(made.len(), 2, "days 4 and 6, not 5: {made:?}");
    assert!(!made.iter().any(|n| n.ends_with(&finality_store_day(day5))));
    assert_eq!(
        count(&pool, "SELECT count(*) FROM poll_attempts_default").await,
        1
    );
    sqlx::query("DELETE FROM poll_attempts")
        .execute(&pool)
        .await
        .unwrap();
    // A row far outside every day lands in the default partition.
    sqlx::query(
        "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, outcome) \
         VALUES ('p', 'sim', 'w', 42, 1, 'unknown')",
    )
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(
        count(&pool, "SELECT count(*) FROM poll_attempts_default").await,
        1
    );
}

/// The table as migration 0001 made it, holding `rows` rows over the three
/// days before `now`.
async fn old_shape(pool: &PgPool, rows: i64, now: i64) {
    for sql in [
        "DROP TABLE poll_attempts".to_string(),
        "CREATE TABLE poll_attempts (
            id BIGSERIAL PRIMARY KEY, payment_id TEXT NOT NULL, provider TEXT NOT NULL,
            worker TEXT NOT NULL, started_at BIGINT NOT NULL, latency_ms BIGINT NOT NULL,
            outcome TEXT NOT NULL, provider_status TEXT, error_class TEXT, error TEXT)"
            .to_string(),
        "CREATE INDEX poll_attempts_payment ON poll_attempts (payment_id, id)".to_string(),
        format!(
            "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, outcome) \
             SELECT 'p' || (g % 500), 'sim', 'w', {now} - 3 * {DAY_MS} + g * (3 * {DAY_MS} / {rows}), 5, 'pending' \
             FROM generate_series(1, {rows}) g"
        ),
    ] {
        sqlx::query(&sql).execute(pool).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_populated_table_converts_online_while_rows_keep_coming() {
    let db = testing::postgres(8).await;
    let pool = pool(&db);
    let now = wall();
    let seeded = 60_000;
    old_shape(&pool, seeded, now.0).await;
    assert_eq!(relkind(&pool, "poll_attempts").await, "r");
    // A cut-over check left by a conversion that stopped (a crash) would
    // refuse rows once its time came: the next migrate or run drops it.
    sqlx::query(
        "ALTER TABLE poll_attempts ADD CONSTRAINT poll_attempts_cutover CHECK (started_at < 5) NOT VALID",
    )
    .execute(&pool)
    .await
    .unwrap();
    db.store.partitions_ahead(now, 1).await.unwrap();
    assert_eq!(
        count(
            &pool,
            "SELECT count(*) FROM pg_constraint WHERE conname = 'poll_attempts_cutover'"
        )
        .await,
        0
    );
    assert_eq!(
        relkind(&pool, "poll_attempts").await,
        "r",
        "a populated table is not converted at migrate"
    );

    // Writers insert all along, as polls do, through the table's name.
    let stop = Arc::new(AtomicBool::new(false));
    let inserted = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    for w in 0..3 {
        let (pool, stop, inserted) = (pool.clone(), stop.clone(), inserted.clone());
        writers.push(tokio::spawn(async move {
            let mut errors = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let at = wall().0;
                match sqlx::query(
                    "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, outcome) \
                     VALUES ($1, 'sim', 'w', $2, 3, 'pending')",
                )
                .bind(format!("live{w}"))
                .bind(at)
                .execute(&pool)
                .await
                {
                    Ok(_) => {
                        inserted.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            errors
        }));
    }

    let store = &db.store;
    let mut steps = Vec::new();
    loop {
        match store
            .convert_step(RowKind::ProviderCalls, wall())
            .await
            .unwrap()
        {
            Conversion::Pending(step) => steps.push(step),
            Conversion::Partitioned => break,
            other => panic!("PostgreSQL partitions, nobody else converting: {other:?}"),
        }
        assert!(steps.len() < 10, "no end to the conversion: {steps:?}");
    }
    // Rows go on after the swap, into the new partitions.
    let before_stop = inserted.load(Ordering::Relaxed);
    while inserted.load(Ordering::Relaxed) < before_stop + 50 {
        tokio::task::yield_now().await;
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        let errors = w.await.unwrap();
        assert!(
            errors.is_empty(),
            "inserts refused during the conversion: {errors:?}"
        );
    }
    assert_eq!(
        steps.len(),
        1,
        "the index, then the cut-over and swap: {steps:?}"
    );
    assert_eq!(relkind(&pool, "poll_attempts").await, "p");
    let live = i64::try_from(inserted.load(Ordering::Relaxed)).unwrap();
    assert!(live > 50);
    assert_eq!(
        count(&pool, "SELECT count(*) FROM poll_attempts").await,
        seeded + live,
        "every row kept"
    );
    // Ids go on from the same sequence: none repeats.
    assert_eq!(
        count(&pool, "SELECT count(DISTINCT id) FROM poll_attempts").await,
        seeded + live
    );
    let parts = store.partitions(RowKind::ProviderCalls).await.unwrap();
    let legacy = parts
        .iter()
        .find(|p| p.name == "poll_attempts_legacy")
        .expect("the old table is the first partition");
    assert_eq!(legacy.from, None);
    let cutover = legacy.to.expect("the cut-over");
    assert!(cutover > now.0, "cut-over ahead of the start");
    assert!(parts.iter().any(|p| p.default));
    // The old rows and those inserted before the cut-over are in it.
    assert_eq!(
        count(&pool, "SELECT count(*) FROM poll_attempts_legacy").await,
        seeded + live
    );
    // The keys the partitioned table needs, and the index polls read by.
    sqlx::query("ANALYZE poll_attempts")
        .execute(&pool)
        .await
        .unwrap();
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN SELECT * FROM poll_attempts WHERE payment_id = 'p1' ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(
        plan.iter()
            .any(|l| l.contains("poll_attempts_legacy_payment")),
        "{plan:?}"
    );
    // Restoring a row already there inserts nothing (the (id, time) key).
    let dup = sqlx::query(
        "INSERT INTO poll_attempts SELECT * FROM poll_attempts WHERE id = 1 ON CONFLICT DO NOTHING",
    )
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(dup.rows_affected(), 0);

    // Days ahead after the conversion; then the old table goes whole once
    // detached, and only if it holds what was archived.
    let created = store.partitions_ahead(wall(), 2).await.unwrap();
    assert!(!created.is_empty());
    store.partition_detach(legacy).await.unwrap();
    let mut after = 0;
    let mut read = 0u64;
    loop {
        let page = store
            .partition_page(RowKind::ProviderCalls, legacy, after, 7000)
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        after = last.id;
        read += page.len() as u64;
    }
    assert_eq!(read, u64::try_from(seeded + live).unwrap());
    assert!(
        !store.partition_drop(legacy, read - 1).await.unwrap(),
        "a count that differs keeps it"
    );
    assert!(store.partition_drop(legacy, read).await.unwrap());
    assert_eq!(count(&pool, "SELECT count(*) FROM poll_attempts").await, 0);
    // Inserts still work, ids still fresh.
    sqlx::query(
        "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, outcome) \
         VALUES ('x', 'sim', 'w', $1, 1, 'unknown')",
    )
    .bind(wall().0)
    .execute(&pool)
    .await
    .unwrap();
    assert!(count(&pool, "SELECT max(id) FROM poll_attempts").await > seeded + live);
}
