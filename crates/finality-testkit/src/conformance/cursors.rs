//! Event-list cursors leased to one holder: [`finality_store::Cursors`].

use super::support::*;
use super::Case;
use finality_core::Timestamp;
use finality_store::Store;
use std::sync::Arc;

/// The event-list cursor: one holder at a time until its lease ends, saved
/// only by its holder, kept across holders; and the newest registration per
/// provider that paces the reading.
pub async fn cursor_is_leased_and_saved_by_its_holder(db: Arc<dyn Store>) {
    let later = |s: i64| Timestamp(T0.0 + s * 1000);
    assert_eq!(db.newest_registration("sim").await.unwrap(), None);
    register(&*db, "pay_c1", T0).await;
    assert_eq!(db.newest_registration("sim").await.unwrap(), Some(T0));
    assert_eq!(db.newest_registration("other").await.unwrap(), None);

    let a = db.cursor_take("sim", "a", T0, later(30)).await.unwrap();
    assert_eq!(
        a.map(|l| l.cursor),
        Some(None),
        "a fresh cursor starts empty"
    );
    assert!(db
        .cursor_take("sim", "b", later(10), later(40))
        .await
        .unwrap()
        .is_none());
    assert!(db.cursor_save("sim", "a", "evt_1", later(5)).await.unwrap());
    assert!(
        !db.cursor_save("sim", "b", "evt_0", later(6)).await.unwrap(),
        "only the holder saves"
    );
    // The holder renews; another provider's cursor is its own.
    assert!(db
        .cursor_take("sim", "a", later(20), later(50))
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        db.cursor_take("other", "b", later(20), later(50))
            .await
            .unwrap()
            .map(|l| l.cursor),
        Some(None)
    );
    // After the lease ends a successor takes over where the cursor was.
    let b = db
        .cursor_take("sim", "b", later(50), later(80))
        .await
        .unwrap();
    assert_eq!(b.map(|l| l.cursor), Some(Some("evt_1".to_string())));
    assert!(
        !db.cursor_save("sim", "a", "evt_9", later(51))
            .await
            .unwrap(),
        "a stalled holder is fenced"
    );
    assert!(db
        .cursor_save("sim", "b", "evt_2", later(52))
        .await
        .unwrap());
}

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![cursor_is_leased_and_saved_by_its_holder,];
