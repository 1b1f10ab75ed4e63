//! Upgrading an SQLite database made before payments could be registered by
//! merchant reference: migration 0007 rebuilds `payments` and `poll_jobs`
//! (SQLite cannot drop NOT NULL), so it must keep every row and every
//! constraint, and must not cascade into the poll jobs while it does.

use finality_store::prelude::*;
use finality_store::sqlite::SqliteStore;
use finality_store::Store;
use sqlx::migrate::Migrator;
use std::borrow::Cow;

#[tokio::test]
async fn sqlite_upgrade_keeps_rows_and_constraints() {
    let path = std::env::temp_dir().join(format!("finality_upgrade_{}.db", uuid_like()));
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            url.parse::<sqlx::sqlite::SqliteConnectOptions>()
                .unwrap()
                .foreign_keys(true),
        )
        .await
        .unwrap();
    let all = sqlx::migrate!("migrations/sqlite");
    let before = Migrator {
        migrations: Cow::Owned(all.migrations[..6].to_vec()),
        ..all
    };
    before.run(&pool).await.unwrap();
    for sql in [
        "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, \
         created_at, updated_at) VALUES ('p1', 'sim', 'r1', 'payment', 100, 'USD', 'pending', 1, 1)",
        "INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, \
         attempts, next_poll_at, errors) VALUES ('p1', 'sim', 'r1', 'payment', 1, 3, 50, 2)",
        "INSERT INTO status_history (payment_id, from_status, to_status, source, observed_at, at) \
         VALUES ('p1', 'pending', 'processing', 'webhook', 2, 2)",
    ] {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    pool.close().await;

    let store = SqliteStore::connect(&url, 2).await.unwrap();
    store.migrate().await.unwrap();
    let view = store.get("p1").await.unwrap().expect("payment kept");
    assert_eq!(view.payment.provider_ref.as_deref(), Some("r1"));
    assert_eq!(view.payment.merchant_ref, None);
    let poll = view.poll.expect("poll job kept, not cascaded away");
    assert_eq!((poll.attempts, poll.errors), (3, 2));
    assert_eq!(view.history.len(), 1);

    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            url.parse::<sqlx::sqlite::SqliteConnectOptions>()
                .unwrap()
                .foreign_keys(true),
        )
        .await
        .unwrap();
    // Constraints survived the rebuild: a duplicate provider reference and a
    // payment with neither reference are refused; foreign keys still hold.
    let dup = "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, \
               created_at, updated_at) VALUES ('p2', 'sim', 'r1', 'payment', 1, 'USD', 'pending', 1, 1)";
    assert!(sqlx::query(dup).execute(&pool).await.is_err());
    let none = "INSERT INTO payments (id, provider, kind, amount, currency, status, created_at, \
                updated_at) VALUES ('p3', 'sim', 'payment', 1, 'USD', 'pending', 1, 1)";
    assert!(sqlx::query(none).execute(&pool).await.is_err());
    let orphan_job = "INSERT INTO poll_jobs (payment_id, provider, kind, registered_at) \
                      VALUES ('nope', 'sim', 'payment', 1)";
    assert!(sqlx::query(orphan_job).execute(&pool).await.is_err());
    // ...and point at the rebuilt `payments`, not at the name it was built under.
    let schema: Vec<(String,)> =
        sqlx::query_as("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(
        schema.iter().all(|(sql,)| !sql.contains("_new")),
        "{schema:?}"
    );
    for sql in [
        "INSERT INTO payments (id, provider, merchant_ref, kind, amount, currency, status, \
         created_at, updated_at) VALUES ('p4', 'sim', 'm4', 'payment', 1, 'USD', 'pending', 1, 1)",
        "INSERT INTO poll_jobs (payment_id, provider, merchant_ref, kind, registered_at) \
         VALUES ('p4', 'sim', 'm4', 'payment', 1)",
        "INSERT INTO status_history (payment_id, to_status, source, observed_at, at) \
         VALUES ('p4', 'pending', 'manual', 1, 1)",
    ] {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    let ids: Vec<(i64,)> = sqlx::query_as("SELECT id FROM status_history ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(
        ids,
        vec![(1,), (2,)],
        "history ids kept and the sequence continues"
    );
    let fk: Vec<(String,)> = sqlx::query_as("SELECT \"table\" FROM pragma_foreign_key_check")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert!(fk.is_empty(), "{fk:?}");
    let _ = std::fs::remove_file(&path);
}

fn uuid_like() -> String {
    format!(
        "{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
}

/// Both backends number their migrations alike (same versions, same names).
#[test]
fn migrations_are_numbered_alike_on_both_backends() {
    let pg = sqlx::migrate!("migrations/postgres");
    let lite = sqlx::migrate!("migrations/sqlite");
    let list = |m: &Migrator| -> Vec<(i64, String)> {
        m.iter()
            .map(|m| (m.version, m.description.to_string()))
            .collect()
    };
    assert_eq!(list(&pg), list(&lite));
}

/// A database migrated when SQLite's migrations were numbered 1–6 (no 0004)
/// is renumbered in place and then migrates as usual.
#[tokio::test]
async fn sqlite_history_under_the_old_numbers_is_renumbered() {
    let path = std::env::temp_dir().join(format!("finality_renumber_{}.db", uuid_like()));
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let store = SqliteStore::connect(&url, 1).await.unwrap();
    store.migrate().await.unwrap();
    let pool = store.pool().clone();
    // Rewrite the history as the old numbering left it.
    for sql in [
        "DELETE FROM _sqlx_migrations WHERE version = 4",
        "UPDATE _sqlx_migrations SET version = 4 WHERE version = 5",
        "UPDATE _sqlx_migrations SET version = 5 WHERE version = 6",
        "UPDATE _sqlx_migrations SET version = 6 WHERE version = 7",
    ] {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    store.migrate().await.unwrap();
    let rows: Vec<(i64, String)> =
        sqlx::query_as("SELECT version, description FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap();
    let all = sqlx::migrate!("migrations/sqlite");
    let want: Vec<(i64, String)> = all
        .iter()
        .map(|m| (m.version, m.description.to_string()))
        .collect();
    assert_eq!(rows, want);
    // And once more is a no-op.
    store.migrate().await.unwrap();
    let _ = std::fs::remove_file(&path);
}
