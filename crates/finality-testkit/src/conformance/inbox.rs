//! Webhooks stored once, applied once, in order, with their money checked: [`finality_store::WebhookInbox`].

use super::support::*;
use super::Case;
use finality_core::money::ProviderRef;
use finality_core::{Source, Status, Timestamp};
use finality_store::model::*;
use finality_store::Store;
use std::sync::Arc;

/// An event read from the provider's list (the catch-up) goes through the
/// inbox like a webhook, records `sweep` as the source of the change it
/// makes, and its webhook arriving afterwards is the same event: stored
/// once, applied once.
pub async fn listed_event_applies_as_sweep_once(db: Arc<dyn Store>) {
    register(&*db, "pay_l", T0).await;
    let listed = NewInboxEvent {
        source: Source::Sweep,
        ..inbox_event("evt_l", "ref_pay_l", Status::Succeeded)
    };
    assert_eq!(db.inbox_insert(&[listed], T0).await.unwrap(), [true]);
    let outcomes = drain_inbox(&*db, T0).await;
    assert!(
        matches!(outcomes[..], [InboxOutcome::Applied { .. }]),
        "{outcomes:?}"
    );
    let view = db.get("pay_l").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::Succeeded);
    assert_eq!(view.payment.status_source, Some(Source::Sweep));
    let twin = inbox_event("evt_l", "ref_pay_l", Status::Succeeded);
    assert_eq!(db.inbox_insert(&[twin], T0).await.unwrap(), [false]);
    assert!(drain_inbox(&*db, T0).await.is_empty());
    assert_eq!(outbox_for(&*db, "pay_l").await.len(), 1);
}

/// A claimed batch processed in one transaction gives each event the
/// outcome it would get alone, in arrival order: a second event for the
/// same payment sees the first one's change, an orphan waits, an unknown
/// status is recorded, a stale lease is refused; one feed event per
/// transition.
pub async fn inbox_batch_matches_one_at_a_time(db: Arc<dyn Store>) {
    for id in ["pay_b1", "pay_b2", "pay_b3"] {
        register(&*db, id, T0).await;
    }
    let unknown = NewInboxEvent {
        observed: None,
        provider_status: Some("weird".into()),
        ..inbox_event("evt_b4", "ref_pay_b2", Status::Succeeded)
    };
    let rows = [
        inbox_event("evt_b1", "ref_pay_b1", Status::Processing),
        inbox_event("evt_b2", "ref_pay_b1", Status::Succeeded),
        inbox_event("evt_b3", "ref_nobody", Status::Succeeded),
        unknown,
        inbox_event("evt_b5", "ref_pay_b3", Status::Failed),
        inbox_event("evt_b6", "ref_pay_b3", Status::Failed),
    ];
    db.inbox_insert(&rows, T0).await.unwrap();
    let mut batch = db
        .inbox_claim(T0, 50, Timestamp(T0.0 + LEASE_MS))
        .await
        .unwrap();
    assert_eq!(batch.len(), 6);
    batch.sort_by_key(|e| e.id);
    // One event whose lease another processor has since taken.
    let mut stale = batch[5].clone();
    stale.attempts += 7;
    let mut evs = batch[..5].to_vec();
    evs.push(stale);
    let out = db.inbox_process_batch(&evs, T0).await.unwrap();
    assert!(
        matches!(
            &out[..],
            [
                InboxOutcome::Applied { .. },
                InboxOutcome::Applied { .. },
                InboxOutcome::Orphaned,
                InboxOutcome::Review { .. },
                InboxOutcome::Applied { .. },
                InboxOutcome::LeaseLost,
            ]
        ),
        "{out:?}"
    );
    let b1 = db.get("pay_b1").await.unwrap().unwrap();
    assert_eq!(b1.payment.status, Status::Succeeded);
    assert_eq!(
        outbox_for(&*db, "pay_b1").await.len(),
        2,
        "pending→processing→succeeded"
    );
    assert_eq!(
        db.get("pay_b3").await.unwrap().unwrap().payment.status,
        Status::Failed
    );
    assert_eq!(
        db.get("pay_b2").await.unwrap().unwrap().payment.status,
        Status::Pending
    );
    let state = |e: &'static str| {
        let db = db.clone();
        async move { db.inbox_get("sim", e).await.unwrap().unwrap().state }
    };
    assert_eq!(state("evt_b1").await, InboxState::Applied);
    assert_eq!(state("evt_b3").await, InboxState::Orphaned);
    // A status no adapter row maps: kept for a human, never dropped.
    assert_eq!(state("evt_b4").await, InboxState::Review);
    assert_ne!(
        state("evt_b6").await,
        InboxState::Applied,
        "the stale lease wrote nothing"
    );
}

