//! The simulator's HTTP API, the wire format the `sim` adapter speaks.
//!
//! - `POST /v1/payments` `{"id"?}` → 201 `{"id", "status"}`
//! - `GET /v1/payments/{id}` → `{"id", "status"}` | 404 | injected 429/503/504
//! - `GET /sim/stats` → call counters

use crate::model::{Fault, Simulator};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub fn router(sim: Arc<Simulator>) -> Router {
    Router::new()
        .route("/v1/payments", post(create))
        .route("/v1/payments/{id}", get(status))
        .route("/sim/stats", get(stats))
        .with_state(sim)
}

/// Serve until `shutdown` is cancelled.
pub async fn serve(
    sim: Arc<Simulator>,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router(sim))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

#[derive(serde::Deserialize, Default)]
struct CreateIn {
    id: Option<String>,
}

async fn create(State(sim): State<Arc<Simulator>>, body: Option<Json<CreateIn>>) -> Response {
    let id = body.and_then(|Json(b)| b.id);
    let plan = sim.create(id);
    let status = plan.status_at(sim.now());
    (
        StatusCode::CREATED,
        Json(json!({"id": plan.id, "status": status})),
    )
        .into_response()
}

fn authorized(sim: &Simulator, headers: &HeaderMap) -> bool {
    let Some(key) = &sim.config.api_key else {
        return true;
    };
    let expected = format!("Bearer {key}");
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == expected)
}

async fn status(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    // Every call counts, rejected ones too: the provider saw it.
    let _call = sim.begin_call(&id);
    if !authorized(&sim, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid api key"})),
        )
            .into_response();
    }
    if !sim.config.latency.is_zero() {
        tokio::time::sleep(sim.config.latency).await;
    }
    match sim.draw_fault() {
        Some(Fault::RateLimited) => {
            let secs = sim.config.faults.retry_after.as_secs().max(1).to_string();
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, secs)],
                Json(json!({"error": "rate limited"})),
            )
                .into_response();
        }
        Some(Fault::ServerError) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"error": "try again"})),
            )
                .into_response();
        }
        Some(Fault::Timeout) => {
            tokio::time::sleep(sim.config.faults.hang).await;
            return (
                StatusCode::GATEWAY_TIMEOUT,
                Json(json!({"error": "upstream timeout"})),
            )
                .into_response();
        }
        None => {}
    }
    match sim.plan(&id) {
        Some(plan) => Json(json!({"id": id, "status": plan.status_at(sim.now())})).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "no such payment"})),
        )
            .into_response(),
    }
}

async fn stats(State(sim): State<Arc<Simulator>>) -> Json<crate::model::Stats> {
    Json(sim.stats())
}
