//! Bakong's transaction checks as the simulator answers them, one by one and in bulk.

use crate::model::Simulator;
use crate::server::gate::gate;
use crate::wire::Money;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

pub(crate) async fn bakong_one(sim: Arc<Simulator>, id: String, headers: HeaderMap) -> Response {
    let _call = sim.begin_call(&id);
    match gate(&sim, &id, &headers).await {
        Err(r) => r,
        Ok(plan) => {
            let status = plan.as_ref().map_or("pending", |p| p.status_at(sim.now()));
            let m = plan.as_ref().map_or(Money::NONE, Money::of);
            Json(crate::wire::bakong_single(&id, status, m)).into_response()
        }
    }
}

pub(crate) async fn bakong_by_md5(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
    Json(body): Json<serde_json::Value>,
) -> Response {
    let id = body["md5"].as_str().unwrap_or_default().to_string();
    bakong_one(sim, id, headers).await
}

/// By full hash: the simulator's hash of a payment is derived from its id.
pub(crate) async fn bakong_by_hash(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
    Json(body): Json<serde_json::Value>,
) -> Response {
    let hash = body["hash"].as_str().unwrap_or_default().to_string();
    bakong_one(sim, hash, headers).await
}

pub(crate) async fn bakong_md5_list(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
    Json(md5s): Json<Vec<String>>,
) -> Response {
    sim.note_bulk_request(md5s.len());
    let _calls: Vec<_> = md5s.iter().map(|m| sim.begin_call(m)).collect();
    if md5s.len() > 50 {
        return (
            StatusCode::BAD_REQUEST,
            Json(
                json!({"responseCode": 1, "responseMessage": "Too many md5s (50 at most).",
                        "errorCode": 5, "data": null}),
            ),
        )
            .into_response();
    }
    if let Err(r) = gate(&sim, "md5_list", &headers).await {
        return r;
    }
    let now = sim.now();
    let data: Vec<_> = md5s
        .iter()
        .map(|m| {
            let plan = sim.plan(m);
            crate::wire::bakong_list_item(
                m,
                plan.as_ref().map(|p| p.status_at(now)),
                plan.as_ref().map_or(Money::NONE, Money::of),
            )
        })
        .collect();
    Json(
        json!({"responseCode": 0, "responseMessage": "Getting transactions successfully.",
                "errorCode": null, "data": data}),
    )
    .into_response()
}
