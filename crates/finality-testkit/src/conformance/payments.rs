//! Registration, `apply` and the reads of [`finality_store::PaymentStore`].

use super::support::*;
use super::Case;
use finality_core::money::{Amount, Currency, PaymentId, ProviderRef};
use finality_core::{Source, Status, Timestamp};
use finality_store::model::*;
use finality_store::Store;
use std::collections::HashSet;
use std::sync::Arc;

pub async fn register_is_idempotent(db: Arc<dyn Store>) {
    let p = new_payment("pay_1");
    let first = Timestamp(T0.0 + 1_000);
    let Registered::Created(created) = db.register(&p, T0, first).await.unwrap() else {
        panic!("first registration must create");
    };
    assert_eq!(created.status, Status::Pending);
    let again = db.register(&p, Timestamp(T0.0 + 5), first).await.unwrap();
    assert_eq!(again, Registered::Existing(created.clone()));

    let mut other_body = p.clone();
    other_body.amount = Amount::new(999, Currency::parse("USD").unwrap()).unwrap();
    assert!(matches!(
        db.register(&other_body, T0, first).await.unwrap(),
        Registered::Conflict(_)
    ));
    let mut same_ref = p.clone();
    same_ref.id = PaymentId::parse("pay_2").unwrap();
    assert_eq!(
        db.register(&same_ref, T0, first).await.unwrap(),
        Registered::RefTaken {
            other_id: "pay_1".into(),
            field: "provider_ref"
        }
    );

    let view = db.get("pay_1").await.unwrap().unwrap();
    assert_eq!(view.payment, created);
    assert!(view.history.is_empty());
    let poll = view.poll.unwrap();
    assert_eq!((poll.attempts, poll.next_poll_at), (0, Some(first)));
    assert!(db.get("nope").await.unwrap().is_none());
}

pub async fn apply_is_idempotent_and_monotone(db: Arc<dyn Store>) {
    register(&*db, "pay_a", T0).await;
    let now = Timestamp(T0.0 + 10);
    let r = |s, e| report("pay_a", s, e);
    assert_eq!(
        db.apply(&r(Status::Processing, "e1"), now).await.unwrap(),
        ApplyOutcome::Applied {
            from: Status::Pending,
            to: Status::Processing
        }
    );
    assert!(
        db.get("pay_a").await.unwrap().unwrap().poll.is_some(),
        "non-final keeps the job"
    );
    assert_eq!(
        db.apply(&r(Status::Processing, "e1"), now).await.unwrap(),
        ApplyOutcome::Unchanged
    );
    assert!(matches!(
        db.apply(&r(Status::Succeeded, "e2"), now).await.unwrap(),
        ApplyOutcome::Applied { .. }
    ));
    assert_eq!(
        db.apply(&r(Status::Processing, "e1"), now).await.unwrap(),
        ApplyOutcome::Ignored {
            current: Status::Succeeded,
            reason: "already_final"
        }
    );
    // A failure after success is not applied by `apply` (it may be a
    // stale report); the inbox keeps such webhooks for review
    // (`inbox_failure_after_success_is_kept_for_review`).
    assert_eq!(
        db.apply(&r(Status::Failed, "e3"), now).await.unwrap(),
        ApplyOutcome::Ignored {
            current: Status::Succeeded,
            reason: "already_final"
        }
    );
    assert!(matches!(
        db.apply(&r(Status::Reversed, "e4"), now).await.unwrap(),
        ApplyOutcome::Applied { .. }
    ));
    // Final: a success reported after the reversal is stale.
    assert_eq!(
        db.apply(&r(Status::Succeeded, "e5"), now).await.unwrap(),
        ApplyOutcome::Ignored {
            current: Status::Reversed,
            reason: "already_final"
        }
    );
    assert_eq!(
        db.apply(&report("ghost", Status::Succeeded, "e5"), now)
            .await
            .unwrap(),
        ApplyOutcome::NotFound
    );

    let view = db.get("pay_a").await.unwrap().unwrap();
    let path: Vec<_> = view.history.iter().map(|h| (h.from, h.to)).collect();
    assert_eq!(
        path,
        vec![
            (Some(Status::Pending), Status::Processing),
            (Some(Status::Processing), Status::Succeeded),
            (Some(Status::Succeeded), Status::Reversed),
        ]
    );
    assert_eq!(view.history[0].event_id.as_deref(), Some("e1"));
    assert_eq!(view.history[0].source, Source::Webhook);
    assert!(view.poll.is_none());
    let events = outbox_for(&*db, "pay_a").await;
    let types: Vec<_> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "payment.processing",
            "payment.succeeded",
            "payment.reversed"
        ]
    );
    let ids: HashSet<_> = events.iter().map(|e| e.event_id.clone()).collect();
    assert_eq!(ids.len(), 3, "event ids are unique");
}

