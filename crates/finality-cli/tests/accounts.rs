//! `finality accounts …` as an operator runs it, on an SQLite file: an
//! account added and listed beside the file's, a secret given as a value
//! refused without being echoed, an account disabled (a file's one too),
//! each in the audit trail as a CLI action.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

fn finality(config: &std::path::Path, url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_finality"))
        .arg("--config")
        .arg(config)
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
async fn accounts_are_added_listed_and_disabled_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("f.db").display());
    let config = dir.path().join("finality.toml");
    std::fs::write(
        &config,
        r#"
[providers.stripe]
adapter = "stripe"
base_url = "http://127.0.0.1:9"
api_key_env = "STRIPE_SECRET_KEY"

[[providers.stripe.accounts]]
id = "acct_file"
"#,
    )
    .unwrap();
    ok(&finality(&config, &url, &["migrate"]));

    let secret = "whsec_thisIsASecretNotAName";
    let out = finality(
        &config,
        &url,
        &[
            "accounts",
            "add",
            "stripe",
            "acct_new",
            "--webhook-secret-env",
            secret,
            "--actor",
            "dana",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--webhook-secret-envs"), "{err}");
    assert!(!err.contains(secret), "the secret is echoed: {err}");

    let out = ok(&finality(
        &config,
        &url,
        &[
            "accounts",
            "add",
            "stripe",
            "acct_new",
            "--webhook-secret-env",
            "ACCT_NEW_WHSEC",
            "--rate-limit",
            "20",
            "--burst",
            "5",
            "--weight",
            "3",
            "--actor",
            "dana",
        ],
    ));
    assert!(out.contains("acct_new: added"), "{out}");
    let out = finality(
        &config,
        &url,
        &["accounts", "add", "nope", "x", "--actor", "dana"],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown provider `nope`"));

    let out = ok(&finality(&config, &url, &["accounts", "list"]));
    let line = |id: &str| {
        out.lines()
            .find(|l| l.contains(id))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("acct_file").contains("file"), "{out}");
    assert!(
        line("acct_new").contains("stored") && line("acct_new").contains("ACCT_NEW_WHSEC"),
        "{out}"
    );
    assert!(line("acct_new").contains(" 3 "), "{out}");

    ok(&finality(
        &config,
        &url,
        &[
            "accounts",
            "disable",
            "stripe",
            "acct_file",
            "--actor",
            "eve",
        ],
    ));
    let out = ok(&finality(&config, &url, &["accounts", "list"]));
    let file_line = out.lines().find(|l| l.contains("acct_file")).unwrap();
    assert!(file_line.contains("disabled by eve"), "{out}");
    let out = finality(
        &config,
        &url,
        &[
            "accounts",
            "disable",
            "stripe",
            "acct_none",
            "--actor",
            "eve",
        ],
    );
    assert!(!out.status.success());

    let store = finality_store::open(&url, 1).await.unwrap();
    // Queries until final per institution: `stats --by account`.
    let now = finality_core::Clock::now(&finality_core::SystemClock);
    for (i, account) in [Some("aba"), Some("aba"), None].into_iter().enumerate() {
        let mut p = finality_testkit::conformance::new_payment(&format!("pay_st{i}"));
        p.account = account.map(str::to_string);
        store.register(&p, now, now).await.unwrap();
    }
    let out = ok(&finality(&config, &url, &["stats", "--by", "account"]));
    assert!(out.contains("per account"), "{out}");
    assert!(out.contains("sim account aba: 2 payments"), "{out}");
    assert!(out.contains("sim (its own account): 1 payments"), "{out}");
    let out = ok(&finality(&config, &url, &["stats"]));
    assert!(out.contains("sim: 3 payments"), "{out}");

    let audit = store
        .audit_list(&finality_store::review::AuditFilter {
            actor: None,
            payment_id: None,
            before_id: None,
            limit: 10,
        })
        .await
        .unwrap();
    let actions: Vec<(&str, &str, &str)> = audit
        .iter()
        .map(|a| {
            (
                a.entry.action.as_str(),
                a.entry.actor.as_str(),
                a.entry.role.as_str(),
            )
        })
        .collect();
    assert_eq!(
        actions[..3],
        [
            ("account_disable", "eve", "cli"),
            ("account_disable", "eve", "cli"),
            ("account_add", "dana", "cli"),
        ]
    );
}