/// The inbox processor's transaction gives its events their feed
/// positions as it commits: a reader sees them without a sequencer round,
/// and with changes committed elsewhere before and after (left to the
/// sequencer), the positions stay gapless and each event is there once.
pub async fn inbox_take_and_process_numbers_its_events(db: Arc<dyn Store>) {
    for id in ["pay_n1", "pay_n2", "pay_n3", "pay_n4"] {
        register(&*db, id, T0).await;
    }
    let head = sequenced_head(&*db).await;
    // Committed by another writer, not numbered yet.
    db.apply(&report("pay_n3", Status::Processing, "e_n3"), T0)
        .await
        .unwrap();
    db.inbox_insert(
        &[
            inbox_event("evt_n1", "ref_pay_n1", Status::Succeeded),
            inbox_event("evt_n2", "ref_pay_n2", Status::Failed),
        ],
        T0,
    )
    .await
    .unwrap();
    let taken = db
        .inbox_take_and_process(T0, 50, Timestamp(T0.0 + LEASE_MS))
        .await
        .unwrap();
    assert_eq!(taken.len(), 2);
    assert!(
        taken
            .iter()
            .all(|(_, o)| matches!(o, InboxOutcome::Applied { .. })),
        "{taken:?}"
    );
    let fed: Vec<String> = db
        .feed_after(head, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.payment_id)
        .collect();
    for id in ["pay_n1", "pay_n2"] {
        assert!(
            fed.iter().any(|p| p == id),
            "{id} is in the feed at the commit, before any sequencer round: {fed:?}"
        );
    }
    db.apply(&report("pay_n4", Status::Processing, "e_n4"), T0)
        .await
        .unwrap();
    db.sequence_feed(1000).await.unwrap();
    let fed = db.feed_after(head, 100).await.unwrap();
    let seqs: Vec<i64> = fed.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (head + 1..=head + 4).collect::<Vec<_>>(), "gapless");
    let mut ids: Vec<&str> = fed.iter().map(|e| e.payment_id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["pay_n1", "pay_n2", "pay_n3", "pay_n4"], "each once");
    assert_eq!(db.sequence_feed(1000).await.unwrap(), 0, "nothing left");
}

/// A payment's events keep their order in the feed when its earlier
/// change was committed by another writer and not yet numbered as the
/// inbox processor numbers the later one: the earlier comes first.
pub async fn inbox_numbering_keeps_a_payments_order(db: Arc<dyn Store>) {
    register(&*db, "pay_o1", T0).await;
    let head = sequenced_head(&*db).await;
    // A status query saw it processing (committed, not numbered yet)...
    db.apply(
        &Report {
            source: Source::StatusQuery,
            event_id: None,
            ..report("pay_o1", Status::Processing, "")
        },
        T0,
    )
    .await
    .unwrap();
    // ...then the webhook says it succeeded.
    db.inbox_insert(
        &[inbox_event("evt_o1", "ref_pay_o1", Status::Succeeded)],
        T0,
    )
    .await
    .unwrap();
    let taken = db
        .inbox_take_and_process(T0, 50, Timestamp(T0.0 + LEASE_MS))
        .await
        .unwrap();
    assert!(
        matches!(&taken[..], [(_, InboxOutcome::Applied { .. })]),
        "{taken:?}"
    );
    db.sequence_feed(1000).await.unwrap();
    let fed: Vec<(i64, Status)> = db
        .feed_after(head, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.seq, e.status))
        .collect();
    assert_eq!(
        fed,
        [
            (head + 1, Status::Processing),
            (head + 2, Status::Succeeded)
        ],
        "in the order they happened"
    );
}

