//! The contract every [`Store`] adapter must meet, as test functions, and
//! [`exercise`], which runs every one of them against fresh databases of one
//! backend, so PostgreSQL and SQLite are held to one suite and a new case
//! cannot be left off a list (a test checks [`CASES`] names every case).

use finality_core::money::{Amount, Currency, MerchantRef, PaymentId, ProviderRef};
use finality_core::{Kind, Source, Status, Timestamp};
use finality_store::model::*;
use finality_store::review::NewAudit;
use finality_store::Store;
use std::collections::HashSet;
use std::sync::Arc;

pub const T0: Timestamp = Timestamp(1_700_000_000_000);
const LEASE_MS: i64 = 30_000;

/// A valid payment for tests.
pub fn new_payment(id: &str) -> NewPayment {
    NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: "sim".into(),
        provider_ref: Some(ProviderRef::parse(&format!("ref_{id}")).unwrap()),
        merchant_ref: None,
        kind: Kind::Payment,
        amount: Amount::new(1250, Currency::parse("USD").unwrap()).unwrap(),
        metadata: serde_json::json!({"order": id}),
    }
}

pub async fn register(db: &dyn Store, id: &str, first_poll_at: Timestamp) {
    let r = db
        .register(&new_payment(id), T0, first_poll_at)
        .await
        .unwrap();
    assert!(matches!(r, Registered::Created(_)), "{r:?}");
}

fn claim_req(now: Timestamp, limit: u32, worker: &str) -> ClaimRequest {
    ClaimRequest {
        now,
        limit,
        lease_until: Timestamp(now.0 + LEASE_MS),
        worker: worker.into(),
    }
}

fn attempt(job: &ClaimedJob, worker: &str, now: Timestamp, outcome: &str) -> NewAttempt {
    NewAttempt {
        payment_id: job.payment_id.clone(),
        provider: job.provider.clone(),
        worker: worker.into(),
        started_at: now,
        latency_ms: 3,
        outcome: outcome.into(),
        provider_status: Some(outcome.into()),
        error_class: None,
        error: None,
    }
}

fn report(id: &str, status: Status, event: &str) -> Report {
    Report {
        payment_id: id.into(),
        status,
        source: Source::Webhook,
        event_id: Some(event.into()),
        observed_at: T0,
        reason: None,
        actor: None,
    }
}

async fn outbox_for(db: &dyn Store, id: &str) -> Vec<OutboxEvent> {
    let all = db.events_after(0, 100_000).await.unwrap();
    all.into_iter().filter(|e| e.payment_id == id).collect()
}

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

/// Worker A's lease expires, B claims and finishes, A's late write is fenced.
pub async fn expired_lease_is_fenced(db: Arc<dyn Store>) {
    register(&*db, "pay_f", T0).await;
    let a = db.claim(&claim_req(T0, 10, "A")).await.unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].due_at, T0);
    // Leased: nobody else gets it before the lease ends.
    let t1 = Timestamp(T0.0 + LEASE_MS - 1);
    assert!(db.claim(&claim_req(t1, 10, "B")).await.unwrap().is_empty());
    // A stalls; its lease expires and B takes over.
    let t2 = Timestamp(T0.0 + LEASE_MS + 1);
    let b = db.claim(&claim_req(t2, 10, "B")).await.unwrap();
    assert_eq!(b.len(), 1);
    assert_ne!(a[0].lock_token, b[0].lock_token);

    let done_b = db
        .complete(&Completion {
            payment_id: "pay_f".into(),
            lock_token: b[0].lock_token,
            now: t2,
            attempt: Some(attempt(&b[0], "B", t2, "succeeded")),
            observed: Some(Status::Succeeded),
            then: AfterPoll::GiveUp {
                reason: "unused: final".into(),
                count: Count::Attempt,
            },
        })
        .await
        .unwrap();
    assert_eq!(
        done_b,
        CompleteOutcome::Done {
            applied: vec![(Status::Pending, Status::Succeeded)]
        }
    );
    let late_a = db
        .complete(&Completion {
            payment_id: "pay_f".into(),
            lock_token: a[0].lock_token,
            now: Timestamp(t2.0 + 5),
            attempt: Some(attempt(&a[0], "A", T0, "processing")),
            observed: Some(Status::Processing),
            then: AfterPoll::Reschedule {
                next_poll_at: Timestamp(t2.0 + 60_000),
                count: Count::Attempt,
                last_error: None,
            },
        })
        .await
        .unwrap();
    assert_eq!(late_a, CompleteOutcome::LeaseLost);

    let view = db.get("pay_f").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::Succeeded);
    assert_eq!(view.payment.status_source, Some(Source::StatusQuery));
    assert_eq!(view.payment.finalized_at, Some(t2));
    assert_eq!(view.history.len(), 1, "one history row per transition");
    assert_eq!(outbox_for(&*db, "pay_f").await.len(), 1, "one outbox row");
    assert!(view.poll.is_none(), "the job of a final payment is deleted");
    assert_eq!(
        db.attempts("pay_f").await.unwrap().len(),
        2,
        "both calls recorded"
    );
    assert_eq!(db.next_due_at().await.unwrap(), None);
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

