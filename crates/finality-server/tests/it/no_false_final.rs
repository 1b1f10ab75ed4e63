//! No false final, through the HTTP API on both backends: a status the
//! provider documents as possibly followed by another never ends a payment
//! on its own, and a "paid" for other money (amount, currency) or for
//! another merchant (account, app id) goes to review with both values,
//! never to `succeeded`. The simulator sends and answers in each
//! provider's own wire format, with the money of the payment it holds.

use super::providers::{adyen_key, money, STRIPE_WHSEC};
use super::*;
use finality_sim::webhooks::WebhookTarget;
use finality_sim::wire::Money;
use finality_store::InboxState;
use finality_testkit::Backend;

/// An app whose one provider is built from its `[providers.NAME]` table
/// (`base_url` is set to the simulator's `path`), with the engine polling
/// when `poll` and the simulator sending its webhooks to `webhooks`.
async fn spawn(b: Backend, name: &str, path: &str, table: Value, poll: bool) -> TestApp {
    spawn_with(b, name, path, table, poll, Duration::from_millis(300)).await
}

/// [`spawn`] with the simulator's payments settling after `settle`.
pub(crate) async fn spawn_with(
    b: Backend,
    name: &str,
    path: &str,
    table: Value,
    poll: bool,
    settle: Duration,
) -> TestApp {
    let (name, path) = (name.to_string(), path.to_string());
    let mut config = SimConfig::deterministic(settle);
    config.webhooks.lost = 0.0;
    config.webhooks.delayed = 0.0;
    config.webhooks.duplicated = 0.0;
    config.webhooks.reordered = 0.0;
    config.api_key = Some(if name == "paypal" {
        super::providers::PAYPAL_CREDENTIALS.to_string()
    } else {
        "sk_test_finality_simulator".to_string()
    });
    spawn_app_custom(b, config, poll, move |sim_url| {
        let mut table = table;
        table["base_url"] = json!(format!("{sim_url}{path}"));
        table["schedule"] = json!({"kind": "fixed", "delays": ["200ms"]});
        table["max_attempts"] = json!(40);
        let cfg: ProviderConfig = serde_json::from_value(table).unwrap();
        cfg.validate().unwrap();
        let adapter = finality_providers::config::build(&name, &cfg).unwrap();
        let mut providers = Providers::new();
        providers.insert(name.clone(), ProviderEntry::from_config(adapter, &cfg));
        providers
    })
    .await
}

pub(crate) fn stripe_table() -> Value {
    std::env::set_var("FINALITY_TEST_NFF_STRIPE_KEY", "sk_test_finality_simulator");
    std::env::set_var("FINALITY_TEST_NFF_STRIPE_WHSEC", STRIPE_WHSEC);
    json!({"adapter": "stripe", "api_key_env": "FINALITY_TEST_NFF_STRIPE_KEY",
           "webhook_secret_envs": ["FINALITY_TEST_NFF_STRIPE_WHSEC"]})
}

pub(crate) fn adyen_table(capture: &str, merchant_account: Option<&str>) -> Value {
    std::env::set_var(
        "FINALITY_TEST_NFF_ADYEN_HMAC",
        super::providers::ADYEN_KEY_HEX,
    );
    let mut adyen = json!({"capture": capture});
    if let Some(m) = merchant_account {
        adyen["merchant_account"] = json!(m);
    }
    json!({"adapter": "adyen", "webhook_secret_envs": ["FINALITY_TEST_NFF_ADYEN_HMAC"],
           "adyen": adyen})
}

pub(crate) fn wechat_table(appid: &str) -> Value {
    use finality_sim::wire::wechat_keys as k;
    std::env::set_var("FINALITY_TEST_NFF_WECHAT_KEY", k::MERCHANT_PRIVATE_PEM);
    std::env::set_var("FINALITY_TEST_NFF_WECHAT_PLATFORM", k::PLATFORM_PUBLIC_PEM);
    std::env::set_var("FINALITY_TEST_NFF_WECHAT_APIV3", k::API_V3_KEY);
    json!({"adapter": "wechat",
           "wechat": {"mchid": k::MCHID, "serial_no": k::SERIAL_NO, "appid": appid,
                      "private_key_env": "FINALITY_TEST_NFF_WECHAT_KEY",
                      "platform_public_key_env": "FINALITY_TEST_NFF_WECHAT_PLATFORM",
                      "api_v3_key_env": "FINALITY_TEST_NFF_WECHAT_APIV3"}})
}

