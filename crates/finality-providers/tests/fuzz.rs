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

/// A provider stand-in on loopback answering every status query with
/// whatever the current case put in `ANSWER` (status code and body);
/// PayPal's token endpoint answers with its SDK's recorded token reply.
struct AnswerServer {
    rt: tokio::runtime::Runtime,
    url: String,
    answer: std::sync::Arc<std::sync::Mutex<(u16, Vec<u8>)>>,
}

fn answers() -> &'static AnswerServer {
    static SERVER: std::sync::OnceLock<AnswerServer> = std::sync::OnceLock::new();
    SERVER.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let answer = std::sync::Arc::new(std::sync::Mutex::new((200, Vec::new())));
        let a2 = answer.clone();
        let token = common::json("paypal/api/node_sdk_mock_oauth2_token_response.json");
        let app = axum::Router::new()
            .route(
                "/v1/oauth2/token",
                axum::routing::post(move || {
                    let token = token.clone();
                    async move { axum::Json(token) }
                }),
            )
            .fallback(move || {
                let (code, body) = a2.lock().unwrap().clone();
                async move {
                    let code = axum::http::StatusCode::from_u16(code).unwrap();
                    (code, [("content-type", "application/json")], body)
                }
            });
        let url = rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", l.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(l, app).await });
            url
        });
        AnswerServer { rt, url, answer }
    })
}

/// Ask `provider` with the stand-in answering `code` and `body`: the
/// answer is an observation or a classified error, within the timeout.
fn ask(
    provider: &dyn Provider,
    target: &finality_providers::PollTarget<'_>,
    code: u16,
    body: Vec<u8>,
) -> Result<(), TestCaseError> {
    let s = answers();
    *s.answer.lock().unwrap() = (code, body);
    let started = std::time::Instant::now();
    let r = s.rt.block_on(provider.query_status(target));
    let limit = common::timeouts().total + Duration::from_secs(1);
    prop_assert!(started.elapsed() < limit, "took {:?}", started.elapsed());
    if let Err(e) = &r {
        // Classified: a class and a message naming what went wrong.
        prop_assert!(!e.to_string().is_empty());
        let _ = e.class();
    }
    if (200..300).contains(&code) {
        // A 2xx the adapter cannot read is an error or an unknown status,
        // never a decision taken from garbage it could not parse.
        if let Ok(o) = &r {
            prop_assert!(
                o.provider_status.len() <= 4096,
                "{} bytes kept",
                o.provider_status.len()
            );
        }
    }
    Ok(())
}

/// Status codes a provider answers with, weighted towards 200.
fn answer_code() -> impl Strategy<Value = u16> {
    prop_oneof![
        6 => Just(200u16),
        1 => prop::sample::select(vec![201u16, 204, 400, 401, 404, 409, 429, 500, 502, 503]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Stripe's status answers: mutations of its published PaymentIntent,
    /// refund and payout objects, and arbitrary bytes.
    #[test]
    fn stripe_query_answers(
        code in answer_code(),
        pi in mutated(common::testdata("stripe/payment_intent.json")),
        re in mutated(common::testdata("stripe/refund.json")),
        po in mutated(common::testdata("stripe/payout.json")),
        junk in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let a = finality_providers::stripe::StripeAdapter::new(
            &answers().url, "sk_test_fuzz".into(), common::timeouts()).unwrap();
        use finality_core::Kind;
        use finality_providers::PollTarget;
        ask(&a, &PollTarget::by_provider_ref("p", "pi_3MtwBwLkdIwHu7ix28a3tqPa", Kind::Payment), code, pi)?;
        ask(&a, &PollTarget::by_provider_ref("p", "re_1Nispe2eZvKYlo2Cd31jOCgZ", Kind::Refund), code, re)?;
        ask(&a, &PollTarget::by_provider_ref("p", "po_1OaFDbEcg9tTZuTg", Kind::Payout), code, po)?;
        ask(&a, &PollTarget::by_provider_ref("p", "pi_x", Kind::Payment), code, junk)?;
    }

    /// PayPal's: mutations of its documented order answer, and junk.
    #[test]
    fn paypal_query_answers(
        code in answer_code(),
        order in mutated(common::testdata("paypal/api/docs_multibanco_GET_order_COMPLETED_capture_PENDING.json")),
        junk in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let a = finality_providers::paypal::PayPalAdapter::new(
            &answers().url, "client:secret", None, common::timeouts()).unwrap();
        use finality_core::Kind;
        use finality_providers::PollTarget;
        ask(&a, &PollTarget::by_provider_ref("p", "5O190127TN364715T", Kind::Payment), code, order)?;
        ask(&a, &PollTarget::by_provider_ref("p", "5O190127TN364715T", Kind::Payment), code, junk)?;
    }

    /// Bakong's: mutations of the NBC document's found and not-found
    /// answers, and junk.
    #[test]
    fn bakong_query_answers(
        code in answer_code(),
        found in mutated(common::testdata("bakong/nbc_doc_sample_check_transaction_by_md5_success.json")),
        missing in mutated(common::testdata("bakong/nbc_doc_sample_check_transaction_not_found.json")),
        junk in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let a = finality_providers::bakong::BakongAdapter::new(
            &answers().url, "token".into(), common::timeouts()).unwrap();
        use finality_core::Kind;
        use finality_providers::PollTarget;
        let t = PollTarget::by_provider_ref("p", "dfcabf4598d1c405a75540a3d4ca099d", Kind::Payment);
        ask(&a, &t, code, found)?;
        ask(&a, &t, code, missing)?;
        ask(&a, &t, code, junk)?;
    }
}
