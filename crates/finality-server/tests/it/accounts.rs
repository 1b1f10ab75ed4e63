//! Many accounts per provider, through the HTTP API on both backends:
//! two Stripe Connect accounts and two Adyen merchant accounts, each
//! webhook verified with its own account's secret and applied to its own
//! payment; one signed with account A's secret naming account B refused;
//! account A's event naming account B's object never reaching it; one
//! naming an unknown account parked (2xx) and applied once the account is
//! added, or refused with the body any bad signature gets; two merchant
//! accounts' colliding merchant references each settled by its own
//! webhook only; a 401 for one
//! account pauses that account and leaves the other polling; an account
//! added through one node's API used by another node without a restart.

use super::*;
use finality_core::Schedule;
use finality_providers::config::{AccountSpec, Adapter};
use finality_providers::webhook::stripe::sign as stripe_sign;
use finality_sim::webhooks::WebhookTarget;
use finality_sim::wire::Money;

const STRIPE_KEY: &str = "sk_test_finality_platform_key";
pub(super) const PLATFORM_WHSEC: &str = "whsec_connect_endpoint_secret_0";
pub(super) const WHSEC_A: &str = "whsec_account_a_endpoint_secret";
const WHSEC_B: &str = "whsec_account_b_endpoint_secret";
const WHSEC_C: &str = "whsec_account_c_endpoint_secret";
const ADYEN_COMPANY: &str = "11782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA011";
pub(super) const ADYEN_SHOP_A: &str =
    "22782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA022";
const ADYEN_SHOP_B: &str = "33782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA033";

/// The secrets, by the names the configuration gives (set once per process).
pub(super) fn secrets() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for (var, value) in [
            ("FINALITY_IT_ACCT_STRIPE_KEY", STRIPE_KEY),
            ("FINALITY_IT_ACCT_PLATFORM_WHSEC", PLATFORM_WHSEC),
            ("FINALITY_IT_ACCT_A_WHSEC", WHSEC_A),
            ("FINALITY_IT_ACCT_B_WHSEC", WHSEC_B),
            ("FINALITY_IT_ACCT_C_WHSEC", WHSEC_C),
            ("FINALITY_IT_ACCT_ADYEN_COMPANY", ADYEN_COMPANY),
            ("FINALITY_IT_ACCT_ADYEN_SHOP_A", ADYEN_SHOP_A),
            ("FINALITY_IT_ACCT_ADYEN_SHOP_B", ADYEN_SHOP_B),
        ] {
            std::env::set_var(var, value);
        }
    });
}

fn account(id: &str, whsec_env: &str) -> AccountSpec {
    AccountSpec {
        webhook_secret_envs: vec![whsec_env.into()],
        ..AccountSpec::named(id)
    }
}

/// Stripe as a Connect platform (its key acts for acct_A and acct_B with
/// `Stripe-Account`), and Adyen with merchant accounts ShopA and ShopB,
/// both configured as a `finality.toml` would, built by the same code.
pub(super) fn providers(sim_url: &str) -> Providers {
    providers_in(sim_url, None)
}