pub(crate) fn alipay_table(app_id: &str) -> Value {
    use finality_sim::wire::wechat_keys as k;
    std::env::set_var("FINALITY_TEST_NFF_ALIPAY_KEY", k::MERCHANT_PRIVATE_PEM);
    std::env::set_var("FINALITY_TEST_NFF_ALIPAY_PUBLIC", k::PLATFORM_PUBLIC_PEM);
    json!({"adapter": "alipay",
           "alipay": {"app_id": app_id, "private_key_env": "FINALITY_TEST_NFF_ALIPAY_KEY",
                      "alipay_public_key_env": "FINALITY_TEST_NFF_ALIPAY_PUBLIC"}})
}

pub(crate) fn webhooks_to(app: &TestApp, provider: &str) {
    let url = format!("{}/webhooks/{provider}", app.base);
    let target = match provider {
        "stripe" => WebhookTarget::stripe(url, STRIPE_WHSEC),
        "adyen" => WebhookTarget::adyen(url, adyen_key()),
        "wechat" => WebhookTarget::wechat(
            url,
            finality_sim::wire::wechat_keys::API_V3_KEY
                .as_bytes()
                .try_into()
                .unwrap(),
        ),
        "alipay" => WebhookTarget::alipay(url),
        "paypal" => WebhookTarget::paypal(url, super::providers::PAYPAL_WEBHOOK_ID),
        other => panic!("no webhook target for {other}"),
    };
    app.sim.set_webhook_target(target);
    app.sim.spawn_webhook_sender(app.stop.clone());
}

/// A payment the simulator holds for `at_provider`, registered here for
/// `registered` (by merchant reference for WeChat Pay and Alipay, which
/// are asked by the merchant's order number).
async fn register(
    app: &TestApp,
    provider: &str,
    id: &str,
    at_provider: Money<'_>,
    registered: Money<'_>,
) {
    let by_order_no = matches!(provider, "wechat" | "alipay");
    let order_no = format!("order-{id}");
    // Stripe ids say what they are (`pi_…` is a PaymentIntent).
    let provider_ref = format!("pi_nff_{id}");
    app.sim.create_priced(
        Some(provider_ref.clone()),
        by_order_no.then(|| order_no.clone()),
        at_provider.amount,
        at_provider.currency,
    );
    let mut body = json!({"id": id, "provider": provider,
                          "amount": registered.amount, "currency": registered.currency});
    if by_order_no {
        body["merchant_ref"] = json!(order_no);
    } else {
        body["provider_ref"] = json!(provider_ref);
    }
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}

