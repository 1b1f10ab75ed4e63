//! Each provider adapter end to end, against the simulator speaking that
//! provider's wire format over real HTTP: pending → processing → final by
//! polls; the same by the provider's own signed webhooks; a forged webhook
//! turned away.

use super::*;
use finality_core::Schedule;
use finality_providers::adyen::{AdyenConfig, Capture};
use finality_providers::paypal::{PayPalConfig, PaymentObject};
use finality_providers::stripe::StripeAdapter;
use finality_providers::webhook::stripe::{sign as stripe_sign, StripeSignature};
use finality_sim::webhooks::WebhookTarget;
use finality_sim::wire::Money;

pub(crate) const STRIPE_KEY: &str = "sk_test_finality_simulator";
pub(crate) const STRIPE_WHSEC: &str = "whsec_stripe_simulator_secret";

/// Settles 1.5 s after creation, `processing` from 0.45 s; webhooks arrive
/// exactly once, in order (the misbehaviour mix is the webhook tests' job).
fn sim_config(outcome_failed: bool) -> SimConfig {
    let mut c = SimConfig::deterministic(Duration::from_millis(1500));
    if outcome_failed {
        c.outcomes.succeeded = 0.0;
        c.outcomes.failed = 1.0;
    }
    c.webhooks.lost = 0.0;
    c.webhooks.delayed = 0.0;
    c.webhooks.duplicated = 0.0;
    c.webhooks.reordered = 0.0;
    c.api_key = Some(STRIPE_KEY.into());
    c
}

pub(crate) async fn stripe_app(engine: bool, outcome_failed: bool) -> TestApp {
    stripe_app_with_key(engine, outcome_failed, STRIPE_KEY).await
}

pub(super) async fn stripe_app_with_key(engine: bool, outcome_failed: bool, key: &str) -> TestApp {
    stripe_app_full(engine, outcome_failed, key, 60).await
}

async fn stripe_app_full(
    engine: bool,
    outcome_failed: bool,
    key: &str,
    max_attempts: u32,
) -> TestApp {
    stripe_app_on(Backend::Postgres, engine, outcome_failed, key, max_attempts).await
}

pub(crate) async fn stripe_app_on(
    backend: Backend,
    engine: bool,
    outcome_failed: bool,
    key: &str,
    max_attempts: u32,
) -> TestApp {
    let key = key.to_string();
    spawn_app_custom(backend, sim_config(outcome_failed), engine, |sim_url| {
        let mut cfg = ProviderConfig::sim(&format!("{sim_url}/stripe"));
        cfg.schedule_override = Some(Schedule::Fixed {
            delays: vec![Duration::from_millis(250)],
        });
        cfg.max_attempts = max_attempts;
        let adapter = StripeAdapter::new(
            &cfg.base_url,
            key,
            Timeouts {
                connect: cfg.connect_timeout,
                total: cfg.timeout,
            },
        )
        .unwrap()
        .with_webhooks(
            StripeSignature::new(vec![STRIPE_WHSEC.into()], cfg.webhook_tolerance).unwrap(),
        );
        let mut providers = Providers::new();
        providers.insert(
            "stripe".into(),
            ProviderEntry::from_config(Arc::new(adapter), &cfg),
        );
        providers
    })
    .await
}

impl TestApp {
    /// Create the payment at the simulated provider under `sim_id` with
    /// `merchant_ref`, and register it here by the merchant reference alone.
    async fn register_by_merchant_ref(
        &self,
        provider: &str,
        id: &str,
        sim_id: &str,
        merchant_ref: &str,
    ) {
        let m = money(provider);
        self.sim.create_priced(
            Some(sim_id.into()),
            Some(merchant_ref.into()),
            m.amount,
            m.currency,
        );
        self.register_merchant_ref_only(provider, id, merchant_ref)
            .await;
    }

    /// Register by merchant reference alone, creating nothing at the provider.
    async fn register_merchant_ref_only(&self, provider: &str, id: &str, merchant_ref: &str) {
        let m = money(provider);
        let body = json!({"id": id, "provider": provider, "merchant_ref": merchant_ref,
                          "amount": m.amount, "currency": m.currency});
        let (s, v) = self.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        assert_eq!(v["provider_ref"], Value::Null, "{v}");
        assert_eq!(v["merchant_ref"], merchant_ref, "{v}");
    }

    /// Registered by `merchant_ref` alone with a provider that cannot find
    /// it: never queried, in review after its schedule, the reason saying
    /// `why`.
    async fn review_without_calls(&self, provider: &str, merchant_ref: &str, why: &str) {
        let id = format!("{provider}_{merchant_ref}");
        self.register_merchant_ref_only(provider, &id, merchant_ref)
            .await;
        let v = self.wait_for_status(&id, "needs_review").await;
        let reason = review_reason(&v);
        assert!(reason.contains(why), "{reason}");
        assert!(
            reason.starts_with("gave up after 3 scheduled checks"),
            "{reason}"
        );
        assert_eq!(self.sim.stats().status_calls, 0);
    }

    pub(crate) async fn register_at(&self, provider: &str, id: &str, provider_ref: &str) {
        let m = money(provider);
        self.sim
            .create_priced(Some(provider_ref.into()), None, m.amount, m.currency);
        let body = json!({"id": id, "provider": provider, "provider_ref": provider_ref,
                          "amount": m.amount, "currency": m.currency});
        let (s, v) = self.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }
}

/// What the tests' payments are for, at the simulated provider and in
/// their registration alike: yuan for WeChat Pay and Alipay (Alipay's
/// notifications name an amount in yuan and no currency), dollars
/// elsewhere.
pub(crate) fn money(provider: &str) -> Money<'static> {
    let currency = match provider {
        "wechat" | "alipay" => "CNY",
        _ => "USD",
    };
    Money {
        amount: 1999,
        currency,
    }
}

