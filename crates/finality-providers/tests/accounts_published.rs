//! Which account a webhook names, read from the providers' own published
//! examples (not the simulator's bodies): the account a body is routed to
//! and verified as (docs/ACCOUNTS.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use finality_providers::Provider;

mod common;

/// Stripe docs, Connect webhooks: "each event for a connected account will
/// also contain a top-level account property" — their example event.
#[test]
fn stripe_connect_event_names_its_account() {
    let body = br#"{ "id": "evt_lM9VeFmPyZfcU5", "livemode": true, "object": "event", "type": "customer.created", "account": "acct_CEPGWsGfA17C8J", "pending_webhooks": 2, "created": 1349654313, "data": {"object": {"id": "cus_x", "object": "customer"}} }"#;
    let a = finality_providers::stripe::StripeAdapter::new(
        "http://127.0.0.1:9",
        "sk_test_x".into(),
        common::timeouts(),
    )
    .unwrap();
    assert_eq!(
        a.webhook_account(body).as_deref(),
        Some("acct_CEPGWsGfA17C8J")
    );
    // A platform event (no `account`) is the provider's own.
    let platform = br#"{"id": "evt_1", "object": "event", "type": "customer.created", "data": {"object": {}}}"#;
    assert_eq!(a.webhook_account(platform), None);
}

/// adyen-java-api-library `src/test/resources/mocks/notification/
/// authorisation-true.json`: `merchantAccountCode` of its one item.
#[test]
fn adyen_notification_names_its_merchant_account() {
    let body = common::testdata("adyen/java_sdk_notification_authorisation-true.json");
    let key = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
    let a = finality_providers::adyen::AdyenAdapter::new(&[key.into()]).unwrap();
    assert_eq!(
        a.webhook_account(&body).as_deref(),
        Some("MagentoMerchantTest2")
    );
}

/// alipay-sdk-nodejs-all `test/alipay.test.ts` (`checkNotifySign`): a
/// notification carries `app_id` and `auth_app_id`; the merchant's app
/// (`auth_app_id`) routes it, `app_id` when it is absent.
#[test]
fn alipay_notification_names_the_merchants_app() {
    let a = common::alipay_adapter(
        "2019073166072302",
        "alipay/nodejs_sdk_notify_test_inline_public_key_trade_status_sync.pem",
    );
    let body = common::testdata(
        "alipay/nodejs_sdk_notify_trade_status_sync_TRADE_SUCCESS.DERIVED.form.txt",
    );
    assert_eq!(
        a.webhook_account(&body).as_deref(),
        Some("2019073166072302")
    );
    // Under an integrator, the merchant's app is `auth_app_id`.
    let isv = b"app_id=2019000000000000&auth_app_id=2021000000000002&trade_status=TRADE_SUCCESS";
    assert_eq!(a.webhook_account(isv).as_deref(), Some("2021000000000002"));
    assert_eq!(
        a.webhook_account(b"app_id=2019073166072302").as_deref(),
        Some("2019073166072302")
    );
}