/// Taking due webhooks with their payments and applying them in one
/// transaction (the inbox processor's fast path) decides each event as
/// processing them one at a time does: the same scenario twice, once each
/// way, under different ids.
pub async fn inbox_take_and_process_matches_one_at_a_time(db: Arc<dyn Store>) {
    let scenario = |p: &str| {
        let unknown = NewInboxEvent {
            observed: None,
            provider_status: Some("weird".into()),
            ..inbox_event(
                &format!("evt_{p}4"),
                &format!("ref_pay_{p}2"),
                Status::Succeeded,
            )
        };
        vec![
            inbox_event(
                &format!("evt_{p}1"),
                &format!("ref_pay_{p}1"),
                Status::Processing,
            ),
            // A second event for the same payment in the same batch.
            inbox_event(
                &format!("evt_{p}2"),
                &format!("ref_pay_{p}1"),
                Status::Succeeded,
            ),
            inbox_event(&format!("evt_{p}3"), "ref_nobody", Status::Succeeded),
            unknown,
            inbox_event(
                &format!("evt_{p}5"),
                &format!("ref_pay_{p}3"),
                Status::Failed,
            ),
            // Contradicts a failure just applied.
            inbox_event(
                &format!("evt_{p}6"),
                &format!("ref_pay_{p}3"),
                Status::Succeeded,
            ),
            // Goes backwards from final.
            inbox_event(
                &format!("evt_{p}7"),
                &format!("ref_pay_{p}1"),
                Status::Pending,
            ),
        ]
    };
    let kind = |o: &InboxOutcome| std::mem::discriminant(o);
    let mut outcomes = Vec::new();
    for (p, at_once) in [("t", true), ("u", false)] {
        for n in 1..=3 {
            register(&*db, &format!("pay_{p}{n}"), T0).await;
        }
        db.inbox_insert(&scenario(p), T0).await.unwrap();
        let out: Vec<InboxOutcome> = if at_once {
            let taken = db
                .inbox_take_and_process(T0, 50, Timestamp(T0.0 + LEASE_MS))
                .await
                .unwrap();
            let ids: Vec<&str> = taken.iter().map(|(e, _)| e.event_id.as_str()).collect();
            assert_eq!(
                ids,
                ["evt_t1", "evt_t2", "evt_t3", "evt_t4", "evt_t5", "evt_t6", "evt_t7"]
            );
            taken.into_iter().map(|(_, o)| o).collect()
        } else {
            drain_inbox(&*db, T0).await
        };
        let mut states = Vec::new();
        for n in 1..=7 {
            let e = db
                .inbox_get("sim", &format!("evt_{p}{n}"))
                .await
                .unwrap()
                .unwrap();
            states.push((e.state, e.reason));
        }
        let mut statuses = Vec::new();
        for n in 1..=3 {
            let v = db.get(&format!("pay_{p}{n}")).await.unwrap().unwrap();
            statuses.push((
                v.payment.status,
                outbox_for(&*db, &format!("pay_{p}{n}")).await.len(),
            ));
        }
        outcomes.push((out.iter().map(kind).collect::<Vec<_>>(), states, statuses));
    }
    assert_eq!(outcomes[0], outcomes[1]);
    let (_, _, statuses) = &outcomes[0];
    assert_eq!(
        statuses,
        &vec![
            (Status::Succeeded, 2),
            (Status::Pending, 0),
            // Its failure, and the flag the success reported after it
            // raised (`payment.flagged`: money may have moved).
            (Status::Failed, 2)
        ]
    );
    assert!(
        db.inbox_take_and_process(T0, 50, Timestamp(T0.0 + LEASE_MS))
            .await
            .unwrap()
            .is_empty(),
        "nothing left due"
    );
}

