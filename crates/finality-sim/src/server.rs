//! The simulator's HTTP API, the wire format the `sim` adapter speaks.
//!
//! - `POST /v1/payments` `{"id"?}` → 201 `{"id", "status"}`
//! - `GET /v1/payments/{id}` → `{"id", "status"}` | 404 | injected 429/503/504
//! - `GET /sim/stats` → call counters
//!
//! Bakong's (KHQR) check API, for the `bakong` adapter:
//! `POST /bakong/v1/check_transaction_by_md5 {"md5"}`,
//! `…/check_transaction_by_hash {"hash"}`,
//! `…/check_transaction_by_md5_list ["md5", …]` (50 at most).
//!
//! "Acme", a made-up provider for the `generic` adapter:
//! `GET /acme/v2/transfers/{id}` → `{"data": {"id", "state"}}` with states
//! `CREATED | IN_PROGRESS | COMPLETED | REJECTED | CANCELLED`.
//!
//! Stripe's wire format, for the `stripe` adapter (same payments, same
//! faults, Stripe's words and shapes, `Authorization: Bearer <key>`):
//! - `GET /stripe/v1/payment_intents/{id}`, `GET /stripe/v1/refunds/{id}`
//!   → the object | 404 `{"error": {"code": "resource_missing"}}`

use crate::model::{Fault, Simulator};
use crate::wire::Money;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub fn router(sim: Arc<Simulator>) -> Router {
    Router::new()
        .route("/v1/payments", post(create).get(search))
        .route("/v1/payments/{id}", get(status))
        .route("/stripe/v1/payment_intents", get(stripe_list))
        .route("/stripe/v1/events", get(stripe_events))
        .route("/stripe/v1/payment_intents/search", get(stripe_search))
        .route("/stripe/v1/payment_intents/{id}", get(stripe_object))
        .route("/stripe/v1/refunds/{id}", get(stripe_object))
        .route("/stripe/v1/payouts/{id}", get(stripe_object))
        .route("/acme/v2/transfers/{id}", get(acme_transfer))
        .route(
            "/wechat/v3/pay/transactions/out-trade-no/{id}",
            get(wechat_by_order_no),
        )
        .route("/wechat/v3/pay/transactions/id/{id}", get(wechat_by_id))
        .route(
            "/wechat/v3/refund/domestic/refunds/{id}",
            get(wechat_refund),
        )
        .route("/alipay/gateway.do", post(alipay_gateway))
        .route("/paypal/v1/oauth2/token", post(paypal_token))
        .route("/paypal/v2/checkout/orders/{id}", get(paypal_order))
        .route("/paypal/v2/payments/refunds/{id}", get(paypal_refund))
        .route("/paypal/v2/payments/captures/{id}", get(paypal_capture))
        .route("/paypal/v1/reporting/transactions", get(paypal_search))
        .route(
            "/paypal/v1/notifications/webhooks-events",
            get(paypal_events),
        )
        .route(
            "/paypal/v1/notifications/verify-webhook-signature",
            post(paypal_verify),
        )
        .route("/bakong/v1/check_transaction_by_md5", post(bakong_by_md5))
        .route("/bakong/v1/check_transaction_by_hash", post(bakong_by_hash))
        .route(
            "/bakong/v1/check_transaction_by_md5_list",
            post(bakong_md5_list),
        )
        .route("/sim/stats", get(stats))
        .route("/sim/payments/{id}/answer", post(answer_word))
        .route("/sim/payments/{id}/notify", post(notify_word))
        .route("/sim/settlement-report", get(settlement_report))
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
    merchant_ref: Option<String>,
    /// Minor units (default 1000).
    amount: Option<i64>,
    /// ISO 4217 (default EUR).
    currency: Option<String>,
}