/// WeChat Pay service provider docs, 支付通知: a sub-merchant's
/// notification, whose decrypted resource names `sp_mchid` 1230000109 and
/// `sub_mchid` 1900000109 (the docs' example, encrypted here under a
/// stand-in APIv3 key and signed with wechatpay-go's published test key as
/// platform key: the docs publish no key for it). The service provider's
/// adapter reads the sub-merchant to route it; that sub-merchant's adapter
/// applies it, another sub-merchant's or the merchant's own reports the
/// mismatch instead of applying it.
#[tokio::test]
async fn wechat_partner_notification_names_its_sub_merchant() {
    use finality_providers::wechat::{encrypt_resource, sign};
    use rsa::pkcs8::DecodePrivateKey;
    let plain =
        common::testdata("wechatpay/doc_partner_transaction_notification_resource_plaintext.json");
    let mut envelope =
        common::json("wechatpay/doc_transaction_notification_envelope_TRANSACTION.SUCCESS.json");
    let key = *b"0123456789abcdef0123456789abcdef";
    let r = &mut envelope["resource"];
    r["nonce"] = "fdasflkja484".into();
    r["associated_data"] = "transaction".into();
    r["ciphertext"] = encrypt_resource(&key, "fdasflkja484", "transaction", &plain).into();
    let body = envelope.to_string();
    let ts = 1_700_000_000;
    let platform =
        rsa::RsaPrivateKey::from_pkcs8_pem(&common::text("wechatpay/go_sdk_test_private_key.pem"))
            .unwrap();
    let headers = common::headers(&[
        ("wechatpay-timestamp", &ts.to_string()),
        ("wechatpay-nonce", "n1"),
        ("wechatpay-serial", "D7CE59D1F522D701"),
        (
            "wechatpay-signature",
            &sign(&platform, &format!("{ts}\nn1\n{body}\n")),
        ),
    ]);
    let serial = Some("D7CE59D1F522D701");
    let url = "http://127.0.0.1:9";
    let sp = common::wechat_adapter_for(url, serial, "1230000109", None);
    assert_eq!(
        sp.webhook_account(body.as_bytes()).as_deref(),
        Some("1900000109")
    );
    // A merchant's own notification (not decryptable here) names none.
    assert_eq!(
        sp.webhook_account(&common::testdata("wechatpay/go_sdk_notify_body.json")),
        None
    );

    let sub = common::wechat_adapter_for(url, serial, "1230000109", Some("1900000109"));
    let events = sub
        .verify_webhook(&headers, body.as_bytes(), common::at(ts))
        .await
        .unwrap();
    assert_eq!(events[0].status, Some(finality_core::Status::Succeeded));
    assert_eq!(
        events[0].merchant_ref.as_deref(),
        Some("1217752501201407033233368018")
    );
    assert_eq!(events[0].reported.mismatch, None);

    for (adapter, field) in [
        (
            common::wechat_adapter_for(url, serial, "1230000109", Some("1900000999")),
            "sub_mchid `1900000109`",
        ),
        (
            common::wechat_adapter_for(url, serial, "1230000999", Some("1900000109")),
            "sp_mchid `1230000109`",
        ),
        (sp, "sub_mchid `1900000109`"),
    ] {
        let events = adapter
            .verify_webhook(&headers, body.as_bytes(), common::at(ts))
            .await
            .unwrap();
        let why = events[0].reported.mismatch.clone().unwrap_or_default();
        assert!(why.contains(field), "{why}");
    }
}

/// Live or test, read from the providers' own published bodies: Stripe's
/// Connect example event above (`"livemode": true`), Stripe's documented
/// event (`testdata/stripe/event.json`, `"livemode": false`), and the
/// adyen-java-api-library notification mock (`"live": "false"`, see
/// `testdata/adyen/SOURCES.md`); and the key's own mode, from the prefix
/// Stripe's docs give ("Test mode secret keys have the prefix `sk_test_`
/// and live mode secret keys have the prefix `sk_live_`").
#[test]
fn live_or_test_is_read_as_the_providers_publish_it() {
    let stripe = |key: &str| {
        finality_providers::stripe::StripeAdapter::new(
            "http://127.0.0.1:9",
            key.into(),
            common::timeouts(),
        )
        .unwrap()
    };
    let connect = br#"{ "id": "evt_lM9VeFmPyZfcU5", "livemode": true, "object": "event", "type": "customer.created", "account": "acct_CEPGWsGfA17C8J", "pending_webhooks": 2, "created": 1349654313, "data": {"object": {"id": "cus_x", "object": "customer"}} }"#;
    let a = stripe("sk_test_x");
    assert_eq!(a.body_live(connect), Some(true));
    assert_eq!(
        a.body_live(&common::testdata("stripe/event.json")),
        Some(false)
    );
    assert_eq!(a.key_live(), Some(false));
    assert_eq!(stripe("sk_live_x").key_live(), Some(true));
    assert_eq!(stripe("rk_live_x").key_live(), Some(true));
    assert_eq!(stripe("not_a_prefix").key_live(), None);
    let adyen = finality_providers::adyen::AdyenAdapter::new(&[
        "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056".into(),
    ])
    .unwrap();
    assert_eq!(
        adyen.body_live(&common::testdata(
            "adyen/java_sdk_notification_refund-true.json"
        )),
        Some(false)
    );
}