pub(crate) fn last_reason(v: &Value) -> String {
    v["history"]
        .as_array()
        .and_then(|h| h.last())
        .and_then(|s| s["reason"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn never_reversed(v: &Value) {
    let reversed = v["history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["to"] == "reversed");
    assert!(!reversed, "{v}");
}

/// The mismatch the provider's answer (poll) or notification (webhook)
/// makes: the payment goes to review, its reason naming both values.
async fn mismatch_goes_to_review(b: Backend, provider: &str, path: &str, table: Value) {
    let m = money(provider);
    for via_poll in [true, false] {
        let app = spawn(b, provider, path, table.clone(), via_poll).await;
        if !via_poll {
            webhooks_to(&app, provider);
        }
        let fewer = Money {
            amount: m.amount - 1,
            currency: m.currency,
        };
        let other = if m.currency == "CNY" { "USD" } else { "EUR" };
        let elsewhere = Money {
            amount: m.amount,
            currency: other,
        };
        register(&app, provider, "amt", m, fewer).await;
        register(&app, provider, "ccy", m, elsewhere).await;
        register(&app, provider, "ok", m, m).await;
        let v = app.wait_for_status("amt", "needs_review").await;
        let why = last_reason(&v);
        assert!(
            why.starts_with("amount_mismatch"),
            "{provider} {via_poll}: {v}"
        );
        assert!(
            why.contains(&format!("{} {}", m.amount, m.currency))
                && why.contains(&format!("registered {} {}", fewer.amount, m.currency)),
            "{provider} {via_poll}: {why}"
        );
        let v = app.wait_for_status("ccy", "needs_review").await;
        let why = last_reason(&v);
        assert!(
            why.contains(&format!("{} {}", m.amount, m.currency))
                && why.contains(&format!("registered {} {other}", m.amount)),
            "{provider} {via_poll}: {why}"
        );
        // The same money settles as ever.
        app.wait_for_status("ok", "succeeded").await;
        app.stop.cancel();
    }
}

async fn stripe_amount_or_currency_mismatch(b: Backend) {
    mismatch_goes_to_review(b, "stripe", "/stripe", stripe_table()).await;
}

async fn wechat_amount_or_currency_mismatch(b: Backend) {
    let appid = finality_sim::wire::wechat_keys::APPID;
    mismatch_goes_to_review(b, "wechat", "/wechat", wechat_table(appid)).await;
}

async fn alipay_amount_or_currency_mismatch(b: Backend) {
    let app_id = finality_sim::wire::ALIPAY_APP_ID;
    mismatch_goes_to_review(b, "alipay", "/alipay/gateway.do", alipay_table(app_id)).await;
}

/// Adyen has no status read to poll: notifications only.
async fn adyen_amount_or_currency_mismatch(b: Backend) {
    let app = spawn(b, "adyen", "", adyen_table("automatic", None), false).await;
    webhooks_to(&app, "adyen");
    let m = money("adyen");
    register(&app, "adyen", "amt", m, Money { amount: 1, ..m }).await;
    register(
        &app,
        "adyen",
        "ccy",
        m,
        Money {
            currency: "EUR",
            ..m
        },
    )
    .await;
    let v = app.wait_for_status("amt", "needs_review").await;
    assert!(
        last_reason(&v).starts_with(
            "amount_mismatch: the provider reports succeeded for 1999 USD, registered 1 USD"
        ),
        "{v}"
    );
    let v = app.wait_for_status("ccy", "needs_review").await;
    assert!(
        last_reason(&v).contains("1999 USD, registered 1999 EUR"),
        "{v}"
    );
}

/// A notification for another merchant is kept for review with both
/// values and never applied.
pub(crate) async fn wait_for_inbox(
    app: &TestApp,
    provider: &str,
    pred: impl Fn(&InboxState) -> bool,
) -> (InboxState, String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let rows = app
            .db
            .store
            .inbox_in_state(InboxState::Review, None, 10)
            .await
            .unwrap();
        if let Some(r) = rows.iter().find(|r| r.provider == provider) {
            if pred(&r.state) {
                return (r.state, r.reason.clone().unwrap_or_default());
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no review row for {provider}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn another_account_is_not_applied(b: Backend) {
    let cases = [
        (
            "alipay",
            "/alipay/gateway.do",
            alipay_table("2021000000000999"),
            "app_id `2021000000000001`, configured `2021000000000999`",
        ),
        (
            "wechat",
            "/wechat",
            wechat_table("wx_another_app"),
            "appid `wxd678efh567hg6787`, configured `wx_another_app`",
        ),
        (
            "adyen",
            "",
            adyen_table("automatic", Some("AnotherMerchant")),
            "merchantAccountCode `FinalitySimulator`, configured `AnotherMerchant`",
        ),
    ];
    for (provider, path, table, both) in cases {
        let app = spawn(b, provider, path, table, false).await;
        webhooks_to(&app, provider);
        let m = money(provider);
        register(&app, provider, "acct", m, m).await;
        let (_, reason) = wait_for_inbox(&app, provider, |s| *s == InboxState::Review).await;
        assert!(
            reason.starts_with("account_mismatch"),
            "{provider}: {reason}"
        );
        assert!(reason.contains(both), "{provider}: {reason}");
        let (_, v) = app.get("/v1/payments/acct").await;
        assert_eq!(v["status"], "pending", "{provider}: {v}");
        app.stop.cancel();
    }
}

/// Adyen items posted as Adyen sends them, with fields outside the signed
/// string (`reason`, `additionalData`) set by `edit`.
async fn adyen_post(
    app: &TestApp,
    psp: &str,
    original: &str,
    code: &str,
    edit: impl FnOnce(&mut Value),
) {
    let mut item = finality_sim::wire::adyen_item(
        &adyen_key(),
        "FinalitySimulator",
        finality_sim::wire::AdyenItem {
            psp,
            original,
            merchant_ref: "order-x",
            code,
            success: true,
            money: money("adyen"),
        },
    );
    edit(&mut item);
    let body = json!({"live": "false", "notificationItems": [{"NotificationRequestItem": item}]});
    let resp = app
        .http
        .post(format!("{}/webhooks/adyen", app.base))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

async fn adyen_register(app: &TestApp, id: &str, psp: &str) {
    let m = money("adyen");
    let (s, v) = app
        .post(
            "/v1/payments",
            json!({"id": id, "provider": "adyen", "provider_ref": psp,
                   "amount": m.amount, "currency": m.currency}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}

/// Adyen's "CAPTURE_FAILED and REFUND_FAILED reasons": "Adyen will try to
/// fix the issue and re-capture the transaction", then sends CAPTURE with
/// success true and reason `Transaction Recaptured`. The payment ends
/// succeeded and is never shown as money returned.
async fn adyen_capture_failed_then_recaptured(b: Backend) {
    // Manual capture: the payment is open when the capture fails.
    let app = spawn(b, "adyen", "", adyen_table("manual", None), false).await;
    adyen_register(&app, "m", "PSPM000000000001").await;
    adyen_post(&app, "PSPM000000000001", "", "AUTHORISATION", |_| {}).await;
    app.wait_for_status("m", "processing").await;
    adyen_post(
        &app,
        "PSPM0000000000C1",
        "PSPM000000000001",
        "CAPTURE_FAILED",
        |i| {
            i["reason"] = json!("Capture Failed");
        },
    )
    .await;
    let v = app.wait_for_status("m", "needs_review").await;
    assert!(last_reason(&v).contains("Adyen usually re-captures"), "{v}");
    adyen_post(
        &app,
        "PSPM0000000000C1",
        "PSPM000000000001",
        "CAPTURE",
        |i| {
            i["reason"] = json!("Transaction Recaptured");
            i["eventDate"] = json!("2026-12-02T09:00:00+01:00");
        },
    )
    .await;
    let v = app.wait_for_status("m", "succeeded").await;
    never_reversed(&v);
    let statuses: Vec<&str> = v["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["to"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["processing", "needs_review", "succeeded"], "{v}");
    app.stop.cancel();

    // Automatic capture: the payment succeeded on its authorisation; the
    // failed capture is kept beside it for a human, the re-capture is
    // stored as its own event (not a duplicate of the first CAPTURE).
    let app = spawn(b, "adyen", "", adyen_table("automatic", None), false).await;
    adyen_register(&app, "a", "PSPA000000000001").await;
    adyen_post(&app, "PSPA000000000001", "", "AUTHORISATION", |_| {}).await;
    app.wait_for_status("a", "succeeded").await;
    adyen_post(
        &app,
        "PSPA0000000000C1",
        "PSPA000000000001",
        "CAPTURE",
        |_| {},
    )
    .await;
    adyen_post(
        &app,
        "PSPA0000000000C1",
        "PSPA000000000001",
        "CAPTURE_FAILED",
        |_| {},
    )
    .await;
    let (_, reason) = wait_for_inbox(&app, "adyen", |s| *s == InboxState::Review).await;
    assert!(
        reason.contains("CAPTURE_FAILED") && reason.contains("succeeded"),
        "{reason}"
    );
    adyen_post(
        &app,
        "PSPA0000000000C1",
        "PSPA000000000001",
        "CAPTURE",
        |i| {
            i["reason"] = json!("Transaction Recaptured");
            i["eventDate"] = json!("2026-12-02T09:00:00+01:00");
        },
    )
    .await;
    let id = "PSPA0000000000C1:CAPTURE:true:recaptured:2026-12-02T09:00:00+01:00";
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let row = app.db.store.inbox_get("adyen", id).await.unwrap();
        if row
            .as_ref()
            .is_some_and(|r| r.state != InboxState::Received)
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "recapture not stored: {row:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, v) = app.get("/v1/payments/a").await;
    assert_eq!(v["status"], "succeeded", "{v}");
    never_reversed(&v);
}

/// `CANCEL_OR_REFUND` is decided by `additionalData.modification.action`:
/// a refund reverses a succeeded payment, a cancel cancels an open one.
async fn adyen_cancel_or_refund(b: Backend) {
    let app = spawn(b, "adyen", "", adyen_table("manual", None), false).await;
    adyen_register(&app, "refunded", "PSPR000000000001").await;
    adyen_register(&app, "cancelled", "PSPK000000000001").await;
    adyen_post(&app, "PSPR000000000001", "", "AUTHORISATION", |_| {}).await;
    adyen_post(&app, "PSPK000000000001", "", "AUTHORISATION", |_| {}).await;
    adyen_post(
        &app,
        "PSPR0000000000C1",
        "PSPR000000000001",
        "CAPTURE",
        |_| {},
    )
    .await;
    app.wait_for_status("refunded", "succeeded").await;
    app.wait_for_status("cancelled", "processing").await;
    adyen_post(
        &app,
        "PSPR0000000000R1",
        "PSPR000000000001",
        "CANCEL_OR_REFUND",
        |i| {
            i["additionalData"]["modification.action"] = json!("refund");
        },
    )
    .await;
    adyen_post(
        &app,
        "PSPK0000000000R1",
        "PSPK000000000001",
        "CANCEL_OR_REFUND",
        |i| {
            i["additionalData"]["modification.action"] = json!("cancel");
        },
    )
    .await;
    app.wait_for_status("refunded", "reversed").await;
    app.wait_for_status("cancelled", "cancelled").await;
}

/// "If an offer expires, it may still be authorised" (Adyen, "What are
/// offers?"): a closed offer waits in review and a later authorisation
/// settles the payment.
async fn adyen_offer_closed_then_authorised(b: Backend) {
    let app = spawn(b, "adyen", "", adyen_table("automatic", None), false).await;
    adyen_register(&app, "offer", "PSPO000000000001").await;
    adyen_post(&app, "PSPO000000000001", "", "OFFER_CLOSED", |_| {}).await;
    let v = app.wait_for_status("offer", "needs_review").await;
    assert!(last_reason(&v).contains("may still be authorised"), "{v}");
    adyen_post(&app, "PSPO000000000001", "", "AUTHORISATION", |_| {}).await;
    app.wait_for_status("offer", "succeeded").await;
}

/// A refund is read through the provider's refund query, never inferred
/// from its trade: Alipay's `alipay.trade.fastpay.refund.query` by the
/// trade and the refund request number.
async fn alipay_refund_is_read_by_the_refund_query(b: Backend) {
    let app = spawn(
        b,
        "alipay",
        "/alipay/gateway.do",
        alipay_table(finality_sim::wire::ALIPAY_APP_ID),
        true,
    )
    .await;
    app.sim
        .create_priced(Some("s_arf".into()), Some("RQ-1".into()), 500, "CNY");
    let (s, v) = app
        .post(
            "/v1/payments",
            json!({"id": "arf", "provider": "alipay", "kind": "refund",
                   "provider_ref": "2026s_arf:RQ-1", "amount": 500, "currency": "CNY"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let v = app.wait_for_status("arf", "succeeded").await;
    assert!(app.sim.calls_for("RQ-1") >= 1, "{v}");
    // Named by the trade alone, it is refused at registration.
    let (s, v) = app
        .post(
            "/v1/payments",
            json!({"id": "arf2", "provider": "alipay", "kind": "refund",
                   "provider_ref": "2026s_arf", "amount": 500, "currency": "CNY"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"]["field"], "provider_ref", "{v}");
}

finality_testkit::on_both_backends!(
    alipay_refund_is_read_by_the_refund_query,
    stripe_amount_or_currency_mismatch,
    wechat_amount_or_currency_mismatch,
    alipay_amount_or_currency_mismatch,
    adyen_amount_or_currency_mismatch,
    another_account_is_not_applied,
    adyen_capture_failed_then_recaptured,
    adyen_cancel_or_refund,
    adyen_offer_closed_then_authorised,
);
