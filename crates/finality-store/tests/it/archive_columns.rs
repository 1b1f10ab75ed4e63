//! Archive files hold the columns `finality_store::retention::TABLES`
//! names: a column a migration adds and the list misses would be lost by
//! every archive. Each archived table's columns, as the migrated database
//! has them on each backend, must be exactly the list's.

use finality_store::retention::TABLES;
use finality_testkit::testing::{self, Backend};
use std::collections::BTreeSet;

async fn columns(db: &testing::TestDb, table: &str) -> BTreeSet<String> {
    let names: Vec<String> = match &db.backend {
        Backend::Postgres(pg) => sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1",
        )
        .bind(table)
        .fetch_all(pg.pool())
        .await
        .unwrap(),
        Backend::Sqlite(lite) => sqlx::query_scalar("SELECT name FROM pragma_table_info($1)")
            .bind(table)
            .fetch_all(lite.pool())
            .await
            .unwrap(),
        Backend::Mysql(my) => sqlx::query_scalar(
            "SELECT CAST(column_name AS CHAR) FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = ?",
        )
        .bind(table)
        .fetch_all(my.pool())
        .await
        .unwrap(),
    };
    names.into_iter().collect()
}

async fn every_archived_table_is_archived_whole(db: testing::TestDb) {
    for spec in TABLES {
        let listed: BTreeSet<String> = spec.cols.iter().map(|(c, _)| c.to_string()).collect();
        let have = columns(&db, spec.name).await;
        assert!(!have.is_empty(), "no table {}", spec.name);
        assert_eq!(listed, have, "{}: archive columns vs the table", spec.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_columns_on_postgres() {
    every_archived_table_is_archived_whole(testing::postgres(2).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_columns_on_sqlite() {
    every_archived_table_is_archived_whole(testing::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_columns_on_mysql() {
    every_archived_table_is_archived_whole(testing::mysql(2).await).await;
}
