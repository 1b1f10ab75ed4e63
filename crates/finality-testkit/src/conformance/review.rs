//! The review queue and the audit trail: [`finality_store::Review`].

use super::support::*;
use super::Case;
use finality_core::money::MerchantRef;
use finality_core::{Kind, Status, Timestamp};
use finality_store::model::*;
use finality_store::Store;
use std::sync::Arc;

/// The review queue lists `needs_review` payments oldest in review first,
/// with the reason that put each there, filtered and paged by cursor; a
/// manual resolve writes its audit record in the same transaction, with the
/// outcome; a payment's page finds its webhooks; failed inbox rows list.
pub async fn review_queue_and_audit_trail(db: Arc<dyn Store>) {
    use finality_store::review::{AuditFilter, ReviewFilter};
    for id in ["rv_a", "rv_b", "rv_c", "rv_d"] {
        register(&*db, id, T0).await;
    }
    let attempts = "gave up after 3 status queries";
    let age = "gave up: still not final 1day after registration";
    // Entered review in the order c, a, d: the queue's order, not the id's.
    for (id, reason, at) in [
        ("rv_c", attempts, 10),
        ("rv_a", attempts, 20),
        ("rv_d", age, 30),
    ] {
        let out = db
            .apply(
                &to_review(id, reason, Timestamp(T0.0 + at)),
                Timestamp(T0.0 + at),
            )
            .await
            .unwrap();
        assert!(matches!(out, ApplyOutcome::Applied { .. }), "{out:?}");
    }
    let all = ReviewFilter {
        limit: 10,
        ..Default::default()
    };
    let q = db.review_queue(&all).await.unwrap();
    let ids: Vec<&str> = q.iter().map(|i| i.payment.id.as_str()).collect();
    assert_eq!(
        ids,
        ["rv_c", "rv_a", "rv_d"],
        "oldest in review first; rv_b is pending"
    );
    assert_eq!(q[0].reason.as_deref(), Some(attempts));
    assert_eq!(q[0].since, Timestamp(T0.0 + 10));

    // Paging by cursor: two pages of two and one.
    let first = db
        .review_queue(&ReviewFilter {
            limit: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(first.len(), 2);
    let last = first.last().unwrap();
    let second = db
        .review_queue(&ReviewFilter {
            limit: 2,
            after: Some((last.since, last.payment.id.clone())),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        second
            .iter()
            .map(|i| i.payment.id.as_str())
            .collect::<Vec<_>>(),
        ["rv_d"]
    );

    // Filters: reason, age, provider, kind.
    let by_reason = db
        .review_queue(&ReviewFilter {
            reason: Some(age.into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(by_reason.len(), 1);
    assert_eq!(by_reason[0].payment.id, "rv_d");
    let old = db
        .review_queue(&ReviewFilter {
            entered_before: Some(Timestamp(T0.0 + 20)),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(old.len(), 2, "in review since T0+20 or earlier");
    let other_provider = db
        .review_queue(&ReviewFilter {
            provider: Some("stripe".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(other_provider.is_empty());
    let refunds = db
        .review_queue(&ReviewFilter {
            kind: Some(Kind::Refund),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(refunds.is_empty());
    let counts = db.review_counts().await.unwrap();
    assert_eq!(
        counts,
        vec![(Some(attempts.to_string()), 2), (Some(age.to_string()), 1)]
    );

    // A manual resolve and its audit record commit together.
    let now = Timestamp(T0.0 + 100);
    let rep = Report::manual(
        "rv_c",
        Status::Succeeded,
        "bank statement".into(),
        "ops-alice".into(),
        now,
    );
    let out = db
        .apply_manual(&rep, &audit("resolve", Some("rv_c"), now), now)
        .await
        .unwrap();
    assert_eq!(
        out,
        ApplyOutcome::Applied {
            from: Status::NeedsReview,
            to: Status::Succeeded
        }
    );
    // Refused (already final as succeeded; failed is not allowed): recorded too.
    let rep = Report::manual(
        "rv_c",
        Status::Failed,
        "typo".into(),
        "ops-alice".into(),
        now,
    );
    let out = db
        .apply_manual(&rep, &audit("resolve", Some("rv_c"), now), now)
        .await
        .unwrap();
    assert!(matches!(out, ApplyOutcome::Ignored { .. }), "{out:?}");
    db.audit_append(&audit("poll_now", Some("rv_a"), now))
        .await
        .unwrap();
    let view = db.get("rv_c").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::Succeeded);
    assert_eq!(
        view.history.last().unwrap().actor.as_deref(),
        Some("ops-alice")
    );

    let trail = db
        .audit_list(&AuditFilter {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(trail.len(), 3);
    assert_eq!(trail[0].entry.action, "poll_now", "newest first");
    assert_eq!(trail[0].entry.outcome, "scheduled");
    assert!(
        trail[1]
            .entry
            .outcome
            .starts_with("refused: it is succeeded"),
        "{}",
        trail[1].entry.outcome
    );
    assert_eq!(
        trail[2].entry.outcome,
        "changed from needs_review to succeeded"
    );
    assert_eq!(trail[2].entry.detail["reason"], "bank statement");
    assert_eq!(trail[2].entry.remote_addr.as_deref(), Some("127.0.0.1"));
    let for_c = db
        .audit_list(&AuditFilter {
            payment_id: Some("rv_c".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(for_c.len(), 2);
    let page = db
        .audit_list(&AuditFilter {
            before_id: Some(trail[1].id),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        page.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![trail[2].id]
    );
    assert!(db
        .audit_list(&AuditFilter {
            actor: Some("someone-else".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        db.review_queue(&all).await.unwrap().len(),
        2,
        "resolved left the queue"
    );

    // The webhooks of one payment, and the failed rows of the inbox.
    let mut bad = inbox_event("evt_bad", "ref_rv_b", Status::Succeeded);
    bad.state = InboxState::Failed;
    bad.reason = Some("body did not parse".into());
    db.inbox_insert(
        &[
            inbox_event("evt_b1", "ref_rv_b", Status::Processing),
            inbox_event("evt_other", "ref_rv_a", Status::Processing),
            bad,
        ],
        T0,
    )
    .await
    .unwrap();
    let b = db.get("rv_b").await.unwrap().unwrap().payment;
    let hooks = db.inbox_for_payment(&b, 50).await.unwrap();
    assert_eq!(
        hooks
            .iter()
            .map(|e| e.event_id.as_str())
            .collect::<Vec<_>>(),
        ["evt_b1", "evt_bad"]
    );
    // A payment known by the merchant's reference only, and a webhook that
    // names only that.
    let mut by_cart = new_payment("rv_m");
    by_cart.provider_ref = None;
    by_cart.merchant_ref = Some(MerchantRef::parse("cart-rv").unwrap());
    db.register(&by_cart, T0, T0).await.unwrap();
    let mut cart_hook = inbox_event("evt_cart", "x", Status::Processing);
    cart_hook.provider_ref = None;
    cart_hook.merchant_ref = Some("cart-rv".into());
    db.inbox_insert(&[cart_hook], T0).await.unwrap();
    drain_inbox(&*db, T0).await;
    let m = db.get("rv_m").await.unwrap().unwrap().payment;
    let hooks = db.inbox_for_payment(&m, 50).await.unwrap();
    let names: Vec<&str> = hooks.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(
        names,
        ["evt_cart"],
        "applied, found by the merchant's reference"
    );
    let failed = db
        .inbox_in_state(InboxState::Failed, None, 10)
        .await
        .unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].event_id, "evt_bad");
    assert!(db
        .inbox_in_state(InboxState::Failed, Some(failed[0].id), 10)
        .await
        .unwrap()
        .is_empty());
}

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![review_queue_and_audit_trail,];
