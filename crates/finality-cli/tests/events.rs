//! `finality events …` as an operator runs it, on an SQLite file: the
//! destinations listed, a rewind to a position and one refused, a pause
//! and a resume, a redelivery of a known and an unknown event, each in the
//! audit trail as a CLI action; `tail` prints complete events, or the thin
//! shape with `--schema 1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use finality_core::{Source, Status, Timestamp};
use finality_store::Report;
use std::process::{Command, Output};

fn finality(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_finality"))
        .args(args)
        .args(["--database-url", url])
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn rewind_pause_and_redeliver_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("f.db").display());
    ok(&finality(&url, &["migrate"]));
    let store = finality_store::open_with(&url, 2, std::time::Duration::from_secs(5))
        .await
        .unwrap();
    let t0 = Timestamp(1_700_000_000_000);
    for i in 0..3 {
        let id = format!("pay_cli{i}");
        finality_testkit::conformance::register(&*store, &id, Timestamp(t0.0 + 3_600_000)).await;
        let r = Report {
            payment_id: id.clone(),
            status: Status::Succeeded,
            source: Source::Manual,
            event_id: None,
            observed_at: t0,
            reason: Some("bank statement".into()),
            actor: Some("alice".into()),
        };
        store.apply(&r, Timestamp(t0.0 + 1000 * i)).await.unwrap();
    }
    finality_relay::sequencer::sequence_all(&*store)
        .await
        .unwrap();
    store.destination("http:ledger").await.unwrap();
    assert!(store
        .destination_advance("http:ledger", 0, 3)
        .await
        .unwrap());

    let out = ok(&finality(&url, &["events", "destinations"]));
    assert!(out.contains("feed head 3"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("http:ledger") && l.contains(" 3 ")),
        "{out}"
    );

    let out = ok(&finality(
        &url,
        &[
            "events",
            "rewind",
            "http:ledger",
            "--to-seq",
            "1",
            "--actor",
            "bob",
        ],
    ));
    assert!(
        out.contains("rewound from 3 to 1: 2 events to send again"),
        "{out}"
    );
    assert_eq!(
        store
            .destination("http:ledger")
            .await
            .unwrap()
            .delivered_seq,
        1
    );
    let out = finality(
        &url,
        &[
            "events",
            "rewind",
            "http:ledger",
            "--to-seq",
            "9",
            "--actor",
            "bob",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("position 9 is not in the feed"));
    let out = finality(
        &url,
        &[
            "events",
            "rewind",
            "http:ledger",
            "--to-time",
            "yesterday",
            "--actor",
            "bob",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--to-time: `yesterday`"));

    ok(&finality(
        &url,
        &["events", "pause", "http:ledger", "--actor", "bob"],
    ));
    let out = ok(&finality(&url, &["events", "destinations"]));
    assert!(out.contains("paused by bob"), "{out}");
    ok(&finality(
        &url,
        &["events", "resume", "http:ledger", "--actor", "bob"],
    ));
    assert!(store
        .destination("http:ledger")
        .await
        .unwrap()
        .paused_at
        .is_none());

    let e = store.feed_after(0, 1).await.unwrap().remove(0);
    let out = ok(&finality(
        &url,
        &[
            "events",
            "redeliver",
            "http:ledger",
            "--event-id",
            &e.event_id,
            "--actor",
            "bob",
        ],
    ));
    assert!(out.contains("redelivery 1 queued"), "{out}");
    assert_eq!(
        store
            .pending_redeliveries("http:ledger", 10)
            .await
            .unwrap()
            .len(),
        1
    );
    let out = finality(
        &url,
        &[
            "events",
            "redeliver",
            "http:ledger",
            "--event-id",
            "evt_nope",
            "--actor",
            "bob",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no event `evt_nope`"));

    let audit = store
        .audit_list(&finality_store::review::AuditFilter {
            actor: Some("bob".into()),
            payment_id: None,
            before_id: None,
            limit: 50,
        })
        .await
        .unwrap();
    let actions: Vec<&str> = audit.iter().map(|a| a.entry.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "events_redeliver",
            "events_redeliver",
            "events_resume",
            "events_pause",
            "events_rewind",
            "events_rewind"
        ],
        "newest first; refusals recorded too"
    );
    assert!(audit.iter().all(|a| a.entry.role == "cli"));

    let out = ok(&finality(&url, &["events", "tail"]));
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["schema"], 3);
    assert_eq!(
        first["amounts"],
        serde_json::Value::Null,
        "no pieces counted"
    );
    assert_eq!(first["amount"], 1250);
    assert_eq!(first["reason"], "bank statement");
    assert_eq!(first["actor"], "alice");
    let out = ok(&finality(&url, &["events", "tail", "--schema", "1"]));
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert!(first.get("amount").is_none() && first.get("schema").is_none());
    let out = ok(&finality(&url, &["events", "tail", "--schema", "2"]));
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["schema"], 2);
    assert!(first.get("amounts").is_none());
}