/// Reschedule counts attempts (or not, for deferrals), give-up parks the job
/// in review, "poll now" unparks it, and a later answer still settles it.
pub async fn reschedule_give_up_and_settle_later(db: Arc<dyn Store>) {
    reschedule_flow(db, false).await;
}

/// The same through `complete_batch` (the engine's path; on PostgreSQL the
/// array statements).
pub async fn reschedule_give_up_and_settle_later_batched(db: Arc<dyn Store>) {
    reschedule_flow(db, true).await;
}

async fn finish(
    db: &dyn Store,
    batched: bool,
    c: Completion,
) -> finality_store::Result<CompleteOutcome> {
    if batched {
        Ok(db.complete_batch(&[c]).await?.remove(0))
    } else {
        db.complete(&c).await
    }
}

async fn reschedule_flow(db: Arc<dyn Store>, batched: bool) {
    register(&*db, "pay_r", T0).await;
    let job = db.claim(&claim_req(T0, 1, "w")).await.unwrap().remove(0);
    let t1 = Timestamp(T0.0 + 100);
    let reschedule = |at: i64, count| AfterPoll::Reschedule {
        next_poll_at: Timestamp(at),
        count,
        last_error: None,
    };
    let out = finish(
        &*db,
        batched,
        Completion {
            payment_id: "pay_r".into(),
            lock_token: job.lock_token,
            now: t1,
            attempt: Some(attempt(&job, "w", T0, "pending")),
            observed: Some(Status::Pending),
            then: reschedule(t1.0 + 1_000, Count::Attempt),
        },
    )
    .await
    .unwrap();
    assert_eq!(out, CompleteOutcome::Done { applied: vec![] });
    let poll = db.get("pay_r").await.unwrap().unwrap().poll.unwrap();
    assert_eq!(
        (poll.attempts, poll.next_poll_at),
        (1, Some(Timestamp(t1.0 + 1_000)))
    );
    assert_eq!(poll.locked_by, None);

    // A deferral (rate limit, paused provider) does not count.
    let t2 = Timestamp(t1.0 + 1_000);
    let job = db.claim(&claim_req(t2, 1, "w")).await.unwrap().remove(0);
    assert_eq!(job.attempts, 1);
    finish(
        &*db,
        batched,
        Completion {
            payment_id: "pay_r".into(),
            lock_token: job.lock_token,
            now: t2,
            attempt: None,
            observed: None,
            then: reschedule(t2.0 + 2_000, Count::Nothing),
        },
    )
    .await
    .unwrap();
    let t3 = Timestamp(t2.0 + 2_000);
    let job = db.claim(&claim_req(t3, 1, "w")).await.unwrap().remove(0);
    assert_eq!(job.attempts, 1, "a deferral does not burn an attempt");

    // A failure without an answer counts as an error, not an attempt; the
    // next answer starts the errors over.
    finish(
        &*db,
        batched,
        Completion {
            payment_id: "pay_r".into(),
            lock_token: job.lock_token,
            now: t3,
            attempt: None,
            observed: None,
            then: reschedule(t3.0, Count::Error),
        },
    )
    .await
    .unwrap();
    let job = db.claim(&claim_req(t3, 1, "w")).await.unwrap().remove(0);
    assert_eq!((job.attempts, job.errors), (1, 1));
    finish(
        &*db,
        batched,
        Completion {
            payment_id: "pay_r".into(),
            lock_token: job.lock_token,
            now: t3,
            attempt: Some(attempt(&job, "w", t3, "pending")),
            observed: Some(Status::Pending),
            then: reschedule(t3.0, Count::Attempt),
        },
    )
    .await
    .unwrap();
    let job = db.claim(&claim_req(t3, 1, "w")).await.unwrap().remove(0);
    assert_eq!((job.attempts, job.errors), (2, 0));

    let out = finish(
        &*db,
        batched,
        Completion {
            payment_id: "pay_r".into(),
            lock_token: job.lock_token,
            now: t3,
            attempt: Some(attempt(&job, "w", t3, "processing")),
            observed: Some(Status::Processing),
            then: AfterPoll::GiveUp {
                reason: "gave up after 2 status queries".into(),
                count: Count::Attempt,
            },
        },
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        CompleteOutcome::Done {
            applied: vec![
                (Status::Pending, Status::Processing),
                (Status::Processing, Status::NeedsReview)
            ]
        }
    );
    let view = db.get("pay_r").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::NeedsReview);
    assert_eq!(
        view.history[1].reason.as_deref(),
        Some("gave up after 2 status queries")
    );
    let poll = view.poll.unwrap();
    assert_eq!((poll.attempts, poll.next_poll_at), (3, None), "parked");
    assert_eq!(db.next_due_at().await.unwrap(), None);
    assert!(db
        .claim(&claim_req(Timestamp(t3.0 + 10_000_000), 10, "w"))
        .await
        .unwrap()
        .is_empty());

    // A human asks for one more poll; the provider has settled by now.
    let t4 = Timestamp(t3.0 + 60_000);
    assert_eq!(db.poll_now("pay_r", t4).await.unwrap(), PollNow::Scheduled);
    let job = db.claim(&claim_req(t4, 1, "w")).await.unwrap().remove(0);
    finish(
        &*db,
        batched,
        Completion {
            payment_id: "pay_r".into(),
            lock_token: job.lock_token,
            now: t4,
            attempt: Some(attempt(&job, "w", t4, "succeeded")),
            observed: Some(Status::Succeeded),
            then: AfterPoll::GiveUp {
                reason: "unused".into(),
                count: Count::Attempt,
            },
        },
    )
    .await
    .unwrap();
    let view = db.get("pay_r").await.unwrap().unwrap();
    assert_eq!(view.payment.status, Status::Succeeded);
    assert!(view.poll.is_none());
    assert_eq!(
        db.poll_now("pay_r", t4).await.unwrap(),
        PollNow::AlreadyFinal
    );
    assert_eq!(db.poll_now("nope", t4).await.unwrap(), PollNow::NotFound);
}

