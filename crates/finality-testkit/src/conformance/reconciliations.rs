//! Settlement reports imported once, looked up by reference, checked for
//! what they left out: [`finality_store::Reconciliations`].

use super::support::*;
use super::Case;
use finality_core::{Status, Timestamp};
use finality_store::reconciliations::{ReconLine, ReconStart};
use finality_store::Store;
use std::collections::BTreeMap;
use std::sync::Arc;

fn at(ms: i64) -> Timestamp {
    Timestamp(T0.0 + ms)
}

/// A report is imported once: while its run is alive a second start is
/// busy, once the run went silent it is started again, once finished it
/// is done; lines and counts are kept with the run.
pub async fn a_report_is_imported_once(db: Arc<dyn Store>) {
    let ReconStart::Started(run) = db
        .recon_start("sim", "report.csv", "sha-1", T0, T0)
        .await
        .unwrap()
    else {
        panic!("a new report starts a run");
    };
    db.recon_alive(run, at(1_000)).await.unwrap();
    let again = db
        .recon_start("sim", "report.csv", "sha-1", at(2_000), at(500))
        .await
        .unwrap();
    assert!(
        matches!(again, ReconStart::Busy(ref r) if r.id == run),
        "{again:?}"
    );
    let died = db
        .recon_start("sim", "report.csv", "sha-1", at(9_000), at(5_000))
        .await
        .unwrap();
    assert_eq!(died, ReconStart::Started(run), "a silent run is done again");

    let line = ReconLine {
        line: Some(2),
        kind: "charge".into(),
        provider_ref: Some("ref_x".into()),
        amount: 1250,
        currency: "USD".into(),
        outcome: "unknown_payment".into(),
        reason: "no payment has this reference".into(),
        payment_id: None,
    };
    db.recon_add_lines(run, std::slice::from_ref(&line))
        .await
        .unwrap();
    let counts = BTreeMap::from([
        ("matched".to_string(), 4),
        ("unknown_payment".to_string(), 1),
    ]);
    db.recon_finish(run, 5, &counts, at(10_000)).await.unwrap();

    let done = db
        .recon_start("sim", "report.csv", "sha-1", at(11_000), at(10_000))
        .await
        .unwrap();
    let ReconStart::AlreadyDone(r) = done else {
        panic!("a finished report is done: {done:?}");
    };
    assert_eq!((r.id, r.lines, r.finished_at), (run, 5, Some(at(10_000))));
    assert_eq!(r.counts, counts);
    assert_eq!(db.recon_lines(run, 10).await.unwrap(), vec![line]);
    assert_eq!(db.recon_run(run).await.unwrap().map(|r| r.id), Some(run));
    assert_eq!(db.recon_runs(10).await.unwrap().len(), 1);
    let ReconStart::Started(other) = db
        .recon_start("sim", "other.csv", "sha-2", at(12_000), at(12_000))
        .await
        .unwrap()
    else {
        panic!("another report starts its own run");
    };
    assert_eq!(
        db.recon_runs(10).await.unwrap()[0].id,
        other,
        "newest first"
    );
}

