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

finality_testkit::on_both_backends!(dot_segment_references_are_refused);
