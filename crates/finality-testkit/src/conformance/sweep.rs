//! The reconciliation sweep's reads and repairs: [`finality_store::Sweep`].

use super::support::*;
use super::Case;
use finality_core::{Status, Timestamp};
use finality_store::model::*;
use finality_store::sweep::SweepRun;
use finality_store::Store;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Pages come in id order after the cursor, each payment with its status
/// and whether it has a poll job; a final payment's job is gone and an open
/// one's stays single (neither added twice nor dropped).
pub async fn sweep_pages_payments_in_id_order(db: Arc<dyn Store>) {
    for id in ["pay_c", "pay_a", "pay_b"] {
        register(&*db, id, T0).await;
    }
    let page = db.sweep_page("", 2).await.unwrap();
    let ids: Vec<&str> = page.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["pay_a", "pay_b"]);
    assert!(page
        .iter()
        .all(|r| r.has_job && r.status == Status::Pending && r.provider == "sim"));
    assert!(page.iter().all(|r| r.last_outcome.is_none()), "{page:?}");
    let rest = db.sweep_page("pay_b", 10).await.unwrap();
    assert_eq!(
        rest.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["pay_c"]
    );

    db.apply(&report("pay_a", Status::Succeeded, "evt_a"), T0)
        .await
        .unwrap();
    let a = &db.sweep_page("", 1).await.unwrap()[0];
    assert_eq!(
        (a.id.as_str(), a.status, a.has_job),
        ("pay_a", Status::Succeeded, false)
    );
    assert!(!db.sweep_add_job("pay_a", Some(T0)).await.unwrap(), "final");
    assert!(!db.sweep_drop_job("pay_a").await.unwrap(), "no job left");
    assert!(
        !db.sweep_add_job("pay_b", Some(T0)).await.unwrap(),
        "has one"
    );
    assert!(!db.sweep_drop_job("pay_b").await.unwrap(), "not final");
}

/// Orphans are counted by when they arrived; a webhook the processor
/// should long have taken is made due again, once; runs are kept newest
/// first.
pub async fn sweep_counts_orphans_kicks_stale_webhooks_and_keeps_runs(db: Arc<dyn Store>) {
    db.inbox_insert(&[inbox_event("evt_o", "ref_nobody", Status::Succeeded)], T0)
        .await
        .unwrap();
    let out = drain_inbox(&*db, T0).await;
    assert!(
        matches!(out.as_slice(), [InboxOutcome::Orphaned]),
        "{out:?}"
    );
    let at = |ms: i64| Timestamp(T0.0 + ms);
    assert_eq!(db.sweep_count_orphans(T0, at(1)).await.unwrap(), 1);
    assert_eq!(db.sweep_count_orphans(at(1), at(2)).await.unwrap(), 0);

    register(&*db, "pay_k", T0).await;
    db.inbox_insert(&[inbox_event("evt_k", "ref_pay_k", Status::Succeeded)], T0)
        .await
        .unwrap();
    assert_eq!(
        db.sweep_kick_inbox(T0, at(2_000)).await.unwrap(),
        0,
        "not before"
    );
    assert_eq!(db.sweep_kick_inbox(at(1_000), at(2_000)).await.unwrap(), 1);
    assert_eq!(
        db.sweep_kick_inbox(at(1_000), at(3_000)).await.unwrap(),
        0,
        "now due at the kick's time"
    );

    for (n, holder) in [(1, "node-a"), (2, "node-b")] {
        db.sweep_record(&SweepRun {
            id: 0,
            holder: holder.into(),
            started_at: at(n * 10_000),
            finished_at: at(n * 10_000 + 5),
            scanned: 3 * n,
            pass_complete: n == 2,
            findings: BTreeMap::from([("job_missing".to_string(), n)]),
            repaired: n,
        })
        .await
        .unwrap();
    }
    let runs = db.sweep_runs(10).await.unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].holder, "node-b", "newest first");
    assert_eq!(
        (runs[0].scanned, runs[0].pass_complete, runs[0].repaired),
        (6, true, 2)
    );
    assert_eq!(runs[0].findings.get("job_missing"), Some(&2));
    assert_eq!(db.sweep_runs(1).await.unwrap().len(), 1);
}

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![
    sweep_pages_payments_in_id_order,
    sweep_counts_orphans_kicks_stale_webhooks_and_keeps_runs,
];
