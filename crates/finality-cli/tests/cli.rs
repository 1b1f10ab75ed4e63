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
    let out = finality()
        .args(["stats", "--window", "1h", "--database-url", &url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("no payments registered in the last 1h"));
    let out = finality()
        .args(["stats", "--window", "soon", "--database-url", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--window"));
}

/// `finality reconcile` as an operator runs it: a report whose line does
/// not read is refused naming file, line and column, with nothing
/// recorded; a good one prints its outcomes (here every line is a payment
/// nobody registered); the same file again changes nothing; a bad
/// `--period` is refused naming the flag.
#[test]
fn reconcile_a_report_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("f.db").display());
    let run = |args: &[&str]| {
        let out = finality()
            .arg("reconcile")
            .args(args)
            .args(["--database-url", &url])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert!(finality()
        .args(["migrate", "--database-url", &url])
        .status()
        .unwrap()
        .success());
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "payment_intent_id,reporting_category,currency,gross\npi_1,charge,usd,1.00\npi_2,charge,usd,one\n",
    )
    .unwrap();
    let (ok, _, err) = run(&["sim", bad.to_str().unwrap(), "--format", "stripe-itemized"]);
    assert!(!ok);
    assert!(err.contains("bad.csv: line 3: gross"), "{err}");
    let good = dir.path().join("good.csv");
    std::fs::write(
        &good,
        "payment_intent_id,reporting_category,currency,gross\npi_1,charge,usd,1.00\npo_1,payout,usd,-1.00\n",
    )
    .unwrap();
    let args = [
        "sim",
        good.to_str().unwrap(),
        "--format",
        "stripe-itemized",
        "--period",
        "2026-11-30..2026-12-01",
    ];
    let (ok, out, err) = run(&args);
    assert!(ok, "{out}{err}");
    assert!(out.contains("run 1, 2 lines"), "{out}");
    assert!(
        out.contains("unknown_here") && out.contains("ignored"),
        "{out}"
    );
    assert!(out.contains("line      2  unknown_here"), "{out}");
    let (ok, out, _) = run(&args);
    assert!(
        ok && out.contains("already imported as run 1; nothing changed"),
        "{out}"
    );
    let (ok, _, err) = run(&["sim", good.to_str().unwrap(), "--period", "yesterday"]);
    assert!(!ok);
    assert!(err.contains("--period"), "{err}");
    let (ok, _, err) = run(&["sim", good.to_str().unwrap(), "--format", "quicken"]);
    assert!(!ok);
    assert!(
        err.contains("--format") && err.contains("paypal-stl"),
        "{err}"
    );
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
        "settlement report on PostgreSQL",
        "webhook CPU",
    ] {
        assert!(stdout.contains(needle), "missing `{needle}` in:\n{stdout}");
    }
}

