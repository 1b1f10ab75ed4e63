//! Event ids are derived from the transition, not drawn: after a database
//! failover that lost the commit which first wrote a transition (and the
//! events a consumer had already received from it), the same transition
//! derived again, by another path and from another previous status, has
//! the id the consumer saw. Two databases stand for the old primary and
//! the promoted standby.

use finality_core::{Source, Status, Timestamp};
use finality_store::{Report, Store};
use finality_testkit::conformance::{drain_inbox, inbox_event, register, T0};
use finality_testkit::Backend;
use std::collections::HashMap;

fn polled(id: &str, status: Status) -> Report {
    Report {
        payment_id: id.into(),
        status,
        source: Source::StatusQuery,
        event_id: None,
        observed_at: T0,
        reason: None,
        actor: None,
    }
}

/// `(payment, type) → id` of every event in the feed; panics on an id
/// seen twice.
async fn ids(db: &dyn Store) -> HashMap<(String, String), String> {
    while db.sequence_feed(100).await.unwrap() > 0 {}
    let mut out = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    for e in db.feed_after(0, 1000).await.unwrap() {
        assert!(seen.insert(e.event_id.clone()), "{} twice", e.event_id);
        out.insert((e.payment_id, e.event_type), e.event_id);
    }
    out
}

async fn a_transition_derived_again_keeps_its_id(backend: Backend) {
    let now = Timestamp(T0.0 + 1);
    // The old primary: webhooks (processing, then succeeded) through the
    // inbox; a person fails the other payment.
    let old = backend.open().await;
    let old = &*old.store;
    register(old, "pay_w", T0).await;
    register(old, "pay_m", T0).await;
    old.inbox_insert(
        &[inbox_event("evt_p1", "ref_pay_w", Status::Processing)],
        now,
    )
    .await
    .unwrap();
    drain_inbox(old, now).await;
    old.inbox_insert(
        &[inbox_event("evt_p2", "ref_pay_w", Status::Succeeded)],
        now,
    )
    .await
    .unwrap();
    drain_inbox(old, now).await;
    let manual = Report::manual(
        "pay_m",
        Status::Failed,
        "declined on the phone".into(),
        "ops".into(),
        now,
    );
    old.apply(&manual, now).await.unwrap();
    let seen = ids(old).await;
    assert_eq!(seen.len(), 3, "{seen:?}");

    // The promoted standby had none of it: the registrations are made
    // again, and polls find the provider's truth, straight from pending.
    let new = backend.open().await;
    let new = &*new.store;
    register(new, "pay_w", T0).await;
    register(new, "pay_m", T0).await;
    new.apply(&polled("pay_w", Status::Succeeded), Timestamp(T0.0 + 9))
        .await
        .unwrap();
    new.apply(&polled("pay_m", Status::Failed), Timestamp(T0.0 + 9))
        .await
        .unwrap();
    let again = ids(new).await;
    for key in [
        ("pay_w".to_string(), "payment.succeeded".to_string()),
        ("pay_m".to_string(), "payment.failed".to_string()),
    ] {
        assert_eq!(again[&key], seen[&key], "{key:?}");
    }
    // A transition the new history does not have keeps its id to itself.
    let processing = &seen[&("pay_w".to_string(), "payment.processing".to_string())];
    assert!(!again.values().any(|id| id == processing));
}

finality_testkit::on_both_backends!(a_transition_derived_again_keeps_its_id);
