//! Money as the provider counts it, through the HTTP API on every backend:
//! a generic provider that states its money (`amount_pointer`,
//! `currency_pointer`, `amount_unit`) has every success checked against
//! the registered money, like every adapter's; a Stripe report whose
//! `gross` is in the account's settlement currency reconciles a payment
//! presented in another by `customer_facing_amount`.

use super::providers::{acme_config, ACME_KEY, ACME_SECRET};
use super::*;
use finality_providers::config::Adapter;
use finality_providers::generic::AmountUnit;
use finality_sim::wire::{acme_webhook, Money};

finality_testkit::on_both_backends!(
    a_generic_providers_success_for_other_money_goes_to_review,
    a_stripe_payment_in_another_currency_reconciles_by_its_customer_facing_amount,
);

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

/// A Stripe account that settles in USD, payments presented in EUR: the
/// itemized report's `gross` is USD, `customer_facing_amount` the EUR the
/// customer paid ("the amount of the original charge, refund or dispute as
/// seen by the customer", Stripe's report-type docs). Lines with it are
/// applied; a line without it is compared in USD and is a mismatch.
async fn a_stripe_payment_in_another_currency_reconciles_by_its_customer_facing_amount(b: Backend) {
    let app = spawn_app_custom(
        b,
        super::accounts::sim_config(),
        false,
        super::accounts::providers,
    )
    .await;
    for (id, pi) in [
        ("fx_1", "pi_3Fx1"),
        ("fx_2", "pi_3Fx2"),
        ("fx_3", "pi_3Fx3"),
    ] {
        let body = json!({"id": id, "provider": "stripe", "provider_ref": pi,
                          "amount": 1999, "currency": "EUR"});
        let (s, v) = app.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }
    let csv = "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,\
               source_id,charge_id,payment_intent_id,customer_facing_amount,customer_facing_currency\n\
               txn_1,2026-12-03 10:00:00,usd,21.69,-0.61,21.08,charge,ch_1,ch_1,pi_3Fx1,19.99,eur\n\
               txn_2,2026-12-03 10:05:00,usd,21.69,-0.61,21.08,charge,ch_2,ch_2,pi_3Fx2,19.99,eur\n\
               txn_3,2026-12-03 10:10:00,usd,21.69,-0.61,21.08,charge,ch_3,ch_3,pi_3Fx3,,\n";
    let resp = app
        .http
        .post(format!(
            "{}/v1/reconciliations?provider=stripe&format=stripe-itemized&file_name=fx.csv",
            app.base
        ))
        .bearer_auth(super::TOKEN)
        .header("content-type", "text/csv")
        .body(csv)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let v: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(v["counts"]["applied"], 2, "{v}");
    assert_eq!(v["counts"]["amount_mismatch"], 1, "{v}");
    for id in ["fx_1", "fx_2"] {
        let (_, p) = app.get(&format!("/v1/payments/{id}")).await;
        assert_eq!(p["status"], "succeeded", "{p}");
    }
    let (_, p) = app.get("/v1/payments/fx_3").await;
    assert_eq!(p["status"], "needs_review", "{p}");
}
