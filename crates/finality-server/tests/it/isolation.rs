//! Every fact has an owner, through the HTTP API on every backend: live
//! and test never meet (Stripe `livemode`, Adyen `live`), and an account's
//! own webhook secret verifies its webhooks on every adapter, at the
//! account's own URL (`/webhooks/{provider}/{account}`), while the
//! provider's secret does not.

use super::accounts::{
    adyen_item, connect_event, providers_in, sim_config, ADYEN_SHOP_A, PLATFORM_WHSEC, USD, WHSEC_A,
};
use super::*;
use finality_core::Schedule;
use finality_providers::config::{AccountSpec, Mode};
use finality_store::InboxState;

finality_testkit::on_both_backends!(
    a_test_mode_event_never_settles_a_live_payment,
    a_test_mode_answer_never_settles_a_live_payment,
    another_accounts_report_line_never_changes_a_payment,
    an_accounts_own_secret_verifies_its_webhooks_at_its_url,
);

/// The accounts fixture with Stripe and Adyen set to their live systems
/// (the Stripe key is a test key: `mode` says otherwise, and wins).
fn live_providers(sim_url: &str) -> Providers {
    providers_in(sim_url, Some(Mode::Live))
}

async fn register(app: &TestApp, provider: &str, id: &str, provider_ref: &str, account: &str) {
    let body = json!({"id": id, "provider": provider, "provider_ref": provider_ref,
                      "account": account, "amount": USD.amount, "currency": USD.currency});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}