pub async fn list_filters_and_pages(db: Arc<dyn Store>) {
    for i in 0..5 {
        register(&*db, &format!("pay_{i}"), T0).await;
    }
    db.apply(&report("pay_3", Status::Failed, "x"), T0)
        .await
        .unwrap();
    let page = |after: Option<&str>, status| ListFilter {
        status,
        provider: Some("sim".into()),
        after_id: after.map(Into::into),
        limit: 2,
    };
    let p1 = db.list(&page(None, None)).await.unwrap();
    let p2 = db.list(&page(Some(&p1[1].id), None)).await.unwrap();
    let p3 = db.list(&page(Some(&p2[1].id), None)).await.unwrap();
    let ids: Vec<_> = [p1, p2, p3].concat().into_iter().map(|p| p.id).collect();
    assert_eq!(ids, ["pay_0", "pay_1", "pay_2", "pay_3", "pay_4"]);
    let failed = db.list(&page(None, Some(Status::Failed))).await.unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].id, "pay_3");
    let mut other = ListFilter {
        provider: Some("stripe".into()),
        limit: 10,
        ..Default::default()
    };
    assert!(db.list(&other).await.unwrap().is_empty());
    other.provider = None;
    assert_eq!(db.list(&other).await.unwrap().len(), 5);
    let counts = db.status_counts().await.unwrap();
    assert!(counts.contains(&(Status::Pending, 4)) && counts.contains(&(Status::Failed, 1)));
}

/// Many concurrent duplicate reports: exactly one transition, no error.
pub async fn concurrent_duplicate_reports_apply_once(db: Arc<dyn Store>) {
    register(&*db, "pay_d", T0).await;
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            db.apply(&report("pay_d", Status::Succeeded, "evt_dup"), T0)
                .await
        }));
    }
    let mut applied = 0;
    for t in tasks {
        if let ApplyOutcome::Applied { .. } = t.await.unwrap().unwrap() {
            applied += 1;
        }
    }
    assert_eq!(applied, 1);
    assert_eq!(db.get("pay_d").await.unwrap().unwrap().history.len(), 1);
    assert_eq!(outbox_for(&*db, "pay_d").await.len(), 1);
}

/// Per-provider statistics: how final statuses arrived, calls until final,
/// time to final and error classes, over payments registered in a window.
pub async fn provider_stats_over_a_window(db: Arc<dyn Store>) {
    for id in ["pay_s1", "pay_s2", "pay_s3"] {
        register(&*db, id, T0).await;
    }
    // s1 settles by webhook 2 s after registration.
    let mut r = report("pay_s1", Status::Succeeded, "evt_s1");
    r.observed_at = Timestamp(T0.0 + 2_000);
    db.apply(&r, Timestamp(T0.0 + 2_000)).await.unwrap();
    // s2: one failed call, then a poll that finds it succeeded at +10 s.
    let jobs = db.claim(&claim_req(T0, 10, "w")).await.unwrap();
    let job = |id: &str| jobs.iter().find(|j| j.payment_id == id).unwrap().clone();
    let (s2, s3) = (job("pay_s2"), job("pay_s3"));
    let mut failed = attempt(&s3, "w", T0, "error");
    failed.error_class = Some("transient".into());
    let t = Timestamp(T0.0 + 10_000);
    let out = db
        .complete_batch(&[
            Completion {
                payment_id: s2.payment_id.clone(),
                lock_token: s2.lock_token,
                now: t,
                attempt: Some(attempt(&s2, "w", T0, "succeeded")),
                observed: Some(Status::Succeeded),
                then: AfterPoll::defer(Timestamp(t.0 + 1_000), None),
            },
            Completion {
                payment_id: s3.payment_id.clone(),
                lock_token: s3.lock_token,
                now: t,
                attempt: Some(failed),
                observed: None,
                then: AfterPoll::Reschedule {
                    next_poll_at: Timestamp(t.0 + 1_000),
                    count: Count::Error,
                    last_error: Some("timeout".into()),
                },
            },
        ])
        .await
        .unwrap();
    assert!(
        out.iter()
            .all(|o| matches!(o, CompleteOutcome::Done { .. })),
        "{out:?}"
    );

    let rows = db.stats_rows(T0).await.unwrap();
    let errors = db.error_counts(T0).await.unwrap();
    let stats = finality_store::stats::compute(&rows, &errors, Default::default());
    assert_eq!(stats.len(), 1, "{stats:?}");
    let s = &stats[0];
    assert_eq!(
        (s.provider.as_str(), s.payments, s.open, s.in_review),
        ("sim", 3, 1, 0)
    );
    assert_eq!(s.final_by.get("webhook"), Some(&1), "{s:?}");
    assert_eq!(s.final_by.get("status_query"), Some(&1), "{s:?}");
    assert_eq!(s.queries_until_final.max, Some(1.0), "{s:?}");
    assert_eq!(s.queries_until_final.p50, Some(0.0), "{s:?}");
    assert_eq!(s.time_to_final_s.p50, Some(2.0), "{s:?}");
    assert_eq!(s.time_to_final_s.max, Some(10.0), "{s:?}");
    assert_eq!(
        errors,
        vec![finality_store::stats::ErrorCount {
            provider: "sim".into(),
            account: None,
            class: "transient".into(),
            n: 1
        }]
    );
    // A window that starts after the registrations holds nothing.
    assert!(db.stats_rows(Timestamp(T0.0 + 1)).await.unwrap().is_empty());
}