/// [`providers`], both set to `mode` (their live or test systems).
pub(super) fn providers_in(
    sim_url: &str,
    mode: Option<finality_providers::config::Mode>,
) -> Providers {
    secrets();
    let mut stripe = ProviderConfig::sim(&format!("{sim_url}/stripe"));
    stripe.adapter = Adapter::Stripe {
        merchant_ref_key: None,
    };
    stripe.api_key_env = Some("FINALITY_IT_ACCT_STRIPE_KEY".into());
    stripe.webhook_secret_envs = vec!["FINALITY_IT_ACCT_PLATFORM_WHSEC".into()];
    stripe.schedule_override = Some(Schedule::Fixed {
        delays: vec![Duration::from_millis(250)],
    });
    stripe.accounts = vec![
        account("acct_A", "FINALITY_IT_ACCT_A_WHSEC"),
        account("acct_B", "FINALITY_IT_ACCT_B_WHSEC"),
    ];
    stripe.mode = mode;
    stripe.validate().unwrap();
    let mut adyen = ProviderConfig::sim(sim_url);
    adyen.adapter = Adapter::Adyen {
        adyen: Default::default(),
    };
    adyen.webhook_secret_envs = vec!["FINALITY_IT_ACCT_ADYEN_COMPANY".into()];
    adyen.schedule_override = Some(Schedule::Fixed {
        delays: vec![Duration::from_secs(3600)],
    });
    adyen.accounts = vec![
        account("ShopA", "FINALITY_IT_ACCT_ADYEN_SHOP_A"),
        account("ShopB", "FINALITY_IT_ACCT_ADYEN_SHOP_B"),
    ];
    adyen.mode = mode;
    adyen.validate().unwrap();
    let mut map = Providers::new();
    for (name, cfg) in [("stripe", stripe), ("adyen", adyen)] {
        let adapter = finality_providers::config::build(name, &cfg).unwrap();
        let entry = ProviderEntry::named(name, adapter, &cfg);
        assert!(entry.accounts.file_errors().is_empty());
        map.insert(name.into(), entry);
    }
    map
}

pub(super) fn sim_config() -> SimConfig {
    let mut c = SimConfig::deterministic(Duration::from_millis(1500));
    c.webhooks.lost = 0.0;
    c.webhooks.delayed = 0.0;
    c.webhooks.duplicated = 0.0;
    c.webhooks.reordered = 0.0;
    c.api_key = Some(STRIPE_KEY.into());
    c
}

pub(super) const USD: Money<'static> = Money {
    amount: 1999,
    currency: "USD",
};

impl TestApp {
    /// Create `provider_ref` at the simulated provider for `account` and
    /// register it here under that account.
    pub(super) async fn register_for(
        &self,
        provider: &str,
        id: &str,
        provider_ref: &str,
        account: &str,
    ) {
        self.sim
            .create_priced(Some(provider_ref.into()), None, USD.amount, USD.currency);
        self.sim.assign_account(provider_ref, account);
        let body = json!({"id": id, "provider": provider, "provider_ref": provider_ref,
                          "account": account, "amount": USD.amount, "currency": USD.currency});
        let (s, v) = self.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        assert_eq!(v["account"], account, "{v}");
    }

    pub(super) async fn post_webhook(
        &self,
        provider: &str,
        headers: &[(&str, String)],
        body: String,
    ) -> (StatusCode, String) {
        let mut req = self
            .http
            .post(format!("{}/webhooks/{provider}", self.base))
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.unwrap();
        (resp.status(), resp.text().await.unwrap())
    }
}

fn now_s() -> i64 {
    SystemClock.now().millis() / 1000
}

