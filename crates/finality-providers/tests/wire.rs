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

/// Stripe's event list, read the way Stripe pages it: the published list
/// sample (docs.stripe.com, `testdata/stripe/event_list.json`) as the first
/// read; from its event as cursor (`ending_before`), the page just newer,
/// newest first on the wire and oldest first out of the adapter; a cursor
/// Stripe no longer knows (404 `resource_missing`) restarts from the newest.
#[tokio::test]
async fn stripe_event_list_pages_from_a_cursor() {
    let published = common::json("stripe/event_list.json");
    let first_id = published["data"][0]["id"].as_str().unwrap().to_string();
    // Two newer events around the published PaymentIntent (stripe/openapi
    // fixtures3.json), in Stripe's event envelope, newest first.
    let pi = common::json("stripe/payment_intent.json");
    let event = |id: &str, created: i64, status: &str, kind: &str| {
        let mut object = pi.clone();
        object["status"] = status.into();
        serde_json::json!({"id": id, "object": "event", "created": created, "type": kind,
                           "data": {"object": object}})
    };
    let newer = serde_json::json!({"object": "list", "url": "/v1/events", "has_more": true,
        "data": [event("evt_3", 1686090100, "succeeded", "payment_intent.succeeded"),
                 event("evt_2", 1686090000, "processing", "payment_intent.processing")]});
    let queries: Arc<Mutex<Vec<String>>> = Arc::default();
    let q2 = queries.clone();
    let (first, cursor) = (published.clone(), first_id.clone());
    let app = Router::new().route(
        "/v1/events",
        get(move |axum::extract::RawQuery(q): axum::extract::RawQuery| {
            let (queries, first, newer, cursor) =
                (q2.clone(), first.clone(), newer.clone(), cursor.clone());
            async move {
                let q = q.unwrap_or_default();
                queries.lock().unwrap().push(q.clone());
                if q.contains(&format!("ending_before={cursor}")) {
                    (axum::http::StatusCode::OK, axum::Json(newer))
                } else if q.contains("ending_before=") {
                    (
                        axum::http::StatusCode::NOT_FOUND,
                        axum::Json(serde_json::json!({"error": {"code": "resource_missing",
                            "type": "invalid_request_error", "message": "No such event"}})),
                    )
                } else {
                    (axum::http::StatusCode::OK, axum::Json(first))
                }
            }
        }),
    );
    let url = serve(app).await;
    let a = finality_providers::stripe::StripeAdapter::new(&url, "sk_test_wire".into(), timeouts())
        .unwrap();
    assert!(a.lists_events());

    let page = a.list_events(None).await.unwrap();
    assert_eq!(page.cursor.as_deref(), Some(first_id.as_str()));
    assert!(!page.more && page.restarted.is_none());
    assert_eq!(page.events.len(), 1);
    assert!(
        matches!(&page.events[0].disposition,
            finality_providers::webhook::Disposition::Ignore(why) if why.contains("setup_intent")),
        "{:?}",
        page.events[0]
    );

    let page = a.list_events(Some(&first_id)).await.unwrap();
    let ids: Vec<&str> = page.events.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(ids, ["evt_2", "evt_3"], "oldest first");
    assert_eq!(page.events[1].status, Some(Status::Succeeded));
    assert_eq!(page.cursor.as_deref(), Some("evt_3"), "the newest read");
    assert!(page.more, "has_more: read again");

    let page = a.list_events(Some("evt_expired")).await.unwrap();
    assert!(page.restarted.is_some());
    assert_eq!(page.cursor.as_deref(), Some(first_id.as_str()));

    let queries = queries.lock().unwrap();
    assert!(queries[0].contains("limit=100") && !queries[0].contains("ending_before"));
    assert!(
        queries[0].contains("types[0]=payment_intent.succeeded"),
        "{}",
        queries[0]
    );
    assert!(queries[1].contains(&format!("ending_before={first_id}")));
}

/// PayPal's event list, read as PayPal pages it: the published docs sample
/// (`testdata/paypal/api/docs_webhooks_events_list_sample.json`, whose
/// `next` link PayPal's page escapes as `&amp;amp;`) as the first page, the
/// PayPal-node-SDK's recorded reply as the page its `next` link leads to;
/// every page read before the cursor moves to the newest `create_time`, and
/// the cursor sent back as `start_time`. The token is the node SDK's mock.
#[tokio::test]
async fn paypal_event_list_follows_next_links_from_a_cursor() {
    let first = common::json("paypal/api/docs_webhooks_events_list_sample.json");
    let second = common::json("paypal/api/node_sdk_mock_webhooks_events_list_200.json");
    let token = common::json("paypal/api/node_sdk_mock_oauth2_token_response.json");
    let queries: Arc<Mutex<Vec<String>>> = Arc::default();
    let q2 = queries.clone();
    let app = Router::new()
        .route(
            "/v1/oauth2/token",
            axum::routing::post(move || {
                let token = token.clone();
                async move { axum::Json(token) }
            }),
        )
        .route(
            "/v1/notifications/webhooks-events",
            get(move |axum::extract::RawQuery(q): axum::extract::RawQuery| {
                let (queries, first, second) = (q2.clone(), first.clone(), second.clone());
                async move {
                    let q = q.unwrap_or_default();
                    queries.lock().unwrap().push(q.clone());
                    axum::Json(if q.contains("move_to=next") {
                        second
                    } else {
                        first
                    })
                }
            }),
        );
    let url = serve(app).await;
    let a = finality_providers::paypal::PayPalAdapter::new(
        &url,
        "client:secret",
        Some("WH-ID".into()),
        timeouts(),
    )
    .unwrap();
    assert!(a.lists_events());
    let page = a.list_events(Some("2013-06-25T21:41:28Z")).await.unwrap();
    let ids: Vec<&str> = page.events.iter().map(|e| e.event_id.as_str()).collect();
    // Both pages, oldest first (the reverse of PayPal's newest-first order).
    assert_eq!(
        ids,
        [
            "WH-9CX24309MH241002A-02146673H3282292X",
            "WH-1S115631EN580315E-9KH94552VF7913711",
            "HTSPGS710X687430LKGECATA",
            "8PT597110X687430LKGECATA"
        ]
    );
    // Authorizations are not what finality follows: kept as ignored.
    assert!(page.events.iter().all(|e| matches!(
        e.disposition,
        finality_providers::webhook::Disposition::Ignore(_)
    )));
    assert_eq!(page.cursor.as_deref(), Some("2014-10-20T12:04:32Z"));
    assert!(!page.more && page.restarted.is_none());
    let queries = queries.lock().unwrap();
    assert_eq!(queries.len(), 2, "{queries:?}");
    assert!(
        queries[0].contains("start_time=2013-06-25T21%3A41%3A28Z"),
        "{}",
        queries[0]
    );
    assert!(
        queries[1].contains("move_to=next") && queries[1].contains("index_id=3"),
        "the next link's own query, unescaped: {}",
        queries[1]
    );

    // Without a webhook there is nothing listed to read.
    let none =
        finality_providers::paypal::PayPalAdapter::new(&url, "client:secret", None, timeouts())
            .unwrap();
    assert!(!none.lists_events());
}
