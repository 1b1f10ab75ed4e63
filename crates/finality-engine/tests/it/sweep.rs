//! The reconciliation sweep against real stores: every kind of damage made
//! by hand (as a bad deploy, a restore or an operator would), then one
//! sweep that finds and repairs each, on PostgreSQL and SQLite; a second
//! sweep finds nothing; a killed sweep resumes where it left off.

use super::*;
use finality_core::{Source, Status};
use finality_engine::sweep::{SweepConfig, Sweeper};
use finality_store::{InboxState, NewInboxEvent, Report};
use finality_testkit::conformance::drain_inbox;
use finality_testkit::Backend;

fn payment(id: &str) -> NewPayment {
    NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: "sim".into(),
        provider_ref: Some(ProviderRef::parse(&format!("sim_{id}")).unwrap()),
        merchant_ref: None,
        account: None,
        kind: Kind::Payment,
        amount: Amount::new(1000, Currency::parse("EUR").unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    }
}

fn hook(event: &str, provider_ref: &str) -> NewInboxEvent {
    NewInboxEvent {
        provider: "sim".into(),
        account: None,
        event_id: event.into(),
        provider_ref: Some(provider_ref.into()),
        merchant_ref: None,
        observed: Some(Status::Succeeded),
        provider_status: Some("succeeded".into()),
        occurred_at: None,
        reported: Default::default(),
        raw_body: b"{}".to_vec(),
        headers: serde_json::json!({}),
        state: InboxState::Received,
        reason: None,
        source: Source::Webhook,
    }
}

const DAY: i64 = 24 * 3_600_000;

