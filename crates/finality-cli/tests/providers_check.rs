//! `finality providers check` against the simulator (its own and Stripe's
//! wire format): what works says ok, a wrong key and a missing secret say
//! FAILED with the class, and the exit code tells a script.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use finality_core::{Clock, SystemClock};
use finality_sim::{SimConfig, Simulator};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_check_reports_what_works() {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let cfg = SimConfig {
        api_key: Some("sk_test_good".into()),
        ..SimConfig::default()
    };
    let sim = Simulator::new(cfg, clock, 1);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn(finality_sim::server::serve(sim, listener, stop.clone()));

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("finality.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[providers.sim]
adapter = "sim"
base_url = "{url}"
api_key_env = "CHECK_GOOD_KEY"
webhook_secret_envs = ["CHECK_WHSEC"]

[providers.sim_wrong_key]
adapter = "sim"
base_url = "{url}"
api_key_env = "CHECK_BAD_KEY"

[providers.stripe]
adapter = "stripe"
base_url = "{url}/stripe"
api_key_env = "CHECK_GOOD_KEY"

[providers.stripe_unset]
adapter = "stripe"
base_url = "{url}/stripe"
api_key_env = "CHECK_UNSET_KEY"
"#
        ),
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_finality"))
        .args(["--config", config.to_str().unwrap(), "providers", "check"])
        .env("CHECK_GOOD_KEY", "sk_test_good")
        .env("CHECK_BAD_KEY", "sk_test_revoked")
        .env("CHECK_WHSEC", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .env_remove("CHECK_UNSET_KEY")
        .output()
        .await
        .unwrap();
    stop.cancel();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}:\n{stdout}"))
            .to_string()
    };
    assert!(line("sim").contains(" ok "), "{stdout}");
    assert!(
        line("sim").contains("yes   yes"),
        "poll and webhooks: {stdout}"
    );
    assert!(line("stripe").contains(" ok "), "{stdout}");
    assert!(
        line("stripe").contains("yes   no"),
        "no webhook secret: {stdout}"
    );
    let wrong = line("sim_wrong_key");
    assert!(
        wrong.contains("FAILED") && wrong.contains("permanent") && wrong.contains("401"),
        "{stdout}"
    );
    let unset = line("stripe_unset");
    assert!(
        unset.contains("FAILED") && unset.contains("CHECK_UNSET_KEY"),
        "{stdout}"
    );
    assert!(!stdout.contains("sk_test_"), "a key was printed:\n{stdout}");
    assert!(!out.status.success(), "exit code says something failed");
    assert!(stderr.contains("2 provider(s) failed"), "{stderr}");
    eprintln!("{stdout}");
}
