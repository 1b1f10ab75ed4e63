//! Every fact has an owner: payments' references are unique per account,
//! a webhook is matched only against payments of its own account, event
//! ids are deduplicated per account, and parked webhooks wait for their
//! account.

use super::support::*;
use super::Case;
use finality_core::money::{MerchantRef, ProviderRef};
use finality_core::{Scope, Status};
use finality_store::model::*;
use finality_store::Store;
use std::sync::Arc;

fn of(id: &str, account: Option<&str>, provider_ref: &str) -> NewPayment {
    NewPayment {
        account: account.map(String::from),
        provider_ref: Some(ProviderRef::parse(provider_ref).unwrap()),
        ..new_payment(id)
    }
}

fn hook(event_id: &str, account: Option<&str>, provider_ref: &str) -> NewInboxEvent {
    NewInboxEvent {
        account: account.map(String::from),
        ..inbox_event(event_id, provider_ref, Status::Succeeded)
    }
}

/// Two accounts (and the provider's own) may hold the same references; a
/// webhook of one account settles that account's payment only, and the
/// same event id under two accounts is two events.
pub async fn references_and_events_are_per_account(db: Arc<dyn Store>) {
    for (id, account) in [("own", None), ("of_a", Some("A")), ("of_b", Some("B"))] {
        let r = db
            .register(&of(id, account, "ref_same"), T0, T0)
            .await
            .unwrap();
        assert!(matches!(r, Registered::Created(_)), "{id}: {r:?}");
    }
    // A second payment of account A with the same reference: taken.
    let r = db
        .register(&of("of_a2", Some("A"), "ref_same"), T0, T0)
        .await
        .unwrap();
    assert!(
        matches!(&r, Registered::RefTaken { other_id, field: "provider_ref" } if other_id == "of_a"),
        "{r:?}"
    );
    // Merchant references likewise.
    for (id, account) in [("m_a", Some("A")), ("m_b", Some("B"))] {
        let p = NewPayment {
            provider_ref: None,
            merchant_ref: Some(MerchantRef::parse("order-1001").unwrap()),
            ..of(id, account, "unused")
        };
        let r = db.register(&p, T0, T0).await.unwrap();
        assert!(matches!(r, Registered::Created(_)), "{id}: {r:?}");
    }
    let fresh = db
        .inbox_insert(
            &[
                hook("evt_1", Some("B"), "ref_same"),
                hook("evt_1", Some("A"), "ref_other"),
                hook("evt_1", Some("B"), "ref_same"),
            ],
            T0,
        )
        .await
        .unwrap();
    assert_eq!(fresh, vec![true, true, false], "deduplicated per account");
    drain_inbox(&*db, T0).await;
    let status = |id: &'static str| {
        let db = db.clone();
        async move { db.get(id).await.unwrap().unwrap().payment.status }
    };
    assert_eq!(status("of_b").await, Status::Succeeded);
    assert_eq!(status("of_a").await, Status::Pending);
    assert_eq!(status("own").await, Status::Pending);
    // B's event naming A's merchant reference is B's: it settles B's.
    let by_merchant = NewInboxEvent {
        provider_ref: Some("ref_mb".into()),
        merchant_ref: Some("order-1001".into()),
        ..hook("evt_m", Some("B"), "ref_mb")
    };
    db.inbox_insert(&[by_merchant], T0).await.unwrap();
    drain_inbox(&*db, T0).await;
    assert_eq!(status("m_b").await, Status::Succeeded);
    assert_eq!(status("m_a").await, Status::Pending);
    // Lookups by reference see their own scope only.
    let a = Scope::new("sim", Some("A"));
    assert_eq!(
        db.find_by_ref(&a, "ref_same").await.unwrap().as_deref(),
        Some("of_a")
    );
    assert_eq!(
        db.find_by_ref(&Scope::own("sim"), "ref_same")
            .await
            .unwrap()
            .as_deref(),
        Some("own")
    );
    assert_eq!(
        db.find_by_ref(&Scope::new("sim", Some("C")), "ref_same")
            .await
            .unwrap(),
        None
    );
}

/// A webhook of an account nobody registered waits as an orphan of that
/// account: a payment of another account with its reference does not
/// take it, one of its own account registered later does.
pub async fn an_orphan_waits_for_its_own_account(db: Arc<dyn Store>) {
    db.register(&of("pay_b", Some("B"), "ref_x"), T0, T0)
        .await
        .unwrap();
    db.inbox_insert(&[hook("evt_x", Some("A"), "ref_x")], T0)
        .await
        .unwrap();
    let out = drain_inbox(&*db, T0).await;
    assert_eq!(out, vec![InboxOutcome::Orphaned]);
    let row = db.inbox_get("sim", "evt_x").await.unwrap().unwrap();
    assert!(row.reason.as_deref().unwrap().contains("`A`"), "{row:?}");
    assert_eq!(db.inbox_adopt_orphans(T0).await.unwrap(), 0);
    db.register(&of("pay_a", Some("A"), "ref_x"), T0, T0)
        .await
        .unwrap();
    drain_inbox(&*db, T0).await;
    let get = |id: &'static str| {
        let db = db.clone();
        async move { db.get(id).await.unwrap().unwrap().payment.status }
    };
    assert_eq!(get("pay_a").await, Status::Succeeded);
    assert_eq!(get("pay_b").await, Status::Pending);
}

/// Parked webhooks are not processed until their account's are unparked,
/// and then only that account's.
pub async fn parked_webhooks_wait_for_their_account(db: Arc<dyn Store>) {
    db.register(&of("pay_z", Some("Z"), "ref_z"), T0, T0)
        .await
        .unwrap();
    let parked = |id: &str, account: &str| NewInboxEvent {
        state: InboxState::Parked,
        reason: Some("parked: not configured".into()),
        ..hook(id, Some(account), "ref_z")
    };
    db.inbox_insert(&[parked("evt_z", "Z"), parked("evt_y", "Y")], T0)
        .await
        .unwrap();
    assert!(
        drain_inbox(&*db, T0).await.is_empty(),
        "parked rows are not due"
    );
    // Who has parked rows: each account once, in order.
    assert_eq!(
        db.inbox_parked_scopes(100).await.unwrap(),
        vec![Scope::new("sim", Some("Y")), Scope::new("sim", Some("Z"))]
    );
    let n = db
        .inbox_unpark(&Scope::new("sim", Some("Z")), T0)
        .await
        .unwrap();
    assert_eq!(n, 1);
    drain_inbox(&*db, T0).await;
    let p = db.get("pay_z").await.unwrap().unwrap().payment;
    assert_eq!(p.status, Status::Succeeded);
    let y = db.inbox_get("sim", "evt_y").await.unwrap().unwrap();
    assert_eq!(y.state, InboxState::Parked);
    assert_eq!(y.account.as_deref(), Some("Y"));
    assert_eq!(
        db.inbox_parked_scopes(100).await.unwrap(),
        vec![Scope::new("sim", Some("Y"))]
    );
}

pub const CASES: &[(&str, Case)] = cases![
    references_and_events_are_per_account,
    an_orphan_waits_for_its_own_account,
    parked_webhooks_wait_for_their_account,
];
