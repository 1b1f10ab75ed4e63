//! Adyen's REPORT_AVAILABLE over real HTTP: the signed announcement is kept
//! before Adyen hears `[accepted]`, the stored webhook wakes the settlement
//! fetcher where the engine runs, and the named report is downloaded as the
//! report user and reconciled: the payment it settles is applied, within
//! seconds of the announcement rather than at the next round.

use super::providers::{adyen_key, money, ADYEN_KEY_HEX};
use super::*;
use finality_core::SystemClock;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announced_report_is_fetched_and_reconciled() {
    std::env::set_var("FINALITY_IT_ANNOUNCED_HMAC", ADYEN_KEY_HEX);
    std::env::set_var("FINALITY_IT_ANNOUNCED_REPORT", "report-user-password");
    let dir = std::env::temp_dir().join(format!("finality-announced-{}", std::process::id()));
    let mut sim = SimConfig::deterministic(Duration::from_millis(200));
    sim.api_key = Some("report-user-password".into());
    let mut sim_url = String::new();
    let app = spawn_app_background(
        testing::sqlite().await,
        sim,
        true,
        |url| {
            sim_url = url.to_string();
            let cfg: ProviderConfig = serde_json::from_value(json!({
                "adapter": "adyen", "base_url": format!("{url}/adyen"),
                "webhook_secret_envs": ["FINALITY_IT_ANNOUNCED_HMAC"],
                "adyen": {"merchant_account": finality_sim::wire::ADYEN_REPORT_MERCHANT},
                "settlement": {"user": "report_000001@Company.Sim",
                               "password_env": "FINALITY_IT_ANNOUNCED_REPORT"}
            }))
            .unwrap();
            cfg.validate().unwrap();
            let adapter = finality_providers::config::build("adyen", &cfg).unwrap();
            let mut providers = Providers::new();
            providers.insert("adyen".into(), ProviderEntry::named("adyen", adapter, &cfg));
            providers
        },
        Tokens::shared(TOKEN),
        |b| b.settlement_dir = Some(dir.clone()),
    )
    .await;
    // A payment Adyen settles; its notification never came here.
    let m = money("adyen");
    app.sim
        .create_priced(Some("8816178952380601".into()), None, m.amount, m.currency);
    let (s, v) = app
        .post(
            "/v1/payments",
            json!({"id": "pay_announced_1", "provider": "adyen",
                   "provider_ref": "8816178952380601", "amount": m.amount, "currency": m.currency}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    tokio::time::sleep(Duration::from_millis(400)).await;

    let today = chrono::DateTime::from_timestamp_millis(SystemClock.now().millis())
        .unwrap()
        .date_naive();
    let body = app
        .sim
        .adyen_report_available(&adyen_key(), 7, today, &sim_url)
        .unwrap()
        .to_string();
    let announce = || {
        app.http
            .post(format!("{}/webhooks/adyen", app.base))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
    };
    let resp = announce().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.text().await.unwrap(), "[accepted]");

    let v = app.wait_for_status("pay_announced_1", "succeeded").await;
    let reason = v["history"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("settlement_detail_report_batch_7.csv"),
        "{v}"
    );
    let runs = app.db.store.recon_runs(10).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].file_name, "settlement_detail_report_batch_7.csv");
    assert!(dir
        .join("adyen/settlement_detail_report_batch_7.csv")
        .exists());
    // The file's outcome is written just after its import commits (the
    // payment above can be seen first), so it is waited for.
    let mut files = Vec::new();
    for _ in 0..100 {
        files = app.db.store.files_recent("adyen", 10).await.unwrap();
        if files[0].outcome.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(files[0].outcome.as_deref(), Some("imported"), "{files:?}");

    // Adyen's redelivery is acknowledged the same and changes nothing.
    let resp = announce().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.db.store.recon_runs(10).await.unwrap().len(), 1);
    std::fs::remove_dir_all(&dir).ok();
}
