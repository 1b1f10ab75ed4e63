//! Hostile input at the HTTP API (issue "Hostile traffic cannot change a
//! payment's fate…"): each test reproduces one attack over real HTTP on
//! loopback and asserts the safe behaviour. The providers' and pushers'
//! HTTP clients have theirs beside them (`finality-providers/tests/hostile.rs`,
//! `finality-relay/tests/it/http.rs`, `hostile_*`).

use super::*;
use finality_testkit::Backend;

/// A provider reference of `.` or `..` walks the provider URL's path
/// (`/payments/../status` is `/status`, with the API key): refused at
/// registration with a 422 naming the field; nothing is registered.
async fn dot_segment_references_are_refused(b: Backend) {
    let app = spawn_app(b, Duration::from_secs(3600)).await;
    for r in [".", ".."] {
        let (s, v) = app
            .post(
                "/v1/payments",
                json!({"id": format!("dot{}", r.len()), "provider": "sim", "provider_ref": r,
                       "amount": 100, "currency": "EUR"}),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        assert_eq!(v["error"]["field"], "provider_ref", "{v}");
        let (s, _) = app.get(&format!("/v1/payments/dot{}", r.len())).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
    }
}

/// A provider that answers 400 for references starting `bad` and `DONE`
/// for the others.
async fn refusing_provider() -> String {
    use axum::extract::Path;
    async fn status(Path(r): Path<String>) -> axum::response::Response {
        use axum::response::IntoResponse;
        if r.starts_with("bad") {
            (StatusCode::BAD_REQUEST, "invalid transfer id").into_response()
        } else {
            axum::Json(json!({"state": "DONE"})).into_response()
        }
    }
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let app = axum::Router::new().route("/v1/transfers/{r}/status", axum::routing::get(status));
    tokio::spawn(async move { axum::serve(l, app).await });
    url
}

async fn acme_app(b: Backend, url: String) -> TestApp {
    spawn_app_custom(
        b,
        SimConfig::deterministic(Duration::from_secs(60)),
        true,
        move |_| {
            let cfg: ProviderConfig = serde_json::from_value(json!({
                "adapter": "generic",
                "base_url": url,
                "schedule": {"kind": "fixed", "delays": ["200ms"]},
                "generic": {"url": "{base_url}/v1/transfers/{provider_ref}/status",
                            "status_pointer": "/state", "status_map": {"DONE": "succeeded"}}
            }))
            .unwrap();
            cfg.validate().unwrap();
            let adapter = finality_providers::config::build("acme", &cfg).unwrap();
            let mut providers = Providers::new();
            providers.insert("acme".into(), ProviderEntry::from_config(adapter, &cfg));
            providers
        },
    )
    .await
}

async fn register_acme(app: &TestApp, id: &str, r: &str) {
    let (s, v) = app
        .post(
            "/v1/payments",
            json!({"id": id, "provider": "acme", "provider_ref": r,
                   "amount": 100, "currency": "EUR"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}

/// Before: one payment registered with a reference the provider answers
/// 400 for paused every payment of that provider (a single `service`
/// token could do it). Now that payment goes to review, saying why, and
/// the provider's other payments settle; only refusals for several
/// distinct payments pause the provider.
async fn one_payments_refusal_does_not_pause_its_provider(b: Backend) {
    let app = acme_app(b, refusing_provider().await).await;
    register_acme(&app, "bad", "bad_1").await;
    let v = app.wait_for_status("bad", "needs_review").await;
    let why = v["history"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.contains("refused the status query for this payment") && why.contains("HTTP 400"),
        "{why}"
    );
    register_acme(&app, "good", "tr_1").await;
    app.wait_for_status("good", "succeeded").await;
    let (_, ready) = app.get("/readyz").await;
    assert_eq!(ready["paused_providers"], json!({}), "{ready}");

    // The same refusal for five distinct payments is the provider's
    // problem: paused, as a permanent error is.
    for i in 2..=5 {
        register_acme(&app, &format!("bad{i}"), &format!("bad_{i}")).await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, ready) = app.get("/readyz").await;
        if ready["paused_providers"].get("acme").is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never paused: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `Authorization` scheme is case-insensitive (RFC 9110 §11.1):
/// `bearer` used to be refused. A wrong token still is.
async fn the_bearer_scheme_is_case_insensitive(b: Backend) {
    let app = spawn_app(b, Duration::from_secs(3600)).await;
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let r = app
            .http
            .get(format!("{}/v1/payments?limit=1", app.base))
            .header("authorization", format!("{scheme} {}", super::TOKEN))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{scheme}");
    }
    let r = app
        .http
        .get(format!("{}/v1/payments?limit=1", app.base))
        .header("authorization", "bearer not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

finality_testkit::on_both_backends!(
    dot_segment_references_are_refused,
    one_payments_refusal_does_not_pause_its_provider,
    the_bearer_scheme_is_case_insensitive,
);
