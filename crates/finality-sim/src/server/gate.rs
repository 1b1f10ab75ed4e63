//! What every provider route passes through: the credentials and the drawn faults (429s, 5xx, timeouts, an outage).

use crate::model::{Fault, Simulator};
use crate::wire::Money;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

pub(crate) fn authorized(sim: &Simulator, headers: &HeaderMap) -> bool {
    let Some(key) = &sim.config.api_key else {
        return true;
    };
    let expected = format!("Bearer {key}");
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == expected)
}

/// What every status API shares: count the call, check the key, take the
/// configured latency, inject the drawn fault. `Ok(None)`: no such payment.
pub(crate) async fn gate(
    sim: &Simulator,
    id: &str,
    headers: &HeaderMap,
) -> Result<Option<crate::plan::PaymentPlan>, Response> {
    if !authorized(sim, headers) {
        return Err((
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid api key"})),
        )
            .into_response());
    }
    faults(sim).await?;
    Ok(sim.plan(id))
}

/// Rate limit, latency and drawn faults, as every status API has them.
pub(crate) async fn faults(sim: &Simulator) -> Result<(), Response> {
    if sim.over_rate_limit() {
        sim.counters
            .rate_limits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return Err((
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1".to_string())],
            Json(json!({"error": "rate limit exceeded"})),
        )
            .into_response());
    }
    if !sim.config.latency.is_zero() {
        tokio::time::sleep(sim.config.latency).await;
    }
    match sim.draw_fault() {
        Some(Fault::RateLimited) => {
            let secs = sim.config.faults.retry_after.as_secs().max(1).to_string();
            return Err((
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, secs)],
                Json(json!({"error": "rate limited"})),
            )
                .into_response());
        }
        Some(Fault::ServerError) => {
            return Err((
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"error": "try again"})),
            )
                .into_response());
        }
        Some(Fault::Timeout) => {
            tokio::time::sleep(sim.config.faults.hang).await;
            return Err((
                StatusCode::GATEWAY_TIMEOUT,
                Json(json!({"error": "upstream timeout"})),
            )
                .into_response());
        }
        None => {}
    }
    Ok(())
}

/// One payment's status in some provider's shape: count the call (rejected
/// ones too: the provider saw it), pass the gate, then `render(id, word)`
/// the plan's status word, or answer 404 with `missing`.
pub(crate) async fn answer(
    sim: &Arc<Simulator>,
    id: &str,
    headers: &HeaderMap,
    render: impl Fn(&str, &str, Money<'_>) -> serde_json::Value,
    missing: serde_json::Value,
) -> Response {
    let _call = sim.begin_call(id);
    match gate(sim, id, headers).await {
        Err(r) => r,
        Ok(Some(plan)) => {
            let mut v = render(id, plan.status_at(sim.now()), Money::of(&plan));
            if let Some(w) = sim.word_for(&plan.id) {
                v["status"] = json!(w);
                // A PaymentIntent collects its amount when it succeeds.
                if v["object"] == "payment_intent" {
                    v["amount_received"] = json!(if w == "succeeded" { plan.amount } else { 0 });
                }
            }
            Json(v).into_response()
        }
        Ok(None) => (StatusCode::NOT_FOUND, Json(missing)).into_response(),
    }
}