pub(crate) fn steps(v: &Value) -> Vec<(String, String, String)> {
    v["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["from"].as_str().unwrap_or_default().to_string(),
                h["to"].as_str().unwrap().to_string(),
                h["source"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

pub(crate) fn step(from: &str, to: &str, source: &str) -> (String, String, String) {
    (from.into(), to.into(), source.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_payment_intent_settles_by_polls() {
    let app = stripe_app(true, false).await;
    app.register_at("stripe", "order_pi_1", "pi_3PollA").await;
    let v = app.wait_for_status("order_pi_1", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "status_query"),
            step("processing", "succeeded", "status_query"),
        ],
        "{v}"
    );
    let (_, a) = app.get("/v1/payments/order_pi_1/attempts").await;
    let words: Vec<&str> = a["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["provider_status"].as_str())
        .collect();
    assert!(words.contains(&"requires_action"), "{a}");
    assert_eq!(words.last(), Some(&"succeeded"), "{a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_refund_settles_by_polls() {
    let app = stripe_app(true, false).await;
    app.sim
        .create_priced(Some("re_3PollB".into()), None, 1999, "USD");
    let body = json!({"id": "refund_1", "provider": "stripe", "provider_ref": "re_3PollB",
                      "kind": "refund", "amount": 1999, "currency": "USD"});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let v = app.wait_for_status("refund_1", "succeeded").await;
    assert_eq!(v["history"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["history"][0]["source"], "status_query");
}

/// A declined PaymentIntent is not failed at Stripe (the customer may
/// still pay): it stays open, with the decline recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_declined_payment_intent_stays_open() {
    let app = stripe_app(true, true).await;
    app.register_at("stripe", "order_pi_2", "pi_3Declined")
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, a) = app.get("/v1/payments/order_pi_2/attempts").await;
        let declined = a["attempts"].as_array().unwrap().iter().any(|x| {
            x["provider_status"] == "requires_payment_method (last_payment_error: card_declined)"
        });
        if declined {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{a}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, v) = app.get("/v1/payments/order_pi_2").await;
    assert_eq!(v["status"], "processing", "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_settles_by_signed_webhooks() {
    let app = stripe_app(false, false).await;
    app.sim.set_webhook_target(WebhookTarget::stripe(
        format!("{}/webhooks/stripe", app.base),
        STRIPE_WHSEC,
    ));
    app.sim.spawn_webhook_sender(app.stop.clone());
    app.register_at("stripe", "order_pi_3", "pi_3Hooked").await;
    let v = app.wait_for_status("order_pi_3", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "webhook"),
            step("processing", "succeeded", "webhook"),
        ],
        "{v}"
    );
    assert_eq!(v["history"][1]["event_id"], "evt_pi_3Hooked_succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_forged_webhook_is_rejected() {
    let app = stripe_app(false, false).await;
    app.register_at("stripe", "order_pi_4", "pi_3Forged").await;
    let body = finality_sim::wire::stripe_event(
        "evt_forged",
        now_s(),
        "pi_3Forged",
        None,
        "succeeded",
        money("stripe"),
    )
    .to_string();
    let forged = stripe_sign("whsec_not_the_secret", now_s(), body.as_bytes());
    let resp = app
        .http
        .post(format!("{}/webhooks/stripe", app.base))
        .header("stripe-signature", forged)
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "invalid_signature", "{v}");
    // A genuine event is accepted.
    let body = finality_sim::wire::stripe_event(
        "evt_genuine",
        now_s(),
        "pi_3Forged",
        None,
        "succeeded",
        money("stripe"),
    )
    .to_string();
    let good = stripe_sign(STRIPE_WHSEC, now_s(), body.as_bytes());
    let resp = app
        .http
        .post(format!("{}/webhooks/stripe", app.base))
        .header("stripe-signature", good)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let v = app.wait_for_status("order_pi_4", "succeeded").await;
    assert_eq!(v["history"][0]["event_id"], "evt_genuine");
    let forged = app
        .db
        .store
        .inbox_get("stripe", "evt_forged")
        .await
        .unwrap();
    assert!(forged.is_none(), "nothing of a forged webhook is stored");
}

/// A revoked key (401) pauses the provider and raises the alert within
/// seconds (`/readyz` degraded, the metric, an ALERT log line); the payment
/// spends nothing and does not go to review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_401_pauses_the_provider_and_alerts() {
    let app = stripe_app_with_key(true, false, "sk_test_revoked").await;
    app.register_at("stripe", "order_pi_5", "pi_3Revoked").await;
    let started = std::time::Instant::now();
    let ready = loop {
        let ready: Value = app
            .http
            .get(format!("{}/readyz", app.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if ready["status"] == "degraded" {
            break ready;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{ready}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        ready["paused_providers"]["stripe"]["class"], "permanent",
        "{ready}"
    );
    // Asked without a token (a load balancer), the provider's own words
    // are not shown; with one, they are.
    assert!(
        ready["paused_providers"]["stripe"]["reason"].is_null(),
        "{ready}"
    );
    let (_, ready) = app.get("/readyz").await;
    assert!(
        ready["paused_providers"]["stripe"]["reason"]
            .as_str()
            .unwrap()
            .contains("401"),
        "{ready}"
    );
    let metrics = app.metrics().await;
    assert!(
        metrics.contains(
            "finality_provider_paused_until_seconds{provider=\"stripe\",class=\"permanent\"}"
        ),
        "{metrics}"
    );
    let (_, v) = app.get("/v1/payments/order_pi_5").await;
    assert_eq!(v["status"], "pending", "{v}");
    assert_eq!(v["poll"]["attempts"], 0, "{v}");
    assert_eq!(v["poll"]["errors"], 0, "{v}");
}

fn now_s() -> i64 {
    SystemClock.now().millis() / 1000
}

pub(crate) const ADYEN_KEY_HEX: &str =
    "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

/// Adyen, webhook-only: the engine "polls" on `delays` only to notice that
/// no notification came, `max_attempts` times.
async fn adyen_app(delay: Duration, max_attempts: u32) -> TestApp {
    adyen_app_with(delay, max_attempts, Capture::Automatic).await
}

pub(crate) async fn adyen_app_with(
    delay: Duration,
    max_attempts: u32,
    capture: Capture,
) -> TestApp {
    adyen_app_on(Backend::Postgres, delay, max_attempts, capture).await
}

pub(crate) async fn adyen_app_on(
    backend: Backend,
    delay: Duration,
    max_attempts: u32,
    capture: Capture,
) -> TestApp {
    spawn_app_custom(backend, sim_config(false), true, |sim_url| {
        let mut cfg = ProviderConfig::sim(sim_url);
        cfg.adapter = finality_providers::config::Adapter::Adyen {
            adyen: Default::default(),
        };
        cfg.schedule_override = Some(Schedule::Fixed {
            delays: vec![delay],
        });
        cfg.max_attempts = max_attempts;
        let adapter = finality_providers::adyen::AdyenAdapter::new(&[ADYEN_KEY_HEX.into()])
            .unwrap()
            .with_config(&AdyenConfig {
                capture,
                merchant_account: None,
            });
        let mut providers = Providers::new();
        providers.insert(
            "adyen".into(),
            ProviderEntry::from_config(Arc::new(adapter), &cfg),
        );
        providers
    })
    .await
}

pub(crate) fn adyen_key() -> Vec<u8> {
    finality_providers::adyen::decode_key(ADYEN_KEY_HEX).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adyen_settles_by_signed_notification_acknowledged_as_adyen_requires() {
    let app = adyen_app(Duration::from_secs(3600), 10).await;
    app.sim.set_webhook_target(WebhookTarget::adyen(
        format!("{}/webhooks/adyen", app.base),
        adyen_key(),
    ));
    app.sim.spawn_webhook_sender(app.stop.clone());
    app.register_at("adyen", "order_ady_1", "8816178952380553")
        .await;
    let v = app.wait_for_status("order_ady_1", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![step("pending", "succeeded", "webhook")],
        "{v}"
    );
    assert_eq!(
        v["history"][0]["event_id"],
        "8816178952380553:AUTHORISATION:true"
    );
    assert_eq!(
        app.sim.stats().status_calls,
        0,
        "nothing is polled at Adyen"
    );
    assert_eq!(
        app.sim.stats().webhook_errors,
        0,
        "every delivery acknowledged"
    );

    // The answer is exactly what Adyen requires; the same notification
    // again is a duplicate, acknowledged the same way.
    let body = finality_sim::wire::adyen_notification(
        &adyen_key(),
        "FinalitySimulator",
        "8816178952380553",
        None,
        "succeeded",
        money("adyen"),
    )
    .unwrap()
    .to_string();
    let resp = app
        .http
        .post(format!("{}/webhooks/adyen", app.base))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.text().await.unwrap(), "[accepted]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adyen_forged_notification_is_rejected() {
    let app = adyen_app(Duration::from_secs(3600), 10).await;
    app.register_at("adyen", "order_ady_2", "8816178952380554")
        .await;
    let wrong = finality_providers::adyen::decode_key("00112233").unwrap();
    let body = finality_sim::wire::adyen_notification(
        &wrong,
        "FinalitySimulator",
        "8816178952380554",
        None,
        "succeeded",
        money("adyen"),
    )
    .unwrap()
    .to_string();
    let resp = app
        .http
        .post(format!("{}/webhooks/adyen", app.base))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let (_, v) = app.get("/v1/payments/order_ady_2").await;
    assert_eq!(v["status"], "pending");
    let stored = app
        .db
        .store
        .inbox_get("adyen", "8816178952380554:AUTHORISATION:true")
        .await
        .unwrap();
    assert!(
        stored.is_none(),
        "nothing of a forged notification is stored"
    );
}

/// A payment whose notification never comes goes to review when its
/// schedule runs out, with a reason that says so; Adyen is never called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adyen_without_notification_reaches_review() {
    let app = adyen_app(Duration::from_millis(200), 3).await;
    app.register_at("adyen", "order_ady_3", "8816178952380555")
        .await;
    let v = app.wait_for_status("order_ady_3", "needs_review").await;
    let reason = v["history"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.contains("webhook-only (it has no status read to poll) and no notification arrived"),
        "{reason}"
    );
    assert!(
        reason.starts_with("gave up after 3 scheduled checks"),
        "{reason}"
    );
    let (_, a) = app.get("/v1/payments/order_ady_3/attempts").await;
    assert_eq!(a["attempts"], json!([]), "no call was made, none recorded");
    assert_eq!(app.sim.stats().status_calls, 0);
}

pub(crate) const ACME_KEY: &str = "acme_live_key_for_the_simulator";
pub(crate) const ACME_SECRET: &str = "acme_webhook_secret";

/// "Acme" through the generic adapter, configured as finality.toml would
/// (here as the same structure in JSON): no Acme code anywhere in finality.
pub(crate) fn acme_config(sim_url: &str) -> ProviderConfig {
    let mut cfg: ProviderConfig = serde_json::from_value(json!({
        "adapter": "generic",
        "base_url": format!("{sim_url}/acme"),
        "schedule": {"kind": "fixed", "delays": ["250ms"]},
        "webhook_secret_envs": [],
        "generic": {
            "url": "{base_url}/v2/transfers/{provider_ref}",
            "headers": {"Authorization": "Bearer ${FINALITY_TEST_ACME_KEY}"},
            "status_pointer": "/data/state",
            "status_map": {"CREATED": "pending", "IN_PROGRESS": "processing",
                           "COMPLETED": "succeeded", "REJECTED": "failed", "CANCELLED": "cancelled"},
            "errors": {"409": "transient"},
            "webhook": {"scheme": "hmac", "header": "X-Acme-Signature", "prefix": "sha256=",
                        "encoding": "hex", "event_id_pointer": "/id",
                        "ref_pointer": "/data/id", "status_pointer": "/data/state"}
        }
    }))
    .unwrap();
    cfg.validate().unwrap();
    cfg.webhook_secret_envs = vec!["FINALITY_TEST_ACME_SECRET".into()];
    cfg
}

async fn acme_app(engine: bool) -> TestApp {
    std::env::set_var("FINALITY_TEST_ACME_KEY", ACME_KEY);
    std::env::set_var("FINALITY_TEST_ACME_SECRET", ACME_SECRET);
    let mut config = sim_config(false);
    config.api_key = Some(ACME_KEY.into());
    spawn_app_custom(Backend::Postgres, config, engine, |sim_url| {
        let cfg = acme_config(sim_url);
        let adapter = finality_providers::config::build("acme", &cfg).unwrap();
        let mut providers = Providers::new();
        providers.insert("acme".into(), ProviderEntry::from_config(adapter, &cfg));
        providers
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_adapter_settles_by_polls() {
    let app = acme_app(true).await;
    app.register_at("acme", "payout_1", "tr_9f2c").await;
    let v = app.wait_for_status("payout_1", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "status_query"),
            step("processing", "succeeded", "status_query"),
        ],
        "{v}"
    );
    let (_, a) = app.get("/v1/payments/payout_1/attempts").await;
    let words: Vec<&str> = a["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["provider_status"].as_str())
        .collect();
    assert!(words.contains(&"CREATED"), "{a}");
    assert_eq!(words.last(), Some(&"COMPLETED"), "{a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_adapter_settles_by_hmac_webhooks_and_rejects_forgeries() {
    let app = acme_app(false).await;
    app.register_at("acme", "payout_2", "tr_7a1d").await;
    let (body, forged_sig) = finality_sim::wire::acme_webhook(
        "not_the_secret",
        "ev_forged",
        "tr_7a1d",
        "succeeded",
        finality_sim::wire::Money::NONE,
    );
    let resp = app
        .http
        .post(format!("{}/webhooks/acme", app.base))
        .header("x-acme-signature", forged_sig)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(app
        .db
        .store
        .inbox_get("acme", "ev_forged")
        .await
        .unwrap()
        .is_none());

    app.sim.set_webhook_target(WebhookTarget::acme(
        format!("{}/webhooks/acme", app.base),
        ACME_SECRET,
    ));
    app.sim.spawn_webhook_sender(app.stop.clone());
    app.register_at("acme", "payout_3", "tr_5b3e").await;
    let v = app.wait_for_status("payout_3", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "webhook"),
            step("processing", "succeeded", "webhook"),
        ],
        "{v}"
    );
    assert_eq!(v["history"][1]["event_id"], "evt_tr_5b3e_succeeded");
}

const BAKONG_TOKEN: &str = "bakong-token-for-the-simulator";

async fn bakong_app() -> TestApp {
    bakong_app_with(60).await
}

async fn bakong_app_with(max_attempts: u32) -> TestApp {
    let mut config = sim_config(false);
    // Settling after 4 s leaves the 250 ms polls enough rounds to line up
    // into full batches even when registering 120 payments is slow (CI).
    config.settle = finality_sim::config::SettleTime::Fixed {
        after: Duration::from_secs(4),
    };
    config.api_key = Some(BAKONG_TOKEN.into());
    spawn_app_custom(Backend::Postgres, config, true, |sim_url| {
        let mut cfg = ProviderConfig::sim(&format!("{sim_url}/bakong"));
        cfg.adapter = finality_providers::config::Adapter::Bakong;
        cfg.schedule_override = Some(Schedule::Fixed {
            delays: vec![Duration::from_millis(250)],
        });
        cfg.max_attempts = max_attempts;
        let adapter = finality_providers::bakong::BakongAdapter::new(
            &cfg.base_url,
            BAKONG_TOKEN.into(),
            Timeouts {
                connect: cfg.connect_timeout,
                total: cfg.timeout,
            },
        )
        .unwrap();
        let mut providers = Providers::new();
        providers.insert(
            "bakong".into(),
            ProviderEntry::from_config(Arc::new(adapter), &cfg),
        );
        providers
    })
    .await
}

/// Bakong has no push: 120 KHQR payments are polled, and the engine
/// coalesces their due polls into list requests of up to 50 MD5s; one
/// payment known by its full hash is asked about on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bakong_polls_are_coalesced_into_bulk_requests() {
    let app = bakong_app().await;
    for i in 0..120 {
        let md5 = format!("{:032x}", 0xabc000 + i);
        app.register_at("bakong", &format!("khqr_{i:03}"), &md5)
            .await;
    }
    let full_hash = finality_sim::wire::bakong_hash("by-hash");
    app.register_at("bakong", "khqr_hash", &full_hash).await;
    for i in 0..120 {
        app.wait_for_status(&format!("khqr_{i:03}"), "succeeded")
            .await;
    }
    let v = app.wait_for_status("khqr_hash", "succeeded").await;
    assert_eq!(v["history"][0]["source"], "status_query");
    let s = app.sim.stats();
    assert_eq!(s.bulk_items_max, 50, "{s:?}");
    eprintln!(
        "bakong: {} list requests for {} payment checks",
        s.bulk_requests, s.status_calls
    );
    let items = s.status_calls - s.bulk_requests.min(s.status_calls);
    assert!(
        s.bulk_requests * 10 <= s.status_calls,
        "{} list requests for {} payment checks ({items}): not coalesced",
        s.bulk_requests,
        s.status_calls
    );
    let (_, a) = app.get("/v1/payments/khqr_007/attempts").await;
    let last = a["attempts"].as_array().unwrap().last().unwrap().clone();
    assert!(
        last["provider_status"]
            .as_str()
            .unwrap()
            .starts_with("SUCCESS hash="),
        "{a}"
    );
}

pub(crate) const PAYPAL_CREDENTIALS: &str = "AYSq3RDGsmBLJE-otTkBtM:EGnHDxD_qRPdaLdZz8iCr8N7_MzF";
pub(crate) const PAYPAL_WEBHOOK_ID: &str = "1JE4291016473214C";

async fn paypal_app(engine: bool, token_ttl: Option<Duration>) -> TestApp {
    paypal_app_full(engine, token_ttl, PaymentObject::Orders, 60).await
}

async fn paypal_app_full(
    engine: bool,
    token_ttl: Option<Duration>,
    payments: PaymentObject,
    max_attempts: u32,
) -> TestApp {
    paypal_app_on(Backend::Postgres, engine, token_ttl, payments, max_attempts).await
}

pub(crate) async fn paypal_app_on(
    backend: Backend,
    engine: bool,
    token_ttl: Option<Duration>,
    payments: PaymentObject,
    max_attempts: u32,
) -> TestApp {
    let mut config = sim_config(false);
    config.api_key = Some(PAYPAL_CREDENTIALS.into());
    config.token_ttl = token_ttl;
    spawn_app_custom(backend, config, engine, |sim_url| {
        let mut cfg = ProviderConfig::sim(&format!("{sim_url}/paypal"));
        cfg.adapter = finality_providers::config::Adapter::PayPal {
            paypal: Default::default(),
        };
        cfg.schedule_override = Some(Schedule::Fixed {
            delays: vec![Duration::from_millis(250)],
        });
        cfg.max_attempts = max_attempts;
        let adapter = finality_providers::paypal::PayPalAdapter::new(
            &cfg.base_url,
            PAYPAL_CREDENTIALS,
            Some(PAYPAL_WEBHOOK_ID.into()),
            Timeouts {
                connect: cfg.connect_timeout,
                total: cfg.timeout,
            },
        )
        .unwrap()
        .with_config(PayPalConfig {
            payments,
            ..PayPalConfig::default()
        });
        let mut providers = Providers::new();
        providers.insert(
            "paypal".into(),
            ProviderEntry::from_config(Arc::new(adapter), &cfg),
        );
        providers
    })
    .await
}

/// Orders settle by polls on one cached OAuth token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paypal_order_settles_by_polls_on_one_cached_token() {
    let app = paypal_app(true, None).await;
    for i in 0..10 {
        app.register_at(
            "paypal",
            &format!("pp_{i}"),
            &format!("5O190127TN36471{i}T"),
        )
        .await;
    }
    for i in 0..10 {
        let v = app.wait_for_status(&format!("pp_{i}"), "succeeded").await;
        assert_eq!(
            steps(&v),
            vec![
                step("pending", "processing", "status_query"),
                step("processing", "succeeded", "status_query"),
            ],
            "{v}"
        );
    }
    let s = app.sim.stats();
    assert!(s.status_calls >= 30, "{s:?}");
    assert_eq!(s.token_requests, 1, "one token for every poll: {s:?}");
}

/// A short-lived token is refreshed before it expires, once per refresh
/// however many polls want it at that moment, and no poll fails for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paypal_token_is_refreshed_before_expiry_one_refresh_at_a_time() {
    let app = paypal_app(true, Some(Duration::from_secs(2))).await;
    for i in 0..20 {
        app.register_at(
            "paypal",
            &format!("pt_{i}"),
            &format!("7R190127TN3647{i:02}T"),
        )
        .await;
    }
    // Keep polling for a while: the settle time is 1.5 s, so register more.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for i in 20..40 {
        app.register_at(
            "paypal",
            &format!("pt_{i}"),
            &format!("7R190127TN3647{i:02}T"),
        )
        .await;
    }
    for i in 0..40 {
        app.wait_for_status(&format!("pt_{i}"), "succeeded").await;
    }
    let s = app.sim.stats();
    // A 2 s token is renewed at 1.6 s: over a run of about 3.5 s that is
    // two or three tokens, never one per waiting poll.
    assert!((2..=4).contains(&s.token_requests), "{s:?}");
    let (_, a) = app.get("/v1/payments/pt_0/attempts").await;
    assert!(
        a["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["outcome"] != "error"),
        "no poll failed on an expired token: {a}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paypal_settles_by_webhooks_verified_by_paypal_and_rejects_forgeries() {
    let app = paypal_app(false, None).await;
    app.sim.set_webhook_target(WebhookTarget::paypal(
        format!("{}/webhooks/paypal", app.base),
        PAYPAL_WEBHOOK_ID,
    ));
    app.sim.spawn_webhook_sender(app.stop.clone());
    app.register_at("paypal", "pp_hook", "8H190127TN364715T")
        .await;
    let v = app.wait_for_status("pp_hook", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "webhook"),
            step("processing", "succeeded", "webhook"),
        ],
        "{v}"
    );

    // Signed for another webhook id: PayPal says FAILURE.
    app.register_at("paypal", "pp_forged", "9H190127TN364715T")
        .await;
    let time = SystemClock.now().to_rfc3339();
    let (event, headers) = finality_sim::wire::paypal_event(
        "WH-FORGED",
        "9H190127TN364715T",
        None,
        "succeeded",
        "SOME-OTHER-WEBHOOK",
        &time,
        money("paypal"),
    )
    .unwrap();
    let mut req = app
        .http
        .post(format!("{}/webhooks/paypal", app.base))
        .body(event.to_string());
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(app
        .db
        .store
        .inbox_get("paypal", "WH-FORGED")
        .await
        .unwrap()
        .is_none());
    let (_, v) = app.get("/v1/payments/pp_forged").await;
    assert_eq!(v["status"], "pending");
}

async fn wechat_app(engine: bool) -> TestApp {
    wechat_app_with(engine, finality_sim::wire::wechat_keys::PLATFORM_PUBLIC_PEM).await
}

/// A name-safe tag for a key, so each key has its own variable.
fn key_tag(pem: &str) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(pem.as_bytes())[..6])
}

