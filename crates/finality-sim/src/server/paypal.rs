//! PayPal as the simulator answers it: OAuth tokens, orders, captures, refunds, search, the event list and webhook verification.

use crate::model::Simulator;
use crate::server::gate::faults;
use crate::wire::Money;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Client credentials are the simulator's `api_key` as `id:secret`.
pub(crate) async fn paypal_token(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
) -> Response {
    sim.counters
        .token_requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let expected = sim.config.api_key.clone().unwrap_or_default();
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.decode(b).ok()
        })
        .and_then(|b| String::from_utf8(b).ok());
    if given.as_deref() != Some(expected.as_str()) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client", "error_description": "Client Authentication failed"})),
        )
            .into_response();
    }
    let token = sim.issue_token();
    let ttl = sim.config.token_ttl.unwrap_or(Duration::from_secs(32_400));
    Json(
        json!({"scope": "https://uri.paypal.com/services/payments", "access_token": token,
                "token_type": "Bearer", "app_id": "APP-SIM", "expires_in": ttl.as_secs()}),
    )
    .into_response()
}

pub(crate) fn paypal_authorized(sim: &Simulator, headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| sim.token_valid(t))
}

pub(crate) async fn paypal_object(
    sim: Arc<Simulator>,
    id: String,
    headers: HeaderMap,
    shape: fn(&str, &str, Money<'_>) -> serde_json::Value,
    captures: bool,
) -> Response {
    let _call = sim.begin_call(&id);
    if !paypal_authorized(&sim, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_token"})),
        )
            .into_response();
    }
    // A capture's id is `CAP` and its payment's (`wire::paypal_capture_id`).
    let plan = match id.strip_prefix("CAP") {
        Some(i) if captures => sim.plan(i),
        _ => sim.plan(&id),
    };
    match faults(&sim).await {
        Err(r) => r,
        Ok(()) => match plan {
            Some(plan) => {
                let mut v = shape(&id, plan.status_at(sim.now()), Money::of(&plan));
                if let Some(w) = sim.word_for(&plan.id) {
                    v["status"] = json!(w);
                }
                Json(v).into_response()
            }
            None => (
                StatusCode::NOT_FOUND,
                Json(json!({"name": "RESOURCE_NOT_FOUND", "message": "The specified resource does not exist."})),
            )
                .into_response(),
        },
    }
}

/// PayPal's `GET /v1/notifications/webhooks-events`: the simulator's event
/// log as PayPal lists it, newest first, `start_time` and `end_time`
/// inclusive (second precision), `page_size` per page, further pages by the
/// `next` link (`move_to=next&index_id=N`). Events are in the shape of the
/// simulator's PayPal webhooks, under the same ids.
pub(crate) async fn paypal_events(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    sim.counters
        .event_list_requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if !paypal_authorized(&sim, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_token"})),
        )
            .into_response();
    }
    if let Err(r) = faults(&sim).await {
        return r;
    }
    let invalid = |field: &str, value: &str| {
        (
            StatusCode::BAD_REQUEST,
            Json(
                json!({"name": "VALIDATION_ERROR", "message": "Invalid data provided",
                        "details": [{"field": field, "value": value,
                                     "issue": "Invalid data provided"}]}),
            ),
        )
            .into_response()
    };
    let time = |v: &str| {
        chrono::DateTime::parse_from_rfc3339(v)
            .ok()
            .map(|t| t.timestamp())
    };
    let query = query.unwrap_or_default();
    let (mut page_size, mut skip, mut from, mut until) = (10usize, 0usize, None, None);
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "page_size" => match v.parse::<usize>() {
                Ok(n) if (1..=300).contains(&n) => page_size = n,
                _ => return invalid("page_size", &v),
            },
            "start_time" => match time(&v) {
                Some(t) => from = Some(t),
                None => return invalid("start_time", &v),
            },
            "end_time" => match time(&v) {
                Some(t) => until = Some(t),
                None => return invalid("end_time", &v),
            },
            "index_id" => skip = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    let secs = |t: finality_core::Timestamp| t.0.div_euclid(1000);
    let all: Vec<serde_json::Value> = sim
        .events_until(sim.now())
        .into_iter()
        .rev()
        .filter(|e| from.is_none_or(|f| secs(e.at) >= f) && until.is_none_or(|u| secs(e.at) <= u))
        .filter_map(|e| {
            let created = chrono::DateTime::from_timestamp(secs(e.at), 0)?
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let (body, _) = crate::wire::paypal_event(
                &e.event_id,
                &e.payment_id,
                e.merchant_ref.as_deref(),
                e.status,
                "listed",
                &created,
                Money {
                    amount: e.amount,
                    currency: &e.currency,
                },
            )?;
            serde_json::from_str(&body).ok()
        })
        .collect();
    let page: Vec<_> = all.iter().skip(skip).take(page_size).cloned().collect();
    let mut body = json!({"events": page, "count": page.len()});
    if skip + page_size < all.len() {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("127.0.0.1");
        let mut next: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
            .filter(|(k, _)| k != "move_to" && k != "index_id")
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        next.push(("move_to".into(), "next".into()));
        next.push(("index_id".into(), (skip + page_size).to_string()));
        let q = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(next)
            .finish();
        body["links"] = json!([{"href": format!("http://{host}/paypal/v1/notifications/webhooks-events?{q}"),
                                "rel": "next", "method": "GET"}]);
    }
    Json(body).into_response()
}