pub async fn claim_takes_only_due_jobs_in_order(db: Arc<dyn Store>) {
    for (i, at) in [3_000, 1_000, 2_000].iter().enumerate() {
        register(&*db, &format!("pay_{i}"), Timestamp(T0.0 + at)).await;
    }
    assert!(db.claim(&claim_req(T0, 10, "w")).await.unwrap().is_empty());
    let got = db
        .claim(&claim_req(Timestamp(T0.0 + 2_000), 10, "w"))
        .await
        .unwrap();
    let ids: Vec<_> = got.iter().map(|j| j.payment_id.as_str()).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&"pay_1") && ids.contains(&"pay_2"));
    assert_eq!(
        db.next_due_at().await.unwrap(),
        Some(Timestamp(T0.0 + 3_000))
    );
    // A leased job falls due again when its lease ends.
    assert_eq!(
        db.poll_now("pay_1", Timestamp(T0.0 + 2_500)).await.unwrap(),
        PollNow::InFlight
    );
}

pub async fn concurrent_claims_never_overlap(db: Arc<dyn Store>) {
    for i in 0..200 {
        register(&*db, &format!("pay_{i:03}"), T0).await;
    }
    let mut tasks = Vec::new();
    for w in 0..8 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = db.claim(&claim_req(T0, 7, &format!("w{w}"))).await.unwrap();
                if got.is_empty() {
                    return mine;
                }
                mine.extend(got.into_iter().map(|j| j.payment_id));
            }
        }));
    }
    let mut seen = HashSet::new();
    for t in tasks {
        for id in t.await.unwrap() {
            assert!(seen.insert(id.clone()), "{id} claimed twice");
        }
    }
    assert_eq!(seen.len(), 200);
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