/// `platform_pem`: the key WeChat Pay's signatures are checked with.
async fn wechat_app_with(engine: bool, platform_pem: &str) -> TestApp {
    use finality_sim::wire::wechat_keys as k;
    std::env::set_var("FINALITY_TEST_WECHAT_KEY", k::MERCHANT_PRIVATE_PEM);
    // One variable per key: tests run in parallel in one process, and a
    // shared name let one test's wrong key reach another's adapter.
    let platform_var = format!("FINALITY_TEST_WECHAT_PLATFORM_{}", key_tag(platform_pem));
    std::env::set_var(&platform_var, platform_pem);
    std::env::set_var("FINALITY_TEST_WECHAT_APIV3", k::API_V3_KEY);
    spawn_app_custom(Backend::Postgres, sim_config(false), engine, |sim_url| {
        let cfg: ProviderConfig = serde_json::from_value(json!({
            "adapter": "wechat",
            "base_url": format!("{sim_url}/wechat"),
            "schedule": {"kind": "fixed", "delays": ["250ms"]},
            "wechat": {"mchid": k::MCHID, "serial_no": k::SERIAL_NO,
                       "private_key_env": "FINALITY_TEST_WECHAT_KEY",
                       "platform_public_key_env": platform_var,
                       "api_v3_key_env": "FINALITY_TEST_WECHAT_APIV3"}
        }))
        .unwrap();
        cfg.validate().unwrap();
        let adapter = finality_providers::config::build("wechat", &cfg).unwrap();
        let mut providers = Providers::new();
        providers.insert("wechat".into(), ProviderEntry::from_config(adapter, &cfg));
        providers
    })
    .await
}