/// A Connect event for `pi` naming `account`, signed with `secret`.
pub(super) fn connect_event(
    event_id: &str,
    pi: &str,
    account: &str,
    secret: &str,
) -> (Vec<(&'static str, String)>, String) {
    let mut e = finality_sim::wire::stripe_event(event_id, now_s(), pi, None, "succeeded", USD);
    e["account"] = json!(account);
    let body = e.to_string();
    let sig = stripe_sign(secret, now_s(), body.as_bytes());
    (vec![("stripe-signature", sig)], body)
}

pub(super) fn adyen_item(key_hex: &str, merchant_account: &str, psp: &str) -> String {
    let key = finality_providers::adyen::decode_key(key_hex).unwrap();
    finality_sim::wire::adyen_notification(&key, merchant_account, psp, None, "succeeded", USD)
        .unwrap()
        .to_string()
}

finality_testkit::on_both_backends!(
    each_account_verified_with_its_own_secret,
    a_401_for_one_account_leaves_the_other_polling,
);

async fn each_account_verified_with_its_own_secret(b: Backend) {
    let app = spawn_app_custom(b, sim_config(), false, providers).await;
    // The simulator signs each connected account's events with its own
    // endpoint's secret and names the account in them.
    app.sim.set_stripe_account_secret("acct_A", WHSEC_A);
    app.sim.set_stripe_account_secret("acct_B", WHSEC_B);
    app.sim.set_webhook_target(WebhookTarget::stripe(
        format!("{}/webhooks/stripe", app.base),
        PLATFORM_WHSEC,
    ));
    app.sim.spawn_webhook_sender(app.stop.clone());
    app.register_for("stripe", "order_a", "pi_3AcctA", "acct_A")
        .await;
    app.register_for("stripe", "order_b", "pi_3AcctB", "acct_B")
        .await;
    for id in ["order_a", "order_b"] {
        let v = app.wait_for_status(id, "succeeded").await;
        assert_eq!(v["history"][1]["source"], "webhook", "{v}");
    }
    let (_, a) = app.get("/v1/payments/order_a").await;
    assert_eq!(
        a["history"][1]["event_id"], "evt_pi_3AcctA_succeeded",
        "{a}"
    );

    // Signed with acct_A's secret, naming acct_B: verified with acct_B's
    // secret, so refused; nothing stored.
    app.register_for("stripe", "order_b2", "pi_3AcctB2", "acct_B")
        .await;
    let (h, body) = connect_event("evt_cross", "pi_3AcctB2", "acct_B", WHSEC_A);
    let (s, text) = app.post_webhook("stripe", &h, body).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{text}");
    assert!(app
        .db
        .store
        .inbox_get("stripe", "evt_cross")
        .await
        .unwrap()
        .is_none());
    // The platform's own secret does not pass for an account with its own.
    let (h, body) = connect_event("evt_platform", "pi_3AcctB2", "acct_B", PLATFORM_WHSEC);
    assert_eq!(
        app.post_webhook("stripe", &h, body).await.0,
        StatusCode::UNAUTHORIZED
    );
    // An account the provider does not have, signed with another
    // account's secret: verified with the credentials that could verify
    // it (the platform's), so refused, with the very body a bad signature
    // of a known account gets (no oracle of configured account ids).
    let (_, known_bad) = {
        let (h, body) = connect_event("evt_bad_b", "pi_3AcctB2", "acct_B", WHSEC_A);
        app.post_webhook("stripe", &h, body).await
    };
    let (h, body) = connect_event("evt_unknown", "pi_3AcctZ", "acct_Z", WHSEC_B);
    let (s, text) = app.post_webhook("stripe", &h, body).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{text}");
    assert_eq!(text, known_bad);
    assert!(app
        .db
        .store
        .inbox_get("stripe", "evt_unknown")
        .await
        .unwrap()
        .is_none());
    // acct_B's own secret applies it.
    let (h, body) = connect_event("evt_b2_ok", "pi_3AcctB2", "acct_B", WHSEC_B);
    assert_eq!(app.post_webhook("stripe", &h, body).await.0, StatusCode::OK);
    let v = app.wait_for_status("order_b2", "succeeded").await;
    assert_eq!(v["history"][0]["event_id"], "evt_b2_ok", "{v}");

    // Signed by the platform's Connect endpoint: verifiable, so accepted
    // and parked under acct_Z, never applied to anyone else's payment.
    let (h, body) = connect_event("evt_z_parked", "pi_3AcctZ", "acct_Z", PLATFORM_WHSEC);
    let (s, text) = app.post_webhook("stripe", &h, body).await;
    assert_eq!(s, StatusCode::OK, "{text}");
    let parked = app
        .db
        .store
        .inbox_get("stripe", "evt_z_parked")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        parked.state,
        finality_store::InboxState::Parked,
        "{parked:?}"
    );
    assert_eq!(parked.account.as_deref(), Some("acct_Z"));
    let metrics = app.metrics().await;
    assert!(
        metrics.contains(r#"finality_webhooks_parked_total{provider="stripe"}"#),
        "{metrics}"
    );
    // acct_A's own event naming acct_B's object: stored as acct_A's fact,
    // found nothing in acct_A, and acct_B's payment is untouched.
    let body = json!({"id": "order_b3", "provider": "stripe", "provider_ref": "pi_3AcctB3",
                      "account": "acct_B", "amount": USD.amount, "currency": USD.currency});
    assert_eq!(app.post("/v1/payments", body).await.0, StatusCode::CREATED);
    let (h, body) = connect_event("evt_a_names_b", "pi_3AcctB3", "acct_A", WHSEC_A);
    assert_eq!(app.post_webhook("stripe", &h, body).await.0, StatusCode::OK);
    let row = app
        .wait_inbox_state("stripe", "evt_a_names_b", "orphaned")
        .await;
    assert!(
        row.reason.as_deref().unwrap_or_default().contains("acct_A"),
        "{row:?}"
    );
    let (_, b3) = app.get("/v1/payments/order_b3").await;
    assert_eq!(b3["status"], "pending", "{b3}");
    // acct_Z added at run time: its parked event is applied to its payment.
    let (s, v) = app
        .post(
            "/v1/accounts",
            json!({"provider": "stripe", "id": "acct_Z"}),
        )
        .await;
    assert!(s.is_success(), "{v}");
    let body = json!({"id": "order_z", "provider": "stripe", "provider_ref": "pi_3AcctZ",
                      "account": "acct_Z", "amount": USD.amount, "currency": USD.currency});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let z = app.wait_for_status("order_z", "succeeded").await;
    assert_eq!(z["history"][0]["event_id"], "evt_z_parked", "{z}");

    // Adyen: each merchant account's notifications carry its own HMAC.
    for (id, psp, shop) in [
        ("ady_a", "8816178952380601", "ShopA"),
        ("ady_b", "8816178952380602", "ShopB"),
    ] {
        app.register_for("adyen", id, psp, shop).await;
    }
    let (s, text) = app
        .post_webhook(
            "adyen",
            &[],
            adyen_item(ADYEN_SHOP_A, "ShopA", "8816178952380601"),
        )
        .await;
    assert_eq!((s, text.as_str()), (StatusCode::OK, "[accepted]"));
    // ShopB's notification signed with ShopA's key: refused.
    let (s, _) = app
        .post_webhook(
            "adyen",
            &[],
            adyen_item(ADYEN_SHOP_A, "ShopB", "8816178952380602"),
        )
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = app
        .post_webhook(
            "adyen",
            &[],
            adyen_item(ADYEN_SHOP_B, "ShopB", "8816178952380602"),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let a = app.wait_for_status("ady_a", "succeeded").await;
    let b = app.wait_for_status("ady_b", "succeeded").await;
    assert_eq!(a["account"], "ShopA");
    assert_eq!(b["account"], "ShopB");
    // An unknown merchant account, signed with the company key: accepted
    // (Adyen holds an endpoint's later notifications behind one it is
    // refused) and parked.
    let (s, text) = app
        .post_webhook(
            "adyen",
            &[],
            adyen_item(ADYEN_COMPANY, "ShopZ", "8816178952380603"),
        )
        .await;
    assert_eq!((s, text.as_str()), (StatusCode::OK, "[accepted]"));

    // ShopA and ShopB both use merchant reference order-1001: each
    // registers it, and ShopB's AUTHORISATION settles ShopB's alone.
    for (id, shop) in [("ref_a", "ShopA"), ("ref_b", "ShopB")] {
        let body = json!({"id": id, "provider": "adyen", "merchant_ref": "order-1001",
                          "account": shop, "amount": USD.amount, "currency": USD.currency});
        let (s, v) = app.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }
    let key = finality_providers::adyen::decode_key(ADYEN_SHOP_B).unwrap();
    let item = finality_sim::wire::adyen_notification(
        &key,
        "ShopB",
        "8816178952381001",
        Some("order-1001"),
        "succeeded",
        USD,
    )
    .unwrap();
    let (s, _) = app.post_webhook("adyen", &[], item.to_string()).await;
    assert_eq!(s, StatusCode::OK);
    let b = app.wait_for_status("ref_b", "succeeded").await;
    assert_eq!(b["provider_ref"], "8816178952381001", "{b}");
    let (_, a) = app.get("/v1/payments/ref_a").await;
    assert_eq!(a["status"], "pending", "{a}");
    assert!(a["provider_ref"].is_null(), "{a}");

    // The feed's events say whose payment it was.
    let (_, feed) = app.get("/v1/events?limit=100").await;
    let accounts: Vec<&str> = feed["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["payment_id"] == "order_a")
        .map(|e| e["account"].as_str().unwrap())
        .collect();
    assert_eq!(accounts, vec!["acct_A", "acct_A"], "{feed}");
}

async fn a_401_for_one_account_leaves_the_other_polling(b: Backend) {
    let app = spawn_app_custom(b, sim_config(), true, providers).await;
    // The platform's access to acct_A was revoked at Stripe.
    app.sim.revoke_account("acct_A");
    app.register_for("stripe", "rev_a", "pi_3RevokedA", "acct_A")
        .await;
    app.register_for("stripe", "live_b", "pi_3LiveB", "acct_B")
        .await;
    let v = app.wait_for_status("live_b", "succeeded").await;
    assert_eq!(v["history"][1]["source"], "status_query", "{v}");
    // acct_A is paused on its own, as /readyz and the accounts list say.
    let ready = app.wait_paused("stripe/acct_A").await;
    assert!(ready["paused_providers"]["stripe"].is_null(), "{ready}");
    assert!(
        ready["paused_providers"]["stripe/acct_A"]["reason"]
            .as_str()
            .unwrap()
            .contains("401"),
        "{ready}"
    );
    let (_, list) = app.get("/v1/accounts").await;
    let a = list["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "acct_A")
        .unwrap()
        .clone();
    assert!(a["paused_until"].is_string(), "{list}");
    // The paused account's payment spent nothing and is not in review; a
    // payment of acct_B registered after the pause still settles.
    let (_, v) = app.get("/v1/payments/rev_a").await;
    assert_eq!(v["status"], "pending", "{v}");
    assert_eq!(v["poll"]["attempts"], 0, "{v}");
    app.register_for("stripe", "live_b2", "pi_3LiveB2", "acct_B")
        .await;
    app.wait_for_status("live_b2", "succeeded").await;
    // An unknown account is refused at registration, naming the field.
    let body = json!({"id": "nope", "provider": "stripe", "provider_ref": "pi_3Nope",
                      "account": "acct_Z", "amount": 100, "currency": "USD"});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"]["field"], "account", "{v}");
}

/// A second node on the same database, serving the API and polling.
async fn second_node(app: &TestApp, sim_url: &str) -> String {
    let store = finality_store::open(&app.db.url, 4).await.unwrap();
    let state = AppState {
        store,
        clock: Arc::new(SystemClock),
        providers: Arc::new(providers(sim_url)),
        health: Arc::new(Health::new()),
        tokens: Arc::new(Tokens::shared(TOKEN)),
        nudges: Arc::default(),
        throttle: Arc::default(),
        metrics: None,
        replica: None,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let background = finality_server::Background {
        engine: Some(EngineConfig {
            worker_id: "node-2".into(),
            ..EngineConfig::default()
        }),
        accounts_refresh: Some(Duration::from_millis(500)),
        ..Default::default()
    };
    tokio::spawn(finality_server::run(
        state,
        background,
        listener,
        app.stop.clone(),
    ));
    base
}

/// Node 1 (no engine) takes the new account over its API; node 2 (which
/// polls) learns it from the database within seconds and polls as it,
/// with the platform's key and `Stripe-Account: acct_C`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_added_by_the_api_is_used_by_another_node() {
    let sim_url = Arc::new(std::sync::Mutex::new(String::new()));
    let seen = sim_url.clone();
    let app = spawn_app_custom(Backend::Postgres, sim_config(), false, move |url| {
        *seen.lock().unwrap() = url.to_string();
        providers(url)
    })
    .await;
    let url = sim_url.lock().unwrap().clone();
    let node2 = second_node(&app, &url).await;

    // A secret file outside the directories secrets may be read from
    // (before: any file the process could read, `/proc/self/environ`
    // holding every other secret) is refused, naming the field.
    let (s, v) = app
        .post(
            "/v1/accounts",
            json!({"provider": "stripe", "id": "acct_C",
                   "webhook_secret_envs": ["/proc/self/environ"]}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"]["field"], "webhook_secret_envs", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("secret_dirs"),
        "{v}"
    );

    // A secret given as a value, not a variable's name, is refused
    // without being repeated.
    let (s, v) = app
        .post(
            "/v1/accounts",
            json!({"provider": "stripe", "id": "acct_C",
                                     "webhook_secret_envs": [WHSEC_C]}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"]["field"], "webhook_secret_envs", "{v}");
    assert!(!v.to_string().contains(WHSEC_C), "{v}");

    let (s, v) = app
        .post(
            "/v1/accounts",
            json!({"provider": "stripe", "id": "acct_C",
                                     "webhook_secret_envs": ["FINALITY_IT_ACCT_C_WHSEC"],
                                     "weight": 2}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(
        (v["origin"].as_str(), v["ready"].as_bool()),
        (Some("stored"), Some(true))
    );
    // Node 2 lists it within seconds, without a restart.
    let http = reqwest::Client::new();
    let started = std::time::Instant::now();
    loop {
        let list: Value = http
            .get(format!("{node2}/v1/accounts"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if list["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == "acct_C")
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{list}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Registered on node 1, polled by node 2 as acct_C (the simulator
    // answers 404 to a request for another account).
    app.register_for("stripe", "order_c", "pi_3AcctC", "acct_C")
        .await;
    let v = app.wait_for_status("order_c", "succeeded").await;
    assert_eq!(v["history"][1]["source"], "status_query", "{v}");

    // A change is audited with what it was and what it became.
    let (s, v) = app
        .post(
            "/v1/accounts",
            json!({"provider": "stripe", "id": "acct_C",
                   "webhook_secret_envs": ["FINALITY_IT_ACCT_C_WHSEC"], "weight": 3}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, audit) = app.get("/v1/audit?limit=10").await;
    let update = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "account_update")
        .unwrap_or_else(|| panic!("{audit}"))
        .clone();
    assert_eq!(update["detail"]["before"]["spec"]["weight"], 2, "{update}");
    assert_eq!(update["detail"]["after"]["spec"]["weight"], 3, "{update}");
    assert!(!update.to_string().contains(WHSEC_C), "{update}");

    // The audit trail has the addition; disabling it is audited too and
    // refuses its payments' registrations.
    let (s, v) = app
        .post("/v1/accounts/stripe/acct_C/disable", json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["disabled"], true, "{v}");
    let (_, audit) = app.get("/v1/audit?limit=10").await;
    let actions: Vec<&str> = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert!(
        actions.contains(&"account_add") && actions.contains(&"account_disable"),
        "{audit}"
    );
    let disable = &audit["records"][0];
    assert_eq!(disable["action"], "account_disable", "{audit}");
    assert_eq!(disable["detail"]["before"]["disabled"], false, "{disable}");
    assert_eq!(disable["detail"]["after"]["disabled"], true, "{disable}");
    let body = json!({"id": "order_c2", "provider": "stripe", "provider_ref": "pi_3AcctC2",
                      "account": "acct_C", "amount": 100, "currency": "USD"});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
}
