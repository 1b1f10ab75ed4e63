//! Every parser that takes a provider's bytes, fed arbitrary input and
//! mutations of the providers' own published examples (proptest): each
//! answers `Ok` or a classified error, never panics, and stays fast. A
//! mutated body that still verifies would be a forgery: none does.
#![allow(clippy::unwrap_used)]

mod common;

use finality_core::Timestamp;
use finality_providers::webhook::stripe::{parse_events, StripeSignature};
use finality_providers::webhook::{standard::StandardWebhooks, WebhookError};
use finality_providers::Provider;
use proptest::prelude::*;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::time::Duration;

const STRIPE_SECRET: &str = "whsec_fuzz_secret_0123456789";
const STANDARD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ADYEN_KEY: &str = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

fn now() -> Timestamp {
    Timestamp(1_767_225_600_000)
}

/// Headers from arbitrary names and values (the ones HTTP can carry).
fn headers(pairs: &[(String, Vec<u8>)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_bytes(v),
        ) {
            h.append(k, v);
        }
    }
    h
}

/// Signature-ish header names every scheme reads, with arbitrary values.
fn scheme_headers() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let names = prop::sample::select(vec![
        "stripe-signature",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "wechatpay-signature",
        "wechatpay-serial",
        "wechatpay-timestamp",
        "wechatpay-nonce",
        "paypal-transmission-id",
        "content-type",
        "x-signature",
    ]);
    prop::collection::vec(
        (
            names.prop_map(String::from),
            prop::collection::vec(any::<u8>(), 0..200),
        ),
        0..8,
    )
}

/// A published example with a few bytes changed, inserted or cut.
fn mutated(base: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let len = base.len().max(1);
    prop::collection::vec((0..len, any::<u8>(), 0u8..3), 1..6).prop_map(move |edits| {
        let mut b = base.clone();
        for (at, byte, op) in edits {
            let at = at.min(b.len());
            match op {
                0 if at < b.len() => b[at] = byte,
                1 => b.insert(at, byte),
                _ => {
                    b.truncate(at);
                }
            }
        }
        b
    })
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn stripe() -> finality_providers::stripe::StripeAdapter {
    finality_providers::stripe::StripeAdapter::new(
        "http://127.0.0.1:9",
        "sk_test_fuzz".into(),
        common::timeouts(),
    )
    .unwrap()
    .with_webhooks(
        StripeSignature::new(vec![STRIPE_SECRET.into()], Duration::from_secs(300)).unwrap(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Stripe: any body under any headers is rejected or parsed; the
    /// parser alone takes any bytes, and mutations of Stripe's own
    /// published event without panicking.
    #[test]
    fn stripe_bodies_and_headers(
        h in scheme_headers(),
        body in prop::collection::vec(any::<u8>(), 0..2048),
        m in mutated(common::testdata("stripe/customer.created.json")),
    ) {
        let a = stripe();
        let r = rt().block_on(a.verify_webhook(&headers(&h), &body, now()));
        prop_assert!(matches!(r, Err(WebhookError::Rejected { .. })), "{r:?}");
        let _ = parse_events(&body, "merchant_ref");
        let _ = parse_events(&m, "merchant_ref");
        // Signed correctly, any mutated body parses or is unparseable.
        let t = now().0 / 1000;
        let sig = finality_providers::webhook::stripe::sign(STRIPE_SECRET, t, &m);
        let signed = common::headers(&[("stripe-signature", &sig)]);
        let r = rt().block_on(a.verify_webhook(&signed, &m, now()));
        prop_assert!(!matches!(r, Err(WebhookError::Rejected { .. })), "{r:?}");
    }

    /// Standard Webhooks (the simulator's and generic providers' scheme).
    #[test]
    fn standard_webhooks_headers(
        h in scheme_headers(),
        body in prop::collection::vec(any::<u8>(), 0..1024),
    ) {
        let v = StandardWebhooks::new(&[STANDARD_SECRET.to_string()], Duration::from_secs(300)).unwrap();
        let r = v.verify(&headers(&h), &body, now());
        prop_assert!(r.is_err());
    }

    /// Adyen: any body is turned away or kept for review item by item;
    /// mutations of its documented notification never panic.
    #[test]
    fn adyen_bodies(
        body in prop::collection::vec(any::<u8>(), 0..2048),
        h in scheme_headers(),
    ) {
        let a = finality_providers::adyen::AdyenAdapter::new(&[ADYEN_KEY.into()]).unwrap();
        let _ = rt().block_on(a.verify_webhook(&headers(&h), &body, now()));
    }

    /// PayPal's event parser (verification is PayPal's own answer): any
    /// bytes, and mutations of a documented capture event.
    #[test]
    fn paypal_events(
        body in prop::collection::vec(any::<u8>(), 0..2048),
        m in mutated(common::testdata("paypal/webhook_events/docs_trustly_PAYMENT.CAPTURE.COMPLETED.json")),
    ) {
        use finality_providers::paypal::{parse_event, PaymentObject};
        let _ = parse_event(&body, PaymentObject::Orders);
        let _ = parse_event(&m, PaymentObject::Captures);
    }

    /// WeChat Pay: arbitrary signature headers and bodies are rejected.
    #[test]
    fn wechat_bodies_and_headers(
        h in scheme_headers(),
        body in prop::collection::vec(any::<u8>(), 0..1024),
    ) {
        let a = common::wechat_adapter("http://127.0.0.1:9", Some("D7CE59D1F522D701"));
        let r = rt().block_on(a.verify_webhook(&headers(&h), &body, now()));
        prop_assert!(r.is_err());
    }

    /// Alipay: arbitrary form bodies are rejected (nothing signs them).
    #[test]
    fn alipay_forms(
        body in "[a-z_=&%0-9A-Z+/]{0,600}",
        m in mutated(common::testdata("alipay/nodejs_sdk_notify_trade_status_sync_TRADE_SUCCESS.DERIVED.form.txt")),
    ) {
        let a = common::alipay_adapter(
            "2019073166072302",
            "alipay/nodejs_sdk_notify_test_inline_public_key_trade_status_sync.pem",
        );
        let r = rt().block_on(a.verify_webhook(&HeaderMap::new(), body.as_bytes(), now()));
        prop_assert!(r.is_err());
        let _ = rt().block_on(a.verify_webhook(&HeaderMap::new(), &m, now()));
    }
}
