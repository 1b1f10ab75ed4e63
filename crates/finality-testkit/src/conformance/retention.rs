//! Retention's reads, deletes, archives and restores:
//! [`finality_store::Lifecycle`]. On PostgreSQL and SQLite; the in-memory
//! store keeps no retention and refuses it ([`refused_in_memory`]).

use super::support::*;
use super::Case;
use finality_core::{Status, Timestamp};
use finality_store::retention::{RowKind, PAYMENTS};
use finality_store::{InboxOutcome, Store, StoreError};
use std::sync::Arc;

fn at(ms: i64) -> Timestamp {
    Timestamp(T0.0 + ms)
}

/// Settled webhook rows are paged in id order and deleted only while they
/// are in the state they were read in; the scan's cursor moves only from
/// where it was, and rewinds only backwards; a held day is held until its
/// time.
pub async fn settled_rows_are_paged_and_removed_as_read(db: Arc<dyn Store>) {
    register(&*db, "pay_1", T0).await;
    db.inbox_insert(
        &[
            inbox_event("evt_1", "ref_pay_1", Status::Succeeded),
            inbox_event("evt_2", "ref_nobody", Status::Succeeded),
        ],
        T0,
    )
    .await
    .unwrap();
    let out = drain_inbox(&*db, T0).await;
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(
        out.iter().any(|o| matches!(o, InboxOutcome::Orphaned)),
        "{out:?}"
    );

    let rows = db.life_page(RowKind::Webhooks, 0, 10).await.unwrap();
    assert_eq!(rows.len(), 2, "applied and orphaned are settled");
    assert!(rows[0].id < rows[1].id && rows.iter().all(|r| r.at == T0.0));
    let state = |i: usize| rows[i].json["state"].as_str().map(str::to_string);
    let applied = (0..2)
        .find(|&i| state(i).as_deref() == Some("applied"))
        .unwrap();
    let orphan = 1 - applied;
    let wrong = Some("applied".to_string());
    assert_eq!(
        db.life_remove(RowKind::Webhooks, &[(rows[orphan].id, wrong)], at(1), at(2))
            .await
            .unwrap(),
        0,
        "not in the state it was read in"
    );
    assert_eq!(
        db.life_remove(
            RowKind::Webhooks,
            &[(rows[applied].id, state(applied))],
            T0,
            at(2)
        )
        .await
        .unwrap(),
        0,
        "not older than the cutoff"
    );
    assert_eq!(
        db.life_remove(
            RowKind::Webhooks,
            &[(rows[applied].id, state(applied))],
            at(1),
            at(2)
        )
        .await
        .unwrap(),
        1
    );
    let left = db.life_page(RowKind::Webhooks, 0, 10).await.unwrap();
    assert_eq!(
        left.iter().map(|r| r.id).collect::<Vec<_>>(),
        [rows[orphan].id]
    );

    assert_eq!(db.life_cursor(RowKind::Webhooks).await.unwrap(), 0);
    assert!(db.life_cursor_move(RowKind::Webhooks, 0, 5).await.unwrap());
    assert!(
        !db.life_cursor_move(RowKind::Webhooks, 0, 9).await.unwrap(),
        "moved meanwhile"
    );
    db.life_cursor_rewind(RowKind::Webhooks, 3).await.unwrap();
    db.life_cursor_rewind(RowKind::Webhooks, 10).await.unwrap();
    assert_eq!(
        db.life_cursor(RowKind::Webhooks).await.unwrap(),
        3,
        "only backwards"
    );
    assert_eq!(
        db.life_cursor(RowKind::ProviderCalls).await.unwrap(),
        0,
        "one per kind"
    );

    db.hold_day("provider_calls", "2026-12-01", at(1_000))
        .await
        .unwrap();
    assert_eq!(
        db.held_days("provider_calls", T0).await.unwrap(),
        ["2026-12-01"]
    );
    assert!(db
        .held_days("provider_calls", at(2_000))
        .await
        .unwrap()
        .is_empty());
    assert!(db.held_days("deliveries", T0).await.unwrap().is_empty());
    db.reclaim_space().await.unwrap();
}

