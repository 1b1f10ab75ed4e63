//! Retention with archives against real stores, on virtual time: what is
//! old enough is archived (files checked against the manifest), then
//! deleted; open payments, recent data and rows held for a person stay; a
//! payment changed between the archive's read and its delete stays; a late
//! webhook for an archived payment goes to review; a restore brings the
//! day back and holds it from the next run.

use super::*;
use finality_core::{Source, Status};
use finality_engine::lifecycle::{self, Archiver, RetentionConfig};
use finality_store::retention::RowKind;
use finality_store::{DeliveryAttempt, InboxOutcome, InboxState, NewInboxEvent, Report};
use finality_testkit::conformance::drain_inbox;
use finality_testkit::Backend;
use sha2::Digest;

const DAY: i64 = 24 * 3_600_000;

fn payment(id: &str) -> NewPayment {
    NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: "sim".into(),
        provider_ref: Some(ProviderRef::parse(&format!("sim_{id}")).unwrap()),
        merchant_ref: None,
        account: None,
        kind: Kind::Payment,
        amount: Amount::new(1000, Currency::parse("EUR").unwrap()).unwrap(),
        metadata: serde_json::json!({"order": id}),
    }
}

fn hook(event: &str, provider_ref: &str, state: InboxState) -> NewInboxEvent {
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
        raw_body: format!(r#"{{"id":"{event}","email":"customer@example.com"}}"#).into_bytes(),
        headers: serde_json::json!({"webhook-id": event}),
        state,
        reason: None,
        source: Source::Webhook,
    }
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "finality_archive_{tag}_{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn settle(store: &dyn Store, id: &str, status: Status, at: Timestamp) {
    store
        .apply(
            &Report::manual(id, status, "by hand".into(), "test".into(), at),
            at,
        )
        .await
        .unwrap();
}

