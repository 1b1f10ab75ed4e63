//! Claims, leases, fenced completions, early looks and dead nodes of [`finality_store::PollQueue`].

use super::support::*;
use super::Case;
use finality_core::money::MerchantRef;
use finality_core::{Source, Status, Timestamp};
use finality_store::model::*;
use finality_store::Store;
use std::collections::HashSet;
use std::sync::Arc;

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

pub(crate) async fn finish(
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

pub(crate) async fn reschedule_flow(db: Arc<dyn Store>, batched: bool) {
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
        async move {
            db.look_early(&finality_core::Scope::own("sim"), "ref_pay_e", now, 2)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        db.look_early(&finality_core::Scope::own("sim"), "ref_pay_due", T0, 2)
            .await
            .unwrap(),
        None,
        "already due"
    );
    assert_eq!(
        db.look_early(&finality_core::Scope::own("sim"), "ref_nope", T0, 2)
            .await
            .unwrap(),
        None
    );
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
        db.look_early(&finality_core::Scope::own("sim"), "order-77", T0, 2)
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

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![
    expired_lease_is_fenced,
    reschedule_give_up_and_settle_later,
    reschedule_give_up_and_settle_later_batched,
    claim_takes_only_due_jobs_in_order,
    concurrent_claims_never_overlap,
    complete_batch_fences_each_completion,
    hurry_brings_unleased_polls_forward,
    early_looks_are_bounded_and_resume_the_schedule,
    dead_nodes_leases_are_released_and_fenced,
];
