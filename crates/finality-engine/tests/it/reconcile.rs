//! Settlement-report reconciliation against real stores: every outcome of
//! the table in `reconcile.rs`, a malformed report that changes nothing, and
//! a second import of the same report that changes nothing.

use super::*;
use finality_core::{Source, Status};
use finality_engine::reconcile::{reconcile, reconcile_file, Import, Period, ReconcileError};
use finality_providers::settlement::{Columns, Format, LineKind};
use finality_store::Report;
use finality_testkit::Backend;

fn columns() -> Format {
    Format::Columns(Columns {
        reference: "psp_reference".into(),
        amount: "gross".into(),
        currency: "currency".into(),
        kind: Some("type".into()),
        kinds: vec![
            ("Settled".into(), LineKind::Charge),
            ("Refunded".into(), LineKind::Refund),
            ("Chargeback".into(), LineKind::Chargeback),
            ("Fee".into(), LineKind::Fee),
        ],
        fee: Some("fee".into()),
        merchant_ref: None,
        decimal: true,
    })
}

fn payment(id: &str, amount: i64) -> NewPayment {
    NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: "sim".into(),
        provider_ref: Some(ProviderRef::parse(&format!("psp_{id}")).unwrap()),
        merchant_ref: None,
        kind: Kind::Payment,
        amount: Amount::new(amount, Currency::parse("EUR").unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    }
}