/// Payments are found by either reference; the ones a run did not list,
/// of those that became final in the period, are found page by page, and
/// forgetting the run's listing brings them all back.
pub async fn lookups_and_what_the_report_left_out(db: Arc<dyn Store>) {
    for id in ["pay_1", "pay_2", "pay_3"] {
        register(&*db, id, T0).await;
        db.apply(
            &report(id, Status::Succeeded, &format!("evt_{id}")),
            at(1_000),
        )
        .await
        .unwrap();
    }
    register(&*db, "pay_open", T0).await;
    let found = db
        .recon_lookup(
            &finality_core::Scope::own("sim"),
            &["ref_pay_1", "ref_pay_3", "ref_nobody"],
        )
        .await
        .unwrap();
    let mut ids: Vec<&str> = found.iter().map(|l| l.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["pay_1", "pay_3"]);
    assert!(found
        .iter()
        .all(|l| l.status == Status::Succeeded && l.amount == 1250 && l.currency == "USD"));
    assert!(db
        .recon_lookup(&finality_core::Scope::own("other"), &["ref_pay_1"])
        .await
        .unwrap()
        .is_empty());

    let ReconStart::Started(run) = db
        .recon_start("sim", "r.csv", "sha-3", at(2_000), at(2_000))
        .await
        .unwrap()
    else {
        panic!("a new report starts a run");
    };
    db.recon_seen(run, &["pay_2"]).await.unwrap();
    let period = (T0, at(5_000));
    let absent = |after: &'static str, limit| {
        let db = db.clone();
        async move {
            db.recon_absent(run, &finality_core::Scope::own("sim"), period, after, limit)
                .await
                .unwrap()
                .into_iter()
                .map(|l| l.id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        absent("", 10).await,
        ["pay_1", "pay_3"],
        "not pay_2, not the open one"
    );
    assert_eq!(absent("", 1).await, ["pay_1"]);
    assert_eq!(absent("pay_1", 10).await, ["pay_3"]);
    assert!(
        db.recon_absent(
            run,
            &finality_core::Scope::own("sim"),
            (at(5_000), at(9_000)),
            "",
            10
        )
        .await
        .unwrap()
        .is_empty(),
        "none became final then"
    );
    db.recon_forget_seen(run).await.unwrap();
    assert_eq!(absent("", 10).await, ["pay_1", "pay_2", "pay_3"]);

    // A payment an earlier report made final was listed by that report:
    // not absent from a later one whose period its finalized_at is in.
    let ReconStart::Started(earlier) = db
        .recon_start("sim", "earlier.csv", "sha-4", at(2_500), at(2_500))
        .await
        .unwrap()
    else {
        panic!("a new report starts a run");
    };
    let applied = |id: &str| ReconLine {
        line: Some(2),
        kind: "charge".into(),
        provider_ref: Some(format!("ref_{id}")),
        amount: 1250,
        currency: "USD".into(),
        outcome: "applied".into(),
        reason: "pending here, settled in the report".into(),
        payment_id: Some(id.into()),
    };
    db.recon_add_lines(earlier, &[applied("pay_3")])
        .await
        .unwrap();
    assert_eq!(absent("", 10).await, ["pay_1", "pay_2"]);
}

/// An announced file is kept once (a redelivered webhook changes nothing),
/// due until it is done, retried at the time a failure names, and done
/// for good once imported or refused; other providers' files are theirs.
pub async fn an_announced_file_is_kept_until_done(db: Arc<dyn Store>) {
    use finality_store::reconciliations::FileTry;
    let url = "https://ca-test.adyen.com/reports/download/MerchantAccount/M/b_1.csv";
    assert!(db
        .file_announce(&finality_core::Scope::own("adyen"), "b_1.csv", url, T0)
        .await
        .unwrap());
    assert!(!db
        .file_announce(
            &finality_core::Scope::own("adyen"),
            "b_1.csv",
            "https://elsewhere",
            at(5)
        )
        .await
        .unwrap());
    assert!(db
        .file_announce(&finality_core::Scope::own("adyen"), "b_2.csv", url, at(10))
        .await
        .unwrap());
    assert!(db
        .file_announce(&finality_core::Scope::own("other"), "b_1.csv", url, at(10))
        .await
        .unwrap());
    let due = db.files_due("adyen", at(10), 10).await.unwrap();
    let names: Vec<&str> = due.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["b_1.csv", "b_2.csv"],
        "oldest first, this provider's"
    );
    assert_eq!(due[0].url, url, "the first announcement's URL is kept");
    assert_eq!(db.files_due("adyen", at(9), 10).await.unwrap().len(), 1);

    let retry = FileTry::Retry {
        detail: "connection refused".into(),
        retry_at: at(60_000),
    };
    db.file_tried(
        &finality_core::Scope::own("adyen"),
        "b_1.csv",
        &retry,
        at(20),
    )
    .await
    .unwrap();
    let due = db.files_due("adyen", at(30), 10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].name, "b_2.csv");
    let again = db.files_due("adyen", at(60_000), 10).await.unwrap();
    assert_eq!(again[0].name, "b_1.csv");
    assert_eq!(again[0].attempts, 1);
    assert_eq!(again[0].detail.as_deref(), Some("connection refused"));

    let done = FileTry::Done {
        outcome: "imported".into(),
        detail: "12 lines".into(),
        run_id: Some(7),
    };
    db.file_tried(
        &finality_core::Scope::own("adyen"),
        "b_1.csv",
        &done,
        at(61_000),
    )
    .await
    .unwrap();
    // A late failure report does not reopen it.
    db.file_tried(
        &finality_core::Scope::own("adyen"),
        "b_1.csv",
        &retry,
        at(62_000),
    )
    .await
    .unwrap();
    let due = db.files_due("adyen", at(100_000), 10).await.unwrap();
    assert_eq!(due.len(), 1, "{due:?}");
    let recent = db.files_recent("adyen", 10).await.unwrap();
    assert_eq!(recent.len(), 2);
    assert_eq!(recent[0].name, "b_2.csv", "newest first");
    let b1 = &recent[1];
    assert_eq!(b1.outcome.as_deref(), Some("imported"));
    assert_eq!((b1.run_id, b1.done_at), (Some(7), Some(at(61_000))));
    assert_eq!(b1.attempts, 1);
    assert_eq!(b1.announced_at, T0);
}

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![
    a_report_is_imported_once,
    lookups_and_what_the_report_left_out,
    an_announced_file_is_kept_until_done,
];
