//! Platforms that act for merchants with one set of keys, through the HTTP
//! API: an Alipay integrator (ISV) with the `app_auth_token` each merchant
//! granted, and a WeChat Pay service provider with its sub-merchants
//! (`sub_mchid`). Each merchant's payments are queried as that merchant's,
//! its notifications routed to it; a merchant whose grant was withdrawn
//! pauses alone.

use super::accounts::{secrets, sim_config};
use super::*;

finality_testkit::on_both_backends!(
    alipay_integrator_acts_for_each_merchant_with_its_token,
    wechat_service_provider_acts_for_each_sub_merchant,
);

/// Wait until the account `scope` (`provider/account`) is paused, and
/// check its provider is not: its pause reason.
async fn account_paused(app: &TestApp, scope: &str) -> String {
    let ready = app.wait_paused(scope).await;
    let provider = scope.split('/').next().unwrap_or_default();
    assert!(ready["paused_providers"][provider].is_null(), "{ready}");
    ready["paused_providers"][scope]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Alipay, an integrator (ISV): one app of its own, acting for two
/// merchants with the `app_auth_token` each granted. The simulator answers
/// a merchant's trade only to a call carrying that merchant's token; the
/// merchant whose token is no longer valid gets Alipay's `20001
/// aop.invalid-app-auth-token`, which pauses that account alone.
async fn alipay_integrator_acts_for_each_merchant_with_its_token(b: Backend) {
    use finality_sim::wire::wechat_keys as k;
    secrets();
    for (var, value) in [
        ("FINALITY_IT_ACCT_ALIPAY_KEY", k::MERCHANT_PRIVATE_PEM),
        ("FINALITY_IT_ACCT_ALIPAY_PUBLIC", k::PLATFORM_PUBLIC_PEM),
        (
            "FINALITY_IT_ACCT_ALIPAY_TOKEN_2",
            "202302BBbcfad868001a4df3bbfa99e8a6913F10",
        ),
        (
            "FINALITY_IT_ACCT_ALIPAY_TOKEN_3",
            "201510BBaabdb44d8fd04607abf8d5931ec75D84",
        ),
    ] {
        std::env::set_var(var, value);
    }
    let app = spawn_app_custom(b, sim_config(), true, |sim_url| {
        let cfg: ProviderConfig = serde_json::from_value(json!({
            "adapter": "alipay",
            "base_url": format!("{sim_url}/alipay/gateway.do"),
            "schedule": {"kind": "fixed", "delays": ["250ms"]},
            "alipay": {"app_id": "2021000000000001",
                       "private_key_env": "FINALITY_IT_ACCT_ALIPAY_KEY",
                       "alipay_public_key_env": "FINALITY_IT_ACCT_ALIPAY_PUBLIC"},
            "accounts": [
                {"id": "2021000000000002", "app_auth_token_env": "FINALITY_IT_ACCT_ALIPAY_TOKEN_2"},
                {"id": "2021000000000003", "app_auth_token_env": "FINALITY_IT_ACCT_ALIPAY_TOKEN_3"}
            ]
        }))
        .unwrap();
        cfg.validate().unwrap();
        let adapter = finality_providers::config::build("alipay", &cfg).unwrap();
        let entry = ProviderEntry::named("alipay", adapter, &cfg);
        assert!(entry.accounts.file_errors().is_empty());
        let mut providers = Providers::new();
        providers.insert("alipay".into(), entry);
        providers
    })
    .await;
    app.sim.set_alipay_app_auth_token(
        "2021000000000002",
        "202302BBbcfad868001a4df3bbfa99e8a6913F10",
    );
    // Merchant 3 withdrew its grant: the token finality holds is no longer it.
    app.sim.set_alipay_app_auth_token(
        "2021000000000003",
        "201510BBwithdrawn00000000000000000000000",
    );
    for (id, trade, order, merchant) in [
        ("ali_m2", "s_m2", "20261204000000002", "2021000000000002"),
        ("ali_m3", "s_m3", "20261204000000003", "2021000000000003"),
    ] {
        app.sim
            .create_priced(Some(trade.into()), Some(order.into()), 1999, "CNY");
        app.sim.assign_account(trade, merchant);
        let body = json!({"id": id, "provider": "alipay", "merchant_ref": order,
                          "account": merchant, "amount": 1999, "currency": "CNY"});
        let (s, v) = app.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }
    let v = app.wait_for_status("ali_m2", "succeeded").await;
    assert_eq!(v["history"][0]["source"], "status_query", "{v}");
    assert_eq!(v["account"], "2021000000000002", "{v}");
    let reason = account_paused(&app, "alipay/2021000000000003").await;
    assert!(reason.contains("aop.invalid-app-auth-token"), "{reason}");
    let (_, v) = app.get("/v1/payments/ali_m3").await;
    assert_eq!(v["status"], "pending", "{v}");

    // An order Alipay does not show to queries yet, settled by merchant
    // 2's notification. Merchant 3's notification naming the same order
    // (verified: Alipay signs every merchant's with its own key; the
    // integrator's `app_id`, merchant 3's `auth_app_id`) is merchant 3's
    // fact, which finds none of merchant 3's payments.
    let body = json!({"id": "ali_m2b", "provider": "alipay", "merchant_ref": "20261204000000004",
                      "account": "2021000000000002", "amount": 1999, "currency": "CNY"});
    let (s, v) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let notify = |notify_id: &str, merchant: &str| {
        finality_sim::wire::alipay_notification_for(
            notify_id,
            "s_m4",
            "20261204000000004",
            "TRADE_SUCCESS",
            finality_sim::wire::Money {
                amount: 1999,
                currency: "CNY",
            },
            Some(merchant),
        )
        .unwrap()
    };
    let post = |body: String| {
        let req = app
            .http
            .post(format!("{}/webhooks/alipay", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        async move {
            let resp = req.send().await.unwrap();
            (resp.status(), resp.text().await.unwrap())
        }
    };
    let (s, text) = post(notify("ali-cross-0001", "2021000000000003")).await;
    assert_eq!((s, text.as_str()), (StatusCode::OK, "success"));
    let row = app
        .wait_inbox_state("alipay", "ali-cross-0001", "orphaned")
        .await;
    assert_eq!(row.account.as_deref(), Some("2021000000000003"), "{row:?}");
    let (_, v) = app.get("/v1/payments/ali_m2b").await;
    assert_eq!(v["status"], "pending", "{v}");
    let (s, text) = post(notify("ali-own-0001", "2021000000000002")).await;
    assert_eq!((s, text.as_str()), (StatusCode::OK, "success"));
    let v = app.wait_for_status("ali_m2b", "succeeded").await;
    assert_eq!(v["history"][0]["source"], "webhook", "{v}");
}

/// WeChat Pay, a service provider (`mchid` 1900000109, the simulator's)
/// acting for sub-merchants 1900000201 and 1900000202 with its own keys.
/// Each order is queried on the partner path naming its `sub_mchid`; the
/// sub-merchant whose authorization was withdrawn (403 `NO_AUTH`) pauses
/// alone; a sub-merchant's notification, which names it only inside the
/// encrypted resource, is applied to its payment; one for a sub-merchant
/// not set up is refused and counted.
async fn wechat_service_provider_acts_for_each_sub_merchant(b: Backend) {
    use finality_sim::wire::wechat_keys as k;
    for (var, value) in [
        ("FINALITY_IT_ACCT_WECHAT_KEY", k::MERCHANT_PRIVATE_PEM),
        ("FINALITY_IT_ACCT_WECHAT_PLATFORM", k::PLATFORM_PUBLIC_PEM),
        ("FINALITY_IT_ACCT_WECHAT_APIV3", k::API_V3_KEY),
    ] {
        std::env::set_var(var, value);
    }
    let app = spawn_app_custom(b, sim_config(), true, |sim_url| {
        let cfg: ProviderConfig = serde_json::from_value(json!({
            "adapter": "wechat",
            "base_url": format!("{sim_url}/wechat"),
            "schedule": {"kind": "fixed", "delays": ["250ms"]},
            "wechat": {"mchid": k::MCHID, "serial_no": k::SERIAL_NO,
                       "private_key_env": "FINALITY_IT_ACCT_WECHAT_KEY",
                       "platform_public_key_env": "FINALITY_IT_ACCT_WECHAT_PLATFORM",
                       "api_v3_key_env": "FINALITY_IT_ACCT_WECHAT_APIV3"},
            "accounts": [{"id": "1900000201"}, {"id": "1900000202"}]
        }))
        .unwrap();
        cfg.validate().unwrap();
        let adapter = finality_providers::config::build("wechat", &cfg).unwrap();
        let entry = ProviderEntry::named("wechat", adapter, &cfg);
        assert!(entry.accounts.file_errors().is_empty());
        let mut providers = Providers::new();
        providers.insert("wechat".into(), entry);
        providers
    })
    .await;
    app.sim.revoke_account("1900000202");
    let node = &app;
    let register = |id: &'static str, order: &'static str, sub: &'static str| {
        let body = json!({"id": id, "provider": "wechat", "merchant_ref": order,
                          "account": sub, "amount": 1999, "currency": "CNY"});
        async move {
            let (s, v) = node.post("/v1/payments", body).await;
            assert_eq!(s, StatusCode::CREATED, "{v}");
        }
    };
    for (id, sim_id, order, sub) in [
        ("wx_s1", "s_wxs1", "20261204100000001", "1900000201"),
        ("wx_s2", "s_wxs2", "20261204100000002", "1900000202"),
    ] {
        app.sim
            .create_priced(Some(sim_id.into()), Some(order.into()), 1999, "CNY");
        app.sim.assign_account(sim_id, sub);
        register(id, order, sub).await;
    }
    let v = app.wait_for_status("wx_s1", "succeeded").await;
    assert_eq!(v["history"][0]["source"], "status_query", "{v}");
    assert_eq!(v["account"], "1900000201", "{v}");
    assert_eq!(v["provider_ref"], "4200s_wxs1", "{v}");
    let reason = account_paused(&app, "wechat/1900000202").await;
    assert!(reason.contains("NO_AUTH"), "{reason}");
    let (_, v) = app.get("/v1/payments/wx_s2").await;
    assert_eq!(v["status"], "pending", "{v}");

    // An order WeChat Pay has not shown yet to queries, settled by the
    // sub-merchant's notification.
    register("wx_s3", "20261204100000003", "1900000201").await;
    let key: [u8; 32] = k::API_V3_KEY.as_bytes().try_into().unwrap();
    let notify = |event: &str, sub: &str| {
        let ts = SystemClock.now().millis() / 1000;
        let m = finality_sim::wire::Money {
            amount: 1999,
            currency: "CNY",
        };
        finality_sim::wire::wechat_notification(
            &key,
            event,
            "s_wxs3",
            "20261204100000003",
            "succeeded",
            ts,
            m,
            Some(sub),
        )
        .unwrap()
    };
    let post = |(body, headers): (String, Vec<(&'static str, String)>)| {
        let mut req = node
            .http
            .post(format!("{}/webhooks/wechat", node.base))
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        async move {
            let resp = req.send().await.unwrap();
            (resp.status(), resp.text().await.unwrap())
        }
    };
    // A sub-merchant not set up: signed with the service provider's keys,
    // so verifiable: acknowledged and parked under that sub-merchant.
    let (s, text) = post(notify("EV-SUB-UNKNOWN-01", "1900000299")).await;
    assert_eq!(s, StatusCode::OK, "{text}");
    let parked = app
        .db
        .store
        .inbox_get("wechat", "EV-SUB-UNKNOWN-01")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        parked.state,
        finality_store::InboxState::Parked,
        "{parked:?}"
    );
    assert_eq!(parked.account.as_deref(), Some("1900000299"));
    // Sub-merchant 1900000202's notification naming 1900000201's order
    // (verified: WeChat Pay signs every sub-merchant's with the service
    // provider's keys): 1900000202's fact, which finds none of its own
    // payments; 1900000201's payment is untouched.
    let (s, text) = post(notify("EV-SUB-CROSS-0001", "1900000202")).await;
    assert_eq!(s, StatusCode::OK, "{text}");
    let row = app
        .wait_inbox_state("wechat", "EV-SUB-CROSS-0001", "orphaned")
        .await;
    assert_eq!(row.account.as_deref(), Some("1900000202"), "{row:?}");
    let (_, v) = app.get("/v1/payments/wx_s3").await;
    assert_eq!(v["status"], "pending", "{v}");
    let (s, text) = post(notify("EV-SUB-0000000001", "1900000201")).await;
    assert_eq!(s, StatusCode::OK, "{text}");
    let v = app.wait_for_status("wx_s3", "succeeded").await;
    assert_eq!(v["history"][0]["source"], "webhook", "{v}");
    assert_eq!(v["provider_ref"], "4200s_wxs3", "{v}");
    let metrics = app.metrics().await;
    assert!(
        metrics.contains(r#"finality_webhooks_parked_total{provider="wechat"}"#),
        "{metrics}"
    );
}