pub async fn inbox_dedupes_and_applies_once(db: Arc<dyn Store>) {
    register(&*db, "pay_w", T0).await;
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            db.inbox_insert(&[inbox_event("evt_1", "ref_pay_w", Status::Succeeded)], T0)
                .await
        }));
    }
    let mut fresh = 0;
    for t in tasks {
        fresh += t.await.unwrap().unwrap().iter().filter(|f| **f).count();
    }
    assert_eq!(fresh, 1, "one insert wins; the rest are duplicates");
    let outcomes = drain_inbox(&*db, T0).await;
    assert_eq!(outcomes.len(), 1);
    assert!(
        matches!(outcomes[0], InboxOutcome::Applied { .. }),
        "{outcomes:?}"
    );
    let view = db.get("pay_w").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::Succeeded);
    assert_eq!(view.payment.status_source, Some(Source::Webhook));
    assert_eq!(view.history.len(), 1);
    assert_eq!(view.history[0].event_id.as_deref(), Some("evt_1"));
    assert!(
        view.poll.is_none(),
        "a settling webhook removes the poll job"
    );
    assert_eq!(outbox_for(&*db, "pay_w").await.len(), 1);
    let ev = db.inbox_get("sim", "evt_1").await.unwrap().unwrap();
    assert_eq!(ev.state, InboxState::Applied);
}

pub async fn inbox_out_of_order_is_ignored_with_reason(db: Arc<dyn Store>) {
    register(&*db, "pay_o", T0).await;
    db.inbox_insert(&[inbox_event("e_succ", "ref_pay_o", Status::Succeeded)], T0)
        .await
        .unwrap();
    drain_inbox(&*db, T0).await;
    db.inbox_insert(
        &[inbox_event("e_proc", "ref_pay_o", Status::Processing)],
        T0,
    )
    .await
    .unwrap();
    let out = drain_inbox(&*db, T0).await;
    assert!(
        matches!(&out[0], InboxOutcome::Ignored { reason } if reason.contains("already_final")),
        "{out:?}"
    );
    let late = db.inbox_get("sim", "e_proc").await.unwrap().unwrap();
    assert_eq!(late.state, InboxState::Ignored);
    assert!(late.reason.unwrap().contains("payment is succeeded"));
    let view = db.get("pay_o").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::Succeeded);
    assert_eq!(view.history.len(), 1);

    // A non-final webhook keeps the poll job and its schedule.
    register(&*db, "pay_n", Timestamp(T0.0 + 9_000)).await;
    db.inbox_insert(&[inbox_event("e_n", "ref_pay_n", Status::Processing)], T0)
        .await
        .unwrap();
    drain_inbox(&*db, T0).await;
    let view = db.get("pay_n").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::Processing);
    assert_eq!(
        view.poll.unwrap().next_poll_at,
        Some(Timestamp(T0.0 + 9_000))
    );
}

/// A failure reported after success is never "ignored: already final":
/// the payment stays succeeded (the report may be stale) and the webhook is
/// kept in state `review` with the provider's words. A reversal applies,
/// with the provider's words in the history.
pub async fn inbox_failure_after_success_is_kept_for_review(db: Arc<dyn Store>) {
    register(&*db, "pay_fs", T0).await;
    db.inbox_insert(&[inbox_event("e_ok", "ref_pay_fs", Status::Succeeded)], T0)
        .await
        .unwrap();
    drain_inbox(&*db, T0).await;
    let mut late = inbox_event("e_fail", "ref_pay_fs", Status::Failed);
    late.provider_status = Some("refund.failed failed".into());
    db.inbox_insert(&[late], T0).await.unwrap();
    let out = drain_inbox(&*db, T0).await;
    assert!(matches!(&out[0], InboxOutcome::Review { .. }), "{out:?}");
    let row = db.inbox_get("sim", "e_fail").await.unwrap().unwrap();
    assert_eq!(row.state, InboxState::Review);
    assert!(row.reason.unwrap().contains("refund.failed failed"));
    assert_eq!(
        db.get("pay_fs").await.unwrap().unwrap().payment.status,
        Status::Succeeded
    );
    let mut rev = inbox_event("e_rev", "ref_pay_fs", Status::Reversed);
    rev.provider_status = Some("CAPTURE_FAILED:true".into());
    db.inbox_insert(&[rev], T0).await.unwrap();
    drain_inbox(&*db, T0).await;
    let view = db.get("pay_fs").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::Reversed);
    let last = view.history.last().unwrap();
    assert_eq!(
        last.reason.as_deref(),
        Some("provider: CAPTURE_FAILED:true")
    );
}

