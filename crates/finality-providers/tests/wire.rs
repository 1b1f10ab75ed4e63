//! What adapters put on the wire and check in answers, against a provider
//! stand-in served over real HTTP on loopback.
#![allow(clippy::unwrap_used)] // test code: a panic is how a test reports

use axum::http::HeaderMap;
use axum::routing::get;
use axum::Router;
use finality_core::{Kind, Status};
use finality_providers::{PollTarget, Provider, ProviderError};
use std::sync::{Arc, Mutex};

mod common;
use common::timeouts;

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Every Stripe request pins the API version the adapter's mappings follow,
/// and a payout is asked about at the payouts endpoint.
#[tokio::test]
async fn stripe_pins_its_version_and_asks_payouts_as_payouts() {
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let s2 = seen.clone();
    let app = Router::new().route(
        "/v1/payouts/{id}",
        get(
            move |headers: HeaderMap, axum::extract::Path(id): axum::extract::Path<String>| {
                let seen = s2.clone();
                async move {
                    let v = headers
                        .get("stripe-version")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    seen.lock().unwrap().push((id.clone(), v));
                    axum::Json(
                        serde_json::json!({"id": id, "object": "payout", "status": "in_transit"}),
                    )
                }
            },
        ),
    );
    let url = serve(app).await;
    let a = finality_providers::stripe::StripeAdapter::new(&url, "sk_test_wire".into(), timeouts())
        .unwrap();
    let o = a
        .query_status(&PollTarget::by_provider_ref(
            "p",
            "po_1OaFDbEcg9tTZuTg",
            Kind::Payout,
        ))
        .await
        .unwrap();
    assert_eq!(o.status, Some(Status::Processing));
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        &[(
            "po_1OaFDbEcg9tTZuTg".to_string(),
            finality_providers::stripe::STRIPE_VERSION.to_string()
        )]
    );
}

/// WeChat Pay answers are checked like notifications: signed by the
/// platform key for their serial, and recent (wechatpay-go's validator
/// rejects an answer five minutes old).
#[tokio::test]
async fn wechat_answer_timestamps_are_checked() {
    use rsa::pkcs8::DecodePrivateKey;
    let key =
        rsa::RsaPrivateKey::from_pkcs8_pem(&common::text("wechatpay/go_sdk_test_private_key.pem"))
            .unwrap();
    let age: Arc<Mutex<i64>> = Arc::new(Mutex::new(0));
    let a2 = age.clone();
    let app = Router::new().route(
        "/v3/pay/transactions/out-trade-no/{no}",
        get(move || {
            let key = key.clone();
            let age = *a2.lock().unwrap();
            async move {
                let body = r#"{"trade_state":"SUCCESS","transaction_id":"4200000001","out_trade_no":"o1"}"#;
                let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64 - age;
                let sig = finality_providers::wechat::sign(&key, &format!("{ts}\nn1\n{body}\n"));
                (
                    [
                        ("wechatpay-timestamp", ts.to_string()),
                        ("wechatpay-nonce", "n1".to_string()),
                        ("wechatpay-signature", sig),
                        ("wechatpay-serial", "D7CE59D1F522D701".to_string()),
                        ("content-type", "application/json".to_string()),
                    ],
                    body,
                )
            }
        }),
    );
    let url = serve(app).await;
    let a = common::wechat_adapter(&url, Some("D7CE59D1F522D701"));
    let t = PollTarget {
        merchant_ref: Some("o1"),
        ..PollTarget::by_provider_ref("p", "x", Kind::Payment)
    };
    let fresh = a.query_status(&t).await.unwrap();
    assert_eq!(fresh.status, Some(Status::Succeeded));
    *age.lock().unwrap() = 301;
    let stale = a.query_status(&t).await;
    assert!(
        matches!(stale, Err(ProviderError::Transient { ref message }) if message.contains("older than")),
        "{stale:?}"
    );
}

/// Documented error answers: Stripe's `{"error": {...}}` (stripe-node's
/// test literal) on a 404 is "not known yet"; on a 401 a permanent error.
/// WeChat Pay's `{"code":"SIGN_ERROR"}` 401 (wechatpay-go client_test.go)
/// is permanent too: the provider pauses with an alert.
#[tokio::test]
async fn documented_error_answers_are_classified() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let stripe_err = std::fs::read_to_string(format!(
        "{dir}/testdata/stripe/error.invalid_request_error.json"
    ))
    .unwrap();
    let e2 = stripe_err.clone();
    let app = Router::new()
        .route(
            "/v1/payment_intents/pi_missing",
            get(move || {
                let b = stripe_err.clone();
                async move { (axum::http::StatusCode::NOT_FOUND, b) }
            }),
        )
        .route(
            "/v1/payment_intents/pi_badkey",
            get(move || {
                let b = e2.clone();
                async move { (axum::http::StatusCode::UNAUTHORIZED, b) }
            }),
        );
    let url = serve(app).await;
    let a = finality_providers::stripe::StripeAdapter::new(&url, "sk_test_wire".into(), timeouts())
        .unwrap();
    let o = a
        .query_status(&PollTarget::by_provider_ref(
            "p",
            "pi_missing",
            Kind::Payment,
        ))
        .await
        .unwrap();
    assert_eq!(o.status, None);
    let e = a
        .query_status(&PollTarget::by_provider_ref(
            "p",
            "pi_badkey",
            Kind::Payment,
        ))
        .await;
    assert!(matches!(e, Err(ProviderError::Permanent { .. })), "{e:?}");

    let wechat_err = std::fs::read_to_string(format!(
        "{dir}/testdata/wechatpay/go_sdk_error_response_SIGN_ERROR_401.json"
    ))
    .unwrap();
    let app = Router::new().route(
        "/v3/pay/transactions/out-trade-no/{no}",
        get(move || {
            let b = wechat_err.clone();
            async move { (axum::http::StatusCode::UNAUTHORIZED, b) }
        }),
    );
    let url = serve(app).await;
    let a = common::wechat_adapter(&url, None);
    let t = PollTarget {
        merchant_ref: Some("o1"),
        ..PollTarget::by_provider_ref("p", "x", Kind::Payment)
    };
    let e = a.query_status(&t).await;
    assert!(
        matches!(e, Err(ProviderError::Permanent { ref message }) if message.contains("SIGN_ERROR")),
        "{e:?}"
    );
}
