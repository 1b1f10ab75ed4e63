//! Nothing scans all pending payments: the claim reads the due index only.
//! Run with `--nocapture` to see the plans (copied into docs/claim-plan.md).

use finality_testkit::testing::{self, Backend};
use sqlx::Row;

const NOW: i64 = 1_700_000_000_000;

#[tokio::test]
async fn postgres_claim_uses_the_due_index_with_100k_pending() {
    let db = testing::postgres(2).await;
    let Backend::Postgres(pg) = &db.backend else {
        unreachable!()
    };
    // 100,000 pending payments, 1,000 of them due.
    sqlx::query(
        "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, created_at, updated_at) \
         SELECT 'p' || g, 'sim', 'r' || g, 'payment', 100, 'USD', 'pending', $1, $1 FROM generate_series(1, 100000) g",
    )
    .bind(NOW)
    .execute(pg.pool())
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, next_poll_at) \
         SELECT 'p' || g, 'sim', 'r' || g, 'payment', $1, \
                CASE WHEN g <= 1000 THEN $1 - g ELSE $1 + g * 1000 END \
         FROM generate_series(1, 100000) g",
    )
    .bind(NOW)
    .execute(pg.pool())
    .await
    .unwrap();
    sqlx::query("ANALYZE poll_jobs")
        .execute(pg.pool())
        .await
        .unwrap();

    let mut tx = pg.pool().begin().await.unwrap();
    let rows = sqlx::query(&format!(
        "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) {}",
        finality_store::postgres::CLAIM
    ))
    .bind(NOW)
    .bind(64_i64)
    .bind(NOW + 30_000)
    .bind("w")
    .bind(1_i64)
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    let plan: Vec<String> = rows.iter().map(|r| r.get::<String, _>(0)).collect();
    let plan = plan.join("\n");
    println!("PostgreSQL claim plan, 100k pending, 1k due, batch 64:\n{plan}");
    assert!(plan.contains("Index Scan using poll_jobs_due"), "{plan}");
    assert!(!plan.contains("Seq Scan on poll_jobs"), "{plan}");
    assert!(plan.contains("rows=64"), "{plan}");
}

#[tokio::test]
async fn sqlite_claim_uses_the_due_index() {
    let db = testing::sqlite().await;
    let Backend::Sqlite(lite) = &db.backend else {
        unreachable!()
    };
    let rows = sqlx::query(&format!(
        "EXPLAIN QUERY PLAN {}",
        finality_store::sqlite::CLAIM
    ))
    .bind(NOW)
    .bind(64_i64)
    .bind(NOW + 30_000)
    .bind("w")
    .bind(1_i64)
    .fetch_all(lite.pool())
    .await
    .unwrap();
    let plan: Vec<String> = rows.iter().map(|r| r.get::<String, _>("detail")).collect();
    let plan = plan.join("\n");
    println!("SQLite claim plan:\n{plan}");
    assert!(plan.contains("USING INDEX poll_jobs_due"), "{plan}");
    assert!(!plan.contains("SCAN poll_jobs"), "{plan}");
}

/// Fair claiming's two statements read the lane index only: the lanes
/// with due work by a skip scan (seeks per lane, not a read of the
/// backlog), then one lane's due rows.
#[tokio::test]
async fn postgres_lanes_are_found_and_claimed_through_the_lane_index() {
    let db = testing::postgres(2).await;
    let Backend::Postgres(pg) = &db.backend else {
        unreachable!()
    };
    // 100,000 pending payments in three accounts, 1,000 of them due.
    sqlx::query(
        "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, created_at, updated_at, account) \
         SELECT 'p' || g, 'sim', 'r' || g, 'payment', 100, 'USD', 'pending', $1, $1, 'acct_' || (g % 3) \
         FROM generate_series(1, 100000) g",
    )
    .bind(NOW)
    .execute(pg.pool())
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, next_poll_at, account) \
         SELECT 'p' || g, 'sim', 'r' || g, 'payment', $1, \
                CASE WHEN g <= 1000 THEN $1 - g ELSE $1 + g * 1000 END, 'acct_' || (g % 3) \
         FROM generate_series(1, 100000) g",
    )
    .bind(NOW)
    .execute(pg.pool())
    .await
    .unwrap();
    sqlx::query("ANALYZE poll_jobs")
        .execute(pg.pool())
        .await
        .unwrap();
    let explain = |sql: String| async move {
        let mut tx = pg.pool().begin().await.unwrap();
        let mut q = sqlx::query(&sql).bind(NOW);
        if sql.contains("$7") {
            q = q
                .bind(22_i64)
                .bind(NOW + 30_000)
                .bind("w")
                .bind(1_i64)
                .bind("sim")
                .bind("acct_1");
        }
        let rows = q.fetch_all(&mut *tx).await.unwrap();
        tx.rollback().await.unwrap();
        rows.iter()
            .map(|r| r.get::<String, _>(0))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let lanes = explain(format!(
        "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) {}",
        finality_store::postgres::DUE_LANES
    ))
    .await;
    println!("PostgreSQL due lanes, 100k pending in 3 accounts:\n{lanes}");
    assert!(lanes.contains("poll_jobs_lane_due"), "{lanes}");
    assert!(!lanes.contains("Seq Scan on poll_jobs"), "{lanes}");
    let claim = explain(format!(
        "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) {}",
        finality_store::postgres::CLAIM_LANE
    ))
    .await;
    println!("PostgreSQL claim in one lane:\n{claim}");
    assert!(claim.contains("poll_jobs_lane_due"), "{claim}");
    assert!(!claim.contains("Seq Scan on poll_jobs"), "{claim}");
    assert!(claim.contains("rows=22"), "{claim}");
}

/// The same on SQLite: both fair-claiming statements search the lane index.
#[tokio::test]
async fn sqlite_lanes_are_found_and_claimed_through_the_lane_index() {
    let db = testing::sqlite().await;
    let Backend::Sqlite(lite) = &db.backend else {
        unreachable!()
    };
    for sql in [
        finality_store::sqlite::DUE_LANES,
        finality_store::sqlite::CLAIM_LANE,
    ] {
        let text = format!("EXPLAIN QUERY PLAN {sql}");
        let mut q = sqlx::query(&text).bind(NOW);
        if sql.contains("$7") {
            q = q
                .bind(22_i64)
                .bind(NOW + 30_000)
                .bind("w")
                .bind(1_i64)
                .bind("sim")
                .bind("acct_1");
        }
        let rows = q.fetch_all(lite.pool()).await.unwrap();
        let plan: Vec<String> = rows.iter().map(|r| r.get::<String, _>("detail")).collect();
        let plan = plan.join("\n");
        println!("SQLite plan:\n{plan}");
        assert!(plan.contains("poll_jobs_lane_due"), "{plan}");
        // Every read of the table seeks the lane index (a `SCAN … USING
        // INDEX` here stops at its first row: `LIMIT 1` in index order).
        assert!(
            !plan
                .lines()
                .any(|l| (l.contains("SCAN poll_jobs") || l.contains("SCAN j"))
                    && !l.contains("USING INDEX poll_jobs_lane_due")
                    || l.contains("(provider>? AND provider<?)")),
            "{plan}"
        );
    }
}