fn api_v3_key() -> [u8; 32] {
    finality_sim::wire::wechat_keys::API_V3_KEY
        .as_bytes()
        .try_into()
        .unwrap()
}

/// Queried by the merchant's order number with signed requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wechat_settles_by_signed_queries() {
    let app = wechat_app(true).await;
    app.register_by_merchant_ref("wechat", "wx_1", "s_wx1", "1217752501201407033233368018")
        .await;
    let v = app.wait_for_status("wx_1", "succeeded").await;
    // Found by the merchant's order number; WeChat Pay's id recorded.
    assert_eq!(v["provider_ref"], "4200s_wx1", "{v}");
    assert_eq!(v["merchant_ref"], "1217752501201407033233368018", "{v}");
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "status_query"),
            step("processing", "succeeded", "status_query"),
        ],
        "{v}"
    );
    let (_, a) = app.get("/v1/payments/wx_1/attempts").await;
    assert!(a["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["provider_status"] == "NOTPAY"));
}

/// Notifications are verified with the platform key and decrypted with the
/// APIv3 key; one whose signature is not the platform's is refused and
/// nothing of it is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wechat_settles_by_encrypted_notifications_and_rejects_forgeries() {
    let app = wechat_app(false).await;
    app.sim.set_webhook_target(WebhookTarget::wechat(
        format!("{}/webhooks/wechat", app.base),
        api_v3_key(),
    ));
    app.sim.spawn_webhook_sender(app.stop.clone());
    app.register_by_merchant_ref("wechat", "wx_2", "s_wx2", "1217752501201407033233368019")
        .await;
    let v = app.wait_for_status("wx_2", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![step("pending", "succeeded", "webhook")],
        "{v}"
    );
    // Matched by out_trade_no; the notification's transaction_id recorded.
    assert_eq!(v["provider_ref"], "4200s_wx2", "{v}");

    app.register_by_merchant_ref("wechat", "wx_3", "s_wx3", "1217752501201407033233368020")
        .await;
    let ts = SystemClock.now().millis() / 1000;
    let (body, mut headers) = finality_sim::wire::wechat_notification(
        &api_v3_key(),
        "EV-FORGED-0001",
        "s_wx3",
        "1217752501201407033233368020",
        "succeeded",
        ts,
        money("wechat"),
        None,
    )
    .unwrap();
    // Signed by someone else: the signature header of a different body.
    let (_, other) = finality_sim::wire::wechat_notification(
        &api_v3_key(),
        "EV-OTHER-00002",
        "s_wx99",
        "1217752501201407033233368099",
        "succeeded",
        ts,
        money("wechat"),
        None,
    )
    .unwrap();
    headers[2] = other[2].clone();
    let mut req = app
        .http
        .post(format!("{}/webhooks/wechat", app.base))
        .body(body);
    for (k, v) in &headers {
        req = req.header(*k, v);
    }
    assert_eq!(req.send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
    assert!(app
        .db
        .store
        .inbox_get("wechat", "EV-FORGED-0001")
        .await
        .unwrap()
        .is_none());
    let (_, v) = app.get("/v1/payments/wx_3").await;
    assert_eq!(v["status"], "pending");
}

async fn alipay_app(engine: bool) -> TestApp {
    alipay_app_with(engine, finality_sim::wire::wechat_keys::PLATFORM_PUBLIC_PEM).await
}

/// `alipay_pem`: the key Alipay's signatures are checked with.
async fn alipay_app_with(engine: bool, alipay_pem: &str) -> TestApp {
    use finality_sim::wire::wechat_keys as k;
    // The simulator's throw-away pairs: the "merchant" pair is the app's,
    // the "platform" pair is Alipay's.
    std::env::set_var("FINALITY_TEST_ALIPAY_KEY", k::MERCHANT_PRIVATE_PEM);
    let public_var = format!("FINALITY_TEST_ALIPAY_PUBLIC_{}", key_tag(alipay_pem));
    std::env::set_var(&public_var, alipay_pem);
    spawn_app_custom(Backend::Postgres, sim_config(false), engine, |sim_url| {
        let cfg: ProviderConfig = serde_json::from_value(json!({
            "adapter": "alipay",
            "base_url": format!("{sim_url}/alipay/gateway.do"),
            "schedule": {"kind": "fixed", "delays": ["250ms"]},
            "alipay": {"app_id": "2021000000000001",
                       "private_key_env": "FINALITY_TEST_ALIPAY_KEY",
                       "alipay_public_key_env": public_var}
        }))
        .unwrap();
        cfg.validate().unwrap();
        let adapter = finality_providers::config::build("alipay", &cfg).unwrap();
        let mut providers = Providers::new();
        providers.insert("alipay".into(), ProviderEntry::from_config(adapter, &cfg));
        providers
    })
    .await
}

/// `alipay.trade.query` by the merchant's order number, RSA2-signed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alipay_settles_by_signed_trade_queries() {
    let app = alipay_app(true).await;
    app.register_by_merchant_ref("alipay", "ali_1", "s_ali1", "20150320010101001")
        .await;
    let v = app.wait_for_status("ali_1", "succeeded").await;
    assert_eq!(v["provider_ref"], "2026s_ali1", "{v}");
    assert_eq!(
        steps(&v),
        vec![step("pending", "succeeded", "status_query")],
        "{v}"
    );
    let (_, a) = app.get("/v1/payments/ali_1/attempts").await;
    let words: Vec<&str> = a["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["provider_status"].as_str())
        .collect();
    assert!(words.contains(&"WAIT_BUYER_PAY"), "{a}");
    assert_eq!(words.last(), Some(&"TRADE_SUCCESS"), "{a}");
}

/// Signed notifications are answered exactly `success`; a tampered one is
/// refused and nothing of it is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alipay_settles_by_signed_notifications_and_rejects_forgeries() {
    let app = alipay_app(false).await;
    app.sim.set_webhook_target(WebhookTarget::alipay(format!(
        "{}/webhooks/alipay",
        app.base
    )));
    app.sim.spawn_webhook_sender(app.stop.clone());
    app.register_by_merchant_ref("alipay", "ali_2", "s_ali2", "20150320010101002")
        .await;
    let v = app.wait_for_status("ali_2", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![step("pending", "succeeded", "webhook")],
        "{v}"
    );
    assert_eq!(v["provider_ref"], "2026s_ali2", "{v}");
    assert_eq!(
        app.sim.stats().webhook_errors,
        0,
        "every delivery acknowledged"
    );

    app.register_by_merchant_ref("alipay", "ali_3", "s_ali3", "20150320010101003")
        .await;
    let form = finality_sim::wire::alipay_notification(
        "nid-genuine",
        "s_ali3",
        "20150320010101003",
        "succeeded",
        money("alipay"),
    )
    .unwrap();
    let post = |body: String| {
        app.http
            .post(format!("{}/webhooks/alipay", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let tampered = form.replace("total_amount=19.99", "total_amount=0.01");
    assert_ne!(tampered, form);
    let resp = post(tampered.replace("nid-genuine", "nid-tampered"))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(app
        .db
        .store
        .inbox_get("alipay", "nid-tampered")
        .await
        .unwrap()
        .is_none());
    let resp = post(form).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.text().await.unwrap(), "success");
    app.wait_for_status("ali_3", "succeeded").await;
}

// ---------------------------------------------------------------------------
// Payments registered by the merchant's reference alone (the create call
// timed out before the provider answered with its id).

/// The reason on the payment's last history row.
fn review_reason(v: &Value) -> String {
    v["history"]
        .as_array()
        .and_then(|h| h.last())
        .and_then(|h| h["reason"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Stripe: the PaymentIntent is found by metadata search, its id recorded,
/// and later polls ask for it by id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_payment_found_by_merchant_ref_in_metadata() {
    let app = stripe_app(true, false).await;
    app.register_by_merchant_ref("stripe", "st_lost", "pi_3Lost", "order-lost-1")
        .await;
    let v = app.wait_for_status("st_lost", "succeeded").await;
    assert_eq!(v["provider_ref"], "pi_3Lost", "{v}");
    assert_eq!(v["merchant_ref"], "order-lost-1", "{v}");
    assert_eq!(
        app.sim.calls_for("order-lost-1"),
        1,
        "one search, then by id"
    );
    assert!(app.sim.calls_for("pi_3Lost") >= 1);
}

/// A PaymentIntent that was never created is not found; the payment goes to
/// review after its schedule with the reason, never to `failed`. Two
/// PaymentIntents with one merchant reference are left to a human too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_unfound_or_ambiguous_merchant_ref_goes_to_review() {
    let app = stripe_app_full(true, false, STRIPE_KEY, 3).await;
    app.register_merchant_ref_only("stripe", "st_never", "order-never")
        .await;
    let v = app.wait_for_status("st_never", "needs_review").await;
    let reason = review_reason(&v);
    assert!(
        reason.contains("no single stripe payment found by merchant reference `order-never`"),
        "{reason}"
    );
    assert_eq!(app.sim.calls_for("order-never"), 3);

    app.sim
        .create_with(Some("pi_3TwinA".into()), Some("order-twice".into()));
    app.register_by_merchant_ref("stripe", "st_twice", "pi_3TwinB", "order-twice")
        .await;
    let v = app.wait_for_status("st_twice", "needs_review").await;
    let reason = review_reason(&v);
    assert!(reason.contains("ambiguous"), "{reason}");
    assert!(reason.contains("pi_3TwinA, pi_3TwinB"), "{reason}");
    assert_eq!(v["provider_ref"], Value::Null, "{v}");
}

/// Stripe cannot search refunds: no call is made, and the refund reaches
/// review after its schedule saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_refund_by_merchant_ref_is_never_queried_and_says_why() {
    let app = stripe_app_full(true, false, STRIPE_KEY, 3).await;
    let body = json!({"id": "st_rf", "provider": "stripe", "merchant_ref": "refund-9",
                      "kind": "refund", "amount": 500, "currency": "USD"});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let v = app.wait_for_status("st_rf", "needs_review").await;
    let reason = review_reason(&v);
    assert!(
        reason.contains("Stripe has no search for refunds"),
        "{reason}"
    );
    assert_eq!(app.sim.stats().status_calls, 0);
}

/// A Stripe event whose PaymentIntent carries the merchant reference in its
/// metadata settles a payment registered by it, and records the id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stripe_webhook_finds_payment_by_merchant_ref() {
    let app = stripe_app(false, false).await;
    app.sim.set_webhook_target(WebhookTarget::stripe(
        format!("{}/webhooks/stripe", app.base),
        STRIPE_WHSEC,
    ));
    app.sim.spawn_webhook_sender(app.stop.clone());
    app.register_by_merchant_ref("stripe", "st_wh", "pi_3Hooked", "order-hook-1")
        .await;
    let v = app.wait_for_status("st_wh", "succeeded").await;
    assert_eq!(v["provider_ref"], "pi_3Hooked", "{v}");
    assert_eq!(app.sim.stats().status_calls, 0);
}

/// PayPal tracked as captures: a payment registered by its invoice id is
/// found by Transaction Search and its capture id recorded; a capture
/// registered by id is polled at /v2/payments/captures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paypal_capture_found_by_invoice_id_and_polled() {
    let app = paypal_app_full(true, None, PaymentObject::Captures, 60).await;
    app.register_by_merchant_ref("paypal", "pp_inv", "pp_c1", "INV-2026-0001")
        .await;
    app.sim
        .create_priced(Some("pp_c2".into()), None, 1999, "USD");
    let body = json!({"id": "pp_cap", "provider": "paypal", "provider_ref": "CAPpp_c2",
                      "amount": 1999, "currency": "USD"});
    assert_eq!(app.post("/v1/payments", body).await.0, StatusCode::CREATED);
    let v = app.wait_for_status("pp_inv", "succeeded").await;
    assert_eq!(v["provider_ref"], "CAPpp_c1", "{v}");
    assert_eq!(
        app.sim.calls_for("INV-2026-0001"),
        1,
        "one search, then by id"
    );
    let v = app.wait_for_status("pp_cap", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "status_query"),
            step("processing", "succeeded", "status_query"),
        ],
        "{v}"
    );
}