pub fn inbox_event(event_id: &str, provider_ref: &str, status: Status) -> NewInboxEvent {
    NewInboxEvent {
        provider: "sim".into(),
        event_id: event_id.into(),
        provider_ref: Some(provider_ref.into()),
        merchant_ref: None,
        observed: Some(status),
        provider_status: Some(status.as_str().into()),
        occurred_at: Some(T0),
        reported: Default::default(),
        raw_body: format!("{{\"id\":\"{event_id}\"}}").into_bytes(),
        headers: serde_json::json!({"webhook-id": event_id}),
        state: InboxState::Received,
        reason: None,
        source: Source::Webhook,
    }
}

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

/// Sequence what waits; the feed's last position then.
async fn sequenced_head(db: &dyn Store) -> i64 {
    db.sequence_feed(1000).await.unwrap();
    db.feed_after(0, 100_000)
        .await
        .unwrap()
        .last()
        .map_or(0, |e| e.seq)
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
            (Status::Failed, 1)
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

/// Claim and process every due inbox event; returns the outcomes.
pub async fn drain_inbox(db: &dyn Store, now: Timestamp) -> Vec<InboxOutcome> {
    let mut out = Vec::new();
    loop {
        let batch = db
            .inbox_claim(now, 50, Timestamp(now.0 + LEASE_MS))
            .await
            .unwrap();
        if batch.is_empty() {
            return out;
        }
        for ev in batch {
            out.push(db.inbox_process(&ev, now).await.unwrap());
        }
    }
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

/// Feed positions follow commit order, destinations advance by
/// compare-and-set, and pruning keeps what a destination still lacks.
pub async fn feed_destinations_and_pruning(db: Arc<dyn Store>) {
    for id in ["pay_1", "pay_2", "pay_3"] {
        register(&*db, id, T0).await;
        db.apply(&report(id, Status::Succeeded, id), Timestamp(T0.0 + 1))
            .await
            .unwrap();
    }
    assert!(
        db.feed_after(0, 10).await.unwrap().is_empty(),
        "no position before sequencing"
    );
    assert_eq!(db.sequence_feed(2).await.unwrap(), 2);
    assert_eq!(db.sequence_feed(10).await.unwrap(), 1);
    assert_eq!(db.sequence_feed(10).await.unwrap(), 0);
    let feed = db.feed_after(0, 10).await.unwrap();
    assert_eq!(feed.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(feed[0].payment_id, "pay_1");

    let d = db.destination("http:x").await.unwrap();
    assert_eq!((d.delivered_seq, d.attempts), (0, 0));
    assert!(db.destination_advance("http:x", 0, 2).await.unwrap());
    assert!(
        !db.destination_advance("http:x", 0, 3).await.unwrap(),
        "stale cursor refused"
    );
    let failed = DestinationState {
        attempts: 3,
        failing_since: Some(T0),
        next_attempt_at: Some(Timestamp(T0.0 + 9)),
        last_error: Some("HTTP 500".into()),
        ..db.destination("http:x").await.unwrap()
    };
    db.destination_failed(&failed).await.unwrap();
    assert_eq!(db.destination("http:x").await.unwrap(), failed);

    // A pusher's group done: its attempts recorded and the cursor moved
    // together; with a stale cursor refused, the attempts still recorded.
    let tried = |seq: i64| DeliveryAttempt {
        destination: "http:x".into(),
        event_id: format!("evt_{seq}"),
        feed_seq: seq,
        at: T0,
        status_code: Some(200),
        latency_ms: 1,
        error: None,
    };
    assert!(db
        .destination_delivered("http:x", 2, 3, &[tried(3)])
        .await
        .unwrap());
    let d = db.destination("http:x").await.unwrap();
    assert_eq!(
        (d.delivered_seq, d.attempts, d.last_error),
        (3, 0, None),
        "moved, retry state cleared"
    );
    assert!(
        !db.destination_delivered("http:x", 2, 3, &[tried(3)])
            .await
            .unwrap(),
        "stale cursor refused"
    );
    assert_eq!(db.deliveries("http:x", 10).await.unwrap().len(), 2);

    // Past retention, but only what every destination has is deleted.
    let later = Timestamp(T0.0 + 1_000_000);
    assert_eq!(db.prune_events(2, later).await.unwrap(), 2);
    let left = db.feed_after(0, 10).await.unwrap();
    assert_eq!(left.iter().map(|e| e.seq).collect::<Vec<_>>(), [3]);
    assert_eq!(
        db.prune_events(3, T0).await.unwrap(),
        0,
        "not yet past retention"
    );
}

/// A batch of completions commits together; a stale one in it is fenced
/// out on its own while the others are written.
pub async fn complete_batch_fences_each_completion(db: Arc<dyn Store>) {
    for id in ["pay_b1", "pay_b2", "pay_b3"] {
        register(&*db, id, T0).await;
    }
    let jobs = db.claim(&claim_req(T0, 10, "w")).await.unwrap();
    assert_eq!(jobs.len(), 3);
    let t1 = Timestamp(T0.0 + 10);
    let done = |j: &ClaimedJob, token: i64, observed| Completion {
        payment_id: j.payment_id.clone(),
        lock_token: token,
        now: t1,
        attempt: Some(attempt(j, "w", T0, "x")),
        observed: Some(observed),
        then: AfterPoll::Reschedule {
            next_poll_at: Timestamp(t1.0 + 1_000),
            count: Count::Attempt,
            last_error: None,
        },
    };
    let batch = vec![
        done(&jobs[2], jobs[2].lock_token, Status::Succeeded),
        done(&jobs[0], jobs[0].lock_token + 1, Status::Failed),
        done(&jobs[1], jobs[1].lock_token, Status::Pending),
    ];
    let out = db.complete_batch(&batch).await.unwrap();
    assert!(matches!(&out[0], CompleteOutcome::Done { applied } if applied.len() == 1));
    assert_eq!(
        out[1],
        CompleteOutcome::LeaseLost,
        "a wrong token is fenced out"
    );
    assert_eq!(out[2], CompleteOutcome::Done { applied: vec![] });
    let s = |id: &str| {
        let db = db.clone();
        let id = id.to_string();
        async move { db.get(&id).await.unwrap().unwrap() }
    };
    assert_eq!(
        s(&jobs[2].payment_id).await.payment.status,
        Status::Succeeded
    );
    assert_eq!(s(&jobs[0].payment_id).await.payment.status, Status::Pending);
    assert_eq!(s(&jobs[1].payment_id).await.poll.unwrap().attempts, 1);
    assert_eq!(
        db.attempts(&jobs[0].payment_id).await.unwrap().len(),
        1,
        "the fenced call is still recorded"
    );
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
    let stats = finality_store::stats::compute(&rows, &errors);
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
        vec![("sim".to_string(), "transient".to_string(), 1)]
    );
    // A window that starts after the registrations holds nothing.
    assert!(db.stats_rows(Timestamp(T0.0 + 1)).await.unwrap().is_empty());
}

/// Bringing a provider's polls forward (its webhooks are down) moves the
/// unleased ones due later, and leaves a leased one with its worker.
pub async fn hurry_brings_unleased_polls_forward(db: Arc<dyn Store>) {
    let hour = Timestamp(T0.0 + 3_600_000);
    register(&*db, "pay_h1", hour).await;
    register(&*db, "pay_h2", hour).await;
    register(&*db, "pay_h3", T0).await;
    let leased = db.claim(&claim_req(T0, 10, "w")).await.unwrap();
    assert_eq!(leased.len(), 1);
    let by = Timestamp(T0.0 + 5_000);
    assert_eq!(db.hurry("sim", by, T0).await.unwrap(), 2);
    assert_eq!(db.hurry("other", by, T0).await.unwrap(), 0);
    assert_eq!(db.next_due_at().await.unwrap(), Some(by));
    let due = db.claim(&claim_req(by, 10, "w2")).await.unwrap();
    let mut ids: Vec<&str> = due.iter().map(|j| j.payment_id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        ["pay_h1", "pay_h2"],
        "the leased one stays with its worker"
    );
    // Nothing already due sooner is pushed back.
    assert_eq!(db.hurry("sim", hour, by).await.unwrap(), 0);
}

/// Early looks (an unverified webhook named the payment): due now, the
/// displaced time carried on the claim so the engine can go back there
/// uncounted; one pending at a time, none for a payment already due or
/// leased, at most `per_payment` in its life; a hurry moves the time it
/// goes back to.
pub async fn early_looks_are_bounded_and_resume_the_schedule(db: Arc<dyn Store>) {
    let hour = Timestamp(T0.0 + 3_600_000);
    register(&*db, "pay_e", hour).await;
    register(&*db, "pay_due", T0).await;
    let look = |now: Timestamp| {
        let db = db.clone();
        async move { db.look_early("sim", "ref_pay_e", now, 2).await.unwrap() }
    };
    assert_eq!(
        db.look_early("sim", "ref_pay_due", T0, 2).await.unwrap(),
        None,
        "already due"
    );
    assert_eq!(db.look_early("sim", "ref_nope", T0, 2).await.unwrap(), None);
    assert_eq!(look(T0).await.as_deref(), Some("pay_e"));
    assert_eq!(look(T0).await, None, "one pending at a time");
    let by = Timestamp(T0.0 + 60_000);
    assert_eq!(db.hurry("sim", by, T0).await.unwrap(), 1);
    let job = claim_one(&*db, "pay_e", T0).await;
    assert_eq!(job.resume_at, Some(by), "the hurried time it goes back to");
    assert_eq!(look(T0).await, None, "leased");
    let t1 = Timestamp(T0.0 + 100);
    // The engine's completion of an early look: back at `by`, uncounted.
    let back = |job: &ClaimedJob, observed: Option<Status>| Completion {
        payment_id: "pay_e".into(),
        lock_token: job.lock_token,
        now: t1,
        attempt: observed.map(|_| attempt(job, "W", T0, "pending")),
        observed,
        then: AfterPoll::Reschedule {
            next_poll_at: by,
            count: Count::Nothing,
            last_error: None,
        },
    };
    db.complete(&back(&job, Some(Status::Pending)))
        .await
        .unwrap();
    let poll = db.get("pay_e").await.unwrap().unwrap().poll.unwrap();
    assert_eq!((poll.attempts, poll.next_poll_at), (0, Some(by)));
    // The second and last look; a completed write clears `resume_at`.
    assert_eq!(look(t1).await.as_deref(), Some("pay_e"));
    let job = claim_one(&*db, "pay_e", t1).await;
    assert_eq!(job.resume_at, Some(by));
    db.complete(&back(&job, None)).await.unwrap();
    assert_eq!(look(t1).await, None, "its early looks are spent");
    let job = claim_one(&*db, "pay_e", by).await;
    assert_eq!(job.resume_at, None, "a scheduled poll is counted as ever");

    // Registered by merchant reference alone (the reference an Alipay
    // notification carries): found by it too.
    let mut p = new_payment("pay_m");
    p.provider_ref = None;
    p.merchant_ref = Some(MerchantRef::parse("order-77").unwrap());
    db.register(&p, T0, hour).await.unwrap();
    assert_eq!(
        db.look_early("sim", "order-77", T0, 2)
            .await
            .unwrap()
            .as_deref(),
        Some("pay_m")
    );
    // An operator's "poll now" is a poll like any other: counted.
    assert_eq!(db.poll_now("pay_m", T0).await.unwrap(), PollNow::Scheduled);
    let job = claim_one(&*db, "pay_m", T0).await;
    assert_eq!(job.resume_at, None, "poll now cleared the pending look");
}

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

/// A node whose heartbeat stopped has its leases released at once (not
/// when they expire), with their tokens cleared so its late completion is
/// refused; a live node's leases stay; a node stopping hands its own back.
pub async fn dead_nodes_leases_are_released_and_fenced(db: Arc<dyn Store>) {
    let at = |s: i64| Timestamp(T0.0 + s * 1000);
    register(&*db, "pay_n1", T0).await;
    register(&*db, "pay_n2", T0).await;
    db.heartbeat("A", T0).await.unwrap();
    db.heartbeat("B", T0).await.unwrap();
    let a = db.claim(&claim_req(T0, 1, "A")).await.unwrap();
    let b = db.claim(&claim_req(T0, 1, "B")).await.unwrap();
    assert_eq!((a.len(), b.len()), (1, 1));
    // B keeps beating; A goes silent.
    db.heartbeat("B", at(5)).await.unwrap();
    assert!(
        db.release_dead(at(-1), at(5)).await.unwrap().is_empty(),
        "nobody is silent that long"
    );
    let released = db.release_dead(at(3), at(6)).await.unwrap();
    assert_eq!(released, [("A".to_string(), 1)]);
    assert_eq!(
        db.next_due_at().await.unwrap(),
        Some(a[0].due_at),
        "due at once, at the time it was due when claimed (ahead of polls that fell due \
         since), not at the lease end"
    );
    // Another node takes it; A's late completion is fenced.
    let c = db.claim(&claim_req(at(6), 10, "B")).await.unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].payment_id, a[0].payment_id);
    let late = db
        .complete(&Completion {
            payment_id: a[0].payment_id.clone(),
            lock_token: a[0].lock_token,
            now: at(7),
            attempt: Some(attempt(&a[0], "A", T0, "succeeded")),
            observed: Some(Status::Succeeded),
            then: AfterPoll::GiveUp {
                reason: "unused".into(),
                count: Count::Attempt,
            },
        })
        .await
        .unwrap();
    assert_eq!(late, CompleteOutcome::LeaseLost);
    // A forgotten node is not released twice.
    assert!(db.release_dead(at(4), at(8)).await.unwrap().is_empty());
    // B stops: both its leases come back due now.
    assert_eq!(db.release_worker("B", at(9)).await.unwrap(), 2);
    let again = db.claim(&claim_req(at(9), 10, "C")).await.unwrap();
    assert_eq!(again.len(), 2);
}