async fn a_test_mode_event_never_settles_a_live_payment(b: Backend) {
    let app = spawn_app_custom(b, sim_config(), false, live_providers).await;
    register(&app, "stripe", "live_a", "pi_3LiveA", "acct_A").await;
    // The simulator's events say `"livemode": false`: a test event.
    let (h, body) = connect_event("evt_test_mode", "pi_3LiveA", "acct_A", WHSEC_A);
    assert!(body.contains(r#""livemode":false"#), "{body}");
    let (s, text) = app.post_webhook("stripe", &h, body).await;
    assert_eq!(s, StatusCode::OK, "acknowledged: {text}");
    let row = app
        .wait_inbox_state("stripe", "evt_test_mode", "ignored")
        .await;
    assert!(
        row.reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("other_mode"),
        "{row:?}"
    );
    // The same event from the live system is applied.
    let (h, body) = connect_event("evt_live_mode", "pi_3LiveA", "acct_A", WHSEC_A);
    let body = body.replace(r#""livemode":false"#, r#""livemode":true"#);
    let sig = finality_providers::webhook::stripe::sign(
        WHSEC_A,
        super::webhooks::now_s(),
        body.as_bytes(),
    );
    let _ = h;
    let (s, _) = app
        .post_webhook("stripe", &[("stripe-signature", sig)], body)
        .await;
    assert_eq!(s, StatusCode::OK);
    let v = app.wait_for_status("live_a", "succeeded").await;
    assert_eq!(v["history"][0]["event_id"], "evt_live_mode", "{v}");

    // Adyen: `"live": "false"` at a live merchant account.
    register(&app, "adyen", "live_shop_a", "8816178952389901", "ShopA").await;
    let (s, text) = app
        .post_webhook(
            "adyen",
            &[],
            adyen_item(ADYEN_SHOP_A, "ShopA", "8816178952389901"),
        )
        .await;
    assert_eq!((s, text.as_str()), (StatusCode::OK, "[accepted]"));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let row = loop {
        let rows = app
            .db
            .store
            .inbox_in_state(InboxState::Ignored, None, 100)
            .await
            .unwrap();
        if let Some(r) = rows.into_iter().find(|r| r.provider == "adyen") {
            break r;
        }
        assert!(std::time::Instant::now() < deadline, "never ignored");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert!(
        row.reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("other_mode"),
        "{row:?}"
    );
    let (_, v) = app.get("/v1/payments/live_shop_a").await;
    assert_eq!(v["status"], "pending", "{v}");
    let metrics = app.metrics().await;
    assert!(
        metrics.contains(r#"finality_webhooks_other_mode_total{provider="stripe"}"#),
        "{metrics}"
    );
    let _ = PLATFORM_WHSEC;
}

/// A poll's answer is checked as a webhook is (Stripe's `livemode` on
/// every object).
async fn a_test_mode_answer_never_settles_a_live_payment(b: Backend) {
    let app = spawn_app_custom(b, sim_config(), true, live_providers).await;
    // The test-mode simulator's
    // PaymentIntent (`"livemode": false`) never settles a live payment; it
    // goes to review naming both environments.
    app.register_for("stripe", "poll_live", "pi_3PollLive", "acct_A")
        .await;
    tokio::time::sleep(Duration::from_millis(1700)).await;
    let (s, v) = app
        .send(
            axum::http::Method::POST,
            "/v1/payments/poll_live/poll",
            None,
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    let v = app.wait_for_status("poll_live", "needs_review").await;
    let why = v["history"]
        .as_array()
        .and_then(|h| h.last())
        .and_then(|t| t["reason"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        why.contains("livemode `false` (a test object), configured live"),
        "{v}"
    );
}

/// The 30 columns of Adyen's Settlement details report, as Adyen documents
/// them (the reader is `finality-providers` `settlement/adyen.rs`).
const ADYEN_HEADER: &str = "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Modification Merchant Reference,Batch Number,Reserved4,Reserved5,Reserved6,Reserved7,Reserved8,Reserved9,Reserved10";

/// Settlement reports uploaded through the API: a line naming merchant
/// account ShopB (Adyen's `Merchant Account` column) reaches ShopB's
/// payment only, though ShopA's shares its merchant reference; a report
/// uploaded as ShopA's (`account=ShopA`) never reaches ShopB's payment.
async fn another_accounts_report_line_never_changes_a_payment(b: Backend) {
    let app = spawn_app_custom(b, sim_config(), false, live_providers).await;
    for (id, account, order) in [
        ("rep_a", "ShopA", "order-1001"),
        ("rep_b", "ShopB", "order-1001"),
        ("rep_b2", "ShopB", "order-2002"),
    ] {
        let body = json!({"id": id, "provider": "adyen", "merchant_ref": order,
                          "account": account, "amount": USD.amount, "currency": USD.currency});
        let (s, v) = app.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }
    let upload = |query: &str, body: String| {
        let req = app
            .http
            .post(format!("{}/v1/reconciliations?{query}", app.base))
            .bearer_auth(super::TOKEN)
            .header("content-type", "text/csv")
            .body(body);
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status();
            (status, resp.json::<serde_json::Value>().await.unwrap())
        }
    };
    let line = "Company,ShopB,8816000000000002,order-1001,visa,2026-12-01 10:00:00,CET,Settled,\
                8816000000000002,USD,,19.99,,USD,,19.89,0.10,,,,visa,,1,,,,,,,";
    let (s, v) = upload(
        "provider=adyen&format=adyen-settlement-details&file_name=batch_1.csv",
        format!("{ADYEN_HEADER}\n{line}\n"),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["counts"]["applied"], 1, "{v}");
    let (_, a) = app.get("/v1/payments/rep_a").await;
    assert_eq!(a["status"], "pending", "ShopA's is untouched: {a}");
    let (_, bp) = app.get("/v1/payments/rep_b").await;
    assert_eq!(bp["status"], "succeeded", "{bp}");

    // ShopA's report naming ShopB's order-2002: not ShopA's payment, so
    // unknown here; ShopB's payment is untouched.
    let (s, v) = upload(
        "provider=adyen&account=ShopA&format=csv&reference=ref&amount=gross&currency=ccy\
         &merchant_ref=order&decimal=true&file_name=shop_a_day.csv",
        "ref,order,gross,ccy\n8816000000000003,order-2002,19.99,USD\n".to_string(),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["counts"]["unknown_here"], 1, "{v}");
    assert!(v["counts"]["applied"].is_null(), "{v}");
    let (_, b2) = app.get("/v1/payments/rep_b2").await;
    assert_eq!(b2["status"], "pending", "{b2}");
}

const SIM_SECRET_A: &str = "whsec_aW5zdGl0dXRpb24tQS1vd24tc2VjcmV0LTAx";

/// The sim provider (Standard Webhooks) with two accounts: inst_A with a
/// webhook secret of its own, inst_B with none (the provider's).
fn sim_with_accounts(sim_url: &str) -> Providers {
    std::env::set_var("FINALITY_IT_SIM_PROVIDER_WHSEC", WEBHOOK_SECRET);
    std::env::set_var("FINALITY_IT_SIM_INST_A_WHSEC", SIM_SECRET_A);
    let mut cfg = ProviderConfig::sim(sim_url);
    cfg.webhook_secret_envs = vec!["FINALITY_IT_SIM_PROVIDER_WHSEC".into()];
    cfg.schedule_override = Some(Schedule::Fixed {
        delays: vec![Duration::from_secs(3600)],
    });
    cfg.accounts = vec![
        AccountSpec {
            webhook_secret_envs: vec!["FINALITY_IT_SIM_INST_A_WHSEC".into()],
            ..AccountSpec::named("inst_A")
        },
        AccountSpec::named("inst_B"),
    ];
    cfg.validate().unwrap();
    let adapter = finality_providers::config::build("sim", &cfg).unwrap();
    let entry = ProviderEntry::named("sim", adapter, &cfg);
    assert!(entry.accounts.file_errors().is_empty());
    let mut map = Providers::new();
    map.insert("sim".into(), entry);
    map
}

async fn an_accounts_own_secret_verifies_its_webhooks_at_its_url(b: Backend) {
    let app = spawn_app_custom(b, sim_config(), false, sim_with_accounts).await;
    for (id, r, account) in [
        ("sa", "ref_shared", "inst_A"),
        ("sb", "ref_shared", "inst_B"),
    ] {
        let body = json!({"id": id, "provider": "sim", "provider_ref": r, "account": account,
                          "amount": 4200, "currency": "EUR"});
        let (s, v) = app.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "both accounts hold ref_shared: {v}");
    }
    let send = |path: &'static str, secret: &'static str, id: &'static str| {
        let (h, body) = super::webhooks::signed(
            secret,
            id,
            super::webhooks::now_s(),
            "ref_shared",
            "succeeded",
        );
        let mut req = app.http.post(format!("{}{path}", app.base)).body(body);
        for (k, v) in h {
            req = req.header(k, v);
        }
        async move { req.send().await.unwrap().status() }
    };
    // The provider's secret at inst_A's URL: refused.
    assert_eq!(
        send("/webhooks/sim/inst_A", WEBHOOK_SECRET, "msg_provider_at_a").await,
        StatusCode::UNAUTHORIZED
    );
    // inst_A's secret at the provider's URL: refused (verified as the
    // provider's, whose secret it is not).
    assert_eq!(
        send("/webhooks/sim", SIM_SECRET_A, "msg_a_at_provider").await,
        StatusCode::UNAUTHORIZED
    );
    // inst_A's secret at its URL: applied to inst_A's payment alone.
    assert_eq!(
        send("/webhooks/sim/inst_A", SIM_SECRET_A, "msg_a").await,
        StatusCode::OK
    );
    let a = app.wait_for_status("sa", "succeeded").await;
    assert_eq!(a["history"][0]["event_id"], "msg_a", "{a}");
    let (_, sb) = app.get("/v1/payments/sb").await;
    assert_eq!(
        sb["status"], "pending",
        "inst_B's payment of the same reference: {sb}"
    );
    // inst_B has no secret of its own: the provider's verifies at its URL.
    assert_eq!(
        send("/webhooks/sim/inst_B", WEBHOOK_SECRET, "msg_b").await,
        StatusCode::OK
    );
    let v = app.wait_for_status("sb", "succeeded").await;
    assert_eq!(v["history"][0]["event_id"], "msg_b", "{v}");
}
