//! Hostile traffic against the providers' HTTP clients, over real HTTP on
//! loopback: a provider (or something in front of it) that redirects must
//! not receive-and-forward finality's credentials, and a provider reference
//! must stay one path segment of the provider's URL.
#![allow(clippy::unwrap_used)] // test code: a panic is how a test reports

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use finality_core::Kind;
use finality_providers::config::{build, ProviderConfig};
use finality_providers::{PollTarget, ProviderError};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// What the loopback servers saw: paths asked for, and any request that
/// reached the redirect's target.
#[derive(Default)]
struct Seen {
    paths: Mutex<Vec<String>>,
    stolen: Mutex<Vec<String>>,
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

/// A provider that answers every status query with a 307 to `elsewhere`,
/// and `elsewhere`, which records the API key of anything that reaches it.
async fn redirecting(seen: Arc<Seen>) -> String {
    async fn thief(State(seen): State<Arc<Seen>>, headers: HeaderMap) -> StatusCode {
        let key = headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
            .to_string();
        seen.stolen.lock().unwrap().push(key);
        StatusCode::OK
    }
    let elsewhere = serve(
        Router::new()
            .route("/steal/{*rest}", get(thief))
            .with_state(seen),
    )
    .await;
    let to = format!("{elsewhere}/steal/it");
    serve(Router::new().fallback(move || {
        let to = to.clone();
        async move { (StatusCode::TEMPORARY_REDIRECT, [("location", to)]).into_response() }
    }))
    .await
}

fn generic(base_url: &str) -> ProviderConfig {
    std::env::set_var("FINALITY_HOSTILE_API_KEY", "sk_live_do_not_leak_0123456789");
    let cfg: ProviderConfig = serde_json::from_value(json!({
        "adapter": "generic",
        "base_url": base_url,
        "generic": {
            "url": "{base_url}/v1/transfers/{provider_ref}/status",
            "headers": {"X-Api-Key": "${FINALITY_HOSTILE_API_KEY}"},
            "status_pointer": "/state",
            "status_map": {"DONE": "succeeded"}
        }
    }))
    .unwrap();
    cfg.validate().unwrap();
    cfg
}

/// Before: reqwest followed the 307 and sent `X-Api-Key` to the other
/// address (it drops only `Authorization` and `Cookie`).
#[tokio::test]
async fn a_redirect_is_an_error_and_no_credential_follows_it() {
    let seen = Arc::new(Seen::default());
    let url = redirecting(seen.clone()).await;
    let a = build("acme", &generic(&url)).unwrap();
    let err = a
        .query_status(&PollTarget::by_provider_ref("p", "tr_1", Kind::Payment))
        .await
        .unwrap_err();
    let ProviderError::Permanent { message } = err else {
        panic!("a redirect is a configuration problem: {err:?}")
    };
    assert!(
        message.contains("redirect to http://") && message.contains("/steal/it not followed"),
        "{message}"
    );
    assert!(
        seen.stolen.lock().unwrap().is_empty(),
        "the credential reached the redirect's target"
    );
}

/// A provider that records the path of every status query.
async fn recording(seen: Arc<Seen>) -> String {
    async fn status(
        State(seen): State<Arc<Seen>>,
        uri: axum::http::Uri,
        Path(rest): Path<String>,
    ) -> Response {
        seen.paths.lock().unwrap().push(uri.to_string());
        // Both shapes at once: the generic adapter's `state`, the sim's.
        axum::Json(json!({"id": rest, "status": "pending", "state": "OPEN"})).into_response()
    }
    serve(
        Router::new()
            .route("/v1/transfers/{*rest}", get(status))
            .route("/v1/payments/{*rest}", get(status))
            .with_state(seen),
    )
    .await
}

/// Before: `?`, `#` and `%` went into the sim's, Stripe's and PayPal's
/// paths raw, so `tr_1?x=1#frag` asked for `tr_1` with a query, and `%2F`
/// smuggled a `/` past the provider's router.
#[tokio::test]
async fn a_reference_is_one_path_segment() {
    let seen = Arc::new(Seen::default());
    let url = recording(seen.clone()).await;
    let sim: ProviderConfig =
        serde_json::from_value(json!({"adapter": "sim", "base_url": url})).unwrap();
    for a in [
        build("acme", &generic(&url)).unwrap(),
        build("sim", &sim).unwrap(),
    ] {
        for r in ["tr_1?x=1#frag", "tr_%2F..%2Fadmin"] {
            a.query_status(&PollTarget::by_provider_ref("p", r, Kind::Payment))
                .await
                .unwrap();
        }
    }
    let paths = seen.paths.lock().unwrap().clone();
    assert_eq!(
        paths,
        [
            "/v1/transfers/tr_1%3Fx%3D1%23frag/status",
            "/v1/transfers/tr_%252F..%252Fadmin/status",
            "/v1/payments/tr_1%3Fx%3D1%23frag",
            "/v1/payments/tr_%252F..%252Fadmin",
        ]
    );
}

/// `.` and `..` would walk the path (`/transfers/../status` is `/status`):
/// refused where every reference is parsed, naming the field.
#[test]
fn dot_segments_are_refused_as_references() {
    use finality_core::money::ProviderRef;
    for r in [".", ".."] {
        let e = ProviderRef::parse(r).unwrap_err();
        assert_eq!(e.field, "provider_ref");
        assert!(e.message.contains("walk"), "{}", e.message);
    }
    assert!(ProviderRef::parse("..a").is_ok());
}

/// A PayPal stand-in that counts every request made to it (token, verify).
async fn counting() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = n.clone();
    let url = serve(Router::new().fallback(move || {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async { StatusCode::SERVICE_UNAVAILABLE }
    }))
    .await;
    (url, n)
}