async fn one_sweep_repairs_every_case(backend: Backend) {
    let db = backend.open().await;
    let store = db.store.clone();
    let now = T0;
    let vclock = Arc::new(finality_core::VirtualClock::new(now));
    let clock: Arc<dyn Clock> = vclock.clone();
    // The provider gives up after 1 day; nothing here calls it.
    let providers = providers(
        "http://127.0.0.1:9",
        quick_policy(60, Duration::from_secs(86_400)),
        None,
        Duration::from_secs(1),
    );
    let recent = Timestamp(now.0 - 60_000);
    let reg = |id: &'static str, at: Timestamp| {
        let store = store.clone();
        async move {
            let r = store
                .register(&payment(id), at, at.plus(Duration::from_secs(60)))
                .await
                .unwrap();
            assert!(matches!(r, Registered::Created(_)));
        }
    };
    // Healthy: an open payment with its job, a final one without.
    reg("ok_open", recent).await;
    reg("ok_final", recent).await;
    store
        .apply(
            &Report::manual(
                "ok_final",
                Status::Succeeded,
                "r".into(),
                "t".into(),
                recent,
            ),
            recent,
        )
        .await
        .unwrap();
    // 1. An open payment whose job was deleted by hand; one in review too.
    reg("lost_job", recent).await;
    raw(&db, "DELETE FROM poll_jobs WHERE payment_id = 'lost_job'").await;
    reg("lost_review_job", recent).await;
    let to_review = Report {
        payment_id: "lost_review_job".into(),
        status: Status::NeedsReview,
        source: Source::Sweep,
        event_id: None,
        observed_at: recent,
        reason: Some("gave up".into()),
        actor: None,
    };
    store.apply(&to_review, recent).await.unwrap();
    raw(
        &db,
        "DELETE FROM poll_jobs WHERE payment_id = 'lost_review_job'",
    )
    .await;
    // 2. A final payment with a job (restored from a backup, say).
    reg("final_with_job", recent).await;
    store
        .apply(
            &Report::manual(
                "final_with_job",
                Status::Failed,
                "r".into(),
                "t".into(),
                recent,
            ),
            recent,
        )
        .await
        .unwrap();
    raw(&db, "INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, next_poll_at) \
              VALUES ('final_with_job', 'sim', 'sim_final_with_job', 'payment', 0, 0)").await;
    // 3. An open payment whose last provider answer was final.
    reg("behind", recent).await;
    raw(&db, &format!("INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, outcome, provider_status) \
              VALUES ('behind', 'sim', 'w', {}, 3, 'succeeded', 'succeeded')", recent.0)).await;
    // 4. A payment open for ten days, with a one-day give-up window.
    reg("ancient", Timestamp(now.0 - 10 * DAY)).await;
    // 5. A webhook left waiting an hour past its due time.
    reg("hooked", recent).await;
    store
        .inbox_insert(
            &[hook("evt_stuck", "sim_hooked")],
            Timestamp(now.0 - 3_600_000),
        )
        .await
        .unwrap();
    // 6. Two webhooks for payments nobody registered, two hours old.
    let old = Timestamp(now.0 - 2 * 3_600_000);
    store
        .inbox_insert(
            &[
                hook("evt_orphan_1", "sim_nobody_1"),
                hook("evt_orphan_2", "sim_nobody_2"),
            ],
            old,
        )
        .await
        .unwrap();
    drain_inbox(&*store, old).await;
    // (the stuck one was due an hour ago; draining at `old` did not reach it)

    let cfg = SweepConfig {
        page: 3,
        budget: Duration::from_secs(60),
        ..SweepConfig::default()
    };
    let mut sweeper = Sweeper::new(
        store.clone(),
        clock.clone(),
        providers.clone(),
        cfg.clone(),
        "node-a",
    );
    let run = sweeper
        .run_once()
        .await
        .unwrap()
        .expect("the lease is free");
    assert!(run.pass_complete, "{run:?}");
    assert_eq!(run.scanned, 8);
    let f = |k: &str| run.findings.get(k).copied().unwrap_or(0);
    assert_eq!(f("job_missing"), 2, "{run:?}");
    assert_eq!(f("job_of_final_payment"), 1, "{run:?}");
    assert_eq!(f("status_behind_provider"), 1, "{run:?}");
    assert_eq!(f("open_past_give_up"), 1, "{run:?}");
    assert_eq!(f("webhook_stuck"), 1, "{run:?}");
    assert_eq!(f("webhook_orphaned"), 2, "{run:?}");
    assert_eq!(
        run.repaired, 6,
        "every finding but the orphans is repaired: {run:?}"
    );

    // Repaired as each should be.
    let v = store.get("lost_job").await.unwrap().unwrap();
    assert_eq!(
        v.poll.as_ref().and_then(|p| p.next_poll_at),
        Some(now),
        "due now"
    );
    let v = store.get("lost_review_job").await.unwrap().unwrap();
    assert!(
        v.poll.is_some() && v.poll.as_ref().unwrap().next_poll_at.is_none(),
        "parked"
    );
    assert!(store
        .get("final_with_job")
        .await
        .unwrap()
        .unwrap()
        .poll
        .is_none());
    let v = store.get("behind").await.unwrap().unwrap();
    assert_eq!(v.payment.status, Status::Succeeded);
    assert_eq!(v.payment.status_source, Some(Source::Sweep));
    let v = store.get("ancient").await.unwrap().unwrap();
    assert_eq!(v.payment.status, Status::NeedsReview);
    assert!(v
        .history
        .last()
        .unwrap()
        .reason
        .as_deref()
        .unwrap()
        .contains("give-up window"));
    assert_eq!(
        store.inbox_next_due().await.unwrap(),
        Some(now),
        "the stuck webhook is due now"
    );
    let outcomes = drain_inbox(&*store, now).await;
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert_eq!(
        store.get("hooked").await.unwrap().unwrap().payment.status,
        Status::Succeeded
    );
    // Untouched: the healthy ones.
    assert_eq!(
        store.get("ok_open").await.unwrap().unwrap().payment.status,
        Status::Pending
    );

    // A second sweep finds nothing (orphans are reported once).
    let again = sweeper.run_once().await.unwrap().unwrap();
    assert!(again.findings.is_empty(), "{again:?}");
    let runs = store.sweep_runs(10).await.unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        runs[1].findings, run.findings,
        "the run is recorded as it was"
    );

    // Another node cannot sweep while the lease is held.
    let mut other = Sweeper::new(
        store.clone(),
        clock.clone(),
        providers.clone(),
        cfg.clone(),
        "node-b",
    );
    assert!(other.run_once().await.unwrap().is_none());

    // A run with a budget of one page saves its place; the next continues.
    raw(&db, "DELETE FROM poll_jobs WHERE payment_id = 'ok_open'").await;
    let one_page = SweepConfig {
        budget: Duration::ZERO,
        ..cfg
    };
    let mut short = Sweeper::new(
        store.clone(),
        clock.clone(),
        providers.clone(),
        one_page,
        "node-a",
    );
    let mut found = 0;
    let mut runs = 0;
    loop {
        let r = short.run_once().await.unwrap().unwrap();
        runs += 1;
        found += r.findings.get("job_missing").copied().unwrap_or(0);
        if r.pass_complete {
            break;
        }
        assert!(r.scanned <= 3);
    }
    assert_eq!(
        runs, 3,
        "eight payments, three per page: three runs of one page each"
    );
    assert_eq!(found, 1);

    // A node that dies after its first page: another takes over once the
    // lease expires, and goes on from the dead node's place, not the start.
    let dying_cfg = SweepConfig {
        budget: Duration::ZERO,
        ..SweepConfig::default()
    };
    let dying_cfg = SweepConfig {
        page: 3,
        ..dying_cfg
    };
    let mut dying = Sweeper::new(
        store.clone(),
        clock.clone(),
        providers.clone(),
        dying_cfg.clone(),
        "node-dead",
    );
    vclock.advance(Duration::from_secs(3600));
    let first = dying
        .run_once()
        .await
        .unwrap()
        .expect("the lease is free again");
    assert_eq!((first.scanned, first.pass_complete), (3, false));
    drop(dying);
    let mut heir = Sweeper::new(
        store.clone(),
        clock.clone(),
        providers.clone(),
        dying_cfg,
        "node-heir",
    );
    assert!(
        heir.run_once().await.unwrap().is_none(),
        "the dead node's lease still holds"
    );
    vclock.advance(Duration::from_secs(61));
    let mut read = first.scanned;
    loop {
        let r = heir.run_once().await.unwrap().expect("the lease expired");
        read += r.scanned;
        if r.pass_complete {
            break;
        }
    }
    assert_eq!(
        read, 8,
        "the pass was finished from where the dead node stopped"
    );
}

finality_testkit::on_both_backends!(one_sweep_repairs_every_case);