/// The shared token bucket: never more than the burst at once, refilled by
/// time, and concurrent takers (several nodes) never share a token.
pub async fn rate_bucket_grants_each_token_once(db: Arc<dyn Store>) {
    let b = Bucket {
        per_second: 50.0,
        burst: 10.0,
    };
    let (n, left) = db.take_tokens("p", b, 20, T0).await.unwrap();
    assert_eq!((n, left), (10, 0.0), "a full bucket gives its burst");
    assert_eq!(db.take_tokens("p", b, 5, T0).await.unwrap().0, 0);
    let t1 = Timestamp(T0.0 + 100);
    assert_eq!(
        db.take_tokens("p", b, 10, t1).await.unwrap().0,
        5,
        "50/s × 0.1 s"
    );
    let t2 = Timestamp(T0.0 + 10_000);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            db.take_tokens("p", b, 5, t2).await.unwrap().0
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 10, "eight takers share one burst");
    assert_eq!(
        db.take_tokens("other", b, 3, t2).await.unwrap().0,
        3,
        "buckets are per provider"
    );
}

/// A payment known only by the merchant's reference.
pub fn merchant_payment(id: &str, merchant_ref: &str) -> NewPayment {
    NewPayment {
        provider_ref: None,
        merchant_ref: Some(MerchantRef::parse(merchant_ref).unwrap()),
        ..new_payment(id)
    }
}