pub async fn inbox_orphan_is_applied_on_registration(db: Arc<dyn Store>) {
    db.inbox_insert(
        &[inbox_event("e_early", "ref_pay_late", Status::Succeeded)],
        T0,
    )
    .await
    .unwrap();
    assert_eq!(drain_inbox(&*db, T0).await, vec![InboxOutcome::Orphaned]);
    assert_eq!(db.inbox_next_due().await.unwrap(), None);
    register(&*db, "pay_late", T0).await;
    let out = drain_inbox(&*db, T0).await;
    assert!(matches!(out[0], InboxOutcome::Applied { .. }), "{out:?}");
    let view = db.get("pay_late").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::Succeeded);
    // The backstop finds nothing left to adopt.
    assert_eq!(db.inbox_adopt_orphans(T0).await.unwrap(), 0);
}

pub async fn inbox_failures_are_retried(db: Arc<dyn Store>) {
    register(&*db, "pay_x", T0).await;
    db.inbox_insert(&[inbox_event("e_x", "ref_pay_x", Status::Failed)], T0)
        .await
        .unwrap();
    let ev = db
        .inbox_claim(T0, 10, Timestamp(T0.0 + LEASE_MS))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(ev.attempts, 1);
    db.inbox_fail(&ev, "database hiccup", Timestamp(T0.0 + 5_000))
        .await
        .unwrap();
    assert!(db
        .inbox_claim(T0, 10, Timestamp(T0.0 + LEASE_MS))
        .await
        .unwrap()
        .is_empty());
    let failed = db.inbox_get("sim", "e_x").await.unwrap().unwrap();
    assert_eq!(
        (failed.state, failed.reason.as_deref()),
        (InboxState::Failed, Some("database hiccup"))
    );
    let later = Timestamp(T0.0 + 5_000);
    let ev2 = db
        .inbox_claim(later, 10, Timestamp(later.0 + LEASE_MS))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(ev2.attempts, 2);
    // The stale claim is fenced out.
    assert_eq!(
        db.inbox_process(&ev, later).await.unwrap(),
        InboxOutcome::LeaseLost
    );
    assert!(matches!(
        db.inbox_process(&ev2, later).await.unwrap(),
        InboxOutcome::Applied { .. }
    ));
}