fn write(dir: &std::path::Path, name: &str, body: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

async fn status(store: &dyn Store, id: &str) -> Status {
    store.get(id).await.unwrap().unwrap().payment.status
}

async fn every_outcome_once(backend: Backend) {
    let db = backend.open().await;
    let store = db.store.clone();
    let now = T0;
    for (id, amount) in [
        ("open", 1250),
        ("done", 1250),
        ("wrong", 1250),
        ("refunded", 990),
        ("failed", 500),
        ("untouched", 700),
        ("both", 400),
        ("forgotten", 300),
        ("earlier", 200),
    ] {
        let r = store
            .register(&payment(id, amount), now, now.plus(Duration::from_secs(60)))
            .await
            .unwrap();
        assert!(matches!(r, Registered::Created(_)));
    }
    // Succeeded within the report's period but not in it, and before it.
    let hour = Duration::from_secs(3600);
    for (id, at) in [("forgotten", now), ("earlier", Timestamp(T0.0 - 7_200_000))] {
        store
            .apply(
                &Report::manual(id, Status::Succeeded, "r".into(), "t".into(), at),
                at,
            )
            .await
            .unwrap();
    }
    for id in ["done", "refunded"] {
        store
            .apply(
                &Report::manual(id, Status::Succeeded, "r".into(), "t".into(), now),
                now,
            )
            .await
            .unwrap();
    }
    store
        .apply(
            &Report::manual("failed", Status::Failed, "r".into(), "t".into(), now),
            now,
        )
        .await
        .unwrap();

    let dir = tempdir();
    // A malformed line (line 4): nothing is applied, the error names it.
    let bad = write(
        &dir,
        "bad.csv",
        "psp_reference,type,gross,fee,currency\n\
        psp_open,Settled,12.50,0.30,EUR\n\
        psp_done,Settled,12.50,0.30,EUR\n\
        psp_wrong,Settled,twelve,0.30,EUR\n",
    );
    let err = reconcile_file(&*store, "sim", &bad, &columns(), now)
        .await
        .unwrap_err();
    match &err {
        ReconcileError::Report { error, .. } => {
            assert_eq!((error.line, error.column.as_str()), (4, "gross"), "{err}");
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("bad.csv: line 4: gross"), "{err}");
    assert_eq!(
        status(&*store, "open").await,
        Status::Pending,
        "nothing half-applied"
    );
    assert!(store.recon_runs(10).await.unwrap().is_empty());

    let report = "psp_reference,type,gross,fee,currency\n\
        psp_open,Settled,12.50,0.30,EUR\n\
        psp_done,Settled,12.50,0.30,EUR\n\
        psp_wrong,Settled,13.00,0.30,EUR\n\
        psp_refunded,Refunded,-9.90,,EUR\n\
        psp_failed,Settled,5.00,0.10,EUR\n\
        psp_stranger,Settled,1.00,0.03,EUR\n\
        ,Fee,-0.50,,EUR\n\
        psp_both,Settled,4.00,0.10,EUR\n\
        psp_both,Refunded,-4.00,,EUR\n";
    let good = write(&dir, "settlement_2026-12-01.csv", report);
    let format = columns();
    let import = Import {
        provider: "sim",
        name: "settlement_2026-12-01.csv",
        format: &format,
        period: Some(Period {
            from: Timestamp(now.0 - 3_600_000),
            until: now.plus(hour),
        }),
    };
    let out = reconcile(&*store, &import, &good, now).await.unwrap();
    assert!(!out.already_imported);
    assert_eq!(out.lines, 9);
    let c = |k: &str| out.counts.get(k).copied().unwrap_or(0);
    assert_eq!(
        (
            c("applied"),
            c("matched"),
            c("amount_mismatch"),
            c("reversed")
        ),
        (2, 1, 1, 2),
        "{:?}",
        out.counts
    );
    assert_eq!(
        (
            c("contradiction"),
            c("unknown_here"),
            c("ignored"),
            c("missing_from_report")
        ),
        (1, 1, 1, 1),
        "{:?}",
        out.counts
    );

    // What each line did.
    let v = store.get("open").await.unwrap().unwrap();
    assert_eq!(v.payment.status, Status::Succeeded);
    assert_eq!(v.payment.status_source, Some(Source::Sweep));
    assert!(v
        .history
        .last()
        .unwrap()
        .reason
        .as_deref()
        .unwrap()
        .contains("settlement_2026-12-01.csv, line 2"));
    assert_eq!(
        status(&*store, "wrong").await,
        Status::NeedsReview,
        "a mismatch is never applied"
    );
    assert_eq!(status(&*store, "refunded").await, Status::Reversed);
    assert_eq!(
        status(&*store, "failed").await,
        Status::Failed,
        "kept for a person"
    );
    assert_eq!(status(&*store, "untouched").await, Status::Pending);
    assert_eq!(
        status(&*store, "both").await,
        Status::Reversed,
        "settled then refunded within one page"
    );
    let kept = store.recon_lines(out.run_id, 100).await.unwrap();
    let outcomes: Vec<(Option<i64>, &str)> =
        kept.iter().map(|l| (l.line, l.outcome.as_str())).collect();
    assert_eq!(
        outcomes,
        vec![
            (Some(2), "applied"),
            (Some(4), "amount_mismatch"),
            (Some(5), "reversed"),
            (Some(6), "contradiction"),
            (Some(7), "unknown_here"),
            (Some(9), "applied"),
            (Some(10), "reversed"),
            (None, "missing_from_report"),
        ]
    );
    let missing = kept.last().unwrap();
    assert_eq!(missing.payment_id.as_deref(), Some("forgotten"));
    assert!(
        missing.reason.contains("absent from sim settlement report"),
        "{}",
        missing.reason
    );
    assert_eq!(seen_rows(&db).await, 0, "the run's scratch rows are gone");
    assert!(
        kept[1]
            .reason
            .contains("settled 1300 EUR but registered as 1250 EUR"),
        "{}",
        kept[1].reason
    );

    // The same report again: nothing changes, the first run is named.
    let history_before = store.get("open").await.unwrap().unwrap().history.len();
    let again = reconcile(&*store, &import, &good, now).await.unwrap();
    assert!(again.already_imported);
    assert_eq!(again.run_id, out.run_id);
    assert_eq!(again.counts, out.counts);
    assert_eq!(
        store.get("open").await.unwrap().unwrap().history.len(),
        history_before
    );
    assert_eq!(store.recon_runs(10).await.unwrap().len(), 1);
    let events = store.events_after(0, 1000).await.unwrap().len();
    let _ = reconcile_file(&*store, "sim", &good, &columns(), now)
        .await
        .unwrap();
    assert_eq!(
        store.events_after(0, 1000).await.unwrap().len(),
        events,
        "no event twice"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Rows left in the scratch table of listed payments.
async fn seen_rows(db: &finality_testkit::testing::TestDb) -> i64 {
    use finality_testkit::testing::Backend as Db;
    let sql = "SELECT COUNT(*) FROM reconciliation_seen";
    match &db.backend {
        Db::Postgres(pg) => sqlx::query_scalar(sql).fetch_one(pg.pool()).await.unwrap(),
        Db::Sqlite(lite) => sqlx::query_scalar(sql)
            .fetch_one(lite.pool())
            .await
            .unwrap(),
    }
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("finality-recon-{}", uuid_like()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn uuid_like() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{n:x}-{:?}", std::thread::current().id()).replace(['(', ')'], "")
}

finality_testkit::on_both_backends!(every_outcome_once);
