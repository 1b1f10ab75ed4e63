//! The cluster's state read in one go: [`finality_store::Gauges`].

use super::support::*;
use super::Case;
use finality_core::{Status, Timestamp};
use finality_store::Store;
use std::sync::Arc;

fn at(ms: i64) -> Timestamp {
    Timestamp(T0.0 + ms)
}

/// Open payments by provider and status, due and overdue polls with the
/// oldest due time, waiting webhooks by state, unsequenced transitions and
/// live nodes, each counted as the store holds them.
pub async fn gauges_count_what_the_store_holds(db: Arc<dyn Store>) {
    register(&*db, "pay_1", at(0)).await;
    register(&*db, "pay_2", at(5_000)).await;
    register(&*db, "pay_3", at(60_000)).await;
    register(&*db, "pay_4", at(0)).await;
    db.apply(&report("pay_4", Status::Succeeded, "evt_4"), at(1))
        .await
        .unwrap();
    db.inbox_insert(
        &[inbox_event("evt_w", "ref_nobody", Status::Succeeded)],
        at(2),
    )
    .await
    .unwrap();
    db.heartbeat("node-a", at(9_000)).await.unwrap();
    db.heartbeat("node-b", at(1_000)).await.unwrap();

    let g = db
        .cluster_gauges(at(10_000), at(2_000), at(5_000))
        .await
        .unwrap();
    assert_eq!(g.open, vec![("sim".to_string(), "pending".to_string(), 3)]);
    assert_eq!(g.polls_due, 2, "pay_1 and pay_2, not pay_3");
    assert_eq!(g.polls_overdue, 1, "pay_1, due since before 2 s");
    assert_eq!(g.oldest_due_at, Some(at(0)));
    assert_eq!(g.inbox, vec![("received".to_string(), 1)]);
    assert!(g.unsequenced >= 1, "pay_4's transition: {}", g.unsequenced);
    assert_eq!(g.nodes, 1, "node-b is silent since before the cutoff");
    assert!(g.review.is_empty(), "{:?}", g.review);
}

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![gauges_count_what_the_store_holds];