/// PayPal orders have no search: a payment registered by invoice id alone
/// is not queried and reaches review saying what to configure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paypal_order_by_invoice_id_goes_to_review_with_the_fix() {
    let app = paypal_app_full(true, None, PaymentObject::Orders, 3).await;
    app.review_without_calls("paypal", "INV-2026-0002", "payments = \"captures\"")
        .await;
}

/// Bakong is asked by md5 only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bakong_by_merchant_ref_goes_to_review_with_the_reason() {
    let app = bakong_app_with(3).await;
    app.review_without_calls("bakong", "khqr-order-7", "KHQR's md5")
        .await;
}

/// WeChat Pay, known by its transaction id: polled at /transactions/id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wechat_by_transaction_id_settles() {
    let app = wechat_app(true).await;
    app.sim
        .create_priced(Some("s_wx5".into()), None, 1999, "USD");
    let body = json!({"id": "wx_5", "provider": "wechat", "provider_ref": "4200s_wx5",
                      "amount": 1999, "currency": "USD"});
    assert_eq!(app.post("/v1/payments", body).await.0, StatusCode::CREATED);
    app.wait_for_status("wx_5", "succeeded").await;
    assert!(app.sim.calls_for("4200s_wx5") >= 2);
}

/// WeChat Pay refunds are queried by `out_refund_no` (the merchant
/// reference) and their `refund_id` recorded; a refund known only by its
/// `refund_id` cannot be queried and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wechat_refund_settles_by_out_refund_no() {
    let app = wechat_app(true).await;
    app.sim.create_priced(
        Some("s_rf1".into()),
        Some("RF20261130001".into()),
        500,
        "CNY",
    );
    let body = json!({"id": "wx_rf", "provider": "wechat", "kind": "refund",
                      "merchant_ref": "RF20261130001", "amount": 500, "currency": "CNY"});
    assert_eq!(app.post("/v1/payments", body).await.0, StatusCode::CREATED);
    let v = app.wait_for_status("wx_rf", "succeeded").await;
    assert_eq!(v["provider_ref"], "50s_rf1", "{v}");
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "status_query"),
            step("processing", "succeeded", "status_query"),
        ],
        "{v}"
    );
}