async fn create(State(sim): State<Arc<Simulator>>, body: Option<Json<CreateIn>>) -> Response {
    let b = body.map(|Json(b)| b).unwrap_or_default();
    let plan = sim.create_priced(
        b.id,
        b.merchant_ref,
        b.amount.unwrap_or(1000),
        b.currency.as_deref().unwrap_or("EUR"),
    );
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

/// What every status API shares: count the call, check the key, take the
/// configured latency, inject the drawn fault. `Ok(None)`: no such payment.
async fn gate(
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
async fn faults(sim: &Simulator) -> Result<(), Response> {
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
async fn answer(
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

async fn status(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let render = |id: &str, word: &str, m: Money<'_>| json!({"id": id, "status": word, "amount": m.amount, "currency": m.currency});
    answer(
        &sim,
        &id,
        &headers,
        render,
        json!({"error": "no such payment"}),
    )
    .await
}

#[derive(serde::Deserialize)]
struct SearchIn {
    merchant_ref: String,
}

/// `GET /v1/payments?merchant_ref=…` → `{"data": [{"id", "status"}]}`.
async fn search(
    State(sim): State<Arc<Simulator>>,
    axum::extract::Query(q): axum::extract::Query<SearchIn>,
    headers: HeaderMap,
) -> Response {
    let _call = sim.begin_call(&q.merchant_ref);
    if let Err(r) = gate(&sim, &q.merchant_ref, &headers).await {
        return r;
    }
    let now = sim.now();
    let data: Vec<_> = sim
        .plans_by_merchant_ref(&q.merchant_ref)
        .iter()
        .map(|p| json!({"id": p.id, "status": p.status_at(now), "merchant_ref": p.merchant_ref}))
        .collect();
    Json(json!({ "data": data })).into_response()
}

#[derive(serde::Deserialize)]
struct StripeSearchIn {
    query: String,
}

/// `GET /stripe/v1/payment_intents/search?query=metadata['merchant_ref']:'…'`
/// (the one query shape the simulator understands).
async fn stripe_search(
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

async fn acme_transfer(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let missing = json!({"code": "TRANSFER_NOT_FOUND"});
    answer(&sim, &id, &headers, crate::wire::acme_transfer, missing).await
}

/// Verify a WeChat Pay v3 request signature against the merchant key.
fn wechat_signed(method: &str, uri: &axum::http::Uri, headers: &HeaderMap) -> bool {
    use rsa::pkcs8::DecodePublicKey;
    let Some(auth) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("WECHATPAY2-SHA256-RSA2048 "))
    else {
        return false;
    };
    let field = |name: &str| {
        auth.split(',').find_map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            (k == name).then(|| v.trim_matches('"').to_string())
        })
    };
    let (Some(ts), Some(nonce), Some(sig), Some(mchid)) = (
        field("timestamp"),
        field("nonce_str"),
        field("signature"),
        field("mchid"),
    ) else {
        return false;
    };
    let Ok(key) =
        rsa::RsaPublicKey::from_public_key_pem(crate::wire::wechat_keys::MERCHANT_PUBLIC_PEM)
    else {
        return false;
    };
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string());
    mchid == crate::wire::wechat_keys::MCHID
        && crate::schemes::rsa_verify(&key, &format!("{method}\n{path}\n{ts}\n{nonce}\n\n"), &sig)
}

async fn wechat_by_order_no(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let plan = sim.plan_by_order_no(&id);
    wechat_query(sim, id, plan, uri, headers, wechat_transaction).await
}

/// A refund by `out_refund_no` (the simulator's payment created with it).
async fn wechat_refund(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let plan = sim.plan_by_order_no(&id);
    let render = |plan: &crate::plan::PaymentPlan, word: &str| {
        json!({"refund_id": crate::wire::wechat_refund_id(&plan.id),
               "out_refund_no": plan.merchant_ref.clone().unwrap_or_else(|| plan.id.clone()),
               "status": crate::wire::wechat_refund_status(word),
               "amount": {"refund": plan.amount, "total": plan.amount,
                          "currency": plan.currency}})
    };
    wechat_query(sim, id, plan, uri, headers, render).await
}

/// A transaction as WeChat Pay shows it: `transaction_id` only once the
/// buyer has started paying.
fn wechat_transaction(plan: &crate::plan::PaymentPlan, word: &str) -> serde_json::Value {
    let state = crate::wire::wechat_trade_state(word);
    let mut body = json!({"mchid": crate::wire::wechat_keys::MCHID,
        "appid": crate::wire::wechat_keys::APPID,
        "out_trade_no": plan.merchant_ref.clone().unwrap_or_else(|| plan.id.clone()),
        "trade_state": state,
        "amount": {"total": plan.amount, "currency": plan.currency}});
    if state != "NOTPAY" {
        body["transaction_id"] = json!(crate::wire::wechat_transaction_id(&plan.id));
    }
    body
}

async fn wechat_by_id(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let plan = id.strip_prefix("4200").and_then(|i| sim.plan(i));
    wechat_query(sim, id, plan, uri, headers, wechat_transaction).await
}

/// One object as WeChat Pay answers: the request's signature checked, the
/// answer `render`ed from the plan and signed by the platform key.
async fn wechat_query(
    sim: Arc<Simulator>,
    id: String,
    plan: Option<crate::plan::PaymentPlan>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    render: impl Fn(&crate::plan::PaymentPlan, &str) -> serde_json::Value,
) -> Response {
    let _call = sim.begin_call(&id);
    if !wechat_signed("GET", &uri, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"code": "SIGN_ERROR", "message": "签名错误"})),
        )
            .into_response();
    }
    if let Err(r) = faults(&sim).await {
        return r;
    }
    match plan {
        Some(plan) => {
            let mut v = render(&plan, plan.status_at(sim.now()));
            if let Some(w) = sim.word_for(&plan.id) {
                let field = if v.get("trade_state").is_some() {
                    "trade_state"
                } else {
                    "status"
                };
                v[field] = json!(w);
            }
            let text = v.to_string();
            let mut resp =
                ([(header::CONTENT_TYPE, "application/json")], text.clone()).into_response();
            let ts = sim.now().millis() / 1000;
            for (k, v) in crate::wire::wechat_answer_headers(&text, ts) {
                if let Ok(v) = axum::http::HeaderValue::from_str(&v) {
                    resp.headers_mut().insert(k, v);
                }
            }
            resp
        }
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"code": "ORDER_NOT_EXIST", "message": "订单不存在"})),
        )
            .into_response(),
    }
}

