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

/// The same with a real failover: a streaming standby that stopped
/// receiving WAL before the primary's last commit, promoted after the
/// primary crashed (a new timeline), and the store moved to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_standby_that_lost_commits_starts_an_epoch() {
    use finality_testkit::private_pg::PrivatePg;
    use finality_testkit::testing;
    let primary = PrivatePg::start();
    let old = testing::postgres_at(&primary.url(), 4).await;
    for id in ["pay_1", "pay_2", "pay_3"] {
        settle(&*old.store, id).await;
    }
    let first = old.store.feed_epoch().await.unwrap();
    let standby = primary.replica();
    let on_standby = testing::postgres_at_standby(&standby.url(), 2).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while on_standby.store.feed_epoch().await.map(|e| e.head).ok() != Some(3) {
        assert!(
            std::time::Instant::now() < deadline,
            "the standby did not catch up"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    drop(on_standby);
    // WAL shipping cut: the standby is down while the primary commits its
    // last event (position 4), then the primary crashes.
    standby.stop(false);
    settle(&*old.store, "pay_4").await;
    assert_eq!(old.store.feed_epoch().await.unwrap().head, 4);
    primary.stop(true);
    drop(old);
    standby.start_again();
    standby.promote();

    let new = testing::postgres_at(&standby.url(), 4).await;
    let before = new.store.feed_epoch().await.unwrap();
    assert_eq!(
        (before.epoch.as_str(), before.head),
        (first.epoch.as_str(), 3)
    );
    settle(&*new.store, "pay_5").await;
    let now = new.store.feed_epoch().await.unwrap();
    assert_ne!(now.epoch, first.epoch, "a new timeline, a new epoch");
    assert_eq!((now.since, now.head), (3, 4), "{now:?}");
    assert_eq!(
        new.store.feed_after(3, 10).await.unwrap()[0].payment_id,
        "pay_5",
        "position 4 given again, to another event"
    );
    assert_eq!(
        new.store.feed_epoch_parted(&first.epoch).await.unwrap(),
        Some(3)
    );
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