/// Webhooks that name the merchant's reference find a payment registered by
/// it alone (before or after they arrive) and record the provider's id; one
/// about another provider object with the same merchant reference is not
/// applied.
pub async fn merchant_ref_webhooks(db: Arc<dyn Store>) {
    db.register(&merchant_payment("pay_w", "order-w"), T0, T0)
        .await
        .unwrap();
    db.inbox_insert(&[merchant_event("e_w", "pi_w", "order-w")], T0)
        .await
        .unwrap();
    let out = drain_inbox(&*db, T0).await;
    assert!(matches!(out[0], InboxOutcome::Applied { .. }), "{out:?}");
    let w = db.get("pay_w").await.unwrap().unwrap();
    assert_eq!(
        (w.payment.status, w.payment.provider_ref.as_deref()),
        (Status::Succeeded, Some("pi_w"))
    );

    db.inbox_insert(&[merchant_event("e_late", "pi_late", "order-late")], T0)
        .await
        .unwrap();
    assert_eq!(drain_inbox(&*db, T0).await, vec![InboxOutcome::Orphaned]);
    db.register(&merchant_payment("pay_late_m", "order-late"), T0, T0)
        .await
        .unwrap();
    let out = drain_inbox(&*db, T0).await;
    assert!(matches!(out[0], InboxOutcome::Applied { .. }), "{out:?}");
    let late = db.get("pay_late_m").await.unwrap().unwrap();
    assert_eq!(late.payment.provider_ref.as_deref(), Some("pi_late"));
    assert_eq!(db.inbox_adopt_orphans(T0).await.unwrap(), 0);

    let mut both = merchant_payment("pay_x", "order-x");
    both.provider_ref = Some(ProviderRef::parse("pi_x1").unwrap());
    db.register(&both, T0, T0).await.unwrap();
    db.inbox_insert(&[merchant_event("e_x", "pi_x2", "order-x")], T0)
        .await
        .unwrap();
    let out = drain_inbox(&*db, T0).await;
    match &out[0] {
        InboxOutcome::Ignored { reason } => {
            assert!(reason.contains("tracks `pi_x1`"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        db.get("pay_x").await.unwrap().unwrap().payment.status,
        Status::Pending
    );
}

/// The money an event names is the registered money, or the event goes to
/// review: a success for another amount or currency moves the payment to
/// `needs_review` with both values (the row a `review` row), never to
/// `succeeded`; on a payment already final it is a `review` row beside it;
/// the same money is applied. The same on every way the inbox applies
/// events: one at a time, as a claimed batch, and taken and applied at once.
pub async fn inbox_money_mismatch_goes_to_review(db: Arc<dyn Store>) {
    let with = |ev: &str, pay: &str, amount: i64, currency: &str| NewInboxEvent {
        reported: finality_core::Reported::money(amount, currency),
        ..inbox_event(ev, &format!("ref_{pay}"), Status::Succeeded)
    };
    for (way, p) in [("one", "m1"), ("batch", "m2"), ("take", "m3")] {
        let (amt, ccy, ok) = (
            format!("pay_{p}a"),
            format!("pay_{p}c"),
            format!("pay_{p}o"),
        );
        for id in [&amt, &ccy, &ok] {
            register(&*db, id, T0).await;
        }
        let rows = [
            with(&format!("evt_{p}a"), &amt, 1249, "USD"),
            with(&format!("evt_{p}c"), &ccy, 1250, "eur"),
            with(&format!("evt_{p}o"), &ok, 1250, "usd"),
        ];
        db.inbox_insert(&rows, T0).await.unwrap();
        match way {
            "take" => {
                db.inbox_take_and_process(T0, 50, Timestamp(T0.0 + LEASE_MS))
                    .await
                    .unwrap();
            }
            _ => {
                let evs = db
                    .inbox_claim(T0, 50, Timestamp(T0.0 + LEASE_MS))
                    .await
                    .unwrap();
                if way == "batch" {
                    db.inbox_process_batch(&evs, T0).await.unwrap();
                } else {
                    for ev in &evs {
                        db.inbox_process(ev, T0).await.unwrap();
                    }
                }
            }
        }
        let status = |id: String| {
            let db = db.clone();
            async move { db.get(&id).await.unwrap().unwrap() }
        };
        let a = status(amt.clone()).await;
        assert_eq!(a.payment.status, Status::NeedsReview, "{way}");
        let why = a.history.last().unwrap().reason.clone().unwrap_or_default();
        assert!(
            why.starts_with(
                "amount_mismatch: the provider reports succeeded for 1249 USD, registered 1250 USD"
            ),
            "{way}: {why}"
        );
        let c = status(ccy.clone()).await;
        assert_eq!(c.payment.status, Status::NeedsReview, "{way}");
        let row = db
            .inbox_get("sim", &format!("evt_{p}c"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.state, InboxState::Review, "{way}");
        assert!(
            row.reason
                .unwrap_or_default()
                .contains("1250 EUR, registered 1250 USD"),
            "{way}"
        );
        assert_eq!(
            status(ok.clone()).await.payment.status,
            Status::Succeeded,
            "{way}"
        );
        // On a payment already final: a review row, the payment unchanged.
        let late = with(&format!("evt_{p}l"), &ok, 1, "USD");
        db.inbox_insert(&[late], T0).await.unwrap();
        let evs = db
            .inbox_claim(T0, 50, Timestamp(T0.0 + LEASE_MS))
            .await
            .unwrap();
        for ev in &evs {
            db.inbox_process(ev, T0).await.unwrap();
        }
        let row = db
            .inbox_get("sim", &format!("evt_{p}l"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.state, InboxState::Review, "{way}");
        assert_eq!(status(ok).await.payment.status, Status::Succeeded, "{way}");
    }
}

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![
    listed_event_applies_as_sweep_once,
    inbox_batch_matches_one_at_a_time,
    inbox_take_and_process_numbers_its_events,
    inbox_numbering_keeps_a_payments_order,
    inbox_take_and_process_matches_one_at_a_time,
    inbox_dedupes_and_applies_once,
    inbox_out_of_order_is_ignored_with_reason,
    inbox_failure_after_success_is_kept_for_review,
    inbox_orphan_is_applied_on_registration,
    inbox_failures_are_retried,
    merchant_ref_webhooks,
    inbox_money_mismatch_goes_to_review,
];
