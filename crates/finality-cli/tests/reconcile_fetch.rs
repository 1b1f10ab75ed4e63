//! `finality reconcile fetch` as an operator runs it, on an SQLite file,
//! against the simulator's Stripe report runs on loopback: each day of the
//! range fetched and imported once, a second run fetching nothing, a
//! provider without a settlement table refused with what to add.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use finality_core::{Clock, SystemClock};
use std::process::{Command, Output};
use std::sync::Arc;

fn finality(config: &std::path::Path, url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_finality"))
        .arg("--config")
        .arg(config)
        .args(args)
        .args(["--database-url", url])
        .env("FINALITY_FETCH_TEST_STRIPE_KEY", "sk_test_fetch_cli")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_day_is_fetched_and_imported_once() {
    let mut sim_config = finality_sim::SimConfig::deterministic(std::time::Duration::ZERO);
    sim_config.api_key = Some("sk_test_fetch_cli".into());
    let sim = finality_sim::Simulator::new(sim_config, Arc::new(SystemClock), 3);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(finality_sim::server::serve(sim, listener, stop.clone()));

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("f.db").display());
    let config = dir.path().join("finality.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[providers.stripe]
adapter = "stripe"
base_url = "{base}/stripe"
api_key_env = "FINALITY_FETCH_TEST_STRIPE_KEY"

[providers.stripe.settlement]
ready_at = "00:00"

[providers.sim]
adapter = "sim"
base_url = "{base}"
"#
        ),
    )
    .unwrap();
    assert!(finality(&config, &url, &["migrate"]).status.success());
    // The two UTC days before today: both ready (Stripe's data for a day
    // is available once it ended, as the simulator says).
    let today = chrono::DateTime::from_timestamp_millis(SystemClock.now().millis())
        .unwrap()
        .date_naive();
    let (from, until) = (
        (today - chrono::Duration::days(2)).to_string(),
        (today - chrono::Duration::days(1)).to_string(),
    );
    let files = dir.path().join("reports");
    let args = [
        "reconcile",
        "fetch",
        "stripe",
        "--from",
        &from,
        "--until",
        &until,
        "--dir",
        files.to_str().unwrap(),
    ];
    let out = finality(&config, &url, &args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches(": imported as run").count(), 2, "{text}");
    assert!(text.contains("size"), "what it was checked by: {text}");
    assert!(files
        .join("stripe")
        .join(format!(
            "stripe-balance_change_from_activity.itemized.3-{from}.csv"
        ))
        .exists());

    let again = finality(&config, &url, &args);
    let text = String::from_utf8_lossy(&again.stdout).into_owned();
    assert!(again.status.success(), "{text}");
    assert_eq!(
        text.matches("imported before; not fetched again").count(),
        2,
        "{text}"
    );

    let out = finality(
        &config,
        &url,
        &["reconcile", "fetch", "sim", "--from", &from],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[providers.sim.settlement]"), "{err}");
    stop.cancel();
}