/// Waits for `/readyz` to report `provider` paused (permanently); returns
/// its reason.
async fn paused_reason(app: &TestApp, provider: &str) -> String {
    let ready = app.wait_paused(provider).await;
    let paused = &ready["paused_providers"][provider];
    assert_eq!(paused["class"], "permanent", "{ready}");
    paused["reason"].as_str().unwrap_or_default().to_string()
}

/// An answer whose signature does not verify (here: the wrong platform key
/// is configured) is not trusted: the provider pauses with an alert and the
/// payment spends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wechat_unverifiable_answer_pauses_the_provider() {
    let app = wechat_app_with(true, finality_sim::wire::wechat_keys::MERCHANT_PUBLIC_PEM).await;
    app.register_by_merchant_ref(
        "wechat",
        "wx_bad",
        "s_wxbad",
        "1217752501201407033299999999",
    )
    .await;
    let reason = paused_reason(&app, "wechat").await;
    assert!(reason.contains("signature does not verify"), "{reason}");
    let (_, v) = app.get("/v1/payments/wx_bad").await;
    assert_eq!(v["status"], "pending", "{v}");
    assert_eq!(v["poll"]["attempts"], 0, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alipay_unverifiable_answer_pauses_the_provider() {
    let app = alipay_app_with(true, finality_sim::wire::wechat_keys::MERCHANT_PUBLIC_PEM).await;
    app.register_by_merchant_ref("alipay", "ali_bad", "s_alibad", "20150320010109999")
        .await;
    let reason = paused_reason(&app, "alipay").await;
    assert!(reason.contains("sign does not verify"), "{reason}");
    let (_, v) = app.get("/v1/payments/ali_bad").await;
    assert_eq!(v["status"], "pending", "{v}");
    assert_eq!(v["poll"]["attempts"], 0, "{v}");
}

/// Post one signed Adyen notification and expect Adyen's `[accepted]`.
pub(crate) async fn adyen_notify(
    app: &TestApp,
    psp: &str,
    original: &str,
    code: &str,
    success: bool,
) {
    let item = finality_sim::wire::adyen_item(
        &adyen_key(),
        "FinalitySimulator",
        finality_sim::wire::AdyenItem {
            psp,
            original,
            merchant_ref: "order-m",
            code,
            success,
            money: money("adyen"),
        },
    );
    let body = json!({"live": "false", "notificationItems": [{"NotificationRequestItem": item}]});
    let resp = app
        .http
        .post(format!("{}/webhooks/adyen", app.base))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.text().await.unwrap(), "[accepted]");
}

