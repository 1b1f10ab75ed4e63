//! The real binary, as a newcomer and an operator would run it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn finality() -> Command {
    Command::new(env!("CARGO_BIN_EXE_finality"))
}

#[test]
fn demo_runs_to_the_end_and_summarizes() {
    let out = finality()
        .args(["demo", "--payments", "80", "--seed", "3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "Ended in:",
        "succeeded",
        "Provider calls per payment: mean",
        "detected here: p50",
        "Sent to review:",
        "Settled by webhook",
        "Webhooks sent",
    ] {
        assert!(stdout.contains(needle), "missing `{needle}` in:\n{stdout}");
    }
    assert!(
        !stdout.contains("still open"),
        "every payment final or in review:\n{stdout}"
    );
}

#[test]
fn malformed_config_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("finality.toml");
    std::fs::write(&path, "[engine]\nconcurrency = \"many\"\n").unwrap();
    let out = finality()
        .args(["--config", path.to_str().unwrap(), "migrate"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2:", path.display())), "{err}");
    assert!(err.contains("engine.concurrency"), "{err}");
}

#[test]
fn migrate_and_inspect_an_sqlite_database() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("f.db").display());
    let out = finality()
        .args(["migrate", "--database-url", &url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = finality()
        .args(["payments", "get", "nope", "--database-url", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no payment with id `nope`"));
}

/// The benchmark command runs in a seconds-long smoke mode (no thresholds),
/// so it never rots.
#[test]
fn bench_smoke_runs() {
    let out = finality().args(["bench", "--smoke"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "pgbench single-row UPDATE",
        "poll executions/s",
        "postgres",
        "sqlite",
        "claim of 100",
    ] {
        assert!(stdout.contains(needle), "missing `{needle}` in:\n{stdout}");
    }
}