/// `alipay.trade.query`, and `alipay.trade.fastpay.refund.query` for a
/// refund (the payment created with the refund's `out_request_no` as its
/// merchant reference): the request's RSA2 signature is checked with the
/// app's public key (the simulator's merchant key).
async fn alipay_gateway(State(sim): State<Arc<Simulator>>, body: axum::body::Bytes) -> Response {
    use rsa::pkcs8::DecodePublicKey;
    let params: std::collections::BTreeMap<String, String> = url::form_urlencoded::parse(&body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let biz: serde_json::Value = params
        .get("biz_content")
        .and_then(|b| serde_json::from_str(b).ok())
        .unwrap_or_default();
    let method = params.get("method").cloned().unwrap_or_default();
    let refund = method == "alipay.trade.fastpay.refund.query";
    let (id, plan) = match (biz["out_trade_no"].as_str(), biz["trade_no"].as_str()) {
        _ if refund => {
            let o = biz["out_request_no"].as_str().unwrap_or_default();
            (o.to_string(), sim.plan_by_order_no(o))
        }
        (Some(o), _) => (o.to_string(), sim.plan_by_order_no(o)),
        (None, Some(t)) => (
            t.to_string(),
            t.strip_prefix("2026").and_then(|i| sim.plan(i)),
        ),
        (None, None) => (String::new(), None),
    };
    let _call = sim.begin_call(&id);
    let signed =
        rsa::RsaPublicKey::from_public_key_pem(crate::wire::wechat_keys::MERCHANT_PUBLIC_PEM)
            .is_ok_and(|key| {
                crate::schemes::rsa_verify(
                    &key,
                    &crate::schemes::alipay_content(&params, false),
                    params.get("sign").map_or("", String::as_str),
                )
            });
    let key = format!("{}_response", method.replace('.', "_"));
    let answer = |r: serde_json::Value| {
        (
            [(header::CONTENT_TYPE, "application/json")],
            crate::wire::alipay_answer(&key, &r),
        )
            .into_response()
    };
    if !signed {
        // Alipay does not sign this one: it could not tell who asked.
        return Json(json!({"alipay_trade_query_response": {"code": "40002",
            "msg": "Invalid Arguments", "sub_code": "isv.invalid-signature",
            "sub_msg": "验签出错"}}))
        .into_response();
    }
    if let Err(r) = faults(&sim).await {
        return r;
    }
    match plan {
        // "未返回该字段表示退款请求未收到或者退款失败": no refund_status
        // until the refund succeeded.
        Some(plan) if refund => {
            let mut r = json!({"code": "10000", "msg": "Success",
                "trade_no": biz["trade_no"], "out_request_no": id,
                "refund_amount": Money::of(&plan).decimal(),
                "total_amount": Money::of(&plan).decimal()});
            match sim.word_for(&plan.id) {
                Some(w) => r["refund_status"] = json!(w),
                None if plan.status_at(sim.now()) == "succeeded" => {
                    r["refund_status"] = json!("REFUND_SUCCESS")
                }
                None => {}
            }
            answer(r)
        }
        Some(plan) => answer(json!({"code": "10000", "msg": "Success",
        "out_trade_no": plan.merchant_ref.clone().unwrap_or_else(|| plan.id.clone()),
        "trade_no": crate::wire::alipay_trade_no(&plan.id),
        "total_amount": Money::of(&plan).decimal(),
        "trade_status": sim.word_for(&plan.id).unwrap_or_else(|| {
            crate::wire::alipay_trade_status(plan.status_at(sim.now())).to_string()
        })})),
        None => answer(json!({"code": "40004", "msg": "Business Failed",
                              "sub_code": "ACQ.TRADE_NOT_EXIST", "sub_msg": "交易不存在"})),
    }
}

/// Client credentials are the simulator's `api_key` as `id:secret`.
async fn paypal_token(State(sim): State<Arc<Simulator>>, headers: HeaderMap) -> Response {
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

fn paypal_authorized(sim: &Simulator, headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| sim.token_valid(t))
}

async fn paypal_object(
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
async fn paypal_events(
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

async fn paypal_order(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    paypal_object(sim, id, headers, crate::wire::paypal_order_body, false).await
}

async fn paypal_refund(
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

async fn paypal_capture(
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
struct PayPalSearchIn {
    invoice_id: String,
    start_date: String,
    end_date: String,
}

/// Transaction Search by invoice id (dates required, as PayPal requires).
async fn paypal_search(
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

async fn paypal_verify(
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

async fn bakong_one(sim: Arc<Simulator>, id: String, headers: HeaderMap) -> Response {
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

async fn bakong_by_md5(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
    Json(body): Json<serde_json::Value>,
) -> Response {
    let id = body["md5"].as_str().unwrap_or_default().to_string();
    bakong_one(sim, id, headers).await
}

/// By full hash: the simulator's hash of a payment is derived from its id.
async fn bakong_by_hash(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
    Json(body): Json<serde_json::Value>,
) -> Response {
    let hash = body["hash"].as_str().unwrap_or_default().to_string();
    bakong_one(sim, hash, headers).await
}

async fn bakong_md5_list(
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

async fn stripe_list(State(sim): State<Arc<Simulator>>, headers: HeaderMap) -> Response {
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
async fn stripe_events(
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

async fn stripe_object(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let missing = json!({"error": {"code": "resource_missing", "type": "invalid_request_error",
                                   "message": format!("No such object: '{id}'")}});
    answer(&sim, &id, &headers, crate::wire::stripe_object, missing).await
}

#[derive(serde::Deserialize)]
struct WordIn {
    word: String,
    #[serde(default = "yes")]
    success: bool,
}

fn yes() -> bool {
    true
}

/// `POST /sim/payments/{id}/answer {"word"}`: the status API answers this
/// published word for the payment from now on.
async fn answer_word(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    Json(w): Json<WordIn>,
) -> Response {
    if sim.plan(&id).is_none() {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "no such payment"})),
        )
            .into_response();
    }
    sim.answer_with(&id, &w.word);
    Json(json!({"id": id, "answers": w.word})).into_response()
}

/// `POST /sim/payments/{id}/notify {"word", "success"?}`: the webhook
/// target's provider notifies this published word about the payment, now.
async fn notify_word(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    Json(w): Json<WordIn>,
) -> Response {
    match sim.notify_word(&id, &w.word, w.success).await {
        Ok((status, event_id)) => {
            Json(json!({"id": id, "sent": w.word, "event_id": event_id, "answered": status}))
                .into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, Json(json!({"error": e}))).into_response(),
    }
}

async fn stats(State(sim): State<Arc<Simulator>>) -> Json<crate::model::Stats> {
    Json(sim.stats())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportIn {
    /// Batch number written on every line (default 1).
    batch: Option<u32>,
    missing: Option<f64>,
    wrong_amount: Option<f64>,
    refunded: Option<f64>,
    unknown: Option<f64>,
    seed: Option<u64>,
}

/// Every payment settled so far, as an Adyen Settlement details report
/// (CSV), with the discrepancies asked for (probabilities per payment);
/// what was injected comes back in `X-Sim-Injected` (JSON) so a caller can
/// check its reconciliation (up to 16 KiB of it).
async fn settlement_report(
    State(sim): State<Arc<Simulator>>,
    q: axum::extract::Query<ReportIn>,
) -> Response {
    let inject = crate::settlement::Inject {
        missing: q.missing.unwrap_or(0.0),
        wrong_amount: q.wrong_amount.unwrap_or(0.0),
        refunded: q.refunded.unwrap_or(0.0),
        unknown: q.unknown.unwrap_or(0.0),
        seed: q.seed.unwrap_or(1),
    };
    let settled = sim.settled_until(sim.now());
    let mut body = Vec::new();
    match crate::settlement::write_adyen_report(settled, &inject, q.batch.unwrap_or(1), &mut body) {
        Ok(done) => {
            let injected = json!({
                "missing": done.missing,
                "wrong_amount": done.wrong_amount,
                "refunded": done.refunded,
                "unknown": done.unknown,
            });
            (
                StatusCode::OK,
                [
                    (header::CONTENT_TYPE, "text/csv".to_string()),
                    (
                        header::HeaderName::from_static("x-sim-injected"),
                        // A header must stay small: large runs are checked
                        // through the library's `Injected` instead.
                        Some(injected.to_string())
                            .filter(|j| j.len() <= 16 * 1024)
                            .unwrap_or_else(|| r#"{"omitted":"too large"}"#.into()),
                    ),
                ],
                body,
            )
                .into_response()
        }
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": e.to_string()})),
        )
            .into_response(),
    }
}
