//! The feed's epoch changes the first time a position is given in another
//! history (PostgreSQL: another system or timeline; MariaDB: another
//! server), and records where the histories part. The failover is played
//! as a standby would apply it: the old primary's `feed_state` row (its
//! origin) arrives without the trigger running (`session_replication_role
//! = replica` is what a physical standby amounts to here), and the last
//! committed event never arrived.

use finality_core::{Status, Timestamp};
use finality_store::{Report, Store};
use finality_testkit::conformance::{register, T0};
use finality_testkit::Backend;

async fn settle(db: &dyn Store, id: &str) {
    register(db, id, T0).await;
    let r = Report::manual(id, Status::Succeeded, "seen".into(), "ops".into(), T0);
    db.apply(&r, Timestamp(T0.0 + 1)).await.unwrap();
    while db.sequence_feed(100).await.unwrap() > 0 {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_given_in_another_history_starts_an_epoch() {
    let db = Backend::Postgres.open().await;
    let store = &*db.store;
    for id in ["pay_1", "pay_2", "pay_3"] {
        settle(store, id).await;
    }
    let first = store.feed_epoch().await.unwrap();
    assert_eq!((first.since, first.head), (0, 3), "{first:?}");
    // Positions given on the same server keep the epoch.
    settle(store, "pay_4").await;
    assert_eq!(store.feed_epoch().await.unwrap().epoch, first.epoch);

    // The standby had everything up to position 3, written by a primary on
    // another timeline; position 4 was lost with its commit.
    {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
        sqlx::query("SET session_replication_role = replica")
            .execute(&mut c)
            .await
            .unwrap();
        sqlx::query("DELETE FROM outbox WHERE feed_seq = 4")
            .execute(&mut c)
            .await
            .unwrap();
        sqlx::query(
            "UPDATE feed_state SET last_seq = 3, \
             epoch_origin = split_part(epoch_origin, '/', 1) || '/00000001-old'",
        )
        .execute(&mut c)
        .await
        .unwrap();
    }
    // Read before any position is given in the new history: still the
    // old epoch, and nothing past 3 is served under it.
    assert_eq!(store.feed_epoch().await.unwrap().epoch, first.epoch);

    settle(store, "pay_5").await;
    let now = store.feed_epoch().await.unwrap();
    assert_ne!(now.epoch, first.epoch);
    assert_eq!((now.since, now.head), (3, 4), "{now:?}");
    let feed = store.feed_after(3, 10).await.unwrap();
    assert_eq!(feed[0].payment_id, "pay_5", "position 4 given again");
    // Where the old history parts from this one; the current one reads
    // to its head; an epoch never had is unknown.
    assert_eq!(
        store.feed_epoch_parted(&first.epoch).await.unwrap(),
        Some(3)
    );
    assert_eq!(store.feed_epoch_parted(&now.epoch).await.unwrap(), Some(4));
    assert_eq!(store.feed_epoch_parted("nope").await.unwrap(), None);
    // And it stays: the next positions keep the new epoch.
    settle(store, "pay_6").await;
    assert_eq!(store.feed_epoch().await.unwrap().epoch, now.epoch);
}

/// SQLite and MariaDB hold an epoch from their migration; positions given
/// keep it.
async fn an_epoch_from_the_start(b: Backend) {
    let db = b.open().await;
    let store = &*db.store;
    let first = store.feed_epoch().await.unwrap();
    assert!(!first.epoch.is_empty() && first.epoch != "0", "{first:?}");
    settle(store, "pay_1").await;
    settle(store, "pay_2").await;
    let now = store.feed_epoch().await.unwrap();
    assert_eq!(
        (now.epoch.as_str(), now.since, now.head),
        (first.epoch.as_str(), 0, 2)
    );
    assert_eq!(store.feed_epoch_parted(&now.epoch).await.unwrap(), Some(2));
}

finality_testkit::on_both_backends!(an_epoch_from_the_start);