/// A final payment whose events are pruned is archived with its rows and
/// leaves a tombstone found by id and by provider reference; one changed
/// since it was read stays; one with an open flag (a fact a person has not
/// looked at yet) is not archived;
/// restoring its row brings it back and takes the tombstone away.
pub async fn archived_payments_leave_a_tombstone_and_come_back(db: Arc<dyn Store>) {
    for id in ["pay_a", "pay_b", "pay_c"] {
        register(&*db, id, T0).await;
        db.apply(&report(id, Status::Succeeded, &format!("evt_{id}")), T0)
            .await
            .unwrap();
    }
    // pay_c: a failure reported after it succeeded, a flag nobody closed.
    db.inbox_insert(
        &[super::inbox_event(
            "evt_c_late",
            "ref_pay_c",
            Status::Failed,
        )],
        T0,
    )
    .await
    .unwrap();
    super::drain_inbox(&*db, T0).await;
    assert_eq!(db.flags_open(0, 10).await.unwrap().len(), 1);
    let none_yet = db.archivable_payments(at(1), None, 10).await.unwrap();
    assert!(none_yet.is_empty(), "their events are not yet pruned");
    db.sequence_feed(1_000).await.unwrap();
    db.prune_events(i64::MAX, at(1)).await.unwrap();
    assert!(
        db.archivable_payments(T0, None, 10)
            .await
            .unwrap()
            .is_empty(),
        "none before"
    );
    let bundles = db.archivable_payments(at(1), None, 10).await.unwrap();
    assert_eq!(
        bundles.iter().map(|b| b.id.as_str()).collect::<Vec<_>>(),
        ["pay_a", "pay_b"]
    );
    assert!(!bundles[0].history.is_empty(), "with its history");
    // pay_b is reversed after it was read: it stays.
    db.apply(&report("pay_b", Status::Reversed, "evt_rev"), at(1))
        .await
        .unwrap();
    let wanted: Vec<_> = bundles
        .iter()
        .map(|b| (b, "day.jsonl.gz".to_string()))
        .collect();
    let gone = db.archive_payments(&wanted, at(1), at(2)).await.unwrap();
    assert_eq!(gone, ["pay_a"]);
    assert!(db.get("pay_a").await.unwrap().is_none());
    assert!(db.get("pay_b").await.unwrap().is_some());
    let t = db
        .archived_payment("pay_a")
        .await
        .unwrap()
        .expect("a tombstone");
    assert_eq!(
        (t.status.as_str(), t.archived_at, t.archive.as_str()),
        ("succeeded", at(2), "day.jsonl.gz")
    );
    let by_ref = db
        .archived_by_ref(&finality_core::Scope::own("sim"), "ref_pay_a")
        .await
        .unwrap();
    assert_eq!(by_ref.map(|t| t.id).as_deref(), Some("pay_a"));

    let restored = db
        .restore_rows(&PAYMENTS, std::slice::from_ref(&bundles[0].payment))
        .await
        .unwrap();
    assert_eq!(restored, 1);
    assert_eq!(
        db.restore_rows(&PAYMENTS, std::slice::from_ref(&bundles[0].payment))
            .await
            .unwrap(),
        0,
        "a row already present is kept"
    );
    assert!(db.get("pay_a").await.unwrap().is_some());
    assert!(db.archived_payment("pay_a").await.unwrap().is_none());
}

/// The in-memory store keeps no retention: what would read, delete,
/// archive or hold rows is refused by name, never an empty success.
pub async fn refused_in_memory(db: Arc<dyn Store>) {
    let not_kept = |r: Result<(), StoreError>| {
        assert!(matches!(r, Err(StoreError::NotKept { .. })), "{r:?}");
    };
    not_kept(db.life_page(RowKind::Webhooks, 0, 10).await.map(|_| ()));
    not_kept(
        db.life_remove(RowKind::Webhooks, &[], T0, T0)
            .await
            .map(|_| ()),
    );
    not_kept(db.archivable_payments(T0, None, 10).await.map(|_| ()));
    not_kept(db.archive_payments(&[], T0, T0).await.map(|_| ()));
    not_kept(db.restore_rows(&PAYMENTS, &[]).await.map(|_| ()));
    not_kept(db.hold_day("provider_calls", "2026-12-01", T0).await);
    not_kept(db.life_cursor(RowKind::Webhooks).await.map(|_| ()));
    not_kept(
        db.life_cursor_move(RowKind::Webhooks, 0, 1)
            .await
            .map(|_| ()),
    );
    not_kept(db.life_cursor_rewind(RowKind::Webhooks, 0).await);
    assert!(db.archived_payment("pay_x").await.unwrap().is_none());
}

/// This role's cases, each run on a fresh database (PostgreSQL, SQLite).
pub const CASES: &[(&str, Case)] = cases![
    settled_rows_are_paged_and_removed_as_read,
    archived_payments_leave_a_tombstone_and_come_back,
];

/// What the in-memory store answers instead.
pub const IN_MEMORY: &[(&str, Case)] = cases![refused_in_memory];