/// Before: every unsigned PayPal webhook made two outbound calls (token,
/// verify), so anyone could spend the merchant's PayPal rate limit. Now a
/// stale or far-future transmission time, or a certificate URL off
/// PayPal's hosts, is refused before PayPal is asked.
#[tokio::test]
async fn paypal_webhooks_are_checked_locally_before_paypal_is_asked() {
    use finality_providers::paypal::PayPalAdapter;
    use finality_providers::webhook::{RejectReason, WebhookError};
    use finality_providers::Provider;
    let (url, calls) = counting().await;
    let timeouts = finality_providers::http::Timeouts {
        connect: std::time::Duration::from_secs(2),
        total: std::time::Duration::from_secs(2),
    };
    let a = PayPalAdapter::new(&url, "client:secret", Some("WH-1".into()), timeouts).unwrap();
    let now = finality_core::Timestamp(1_764_000_000_000);
    let at = |secs: i64| {
        chrono::DateTime::from_timestamp(secs, 0)
            .unwrap()
            .to_rfc3339()
    };
    let headers = |time: &str, cert: &str| {
        let mut h = reqwest::header::HeaderMap::new();
        for (k, v) in [
            ("paypal-auth-algo", "SHA256withRSA"),
            ("paypal-cert-url", cert),
            ("paypal-transmission-id", "tx-1"),
            ("paypal-transmission-sig", "forged"),
            ("paypal-transmission-time", time),
        ] {
            h.insert(k, v.parse().unwrap());
        }
        h
    };
    let body = br#"{"id":"WH-X","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{}}"#;
    let good_cert = "https://api.paypal.com/v1/notifications/certs/CERT-1";
    for (h, reason) in [
        (
            headers(&at(now.0 / 1000 - 3600), good_cert),
            RejectReason::StaleTimestamp,
        ),
        (
            headers(&at(now.0 / 1000 + 3600), good_cert),
            RejectReason::FutureTimestamp,
        ),
        (headers("yesterday", good_cert), RejectReason::BadTimestamp),
        (
            headers(&at(now.0 / 1000), "https://paypal.com.evil.test/cert"),
            RejectReason::BadSignature,
        ),
        (
            headers(&at(now.0 / 1000), "http://api.paypal.com/cert"),
            RejectReason::BadSignature,
        ),
    ] {
        match a.verify_webhook(&h, body, now).await {
            Err(WebhookError::Rejected { reason: r, .. }) => assert_eq!(r, reason),
            other => panic!("expected {reason:?}, got {other:?}"),
        }
    }
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "PayPal was asked"
    );
    // What passes the local checks is asked of PayPal, as before.
    let _ = a
        .verify_webhook(&headers(&at(now.0 / 1000), good_cert), body, now)
        .await;
    assert!(calls.load(std::sync::atomic::Ordering::SeqCst) > 0);
}

/// A PayPal that hands out tokens and answers verification: SUCCESS for
/// the signature `genuine`, FAILURE otherwise; counting verify calls.
async fn verifying_paypal() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = n.clone();
    let router = Router::new()
        .route(
            "/v1/oauth2/token",
            axum::routing::post(|| async {
                axum::Json(json!({"access_token": "A21AA-test", "expires_in": 3600}))
            }),
        )
        .route(
            "/v1/notifications/verify-webhook-signature",
            axum::routing::post(move |body: String| {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move {
                    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                    let ok = v["transmission_sig"] == "genuine";
                    axum::Json(
                        json!({"verification_status": if ok { "SUCCESS" } else { "FAILURE" }}),
                    )
                }
            }),
        );
    (serve(router).await, n)
}