pub(crate) async fn paypal_order(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    paypal_object(sim, id, headers, crate::wire::paypal_order_body, false).await
}

pub(crate) async fn paypal_refund(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    paypal_object(
        sim,
        id,
        headers,
        |id, s, m| {
            json!({"id": id, "status": crate::wire::paypal_refund(s),
                   "amount": crate::wire::paypal_amount(m)})
        },
        false,
    )
    .await
}

pub(crate) async fn paypal_capture(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    paypal_object(
        sim,
        id,
        headers,
        |id, s, m| {
            json!({"id": id, "status": crate::wire::paypal_capture(s),
                   "amount": crate::wire::paypal_amount(m)})
        },
        true,
    )
    .await
}

#[derive(serde::Deserialize)]
pub(crate) struct PayPalSearchIn {
    invoice_id: String,
    start_date: String,
    end_date: String,
}

/// Transaction Search by invoice id (dates required, as PayPal requires).
pub(crate) async fn paypal_search(
    State(sim): State<Arc<Simulator>>,
    axum::extract::Query(q): axum::extract::Query<PayPalSearchIn>,
    headers: HeaderMap,
) -> Response {
    let _call = sim.begin_call(&q.invoice_id);
    if !paypal_authorized(&sim, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_token"})),
        )
            .into_response();
    }
    if q.start_date.is_empty() || q.end_date.is_empty() {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"name": "INVALID_REQUEST", "message": "start_date and end_date are required"})),
        )
            .into_response();
    }
    if let Err(r) = faults(&sim).await {
        return r;
    }
    let now = sim.now();
    let details: Vec<_> = sim
        .plans_by_merchant_ref(&q.invoice_id)
        .iter()
        .map(|p| {
            json!({"transaction_info": {
                "transaction_id": crate::wire::paypal_capture_id(&p.id),
                "invoice_id": q.invoice_id,
                "transaction_status": crate::wire::paypal_transaction_status(p.status_at(now))}})
        })
        .collect();
    Json(json!({"transaction_details": details, "total_items": details.len()})).into_response()
}

pub(crate) async fn paypal_verify(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if !paypal_authorized(&sim, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_token"})),
        )
            .into_response();
    }
    /// PayPal's documented request; `webhook_event` is checked as the
    /// exact bytes it holds, as PayPal checks the bytes it sent.
    #[derive(serde::Deserialize)]
    struct VerifyIn<'a> {
        transmission_id: String,
        transmission_time: String,
        transmission_sig: String,
        webhook_id: String,
        #[serde(borrow)]
        webhook_event: &'a serde_json::value::RawValue,
    }
    let Ok(req) = serde_json::from_slice::<VerifyIn>(&body) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"name": "VALIDATION_ERROR", "message": "Invalid request - see details"})),
        )
            .into_response();
    };
    let expected = crate::wire::paypal_signature(
        &req.transmission_id,
        &req.transmission_time,
        &req.webhook_id,
        req.webhook_event.get().as_bytes(),
    );
    let ok = req.transmission_sig == expected;
    Json(json!({"verification_status": if ok { "SUCCESS" } else { "FAILURE" }})).into_response()
}