async fn retention_archives_then_deletes(backend: Backend) {
    let db = backend.open().await;
    let store = db.store.clone();
    let then = T0;
    let now = Timestamp(T0.0 + 700 * DAY);
    let vclock = Arc::new(finality_core::VirtualClock::new(now));
    let clock: Arc<dyn Clock> = vclock.clone();
    let reg = |id: &'static str, at: Timestamp| {
        let store = store.clone();
        async move {
            store
                .register(&payment(id), at, at.plus(Duration::from_secs(60)))
                .await
                .unwrap();
        }
    };

    // Final 699 days ago, its events pruned since: archived.
    reg("old_final", then).await;
    raw(&db, &format!("INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, outcome) \
        VALUES ('old_final', 'sim', 'w', {}, 5, 'pending')", then.0)).await;
    settle(
        &*store,
        "old_final",
        Status::Succeeded,
        Timestamp(then.0 + DAY),
    )
    .await;
    raw(
        &db,
        &format!(
            "INSERT INTO audit_log (at, actor, role, action, payment_id, detail, outcome) \
        VALUES ({}, 'ops', 'operator', 'resolve', 'old_final', '{{}}', 'ok')",
            then.0 + DAY
        ),
    )
    .await;
    // Open for 700 days and being polled right now: never archived.
    reg("old_open", then).await;
    // Final 699 days ago, but an event not yet delivered: stays.
    reg("old_undelivered", then).await;
    settle(
        &*store,
        "old_undelivered",
        Status::Failed,
        Timestamp(then.0 + DAY),
    )
    .await;
    // Final ten days ago: inside retention.
    reg("recent_final", Timestamp(now.0 - 20 * DAY)).await;
    settle(
        &*store,
        "recent_final",
        Status::Succeeded,
        Timestamp(now.0 - 10 * DAY),
    )
    .await;
    raw(
        &db,
        "DELETE FROM outbox WHERE payment_id <> 'old_undelivered'",
    )
    .await;
    let claimed = store
        .claim(&finality_store::ClaimRequest {
            now,
            limit: 10,
            lease_until: now.plus(Duration::from_secs(30)),
            worker: "worker-a".into(),
            weights: Default::default(),
            fair: true,
        })
        .await
        .unwrap();
    assert!(claimed.iter().any(|c| c.payment_id == "old_open"));

    // Provider calls: one old, one recent.
    for at in [then.0, now.0 - DAY] {
        raw(&db, &format!("INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, outcome) \
            VALUES ('old_open', 'sim', 'w', {at}, 5, 'pending')")).await;
    }
    // Webhooks: 100 days old (row goes), 40 days (body goes), a day (kept),
    // and an old one held for review (kept whole).
    // Webhooks, received in time order (ids are handed out at insert): one
    // held for review 200 days ago, one 100 days old (its row goes), one
    // still waiting to be processed 50 days on (its body stays until it
    // is, and the body scan comes back for it), 40 days (its body goes),
    // a day (kept).
    store
        .inbox_insert(
            &[hook("evt_review", "sim_nobody_r", InboxState::Review)],
            Timestamp(now.0 - 200 * DAY),
        )
        .await
        .unwrap();
    for (evt, age) in [
        ("evt_old", 100),
        ("evt_busy", 50),
        ("evt_mid", 40),
        ("evt_new", 1),
    ] {
        store
            .inbox_insert(
                &[hook(
                    evt,
                    &format!("sim_nobody_{evt}"),
                    InboxState::Received,
                )],
                Timestamp(now.0 - age * DAY),
            )
            .await
            .unwrap();
    }
    let out = drain_inbox(&*store, now).await;
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|o| *o == InboxOutcome::Orphaned), "{out:?}");
    raw(&db, "UPDATE webhook_inbox SET state = 'received', next_attempt_at = received_at WHERE event_id = 'evt_busy'").await;
    // Deliveries: one old, one recent.
    let delivery = |at: i64, n: i64| DeliveryAttempt {
        destination: "erp".into(),
        event_id: format!("ev_{n}"),
        feed_seq: n,
        at: Timestamp(at),
        status_code: Some(204),
        latency_ms: 3,
        error: None,
    };
    store
        .record_deliveries(&[delivery(now.0 - 20 * DAY, 1), delivery(now.0 - DAY, 2)])
        .await
        .unwrap();

    let dir = temp_dir("run");
    let cfg = RetentionConfig {
        archive_dir: dir.clone(),
        ..RetentionConfig::default()
    };
    assert_eq!(cfg.payments, Duration::from_secs(600 * 86_400));
    let archiver = Archiver::new(store.clone(), clock.clone(), cfg.clone(), "node-a");
    let report = archiver.run_once(None).await.unwrap().expect("lease free");
    assert!(report.complete);
    let removed = |k: &str| report.removed.get(k).copied().unwrap_or(0);
    // old_open's old call, and old_final's (calls go at 30 days, before
    // their payment does).
    assert_eq!(removed("provider_calls"), 2, "{report:?}");
    assert_eq!(removed("deliveries"), 1, "{report:?}");
    // evt_old, evt_mid and the one held for review (its body is in the
    // archive); not evt_busy, still being processed.
    assert_eq!(removed("webhook_bodies"), 3, "{report:?}");
    assert_eq!(removed("webhooks"), 1, "{report:?}");
    assert_eq!(removed("payments"), 1, "{report:?}");

    // Every file is in the manifest with the right checksum and row count.
    let manifest = lifecycle::read_manifest(&dir).unwrap();
    assert_eq!(manifest.len(), report.files.len());
    for f in &manifest {
        let bytes = std::fs::read(dir.join(&f.file)).unwrap();
        assert_eq!(f.sha256, hex::encode(sha2::Sha256::digest(&bytes)));
        assert_eq!(f.bytes, bytes.len() as u64);
        let text = std::io::read_to_string(flate2::read::GzDecoder::new(&bytes[..])).unwrap();
        assert_eq!(text.lines().count() as u64, f.rows, "{}", f.file);
    }
    let pay_file = manifest
        .iter()
        .find(|f| f.kind == "payments" && f.table == "payments")
        .expect("a payments file");
    assert_eq!(pay_file.day, lifecycle::day_of(then.0 + DAY));
    let history_file = manifest
        .iter()
        .find(|f| f.kind == "payments" && f.table == "status_history")
        .unwrap();
    assert_eq!(history_file.rows, 1);
    assert!(manifest
        .iter()
        .any(|f| f.kind == "payments" && f.table == "audit_log" && f.rows == 1));
    assert!(!manifest
        .iter()
        .any(|f| f.kind == "payments" && f.table == "poll_attempts"));

    // What went and what stayed.
    assert!(store.get("old_final").await.unwrap().is_none());
    let tomb = store.archived_payment("old_final").await.unwrap().unwrap();
    assert_eq!(tomb.archive, pay_file.file);
    assert_eq!(tomb.status, "succeeded");
    for id in ["old_open", "old_undelivered", "recent_final"] {
        assert!(store.get(id).await.unwrap().is_some(), "{id} stays");
    }
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM status_history WHERE payment_id = 'old_final'"
        )
        .await,
        0
    );
    assert_eq!(count(&db, "SELECT count(*) FROM audit_log").await, 0);
    assert_eq!(
        count(&db, "SELECT count(*) FROM poll_attempts").await,
        1,
        "the recent call"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM delivery_attempts").await,
        1
    );
    assert!(store.inbox_get("sim", "evt_old").await.unwrap().is_none());
    assert!(store.inbox_get("sim", "evt_mid").await.unwrap().is_some());
    assert_eq!(
        count(&db, "SELECT count(*) FROM webhook_inbox WHERE body_dropped_at IS NOT NULL AND length(raw_body) = 0").await,
        2,
        "evt_mid and evt_review lost their bodies, kept their rows"
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM webhook_inbox WHERE event_id IN ('evt_new', 'evt_busy') AND body_dropped_at IS NULL AND length(raw_body) > 0").await,
        2
    );
    assert_eq!(
        store
            .inbox_get("sim", "evt_review")
            .await
            .unwrap()
            .unwrap()
            .state,
        InboxState::Review,
        "held for a person: the row stays"
    );

    // The lease was given back: another node runs at once, and finds
    // nothing more.
    let other = Archiver::new(store.clone(), clock.clone(), cfg.clone(), "node-b");
    let again = other.run_once(None).await.unwrap().expect("lease released");
    assert_eq!(again.removed.values().sum::<u64>(), 0, "{again:?}");
    assert!(again.files.is_empty());
    // Once processed, the busy one's body goes: the scan waited for it.
    drain_inbox(&*store, now).await;
    let busy = archiver.run_once(None).await.unwrap().unwrap();
    assert_eq!(
        busy.removed.get("webhook_bodies").copied(),
        Some(1),
        "{busy:?}"
    );
    // A webhook whose row went is redelivered and stored anew; restoring
    // the archived row keeps the new one and fails nothing.
    store
        .inbox_insert(
            &[hook("evt_old", "sim_nobody_evt_old", InboxState::Received)],
            now,
        )
        .await
        .unwrap();
    let rows_file = manifest
        .iter()
        .find(|f| f.kind == "webhooks")
        .expect("a webhooks file");
    let r = lifecycle::restore(
        &*store,
        &dir,
        &dir.join(&rows_file.file),
        Duration::ZERO,
        now,
    )
    .await
    .unwrap();
    assert_eq!(r.tables.get("webhook_inbox"), Some(&(1, 0)));

    // A late webhook for the archived payment waits for a person.
    store
        .inbox_insert(
            &[hook("evt_late", "sim_old_final", InboxState::Received)],
            now,
        )
        .await
        .unwrap();
    let late = drain_inbox(&*store, now).await;
    // (with the redelivered evt_old, an orphan like its first delivery)
    let reviews: Vec<&InboxOutcome> = late
        .iter()
        .filter(|o| matches!(o, InboxOutcome::Review { .. }))
        .collect();
    match &reviews[..] {
        [InboxOutcome::Review { reason }] => assert!(reason.contains("archived"), "{reason}"),
        other => panic!("{other:?}"),
    }

    // Restore brings the day back (history, calls, audit), and the hold
    // keeps the next run off it.
    let r = lifecycle::restore(
        &*store,
        &dir,
        &dir.join(&pay_file.file),
        Duration::from_secs(7 * 86_400),
        now,
    )
    .await
    .unwrap();
    assert_eq!(r.tables.get("payments"), Some(&(1, 1)));
    assert_eq!(r.tables.get("status_history"), Some(&(1, 1)));
    let back = store.get("old_final").await.unwrap().unwrap();
    assert_eq!(back.payment.status, Status::Succeeded);
    assert_eq!(back.history.len(), 1);
    assert!(store.archived_payment("old_final").await.unwrap().is_none());
    assert_eq!(count(&db, "SELECT count(*) FROM audit_log").await, 1);
    let held = archiver.run_once(None).await.unwrap().unwrap();
    assert_eq!(
        held.removed.get("payments").copied().unwrap_or(0),
        0,
        "held: {held:?}"
    );
    assert!(store.get("old_final").await.unwrap().is_some());
    // Restoring twice puts nothing back twice.
    let twice = lifecycle::restore(
        &*store,
        &dir,
        &dir.join(&pay_file.file),
        Duration::ZERO,
        now,
    )
    .await
    .unwrap();
    assert_eq!(twice.tables.get("payments"), Some(&(1, 0)));
    // Once the hold is over, the next run archives it again.
    vclock.advance(Duration::from_secs(8 * 86_400));
    let later = archiver.run_once(None).await.unwrap().unwrap();
    assert_eq!(later.removed.get("payments").copied(), Some(1), "{later:?}");

    // Bodies come back from their file, and the body scan passes them
    // again once their hold ends.
    let bodies = manifest
        .iter()
        .find(|f| f.kind == "webhook_bodies" && f.day == lifecycle::day_of(now.0 - 40 * DAY))
        .expect("evt_mid's bodies file");
    lifecycle::restore(&*store, &dir, &dir.join(&bodies.file), Duration::ZERO, now)
        .await
        .unwrap();
    assert_eq!(
        count(&db, "SELECT count(*) FROM webhook_inbox WHERE event_id = 'evt_mid' AND body_dropped_at IS NULL AND length(raw_body) > 0").await,
        1
    );
    let rerun = archiver.run_once(None).await.unwrap().unwrap();
    assert_eq!(
        rerun.removed.get("webhook_bodies").copied(),
        Some(1),
        "{rerun:?}"
    );

    // A file changed since it was written is refused, naming it.
    let victim = dir.join(&history_file.file);
    std::fs::write(&victim, b"not what was archived").unwrap();
    let err = lifecycle::restore(
        &*store,
        &dir,
        &dir.join(&pay_file.file),
        Duration::ZERO,
        now,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("does not match the manifest"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The delete re-checks what the read saw: a payment reopened (or changed
/// at all) after it was read for the archive stays, and so does one whose
/// poll job came back.
async fn a_payment_changed_after_the_read_stays(backend: Backend) {
    let db = backend.open().await;
    let store = db.store.clone();
    let now = Timestamp(T0.0 + 700 * DAY);
    for id in ["reopened", "rejobbed", "audited", "kept"] {
        store
            .register(&payment(id), T0, T0.plus(Duration::from_secs(60)))
            .await
            .unwrap();
        settle(&*store, id, Status::Succeeded, Timestamp(T0.0 + DAY)).await;
    }
    raw(&db, "DELETE FROM outbox").await;
    let cutoff = Timestamp(now.0 - 600 * DAY);
    let read = store.archivable_payments(cutoff, None, 10).await.unwrap();
    assert_eq!(read.len(), 4);
    // Meanwhile: a chargeback reverses one; another gets a job back.
    settle(&*store, "reopened", Status::Reversed, now).await;
    raw(&db, &format!("INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, next_poll_at) \
        VALUES ('rejobbed', 'sim', 'sim_rejobbed', 'payment', {0}, {0})", now.0)).await;
    // And an audit row is written for the third (a refused "poll now"
    // leaves one without touching the payment).
    raw(
        &db,
        &format!(
            "INSERT INTO audit_log (at, actor, role, action, payment_id, detail, outcome) \
        VALUES ({}, 'ops', 'operator', 'poll_now', 'audited', '{{}}', 'refused')",
            now.0
        ),
    )
    .await;
    let wanted: Vec<(&finality_store::retention::PaymentBundle, String)> = read
        .iter()
        .map(|b| (b, "payments/payments/x.jsonl.gz".to_string()))
        .collect();
    let gone = store.archive_payments(&wanted, cutoff, now).await.unwrap();
    assert_eq!(gone, vec!["kept".to_string()]);
    assert!(
        store.get("audited").await.unwrap().is_some(),
        "its new audit row is in no file"
    );
    assert_eq!(count(&db, "SELECT count(*) FROM audit_log").await, 1);
    // Its reference registered again by another payment: restoring the
    // archived one keeps the new one, and skips its history (no error).
    let mut again = payment("kept_again");
    again.provider_ref = Some(ProviderRef::parse("sim_kept").unwrap());
    store
        .register(&again, now, now.plus(Duration::from_secs(60)))
        .await
        .unwrap();
    let kept = read.iter().find(|b| b.id == "kept").unwrap();
    use finality_store::retention::{PAYMENTS, STATUS_HISTORY};
    assert_eq!(
        store
            .restore_rows(&PAYMENTS, std::slice::from_ref(&kept.payment))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .restore_rows(&STATUS_HISTORY, &kept.history)
            .await
            .unwrap(),
        0
    );
    assert!(store.get("kept").await.unwrap().is_none());
    assert!(store.get("reopened").await.unwrap().is_some());
    assert!(store.get("rejobbed").await.unwrap().is_some());
    assert!(store.archived_payment("reopened").await.unwrap().is_none());
    // Rows of other kinds re-check their own rule: a webhook sent back to
    // processing is not deleted.
    store
        .inbox_insert(
            &[hook("evt_x", "sim_nobody", InboxState::Received)],
            Timestamp(now.0 - 100 * DAY),
        )
        .await
        .unwrap();
    drain_inbox(&*store, now).await;
    let page = store.life_page(RowKind::Webhooks, 0, 10).await.unwrap();
    assert_eq!(page.len(), 1);
    let read_as = (page[0].id, Some("orphaned".to_string()));
    let before = Timestamp(now.0 - 90 * DAY);
    let remove = || async {
        store
            .life_remove(
                RowKind::Webhooks,
                std::slice::from_ref(&read_as),
                before,
                now,
            )
            .await
            .unwrap()
    };
    raw(&db, "UPDATE webhook_inbox SET state = 'received'").await;
    assert_eq!(remove().await, 0);
    // Nor one adopted and applied since (settled, but not the row read).
    raw(&db, "UPDATE webhook_inbox SET state = 'applied'").await;
    assert_eq!(remove().await, 0);
    raw(&db, "UPDATE webhook_inbox SET state = 'orphaned'").await;
    assert_eq!(remove().await, 1, "as read: it goes");
}

finality_testkit::on_both_backends!(
    retention_archives_then_deletes,
    a_payment_changed_after_the_read_stays
);

/// PostgreSQL: a day past retention goes whole (its partition archived,
/// then dropped), a held day stays, a row in the default partition goes
/// row by row, and a dropped day restores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_days_are_dropped_on_postgres() {
    use finality_store::retention::partitions::day_start;
    let db = Backend::Postgres.open().await;
    let store = db.store.clone();
    let now = Timestamp(day_start(T0.0 + 700 * DAY) + 12 * 3_600_000);
    let clock: Arc<dyn Clock> = Arc::new(finality_core::VirtualClock::new(now));
    // A deployment running for 40 days: each day had its partition.
    store
        .partitions_ahead(Timestamp(now.0 - 40 * DAY), 45)
        .await
        .unwrap();
    let call = |age_days: i64, n: i64| {
        format!(
            "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, outcome) \
             SELECT 'p' || g, 'sim', 'w', {} + g, 4, 'pending' FROM generate_series(1, {n}) g",
            now.0 - age_days * DAY
        )
    };
    raw(&db, &call(35, 30)).await; // a day past 30 days: dropped whole
    raw(&db, &call(33, 20)).await; // past, but held: stays
    raw(&db, &call(1, 10)).await; // inside retention
    raw(&db, &call(100, 5)).await; // before every partition: the default one
    store
        .record_deliveries(&[DeliveryAttempt {
            destination: "erp".into(),
            event_id: "ev_1".into(),
            feed_seq: 1,
            at: Timestamp(now.0 - 20 * DAY),
            status_code: Some(204),
            latency_ms: 3,
            error: None,
        }])
        .await
        .unwrap();
    let held_day = lifecycle::day_of(now.0 - 33 * DAY);
    store
        .hold_day("provider_calls", &held_day, Timestamp(now.0 + DAY))
        .await
        .unwrap();

    let dir = temp_dir("partitions");
    let cfg = RetentionConfig {
        provider_calls: Duration::from_secs(30 * 86_400),
        deliveries: Duration::from_secs(14 * 86_400),
        ..RetentionConfig::keep_everything(dir.clone())
    };
    let archiver = Archiver::new(store.clone(), clock.clone(), cfg.clone(), "node-a");
    let r = archiver.run_once(None).await.unwrap().expect("lease");
    assert!(r.complete, "{r:?}");
    let dropped: Vec<(&str, u64)> = r
        .partitions
        .iter()
        .map(|p| (p.partition.as_str(), p.rows))
        .collect();
    let day35 = lifecycle::day_of(now.0 - 35 * DAY).replace('-', "");
    let day20 = lifecycle::day_of(now.0 - 20 * DAY).replace('-', "");
    assert!(
        dropped.contains(&(&format!("poll_attempts_p{day35}"), 30)),
        "{dropped:?}"
    );
    assert!(
        dropped.contains(&(&format!("delivery_attempts_p{day20}"), 1)),
        "{dropped:?}"
    );
    // Empty days past retention go too; no held or recent one does.
    let held_part = format!("poll_attempts_p{}", held_day.replace('-', ""));
    assert!(!dropped.iter().any(|(p, _)| *p == held_part), "{dropped:?}");
    assert_eq!(
        r.partitions.iter().map(|p| p.rows).sum::<u64>(),
        31,
        "only the rows of days past retention: {dropped:?}"
    );
    // 30 + 5 (the default partition's, row by row) calls, 1 delivery.
    assert_eq!(r.removed.get("provider_calls"), Some(&35), "{r:?}");
    assert_eq!(r.removed.get("deliveries"), Some(&1), "{r:?}");
    assert_eq!(
        count(&db, "SELECT count(*) FROM poll_attempts").await,
        30,
        "the held day's 20 and the recent 10 stay"
    );
    let parts = store.partitions(RowKind::ProviderCalls).await.unwrap();
    assert!(parts.iter().any(|p| p.name == held_part));
    assert!(!parts.iter().any(|p| p.name.ends_with(&day35)));
    assert!(parts.iter().all(|p| p.attached), "{parts:?}");
    // Days ahead of the virtual now exist.
    let ahead = lifecycle::day_of(now.0 + 7 * DAY).replace('-', "");
    assert!(parts.iter().any(|p| p.name.ends_with(&ahead)), "{parts:?}");

    // The file holds exactly the day's rows, as the manifest says.
    let manifest = lifecycle::read_manifest(&dir).unwrap();
    let file = manifest
        .iter()
        .find(|f| f.table == "poll_attempts" && f.day == lifecycle::day_of(now.0 - 35 * DAY))
        .expect("the dropped day's file");
    assert_eq!(file.rows, 30);

    // Nothing more to drop on a second run.
    let again = archiver.run_once(None).await.unwrap().expect("lease");
    assert!(again.partitions.is_empty(), "{again:?}");

    // The day comes back (into the default partition: its own is gone).
    let back = lifecycle::restore(&*store, &dir, &dir.join(&file.file), Duration::ZERO, now)
        .await
        .unwrap();
    assert_eq!(back.tables.get("poll_attempts"), Some(&(30, 30)));
    assert_eq!(
        count(&db, "SELECT count(*) FROM poll_attempts_default").await,
        30
    );
}
