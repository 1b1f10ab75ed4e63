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