/// Before: a genuine webhook replayed within the tolerance (or one that
/// passes the local checks, sent again and again) was asked of PayPal
/// every time, without limit. Now PayPal's verdict is kept by transmission
/// (id, signature and body) and verification calls are held to
/// `verify_per_second`; past it the webhook is answered "busy" (429) and
/// PayPal delivers it again.
#[tokio::test]
async fn paypal_verifications_are_cached_by_transmission_and_rate_limited() {
    use finality_providers::paypal::{PayPalAdapter, PayPalConfig};
    use finality_providers::webhook::WebhookError;
    use finality_providers::Provider;
    let (url, calls) = verifying_paypal().await;
    let timeouts = finality_providers::http::Timeouts {
        connect: std::time::Duration::from_secs(2),
        total: std::time::Duration::from_secs(2),
    };
    let a = PayPalAdapter::new(&url, "client:secret", Some("WH-1".into()), timeouts)
        .unwrap()
        .with_config(PayPalConfig {
            verify_per_second: Some(2),
            ..PayPalConfig::default()
        });
    let now = finality_core::Timestamp(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap(),
    );
    let time = chrono::DateTime::from_timestamp_millis(now.0)
        .unwrap()
        .to_rfc3339();
    let headers_at = |id: &str, sig: &str, time: &str| {
        let mut h = reqwest::header::HeaderMap::new();
        for (k, v) in [
            ("paypal-auth-algo", "SHA256withRSA"),
            (
                "paypal-cert-url",
                "https://api.paypal.com/v1/notifications/certs/CERT-1",
            ),
            ("paypal-transmission-id", id),
            ("paypal-transmission-sig", sig),
            ("paypal-transmission-time", time),
        ] {
            h.insert(k, v.parse().unwrap());
        }
        h
    };
    let headers = |id: &str, sig: &str| headers_at(id, sig, &time);
    // PayPal's own example event (developer.paypal.com, "Webhook event
    // names", PAYMENT.CAPTURE.COMPLETED), trimmed to what is read.
    let body = br#"{"id":"WH-2WR32451HC0233532-67976317FL4543714","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{"id":"42311647XV020574X","status":"COMPLETED","amount":{"currency_code":"USD","value":"10.00"},"supplementary_data":{"related_ids":{"order_id":"5O190127TN364715T"}}}}"#;
    let count = || calls.load(std::sync::atomic::Ordering::SeqCst);

    for _ in 0..5 {
        let events = a
            .verify_webhook(&headers("tx-genuine", "genuine"), body, now)
            .await
            .unwrap();
        assert_eq!(events.len(), 1);
    }
    assert_eq!(
        count(),
        1,
        "asked once for five deliveries of one transmission"
    );
    // Replayed with another transmission time, it is another question.
    let earlier = chrono::DateTime::from_timestamp_millis(now.0 - 1_000)
        .unwrap()
        .to_rfc3339();
    a.verify_webhook(&headers_at("tx-genuine", "genuine", &earlier), body, now)
        .await
        .unwrap();
    assert_eq!(count(), 2, "another transmission time is asked again");

    // The same transmission id with another body is another question: a
    // verdict is never borrowed by a different body or signature.
    let other = br#"{"id":"WH-OTHER","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{"id":"X","status":"COMPLETED"}}"#;
    let r = a
        .verify_webhook(&headers("tx-genuine", "forged"), other, now)
        .await;
    assert!(matches!(r, Err(WebhookError::Rejected { .. })), "{r:?}");
    assert_eq!(count(), 3);
    // Replayed, that forgery costs nothing more.
    for _ in 0..3 {
        let r = a
            .verify_webhook(&headers("tx-genuine", "forged"), other, now)
            .await;
        assert!(matches!(r, Err(WebhookError::Rejected { .. })), "{r:?}");
    }
    assert_eq!(count(), 3);

    // New transmissions past the rate (2/s, bursts of 4): busy, not asked.
    let mut busy = 0;
    for i in 0..6 {
        match a
            .verify_webhook(&headers(&format!("tx-new-{i}"), "forged"), body, now)
            .await
        {
            Err(WebhookError::Busy { .. }) => busy += 1,
            Err(WebhookError::Rejected { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(busy >= 4, "{busy} of 6 were busy");
    assert!(count() <= 5, "{} verify calls", count());
}

/// Before: about 30 forged PayPal webhooks a second, each passing the
/// local checks, kept the verification budget empty, so PayPal's genuine
/// deliveries were answered "busy" (429) until the flood stopped. Now an
/// address that sent no genuine delivery lately may spend a quarter of
/// `verify_per_second`; PayPal's senders, once one of their deliveries was
/// genuine, spend from the whole. And what cannot be a PayPal event (no
/// `resource`, an empty signature header) is refused before any call.
#[tokio::test]
async fn forged_paypal_webhooks_from_one_address_leave_the_budget_to_paypal() {
    use finality_providers::paypal::{PayPalAdapter, PayPalConfig};
    use finality_providers::webhook::WebhookError;
    use finality_providers::Provider;
    let (url, calls) = verifying_paypal().await;
    let timeouts = finality_providers::http::Timeouts {
        connect: std::time::Duration::from_secs(2),
        total: std::time::Duration::from_secs(2),
    };
    // 8 a second, bursts of 16; an unknown address: 2, bursts of 4.
    let a = PayPalAdapter::new(&url, "client:secret", Some("WH-1".into()), timeouts)
        .unwrap()
        .with_config(PayPalConfig {
            verify_per_second: Some(8),
            ..PayPalConfig::default()
        });
    let now = finality_core::Timestamp(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap(),
    );
    let time = chrono::DateTime::from_timestamp_millis(now.0)
        .unwrap()
        .to_rfc3339();
    let headers = |id: &str, sig: &str| {
        let mut h = reqwest::header::HeaderMap::new();
        for (k, v) in [
            ("paypal-auth-algo", "SHA256withRSA"),
            (
                "paypal-cert-url",
                "https://api.paypal.com/v1/notifications/certs/CERT-1",
            ),
            ("paypal-transmission-id", id),
            ("paypal-transmission-sig", sig),
            ("paypal-transmission-time", time.as_str()),
        ] {
            h.insert(k, v.parse().unwrap());
        }
        h
    };
    // PayPal's own example event (developer.paypal.com, "Webhook event
    // names", PAYMENT.CAPTURE.COMPLETED), trimmed to what is read.
    let body = br#"{"id":"WH-2WR32451HC0233532-67976317FL4543714","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{"id":"42311647XV020574X","status":"COMPLETED","amount":{"currency_code":"USD","value":"10.00"},"supplementary_data":{"related_ids":{"order_id":"5O190127TN364715T"}}}}"#;
    let count = || calls.load(std::sync::atomic::Ordering::SeqCst);
    let attacker: std::net::IpAddr = "10.0.0.66".parse().unwrap();
    let paypal: std::net::IpAddr = "10.0.0.1".parse().unwrap();

    // Not a PayPal event, or an empty signature: refused, PayPal not asked.
    let shapeless = br#"{"id":"WH-1","event_type":"PAYMENT.CAPTURE.COMPLETED"}"#;
    let r = a
        .verify_webhook_from(Some(attacker), &headers("tx-s", "forged"), shapeless, now)
        .await;
    assert!(matches!(r, Err(WebhookError::Rejected { .. })), "{r:?}");
    let r = a
        .verify_webhook_from(Some(attacker), &headers("tx-e", ""), body, now)
        .await;
    assert!(matches!(r, Err(WebhookError::Rejected { .. })), "{r:?}");
    assert_eq!(count(), 0);

    let (mut asked, mut busy) = (0, 0);
    for i in 0..40 {
        match a
            .verify_webhook_from(
                Some(attacker),
                &headers(&format!("tx-f{i}"), "forged"),
                body,
                now,
            )
            .await
        {
            Err(WebhookError::Rejected { .. }) => asked += 1,
            Err(WebhookError::Busy { detail }) => {
                assert!(detail.contains("10.0.0.66"), "{detail}");
                busy += 1
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        asked <= 4,
        "{asked} forgeries from one address asked of PayPal"
    );
    assert_eq!(asked + busy, 40);
    // PayPal's delivery, during the flood: asked and applied.
    for i in 0..8 {
        let events = a
            .verify_webhook_from(
                Some(paypal),
                &headers(&format!("tx-g{i}"), "genuine"),
                body,
                now,
            )
            .await
            .unwrap_or_else(|e| panic!("genuine delivery {i}: {e:?}"));
        assert_eq!(events.len(), 1);
    }
    assert_eq!(count(), asked + 8);
}
