//! Money as the provider counts it, through the HTTP API on every backend:
//! a generic provider that states its money (`amount_pointer`,
//! `currency_pointer`, `amount_unit`) has every success checked against
//! the registered money, like every adapter's.

use super::providers::{acme_config, ACME_KEY, ACME_SECRET};
use super::*;
use finality_providers::config::Adapter;
use finality_providers::generic::AmountUnit;
use finality_sim::wire::{acme_webhook, Money};

finality_testkit::on_both_backends!(a_generic_providers_success_for_other_money_goes_to_review,);

async fn post_acme(app: &TestApp, event_id: &str, transfer: &str, m: Money<'_>) {
    let (body, sig) = acme_webhook(ACME_SECRET, event_id, transfer, "succeeded", m);
    let resp = app
        .http
        .post(format!("{}/webhooks/acme", app.base))
        .header("x-acme-signature", sig)
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
}

async fn a_generic_providers_success_for_other_money_goes_to_review(b: Backend) {
    std::env::set_var("FINALITY_TEST_ACME_KEY", ACME_KEY);
    std::env::set_var("FINALITY_TEST_ACME_SECRET", ACME_SECRET);
    let mut config = SimConfig::deterministic(Duration::from_millis(1500));
    config.api_key = Some(ACME_KEY.into());
    let app = spawn_app_custom(b, config, false, |sim_url| {
        let mut cfg = acme_config(sim_url);
        let Adapter::Generic { generic } = &mut cfg.adapter else {
            unreachable!("acme is generic")
        };
        // Acme writes `"amount": "19.99", "currency": "USD"`.
        generic.amount_pointer = Some("/data/amount".into());
        generic.currency_pointer = Some("/data/currency".into());
        generic.amount_unit = AmountUnit::Decimal;
        let w = generic.webhook.as_mut().unwrap();
        w.amount_pointer = Some("/data/amount".into());
        w.currency_pointer = Some("/data/currency".into());
        cfg.validate().unwrap();
        let adapter = finality_providers::config::build("acme", &cfg).unwrap();
        let mut providers = Providers::new();
        providers.insert("acme".into(), ProviderEntry::from_config(adapter, &cfg));
        providers
    })
    .await;
    for (id, transfer) in [("payout_m1", "tr_m1"), ("payout_m2", "tr_m2")] {
        let body = json!({"id": id, "provider": "acme", "provider_ref": transfer,
                          "amount": 1999, "currency": "USD"});
        let (s, v) = app.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }
    // "Completed" for one cent less: never succeeded; review with both.
    let short = Money {
        amount: 1998,
        currency: "USD",
    };
    post_acme(&app, "ev_m1", "tr_m1", short).await;
    let v = app.wait_for_status("payout_m1", "needs_review").await;
    let reason = v["history"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with(
            "amount_mismatch: the provider reports succeeded for 1998 USD, registered 1999 USD"
        ),
        "{v}"
    );
    // The registered money settles.
    let full = Money {
        amount: 1999,
        currency: "USD",
    };
    post_acme(&app, "ev_m2", "tr_m2", full).await;
    app.wait_for_status("payout_m2", "succeeded").await;
}
