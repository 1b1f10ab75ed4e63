//! The generic adapter against a provider served over real HTTP on
//! loopback: POST queries with a body template, OAuth2 client credentials,
//! and error codes inside a 200 answer.
#![allow(clippy::unwrap_used)] // test code: a panic is how a test reports

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::{Json, Router};
use finality_core::{Kind, Status};
use finality_providers::config::{build, ProviderConfig};
use finality_providers::{PollTarget, ProviderError};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Default)]
struct Seen {
    tokens: AtomicUsize,
    queries: AtomicUsize,
    /// The last query body, as received.
    body: std::sync::Mutex<String>,
}

/// A made-up gateway in the style of many: OAuth2 client credentials, a POST
/// query with the order number in a JSON body, and every answer a 200 whose
/// `code` says whether it worked.
async fn gateway() -> (String, Arc<Seen>) {
    async fn token(
        State(seen): State<Arc<Seen>>,
        headers: HeaderMap,
        form: String,
    ) -> (StatusCode, Json<Value>) {
        // "client:s3cret-of-the-client" in HTTP Basic, as RFC 6749 §2.3.1 says.
        let basic = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if basic != "Basic Y2xpZW50OnMzY3JldC1vZi10aGUtY2xpZW50"
            || !form.contains("grant_type=client_credentials")
        {
            return (
                StatusCode::UNAUTHORIZED,
                Json(json!({"error": "invalid_client"})),
            );
        }
        let n = seen.tokens.fetch_add(1, Ordering::SeqCst);
        (
            StatusCode::OK,
            Json(
                json!({"access_token": format!("tok{n}"), "token_type": "Bearer", "expires_in": 3600}),
            ),
        )
    }
    async fn query(
        State(seen): State<Arc<Seen>>,
        headers: HeaderMap,
        body: String,
    ) -> (StatusCode, Json<Value>) {
        seen.queries.fetch_add(1, Ordering::SeqCst);
        *seen.body.lock().unwrap() = body.clone();
        if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer tok0") {
            return (StatusCode::UNAUTHORIZED, Json(json!({"code": "401"})));
        }
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let answer = match v["order_no"].as_str().unwrap_or_default() {
            "paid-1" => json!({"code": "0", "data": {"state": 2, "id": 7001}}),
            "unknown-1" => json!({"code": "40004", "msg": "order does not exist"}),
            "busy-1" => json!({"code": "20000", "msg": "system busy"}),
            "banned-1" => json!({"code": "40002", "msg": "merchant not authorised"}),
            _ => json!({"code": "99999", "msg": "unheard of"}),
        };
        (StatusCode::OK, Json(answer))
    }
    let seen = Arc::new(Seen::default());
    let app = Router::new()
        .route("/oauth/token", post(token))
        .route("/v1/orders/query", post(query))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

fn config(base_url: &str) -> ProviderConfig {
    std::env::set_var("FINALITY_GENERIC_IT_CLIENT_ID", "client");
    std::env::set_var("FINALITY_GENERIC_IT_CLIENT_SECRET", "s3cret-of-the-client");
    let cfg: ProviderConfig = serde_json::from_value(json!({
        "adapter": "generic",
        "base_url": base_url,
        "generic": {
            "url": "{base_url}/v1/orders/query",
            "method": "POST",
            "body": r#"{"order_no": "{provider_ref}", "kind": "{kind}"}"#,
            "oauth2": {"token_url": "{base_url}/oauth/token",
                       "client_id_env": "FINALITY_GENERIC_IT_CLIENT_ID",
                       "client_secret_env": "FINALITY_GENERIC_IT_CLIENT_SECRET"},
            "status_pointer": "/data/state",
            "status_map": {"1": "pending", "2": "succeeded", "3": "failed"},
            "answer_errors": {"pointer": "/code", "ok": ["0"], "not_found": ["40004"],
                              "classes": {"20000": "transient", "40002": "permanent"},
                              "message_pointer": "/msg"}
        }
    }))
    .unwrap();
    cfg.validate().unwrap();
    cfg
}

#[tokio::test]
async fn post_body_oauth2_and_codes_inside_200() {
    let (url, seen) = gateway().await;
    let a = build("gateway", &config(&url)).unwrap();
    let ask = |r: &'static str| {
        let a = a.clone();
        async move {
            a.query_status(&PollTarget::by_provider_ref("p", r, Kind::Payment))
                .await
        }
    };
    let paid = ask("paid-1").await.unwrap();
    assert_eq!(paid.status, Some(Status::Succeeded));
    assert_eq!(
        *seen.body.lock().unwrap(),
        r#"{"order_no": "paid-1", "kind": "payment"}"#
    );
    // Not known yet: no status, not an error.
    let unknown = ask("unknown-1").await.unwrap();
    assert_eq!(unknown.status, None);
    assert_eq!(unknown.provider_status, "code 40004");
    // Classified like HTTP errors, with the provider's words.
    assert!(
        matches!(ask("busy-1").await, Err(ProviderError::Transient { message }) if message.contains("system busy"))
    );
    assert!(
        matches!(ask("banned-1").await, Err(ProviderError::Permanent { message }) if message.contains("40002"))
    );
    assert!(
        matches!(ask("other-1").await, Err(ProviderError::Transient { message }) if message.contains("99999"))
    );
    // One token for every query: it is cached.
    assert_eq!(seen.tokens.load(Ordering::SeqCst), 1);
    assert_eq!(seen.queries.load(Ordering::SeqCst), 5);
}

/// A value that needs escaping stays one JSON string.
#[tokio::test]
async fn body_values_are_json_escaped() {
    let (url, seen) = gateway().await;
    let a = build("gateway", &config(&url)).unwrap();
    let _ = a
        .query_status(&PollTarget::by_provider_ref("p", r#"x"y\z"#, Kind::Payment))
        .await;
    let body: Value = serde_json::from_str(&seen.body.lock().unwrap()).unwrap();
    assert_eq!(body["order_no"], r#"x"y\z"#);
}

#[test]
fn a_body_that_is_not_json_is_refused_naming_the_field() {
    let mut cfg = config("http://127.0.0.1:9");
    let finality_providers::config::Adapter::Generic { generic } = &mut cfg.adapter else {
        panic!("a generic config")
    };
    generic.body = Some(r#"{"order_no": {provider_ref}"#.into());
    let e = generic.validate().unwrap_err();
    assert_eq!(e.field, "body", "{}", e.message);
}