/// A small `finality simulate` (seconds): every row is there with its keys,
/// the figures hang together, and a schedule that never stops polling
/// within the window leaves nothing undetected. Invariants, not timings.
#[test]
fn simulate_writes_rows_whose_figures_hold_together() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sim.json");
    let svg = dir.path().join("sim.svg");
    let out = finality()
        .args([
            "simulate",
            "--payments",
            "400",
            "--schedules",
            "default,exponential_1m,fixed_list,catch_up",
            "--json",
            json.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["schedule"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["default", "exponential_1m", "fixed_list", "catch_up"]
    );
    for r in rows {
        assert_eq!(r["payments"], 400, "{r}");
        let c = &r["calls_per_payment"];
        let mean = c["mean"].as_f64().unwrap();
        let total = r["calls_total"].as_f64().unwrap();
        assert!((mean - total / 400.0).abs() < 1e-9, "{r}");
        assert!(
            c["p50"].as_f64().unwrap() <= c["p99"].as_f64().unwrap(),
            "{r}"
        );
        let d = &r["lost_webhook_detection_s"];
        let (p50, p95, p99) = (d["p50"].as_f64(), d["p95"].as_f64(), d["p99"].as_f64());
        if let (Some(a), Some(b), Some(c)) = (p50, p95, p99) {
            assert!(a <= b && b <= c, "{r}");
        }
        assert!(
            r["undetected"].as_u64().unwrap() <= r["review"].as_u64().unwrap(),
            "{r}"
        );
    }
    // Polling until the window closes misses nothing that settled in it;
    // and 2 % of payments never settle, so some end in review.
    let exp = &rows[1];
    assert_eq!(exp["undetected"], 0, "{exp}");
    assert!(exp["review"].as_u64().unwrap() > 0, "{exp}");
    // Six polls then stop: the cheapest of the three.
    assert!(
        rows[2]["calls_total"].as_f64().unwrap() < rows[0]["calls_total"].as_f64().unwrap(),
        "{v}"
    );
    // The event list finds every lost webhook's settlement; per payment at
    // most the one backstop poll; the reads cost a fixed rate (at most one
    // per 45 s over the 24 h of registrations and the tail after), however
    // few payments share them (so at 400 a day they cost more per payment
    // than polls: docs/CONVERGENCE.md says where catch-up pays).
    let cu = &rows[3];
    assert_eq!(cu["undetected"], 0, "{cu}");
    let lists = cu["list_calls"].as_u64().unwrap();
    assert!((1..=24 * 80 + 200).contains(&lists), "{cu}");
    let polls = cu["calls_total"].as_u64().unwrap() - lists;
    assert!(polls <= 400, "{cu}");
    assert!(
        cu["lost_webhook_detection_s"]["p99"].as_f64().unwrap()
            <= exp["lost_webhook_detection_s"]["p99"].as_f64().unwrap(),
        "{v}"
    );
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(
        plot.starts_with("<svg") && plot.contains("exponential_1m"),
        "{plot}"
    );
}

/// Waiting for the webhook (`webhook_wait_quantile`, learned during the
/// run) on payments that settle around 15 minutes: far fewer calls than the
/// default's polls every 100 s meanwhile, and still nothing undetected.
#[test]
fn webhook_aware_first_poll_saves_calls_on_slow_settlements() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("slow.json");
    let out = finality()
        .args([
            "simulate",
            "--model",
            "slow_settle",
            "--payments",
            "600",
            "--schedules",
            "default,webhook_aware",
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let calls = |r: &serde_json::Value| r["calls_per_payment"]["mean"].as_f64().unwrap();
    assert_eq!(rows[1]["schedule"], "webhook_aware");
    assert_eq!(rows[1]["undetected"], 0, "{v}");
    assert!(calls(&rows[1]) * 3.0 < calls(&rows[0]), "{v}");
}

/// A model file with a mistake is refused with the file, the line (for a
/// field that does not parse) or the field (for shares that do not add up).
#[test]
fn simulate_model_file_errors_name_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.toml");
    let good = "webhook_loss = 0.05\nwebhook_delay = { median = \"2s\", sigma = 0.8 }\n\
                registration_window = \"1h\"\nhorizon = \"1day\"\n\n\
                [[components]]\nshare = 0.98\nsettles_after = { median = \"30s\", sigma = 1.0 }\n\n\
                [[components]]\nshare = 0.02\n";
    for (text, want) in [
        (
            good.replace("webhook_loss", "webhook_los"),
            ":1: unknown field `webhook_los`",
        ),
        (
            good.replace("share = 0.02", "share = 0.2"),
            "components: the shares must add up to 1",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let out = finality()
            .args([
                "simulate",
                "--payments",
                "10",
                "--model",
                path.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains(path.to_str().unwrap()) && stderr.contains(want),
            "want `{want}` in: {stderr}"
        );
    }
    std::fs::write(&path, good).unwrap();
    let out = finality()
        .args([
            "simulate",
            "--payments",
            "200",
            "--schedules",
            "default",
            "--model",
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `finality tune` on the history a demo leaves: the fit, both schedules on
/// the engine, and a recommended schedule that parses as `finality.toml`'s.
#[test]
fn tune_recommends_a_schedule_from_a_demo_history() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("history.db").display());
    let out = finality()
        .args([
            "demo",
            "--payments",
            "300",
            "--seed",
            "5",
            "--database-url",
            &url,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = finality()
        .args(["tune", "--database-url", &url, "--draws", "2000", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let t = &v[0];
    assert_eq!(t["provider"], "sim", "{t}");
    assert_eq!(t["fit"]["payments"], 300, "{t}");
    let rec = &t["recommended"];
    assert_eq!(rec["engine"]["undetected"], 0, "{t}");
    assert!(
        rec["engine"]["calls_per_payment"]["mean"].as_f64().unwrap()
            <= t["current"]["engine"]["calls_per_payment"]["mean"]
                .as_f64()
                .unwrap(),
        "{t}"
    );
    let toml_line = format!("schedule = {}", rec["schedule"].as_str().unwrap());
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct One {
        schedule: finality_core::Schedule,
    }
    let parsed: One = toml::from_str(&toml_line).unwrap();
    parsed.schedule.validate().unwrap();

    // An empty database says so, naming it.
    let empty = format!("sqlite://{}", dir.path().join("empty.db").display());
    let out = finality()
        .args(["tune", "--database-url", &empty])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("nothing to tune from"),
        "{stderr}"
    );
}

/// A small chaos run (CI's): two `finality serve` processes on a private
/// PostgreSQL, kills, a pause past the lease, PostgreSQL restarted and
/// stopped, then every payment checked; a violation fails the command.
#[test]
fn chaos_small_run_has_no_violations() {
    chaos_small_run("postgres", &[]);
}

/// The same on a private MariaDB, killed (SIGKILL) and stopped.
#[test]
fn chaos_small_run_on_mariadb_has_no_violations() {
    chaos_small_run("mariadb", &[]);
}

/// Colliding tenants (three accounts sharing merchant references, one added
/// mid-run, one disabled for a while, forged cross-account and test-mode
/// webhooks) on PostgreSQL: no fact of one account changed another's
/// payment, none of the other mode was applied, nothing parked was left.
#[test]
fn chaos_small_run_with_tenants_has_no_violations() {
    chaos_small_run("postgres", &["--tenants", "3"]);
}

/// The same on MariaDB.
#[test]
fn chaos_small_run_with_tenants_on_mariadb_has_no_violations() {
    chaos_small_run("mariadb", &["--tenants", "3"]);
}

/// The same on the embedded SQLite default: one node (SQLite lives in its
/// process, one writer), killed, restarted and paused, its kills the
/// database's crashes too.
#[test]
fn chaos_small_run_with_tenants_on_sqlite_has_no_violations() {
    chaos_small_run("sqlite", &["--tenants", "3"]);
}

fn chaos_small_run(database: &str, more: &[&str]) {
    let out = finality()
        .args([
            "chaos",
            "--database",
            database,
            "--nodes",
            if database == "sqlite" { "1" } else { "2" },
            "--payments",
            "150",
            "--duration",
            "25s",
            "--kill-every",
            "4s",
            "--settle-timeout",
            "3m",
        ])
        .args(more)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |label: &str, value: &str| {
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with(label) && l.trim_end().ends_with(value))
    };
    let mut expected = vec![
        ("violations", " 0"),
        (
            "database restarts (killed) / stops",
            if database == "sqlite" {
                " 0 / 0"
            } else {
                " 1 / 1"
            },
        ),
        ("node pauses past the lease (SIGSTOP)", " 1"),
    ];
    if !more.is_empty() {
        expected.extend([
            ("applications across accounts", " 0"),
            ("forged webhooks applied (either kind)", " 0"),
            ("parked webhooks left unapplied", " 0"),
            ("tenant violations", " 0"),
        ]);
    }
    for (label, value) in expected {
        assert!(
            line(label, value),
            "missing `{label} … {value}` in:\n{stdout}"
        );
    }
}

/// Stop a `finality serve` as systemd would (SIGTERM) and collect what it
/// wrote.
async fn terminate(child: std::process::Child) -> std::process::Output {
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap()
}

/// A free port on loopback for a server to listen on.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `finality serve` with JSON logs and every kind of secret configured
/// (named tokens, a provider API key, a webhook secret), used the way
/// callers use them (a registration, a wrong token, a signed webhook and a
/// forged one, polls that fail): every line on standard error is a JSON
/// object, none holds a secret, and the lines about a payment carry its id
/// and provider, the lines about a request its request id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_parse_and_hold_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let secrets = [
        ("T_ALICE", "alice-secret-0123456789abcdef"),
        ("T_SHOP", "shop-secret-0123456789abcdef"),
        ("T_SIM_KEY", "sim-api-key-0123456789abcdef"),
        ("T_SIM_WH", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    ];
    let config = dir.path().join("finality.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n\
             [[server.tokens]]\nname = \"alice\"\nrole = \"admin\"\nsecret_env = \"T_ALICE\"\n\
             [[server.tokens]]\nname = \"shop\"\nrole = \"service\"\nsecret_env = \"T_SHOP\"\n\
             [database]\nurl = \"sqlite://{}/f.db\"\n\
             [log]\nformat = \"json\"\n\
             [providers.sim]\nadapter = \"sim\"\nbase_url = \"http://127.0.0.1:9\"\n\
             api_key_env = \"T_SIM_KEY\"\nwebhook_secret_envs = [\"T_SIM_WH\"]\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_finality"));
    cmd.args(["--config", config.to_str().unwrap(), "serve"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in secrets {
        cmd.env(k, v);
    }
    cmd.env_remove("RUST_LOG");
    let child = cmd.spawn().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let mut up = false;
    for _ in 0..300 {
        if http.get(format!("{base}/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(up, "the server did not start");
    let r = http
        .post(format!("{base}/v1/payments"))
        .bearer_auth(secrets[1].1)
        .json(
            &serde_json::json!({"id": "log_1", "provider": "sim", "provider_ref": "sim_log_1",
            "amount": 1000, "currency": "EUR"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let r = http
        .get(format!("{base}/v1/payments/log_1"))
        .bearer_auth("not-the-token-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let ts = chrono::Utc::now().timestamp();
    let body = serde_json::json!({"type": "payment.updated", "data": {"id": "sim_log_1", "status": "processing"}}).to_string();
    let sig = standardwebhooks::Webhook::new(secrets[3].1)
        .unwrap()
        .sign("msg_log_1", ts, body.as_bytes())
        .unwrap();
    for signature in [sig.as_str(), "v1,Zm9yZ2Vk"] {
        let r = http
            .post(format!("{base}/webhooks/sim"))
            .header("webhook-id", "msg_log_1")
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", signature)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert!(r.status() == 200 || r.status() == 401, "{}", r.status());
    }
    // Polls of a provider that is not there fail and are logged: wait
    // (bounded) until one was made.
    for _ in 0..300 {
        let calls: serde_json::Value = http
            .get(format!("{base}/v1/payments/log_1/attempts"))
            .bearer_auth(secrets[1].1)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or_default();
        if calls["attempts"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let out = terminate(child).await;
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 5, "{stderr}");
    let mut about_payment = false;
    let mut with_request_id = false;
    for line in &lines {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v["level"].is_string() && v["fields"].is_object(), "{line}");
        for (name, secret) in secrets {
            assert!(!line.contains(secret), "{name}'s value in the log: {line}");
        }
        assert!(!line.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "{line}");
        assert!(!line.contains('\u{1b}'), "a colour code in a file: {line}");
        if v["span"]["payment_id"] == "log_1" && v["span"]["provider"] == "sim" {
            about_payment = true;
        }
        let spans = v["spans"].as_array().cloned().unwrap_or_default();
        if spans
            .iter()
            .any(|s| s["request_id"].as_str().is_some_and(|id| id.len() >= 32))
        {
            with_request_id = true;
        }
    }
    assert!(
        about_payment,
        "no line about log_1 carries its id and provider:\n{stderr}"
    );
    assert!(with_request_id, "no line carries a request id:\n{stderr}");
}

/// Traces on (`[tracing] otlp_endpoint`): `finality serve` sends its spans
/// by OTLP/HTTP to a collector (here a stand-in that keeps what it gets),
/// and the W3C `traceparent` of the poll goes with the status query to the
/// provider, and that of the push with the event to its destination.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_go_to_the_collector_and_traceparent_to_the_provider_and_the_receiver() {
    use std::sync::{Arc, Mutex};
    type Seen = Arc<Mutex<Vec<String>>>;
    async fn listen(app: axum::Router) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await });
        base
    }
    fn traceparent(h: &axum::http::HeaderMap) -> String {
        h.get("traceparent")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_string()
    }
    let exports: Arc<Mutex<Vec<axum::body::Bytes>>> = Arc::default();
    let collector = {
        let exports = exports.clone();
        listen(axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let exports = exports.clone();
                async move {
                    exports.lock().unwrap().push(body);
                    ""
                }
            }),
        ))
        .await
    };
    let asked: Seen = Arc::default();
    let provider = {
        let asked = asked.clone();
        listen(axum::Router::new().route(
            "/v1/payments/{id}",
            axum::routing::get(
                move |h: axum::http::HeaderMap,
                      axum::extract::Path(id): axum::extract::Path<String>| {
                    let asked = asked.clone();
                    async move {
                        asked.lock().unwrap().push(traceparent(&h));
                        axum::Json(serde_json::json!({"id": id, "status": "succeeded"}))
                    }
                },
            ),
        ))
        .await
    };
    let pushed: Seen = Arc::default();
    let receiver = {
        let pushed = pushed.clone();
        listen(axum::Router::new().route(
            "/events",
            axum::routing::post(move |h: axum::http::HeaderMap| {
                let pushed = pushed.clone();
                async move {
                    pushed.lock().unwrap().push(traceparent(&h));
                    ""
                }
            }),
        ))
        .await
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = dir.path().join("finality.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n\
             [database]\nurl = \"sqlite://{}/f.db\"\n\
             [tracing]\notlp_endpoint = \"{collector}/v1/traces\"\nservice_name = \"finality-test\"\n\
             [providers.sim]\nadapter = \"sim\"\nbase_url = \"{provider}\"\n\
             [[events.http]]\nname = \"orders\"\nurl = \"{receiver}/events\"\nsecret_env = \"T_PUSH\"\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_finality"))
        .args(["--config", config.to_str().unwrap(), "serve"])
        .env("FINALITY_API_TOKEN", "api-token-0123456789abcdef")
        .env("T_PUSH", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let mut registered = false;
    for _ in 0..300 {
        if let Ok(r) = http
            .post(format!("{base}/v1/payments"))
            .bearer_auth("api-token-0123456789abcdef")
            .json(
                &serde_json::json!({"id": "tr_1", "provider": "sim", "provider_ref": "sim_tr_1",
                "amount": 1000, "currency": "EUR"}),
            )
            .send()
            .await
        {
            assert_eq!(r.status(), 201);
            registered = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(registered, "the server did not start");
    // Bounded wait: polled, settled, pushed.
    for _ in 0..300 {
        if !pushed.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let out = terminate(child).await;
    assert!(out.status.success());

    let w3c = |t: &str| {
        let p: Vec<&str> = t.split('-').collect();
        p.len() == 4 && p[0] == "00" && p[1].len() == 32 && p[2].len() == 16
    };
    let asked = asked.lock().unwrap().clone();
    assert!(
        !asked.is_empty() && asked.iter().all(|t| w3c(t)),
        "{asked:?}"
    );
    let pushed = pushed.lock().unwrap().clone();
    assert!(
        !pushed.is_empty() && pushed.iter().all(|t| w3c(t)),
        "{pushed:?}"
    );
    // What the collector got, decoded with OpenTelemetry's own protobuf
    // messages: the service's name, the poll with its provider call as a
    // child, the push; and the traceparent the provider saw is the poll's.
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;
    let mut spans = Vec::new();
    let mut services = Vec::new();
    for body in exports.lock().unwrap().iter() {
        let req = ExportTraceServiceRequest::decode(body.as_ref()).unwrap();
        for rs in req.resource_spans {
            for a in rs.resource.iter().flat_map(|r| r.attributes.iter()) {
                if a.key == "service.name" {
                    services.push(format!("{:?}", a.value));
                }
            }
            spans.extend(rs.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    assert!(
        services.iter().any(|s| s.contains("finality-test")),
        "{services:?}"
    );
    let named = |n: &str| spans.iter().filter(|s| s.name == n).collect::<Vec<_>>();
    let polls = named("poll");
    let calls = named("provider call");
    assert!(!polls.is_empty() && !calls.is_empty() && !named("event push").is_empty());
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let call = calls[0];
    let parent = polls
        .iter()
        .find(|p| p.span_id == call.parent_span_id)
        .expect("the provider call is a child of a poll");
    assert_eq!(parent.trace_id, call.trace_id);
    let poll_payment = parent.attributes.iter().find(|a| a.key == "payment_id");
    assert!(
        format!("{poll_payment:?}").contains("tr_1"),
        "{poll_payment:?}"
    );
    assert!(
        asked
            .iter()
            .any(|t| t.contains(&hex(&call.trace_id)) && t.contains(&hex(&call.span_id))),
        "the provider saw {asked:?}, the call is trace {} span {}",
        hex(&call.trace_id),
        hex(&call.span_id)
    );
}

/// `finality config check` before a deploy: the effective configuration
/// with secrets masked (a password in the database URL, a token in a push
/// URL's query), each named variable set or not; a missing variable is an
/// error naming it.
#[test]
fn config_check_masks_secrets_and_names_missing_variables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("finality.toml");
    std::fs::write(
        &path,
        "[database]\nurl = \"postgres://app:hunter2hunter2@db:5432/f\"\n\
         [[events.http]]\nname = \"orders\"\nurl = \"https://orders.internal/in?token=tok_live_123\"\nsecret_env = \"T_PUSH_CHECK\"\n",
    )
    .unwrap();
    let run = |with_push: bool| {
        let mut c = finality();
        c.args(["--config", path.to_str().unwrap(), "config", "check"])
            .env("FINALITY_API_TOKEN", "api-token-0123456789abcdef")
            .env_remove("FINALITY_DATABASE_URL");
        if with_push {
            c.env("T_PUSH_CHECK", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        } else {
            c.env_remove("T_PUSH_CHECK");
        }
        c.output().unwrap()
    };
    let out = run(true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for secret in [
        "hunter2hunter2",
        "tok_live_123",
        "api-token-0123456789abcdef",
        "MfKQ9r8G",
    ] {
        assert!(!stdout.contains(secret), "{secret} shown:\n{stdout}");
    }
    assert!(stdout.contains("postgres://app:****@db:5432/f"), "{stdout}");
    assert!(stdout.contains("T_PUSH_CHECK: set"), "{stdout}");
    assert!(
        stdout.contains("FINALITY_API_TOKEN: set (26 characters)"),
        "{stdout}"
    );
    let out = run(false);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("T_PUSH_CHECK") && err.contains("not set"),
        "{err}"
    );
}

/// A generic provider that states no money passes the check with a
/// warning naming it (its successes are not compared with the registered
/// amount); one with `amount_pointer` passes without; a decimal amount
/// without its currency is refused, naming the field.
#[test]
fn config_check_warns_when_a_generic_provider_is_not_money_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("finality.toml");
    let table = |money: &str| {
        format!(
            "[providers.acme]\nadapter = \"generic\"\nbase_url = \"http://127.0.0.1:9\"\n\
             [providers.acme.generic]\nurl = \"{{base_url}}/t/{{provider_ref}}\"\n\
             status_pointer = \"/state\"\n{money}\
             [providers.acme.generic.status_map]\nDONE = \"succeeded\"\n"
        )
    };
    let run = |text: String| {
        std::fs::write(&path, text).unwrap();
        finality()
            .args(["--config", path.to_str().unwrap(), "config", "check"])
            .env("FINALITY_API_TOKEN", "api-token-0123456789abcdef")
            .output()
            .unwrap()
    };
    let out = run(table(""));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains("warning: providers.acme.generic: no amount_pointer in [generic]"),
        "{stderr}"
    );
    let out = run(table(
        "amount_pointer = \"/amount\"\ncurrency_pointer = \"/currency\"\n",
    ));
    assert!(out.status.success());
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("warning"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(table(
        "amount_pointer = \"/amount\"\namount_unit = \"decimal\"\n",
    ));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("currency_pointer"), "{err}");
}

/// `finality archive` as an operator meets it: a run on a database with
/// nothing old prints so; a restore of a file the manifest does not list is
/// refused naming it; a retention shorter than providers redeliver is
/// refused by the configuration check, naming the field and its line.
#[test]
fn archive_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("f.db").display());
    let archive = dir.path().join("archive");
    let out = finality()
        .args(["archive", "--database-url", &url, "--dir"])
        .arg(&archive)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("nothing older than its retention"),
        "{stdout}"
    );
    let out = finality()
        .args([
            "archive",
            "restore",
            "payments/payments/2025-01-01.1-0.jsonl.gz",
        ])
        .args(["--database-url", &url, "--dir"])
        .arg(&archive)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("manifest.jsonl"), "{stderr}");
    let cfg = dir.path().join("finality.toml");
    std::fs::write(&cfg, "[retention]\nwebhooks = \"1d\"\n").unwrap();
    let out = finality()
        .args(["--config", cfg.to_str().unwrap(), "config", "check"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("retention.webhooks"), "{stderr}");
    assert!(stderr.contains(":2"), "names the line: {stderr}");
}

/// `finality archive partitions --convert` on PostgreSQL: a
/// `delivery_attempts` made before partitions (migration 0003's shape,
/// with rows) is converted online and listed by day.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_converted_from_the_command_line() {
    let db = finality_testkit::testing::postgres(2).await;
    let finality_testkit::testing::Backend::Postgres(pg) = &db.backend else {
        unreachable!("a PostgreSQL database");
    };
    for sql in [
        "DROP TABLE delivery_attempts",
        "CREATE TABLE delivery_attempts (id BIGSERIAL PRIMARY KEY, destination TEXT NOT NULL, \
         event_id TEXT NOT NULL, feed_seq BIGINT NOT NULL, at BIGINT NOT NULL, status_code INTEGER, \
         latency_ms BIGINT NOT NULL, error TEXT)",
        "CREATE INDEX delivery_attempts_destination ON delivery_attempts (destination, id)",
        "INSERT INTO delivery_attempts (destination, event_id, feed_seq, at, latency_ms) \
         SELECT 'erp', 'ev' || g, g, 1700000000000 + g, 3 FROM generate_series(1, 500) g",
    ] {
        sqlx::query(sql).execute(pg.pool()).await.unwrap();
    }
    let out = finality()
        .args([
            "archive",
            "partitions",
            "--convert",
            "--database-url",
            &db.url,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains("delivery_attempts: built index"),
        "{stderr}"
    );
    assert!(
        stdout.contains("delivery_attempts: partitioned by day"),
        "{stdout}"
    );
    assert!(stdout.contains("delivery_attempts_legacy"), "{stdout}");
    assert!(stdout.contains("everything before"), "{stdout}");
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM delivery_attempts")
        .fetch_one(pg.pool())
        .await
        .unwrap();
    assert_eq!(n, 500);
}
