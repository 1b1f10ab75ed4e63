//! Transactional enqueue: a payment registered inside the caller's own
//! transaction exists (with its poll job) exactly when that transaction commits.

use finality_store::{mysql, postgres, sqlite, Registered, Store};
use finality_testkit::conformance::{new_payment, T0};
use finality_testkit::testing::{self, Backend};

async fn assert_registered(store: &dyn Store, id: &str, expected: bool) {
    let view = store.get(id).await.unwrap();
    assert_eq!(view.is_some(), expected, "payment {id}");
    if let Some(v) = view {
        assert!(v.poll.is_some(), "its poll job exists too");
    }
    let due = store.next_due_at().await.unwrap();
    assert_eq!(due.is_some(), expected, "poll job of {id}");
}

#[tokio::test]
async fn postgres_rust_api_commits_and_rolls_back_with_the_caller() {
    let db = testing::postgres(4).await;
    let Backend::Postgres(pg) = &db.backend else {
        unreachable!()
    };

    let mut tx = pg.pool().begin().await.unwrap();
    let r = postgres::register_in(&mut tx, &new_payment("rolled"), T0, T0)
        .await
        .unwrap();
    assert!(matches!(r, Registered::Created(_)));
    tx.rollback().await.unwrap();
    assert_registered(&*db.store, "rolled", false).await;

    let mut tx = pg.pool().begin().await.unwrap();
    postgres::register_in(&mut tx, &new_payment("kept"), T0, T0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_registered(&*db.store, "kept", true).await;
}

#[tokio::test]
async fn postgres_sql_function_commits_and_rolls_back_with_the_caller() {
    let db = testing::postgres(4).await;
    let Backend::Postgres(pg) = &db.backend else {
        unreachable!()
    };
    let call = "SELECT finality_register_payment($1, 'sim', $2, 1250, 'USD')";

    let mut tx = pg.pool().begin().await.unwrap();
    let out: String = sqlx::query_scalar(call)
        .bind("sql_rolled")
        .bind("r1")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(out, "created");
    tx.rollback().await.unwrap();
    assert_registered(&*db.store, "sql_rolled", false).await;

    let mut tx = pg.pool().begin().await.unwrap();
    sqlx::query_scalar::<_, String>(call)
        .bind("sql_kept")
        .bind("r2")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_registered(&*db.store, "sql_kept", true).await;

    let again: String = sqlx::query_scalar(call)
        .bind("sql_kept")
        .bind("r2")
        .fetch_one(pg.pool())
        .await
        .unwrap();
    assert_eq!(again, "exists");
    let err = sqlx::query_scalar::<_, String>(
        "SELECT finality_register_payment('sql_kept', 'sim', 'r2', 99, 'USD')",
    )
    .fetch_one(pg.pool())
    .await
    .unwrap_err();
    assert!(err.to_string().contains("different body"), "{err}");
    let err = sqlx::query_scalar::<_, String>(
        "SELECT finality_register_payment('x', 'sim', 'r3', -1, 'USD')",
    )
    .fetch_one(pg.pool())
    .await
    .unwrap_err();
    assert!(err.to_string().contains("amount"), "{err}");
    let v = db.store.get("sql_kept").await.unwrap().unwrap();
    assert_eq!(
        (v.payment.amount, v.payment.currency.as_str()),
        (1250, "USD")
    );
}

#[tokio::test]
async fn sqlite_rust_api_commits_and_rolls_back_with_the_caller() {
    let db = testing::sqlite().await;
    let Backend::Sqlite(lite) = &db.backend else {
        unreachable!()
    };

    let mut tx = lite.pool().begin().await.unwrap();
    sqlite::register_in(&mut tx, &new_payment("rolled"), T0, T0)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    assert_registered(&*db.store, "rolled", false).await;

    let mut tx = lite.pool().begin().await.unwrap();
    sqlite::register_in(&mut tx, &new_payment("kept"), T0, T0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_registered(&*db.store, "kept", true).await;
}

#[tokio::test]
async fn mysql_rust_api_commits_and_rolls_back_with_the_caller() {
    let db = testing::mysql(4).await;
    let Backend::Mysql(my) = &db.backend else {
        unreachable!()
    };

    let mut tx = my.pool().begin().await.unwrap();
    let r = mysql::register_in(&mut tx, &new_payment("rolled"), T0, T0)
        .await
        .unwrap();
    assert!(matches!(r, Registered::Created(_)));
    tx.rollback().await.unwrap();
    assert_registered(&*db.store, "rolled", false).await;

    let mut tx = my.pool().begin().await.unwrap();
    mysql::register_in(&mut tx, &new_payment("kept"), T0, T0)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_registered(&*db.store, "kept", true).await;
}

/// The stored procedure, for applications in any language: called in the
/// caller's transaction it commits and rolls back with it; called again
/// with the same body it answers `exists`, with another it is refused.
#[tokio::test]
async fn mysql_stored_procedure_commits_and_rolls_back_with_the_caller() {
    let db = testing::mysql(4).await;
    let Backend::Mysql(my) = &db.backend else {
        unreachable!()
    };
    let call = "CALL finality_register_payment(?, 'sim', ?, 1250, 'USD', NULL, NULL, NULL, NULL)";
    // A prepared CALL describes its result's columns only when run: read
    // the one column by position.
    let registered = |row: sqlx::mysql::MySqlRow| -> String {
        use sqlx::Row;
        row.try_get_unchecked::<String, _>(0).unwrap()
    };

    let mut tx = my.pool().begin().await.unwrap();
    let row = sqlx::query(call)
        .bind("sql_rolled")
        .bind("r1")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(registered(row), "created");
    tx.rollback().await.unwrap();
    assert_registered(&*db.store, "sql_rolled", false).await;

    let mut tx = my.pool().begin().await.unwrap();
    sqlx::query(call)
        .bind("sql_kept")
        .bind("r2")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_registered(&*db.store, "sql_kept", true).await;

    let row = sqlx::query(call)
        .bind("sql_kept")
        .bind("r2")
        .fetch_one(my.pool())
        .await
        .unwrap();
    assert_eq!(registered(row), "exists");
    let err = sqlx::query(
        "CALL finality_register_payment('sql_kept', 'sim', 'r2', 99, 'USD', NULL, NULL, NULL, NULL)",
    )
    .fetch_one(my.pool())
    .await
    .unwrap_err();
    assert!(err.to_string().contains("different body"), "{err}");
    let err = sqlx::query(
        "CALL finality_register_payment('x', 'sim', 'r3', -1, 'USD', NULL, NULL, NULL, NULL)",
    )
    .fetch_one(my.pool())
    .await
    .unwrap_err();
    assert!(err.to_string().contains("amount"), "{err}");
    let v = db.store.get("sql_kept").await.unwrap().unwrap();
    assert_eq!(
        (v.payment.amount, v.payment.currency.as_str()),
        (1250, "USD")
    );
}