async fn claim_one(db: &dyn Store, id: &str, now: Timestamp) -> ClaimedJob {
    let jobs = db.claim(&claim_req(now, 100, "W")).await.unwrap();
    jobs.into_iter()
        .find(|j| j.payment_id == id)
        .unwrap_or_else(|| panic!("{id} was not claimed"))
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
        db.find_by_ref("sim", "pi_9").await.unwrap().as_deref(),
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

fn merchant_event(event_id: &str, provider_ref: &str, merchant_ref: &str) -> NewInboxEvent {
    NewInboxEvent {
        merchant_ref: Some(merchant_ref.into()),
        ..inbox_event(event_id, provider_ref, Status::Succeeded)
    }
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

/// One conformance case: a fresh store in, panics on a broken contract.
pub type Case = fn(Arc<dyn Store>) -> futures::future::BoxFuture<'static, ()>;

fn to_review(id: &str, reason: &str, at: Timestamp) -> Report {
    Report {
        payment_id: id.into(),
        status: Status::NeedsReview,
        source: Source::Sweep,
        event_id: None,
        observed_at: at,
        reason: Some(reason.into()),
        actor: None,
    }
}

fn audit(action: &str, payment_id: Option<&str>, at: Timestamp) -> NewAudit {
    NewAudit {
        at,
        actor: "ops-alice".into(),
        role: "reviewer".into(),
        action: action.into(),
        payment_id: payment_id.map(str::to_string),
        detail: serde_json::json!({"status": "succeeded", "reason": "bank statement"}),
        outcome: "scheduled".into(),
        remote_addr: Some("127.0.0.1".into()),
    }
}

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

macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        &[$((stringify!($case), |db| Box::pin($case(db)))),*]
    };
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

/// Every case of the suite, by name.
pub const CASES: &[(&str, Case)] = cases![
    register_is_idempotent,
    expired_lease_is_fenced,
    apply_is_idempotent_and_monotone,
    reschedule_give_up_and_settle_later,
    reschedule_give_up_and_settle_later_batched,
    claim_takes_only_due_jobs_in_order,
    concurrent_claims_never_overlap,
    list_filters_and_pages,
    concurrent_duplicate_reports_apply_once,
    inbox_dedupes_and_applies_once,
    inbox_out_of_order_is_ignored_with_reason,
    inbox_failure_after_success_is_kept_for_review,
    inbox_orphan_is_applied_on_registration,
    inbox_failures_are_retried,
    feed_destinations_and_pruning,
    complete_batch_fences_each_completion,
    rate_bucket_grants_each_token_once,
    merchant_ref_registration_and_recording,
    merchant_ref_webhooks,
    provider_stats_over_a_window,
    hurry_brings_unleased_polls_forward,
    cursor_is_leased_and_saved_by_its_holder,
    listed_event_applies_as_sweep_once,
    dead_nodes_leases_are_released_and_fenced,
    inbox_batch_matches_one_at_a_time,
    inbox_take_and_process_matches_one_at_a_time,
    inbox_take_and_process_numbers_its_events,
    inbox_numbering_keeps_a_payments_order,
    review_queue_and_audit_trail,
    inbox_money_mismatch_goes_to_review,
    early_looks_are_bounded_and_resume_the_schedule,
];

/// Run every case, each against a fresh database of `backend`. The case's
/// name is printed first, so a failure says which contract broke.
pub async fn exercise(backend: crate::Backend) {
    for (name, case) in CASES {
        eprintln!("conformance case {name} on {backend:?}");
        let db = backend.open().await;
        case(db.store.clone()).await;
    }
}

/// Run every case against a fresh store from `open`: for a store that is
/// not a database of its own, such as the in-memory one simulations use.
pub async fn exercise_each(label: &str, open: impl Fn() -> Arc<dyn Store>) {
    for (name, case) in CASES {
        eprintln!("conformance case {name} on {label}");
        case(open()).await;
    }
}

#[cfg(test)]
mod tests {
    /// Every `pub async fn …(db: Arc<dyn Store>)` in this file is in CASES.
    #[test]
    fn every_case_is_exercised() {
        let source = include_str!("conformance.rs");
        let names: Vec<&str> = super::CASES.iter().map(|c| c.0).collect();
        for line in source.lines() {
            let Some(rest) = line.strip_prefix("pub async fn ") else {
                continue;
            };
            if let Some((name, args)) = rest.split_once('(') {
                if args.starts_with("db: Arc<dyn Store>)") {
                    assert!(
                        names.contains(&name),
                        "conformance case `{name}` is not in CASES"
                    );
                }
            }
        }
        assert!(names.len() >= 19, "{names:?}");
    }
}
