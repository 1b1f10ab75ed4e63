//! Liveness and readiness.

use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(readyz))
}

/// Ready when the database answers. Paused providers, open circuit breakers
/// and webhook outages make it `degraded` with the reason, but still 200: webhooks and
/// the API keep working, and taking the node out of rotation would not bring
/// the provider back.
async fn readyz(State(app): State<AppState>) -> (StatusCode, Json<Value>) {
    let now = app.clock.now();
    let pauses: serde_json::Map<String, Value> = app
        .health
        .pauses(now)
        .into_iter()
        .map(|(name, p)| {
            let v = json!({"paused_until": p.until.to_rfc3339(), "class": p.class.as_str(), "reason": p.reason});
            (name, v)
        })
        .collect();
    let breakers: serde_json::Map<String, Value> = app
        .health
        .breakers()
        .tripped()
        .into_iter()
        .map(|t| {
            let v = json!({"state": t.state, "next_probe_at": t.until.to_rfc3339()});
            (t.provider, v)
        })
        .collect();
    let outages: serde_json::Map<String, Value> = app
        .health
        .webhook_outages()
        .into_iter()
        .map(|(name, since)| {
            let v = json!({"since": since.to_rfc3339(), "polling": "outage schedule"});
            (name, v)
        })
        .collect();
    match app.store.next_due_at().await {
        Ok(_) => {
            let status = if pauses.is_empty() && breakers.is_empty() && outages.is_empty() {
                "ready"
            } else {
                "degraded"
            };
            (
                StatusCode::OK,
                Json(
                    json!({"status": status, "database": "ok", "paused_providers": pauses,
                            "open_circuits": breakers, "webhook_outages": outages}),
                ),
            )
        }
        Err(e) => {
            tracing::error!(error = %e, "readiness check: database unreachable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(
                    json!({"status": "unavailable", "database": "unreachable", "paused_providers": pauses}),
                ),
            )
        }
    }
}