/// Adyen with manual capture: an authorisation is a hold (processing), the
/// `CAPTURE` notification settles the payment and `CAPTURE_FAILED` sends
/// it to review until Adyen re-captures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adyen_manual_capture_settles_on_capture() {
    let app = adyen_app_with(Duration::from_secs(3600), 10, Capture::Manual).await;
    app.register_at("adyen", "ady_m1", "PSP0000000000001").await;
    app.register_at("adyen", "ady_m2", "PSP0000000000002").await;
    adyen_notify(&app, "PSP0000000000001", "", "AUTHORISATION", true).await;
    adyen_notify(&app, "PSP0000000000002", "", "AUTHORISATION", true).await;
    app.wait_for_status("ady_m1", "processing").await;
    app.wait_for_status("ady_m2", "processing").await;
    adyen_notify(
        &app,
        "PSP00000000000C1",
        "PSP0000000000001",
        "CAPTURE",
        true,
    )
    .await;
    adyen_notify(
        &app,
        "PSP00000000000C2",
        "PSP0000000000002",
        "CAPTURE_FAILED",
        true,
    )
    .await;
    let v = app.wait_for_status("ady_m1", "succeeded").await;
    assert_eq!(
        steps(&v),
        vec![
            step("pending", "processing", "webhook"),
            step("processing", "succeeded", "webhook"),
        ],
        "{v}"
    );
    // CAPTURE_FAILED is not final: "Adyen will try to fix the issue and
    // re-capture the transaction" (CAPTURE_FAILED and REFUND_FAILED
    // reasons): the open payment waits in review for the CAPTURE.
    let v = app.wait_for_status("ady_m2", "needs_review").await;
    assert!(
        v["history"][1]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("re-captures"),
        "{v}"
    );
}
