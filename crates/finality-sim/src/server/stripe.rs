//! Stripe's API as the simulator answers it: PaymentIntents, refunds, search and the event list.

use crate::model::Simulator;
use crate::server::gate::{answer, authorized, faults, gate};
use crate::wire::Money;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

#[derive(serde::Deserialize)]
pub(crate) struct StripeSearchIn {
    query: String,
}

/// `GET /stripe/v1/payment_intents/search?query=metadata['merchant_ref']:'…'`
/// (the one query shape the simulator understands).
pub(crate) async fn stripe_search(
    State(sim): State<Arc<Simulator>>,
    axum::extract::Query(q): axum::extract::Query<StripeSearchIn>,
    headers: HeaderMap,
) -> Response {
    let wanted = q
        .query
        .strip_prefix("metadata['merchant_ref']:'")
        .and_then(|r| r.strip_suffix('\''))
        .map(|r| r.replace("\\'", "'").replace("\\\\", "\\"));
    let Some(wanted) = wanted else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {"type": "invalid_request_error",
                                  "message": format!("unsupported query: {}", q.query)}})),
        )
            .into_response();
    };
    let _call = sim.begin_call(&wanted);
    if let Err(r) = gate(&sim, &wanted, &headers).await {
        return r;
    }
    let now = sim.now();
    let data: Vec<_> = sim
        .plans_by_merchant_ref(&wanted)
        .iter()
        .map(|p| {
            let mut o = crate::wire::stripe_object(&p.id, p.status_at(now), Money::of(p));
            o["metadata"] = json!({ "merchant_ref": wanted });
            o
        })
        .collect();
    Json(json!({"object": "search_result", "data": data, "has_more": false})).into_response()
}

pub(crate) async fn stripe_list(State(sim): State<Arc<Simulator>>, headers: HeaderMap) -> Response {
    if !authorized(&sim, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": {"type": "invalid_request_error",
                                  "message": "Invalid API Key provided"}})),
        )
            .into_response();
    }
    Json(json!({"object": "list", "data": [], "has_more": false})).into_response()
}

/// Stripe's `GET /v1/events`: the provider's own log of what happened,
/// newest first, paged the way Stripe pages every list: `ending_before=ID`
/// gives the `limit` events just newer than ID (still newest first),
/// `starting_after=ID` those just older; `types[]` and `created[gte]` filter.
pub(crate) async fn stripe_events(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    sim.counters
        .event_list_requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let invalid = |status: StatusCode, code: &str, message: String| {
        (
            status,
            Json(
                json!({"error": {"type": "invalid_request_error", "code": code,
                                  "message": message}}),
            ),
        )
            .into_response()
    };
    if !authorized(&sim, &headers) {
        return invalid(
            StatusCode::UNAUTHORIZED,
            "api_key_invalid",
            "Invalid API Key provided".into(),
        );
    }
    if let Err(r) = faults(&sim).await {
        return r;
    }
    let (mut limit, mut ending_before, mut starting_after) = (10usize, None, None);
    let (mut types, mut created_gte) = (Vec::new(), None);
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match k.as_ref() {
            "limit" => match v.parse::<usize>() {
                Ok(n) if (1..=100).contains(&n) => limit = n,
                _ => {
                    return invalid(
                        StatusCode::BAD_REQUEST,
                        "parameter_invalid_integer",
                        format!("Invalid limit: must be between 1 and 100 (got `{v}`)"),
                    )
                }
            },
            "ending_before" => ending_before = Some(v.into_owned()),
            "starting_after" => starting_after = Some(v.into_owned()),
            // stripe-python sends arrays indexed (`types[0]=…`); `types[]` too.
            t if t.starts_with("types[") => types.push(v.into_owned()),
            "created[gte]" => created_gte = v.parse::<i64>().ok(),
            _ => {}
        }
    }
    let now = sim.now();
    // Newest first, as Stripe lists.
    let all: Vec<serde_json::Value> = sim
        .events_until(now)
        .into_iter()
        .rev()
        .filter(|e| created_gte.is_none_or(|t| e.at.0 / 1000 >= t))
        .map(|e| {
            crate::wire::stripe_event(
                &e.event_id,
                e.at.0 / 1000,
                &e.payment_id,
                e.merchant_ref.as_deref(),
                e.status,
                Money {
                    amount: e.amount,
                    currency: &e.currency,
                },
            )
        })
        .filter(|v| types.is_empty() || types.iter().any(|t| v["type"] == t.as_str()))
        .collect();
    let position = |id: &str| all.iter().position(|v| v["id"] == id);
    let (page, has_more) = match (ending_before, starting_after) {
        (Some(id), _) => {
            let Some(at) = position(&id) else {
                return invalid(
                    StatusCode::NOT_FOUND,
                    "resource_missing",
                    format!("No such event: '{id}'"),
                );
            };
            let start = at.saturating_sub(limit);
            (&all[start..at], start > 0)
        }
        (None, Some(id)) => {
            let Some(at) = position(&id) else {
                return invalid(
                    StatusCode::NOT_FOUND,
                    "resource_missing",
                    format!("No such event: '{id}'"),
                );
            };
            let older = &all[at + 1..];
            (&older[..limit.min(older.len())], older.len() > limit)
        }
        (None, None) => (&all[..limit.min(all.len())], all.len() > limit),
    };
    Json(json!({"object": "list", "url": "/v1/events", "has_more": has_more, "data": page}))
        .into_response()
}

pub(crate) async fn stripe_object(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let missing = json!({"error": {"code": "resource_missing", "type": "invalid_request_error",
                                   "message": format!("No such object: '{id}'")}});
    // Connect: the object must be the account's the request acts for.
    if let Some(r) = sim.stripe_account_gate(&id, &headers) {
        let _call = sim.begin_call(&id);
        return r;
    }
    answer(&sim, &id, &headers, crate::wire::stripe_object, missing).await
}