/// Registered by merchant reference alone: the provider's id is recorded
/// once (fenced), a retried registration is still the same body, and
/// neither reference can be taken twice.
pub async fn merchant_ref_registration_and_recording(db: Arc<dyn Store>) {
    let p = merchant_payment("pay_m", "order-1");
    let Registered::Created(created) = db.register(&p, T0, T0).await.unwrap() else {
        panic!("must create");
    };
    assert_eq!(created.provider_ref, None);
    assert_eq!(created.merchant_ref.as_deref(), Some("order-1"));
    assert!(matches!(
        db.register(&p, T0, T0).await.unwrap(),
        Registered::Existing(_)
    ));
    let other = merchant_payment("pay_m_dup", "order-1");
    assert_eq!(
        db.register(&other, T0, T0).await.unwrap(),
        Registered::RefTaken {
            other_id: "pay_m".into(),
            field: "merchant_ref"
        }
    );

    let job = claim_one(&*db, "pay_m", T0).await;
    assert_eq!(job.provider_ref, None);
    assert_eq!(job.merchant_ref.as_deref(), Some("order-1"));
    assert_eq!(
        db.record_provider_ref("pay_m", job.lock_token + 1, "pi_9")
            .await
            .unwrap(),
        RefRecorded::LeaseLost
    );
    let rec = |r: &'static str| db.record_provider_ref("pay_m", job.lock_token, r);
    assert_eq!(rec("pi_9").await.unwrap(), RefRecorded::Recorded);
    assert_eq!(rec("pi_9").await.unwrap(), RefRecorded::Same);
    assert_eq!(
        rec("pi_8").await.unwrap(),
        RefRecorded::Different {
            existing: "pi_9".into()
        }
    );
    let view = db.get("pay_m").await.unwrap().unwrap();
    assert_eq!(view.payment.provider_ref.as_deref(), Some("pi_9"));
    // The caller retries its registration, still without the provider's id.
    assert!(matches!(
        db.register(&p, T0, T0).await.unwrap(),
        Registered::Existing(_)
    ));
    assert_eq!(
        db.find_by_ref(&finality_core::Scope::own("sim"), "pi_9")
            .await
            .unwrap()
            .as_deref(),
        Some("pay_m")
    );

    // A provider id another payment already tracks is not recorded twice.
    let mut holder = new_payment("pay_holder");
    holder.provider_ref = Some(ProviderRef::parse("pi_taken").unwrap());
    db.register(&holder, T0, Timestamp(T0.0 + 3_600_000))
        .await
        .unwrap();
    db.register(&merchant_payment("pay_m2", "order-2"), T0, T0)
        .await
        .unwrap();
    let job2 = claim_one(&*db, "pay_m2", T0).await;
    assert_eq!(
        db.record_provider_ref("pay_m2", job2.lock_token, "pi_taken")
            .await
            .unwrap(),
        RefRecorded::Taken {
            other_id: "pay_holder".into()
        }
    );
    // The claimed job carries the recorded id after a reschedule.
    let job_m = db
        .complete(&Completion {
            payment_id: "pay_m".into(),
            lock_token: job.lock_token,
            now: T0,
            attempt: None,
            observed: Some(Status::Processing),
            then: AfterPoll::Reschedule {
                next_poll_at: Timestamp(T0.0 + 1),
                count: Count::Attempt,
                last_error: None,
            },
        })
        .await
        .unwrap();
    assert!(matches!(job_m, CompleteOutcome::Done { .. }), "{job_m:?}");
    let again = claim_one(&*db, "pay_m", Timestamp(T0.0 + LEASE_MS * 2)).await;
    assert_eq!(again.provider_ref.as_deref(), Some("pi_9"));
}

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![
    register_is_idempotent,
    apply_is_idempotent_and_monotone,
    list_filters_and_pages,
    concurrent_duplicate_reports_apply_once,
    provider_stats_over_a_window,
    merchant_ref_registration_and_recording,
];
