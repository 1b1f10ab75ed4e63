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

mod alipay;
mod bakong;
mod gate;
mod paypal;
mod reports;
mod stripe;
mod wechat;

use crate::model::Simulator;
use crate::server::alipay::alipay_gateway;
use crate::server::bakong::{bakong_by_hash, bakong_by_md5, bakong_md5_list};
use crate::server::gate::{answer, gate};
use crate::server::paypal::{
    paypal_capture, paypal_events, paypal_order, paypal_refund, paypal_search, paypal_token,
    paypal_verify,
};
use crate::server::stripe::{stripe_events, stripe_list, stripe_object, stripe_search};
use crate::server::wechat::{wechat_by_id, wechat_by_order_no, wechat_refund};
use crate::wire::Money;
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
            "/wechat/v3/pay/partner/transactions/out-trade-no/{id}",
            get(wechat_by_order_no),
        )
        .route(
            "/wechat/v3/pay/partner/transactions/id/{id}",
            get(wechat_by_id),
        )
        .route(
            "/wechat/v3/refund/domestic/refunds/{id}",
            get(wechat_refund),
        )
        .route("/alipay/gateway.do", post(alipay_gateway))
        .route(
            "/alipay/downloadBillFile.resource",
            get(reports::alipay_bill_file),
        )
        .route("/wechat/v3/bill/tradebill", get(reports::wechat_tradebill))
        .route(
            "/adyen/reports/download/MerchantAccount/{account}/{file}",
            get(reports::adyen_report_download),
        )
        .route(
            "/wechat/v3/billdownload/file",
            get(reports::wechat_billdownload),
        )
        .route(
            "/stripe/v1/reporting/report_runs",
            post(reports::stripe_report_run_create),
        )
        .route(
            "/stripe/v1/reporting/report_runs/{id}",
            get(reports::stripe_report_run),
        )
        .route(
            "/stripe/files/v1/files/{id}/contents",
            get(reports::stripe_file_contents),
        )
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
pub(crate) struct CreateIn {
    id: Option<String>,
    merchant_ref: Option<String>,
    /// Minor units (default 1000).
    amount: Option<i64>,
    /// ISO 4217 (default EUR).
    currency: Option<String>,
}

pub(crate) async fn create(
    State(sim): State<Arc<Simulator>>,
    body: Option<Json<CreateIn>>,
) -> Response {
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

pub(crate) async fn status(
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
pub(crate) struct SearchIn {
    merchant_ref: String,
}

/// `GET /v1/payments?merchant_ref=…` → `{"data": [{"id", "status"}]}`.
pub(crate) async fn search(
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

pub(crate) async fn acme_transfer(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let missing = json!({"code": "TRANSFER_NOT_FOUND"});
    answer(&sim, &id, &headers, crate::wire::acme_transfer, missing).await
}

#[derive(serde::Deserialize)]
pub(crate) struct WordIn {
    word: String,
    #[serde(default = "yes")]
    success: bool,
}

pub(crate) fn yes() -> bool {
    true
}

/// `POST /sim/payments/{id}/answer {"word"}`: the status API answers this
/// published word for the payment from now on.
pub(crate) async fn answer_word(
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
pub(crate) async fn notify_word(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    Json(w): Json<WordIn>,
) -> Response {
    match sim.notify_word(&id, &w.word, w.success).await {
        Ok((status, event_id)) => {
            Json(json!({"id": id, "sent": w.word, "event_id": event_id, "answered": status}))
                .into_response()
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": e.to_string()})),
        )
            .into_response(),
    }
}

pub(crate) async fn stats(State(sim): State<Arc<Simulator>>) -> Json<crate::model::Stats> {
    Json(sim.stats())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReportIn {
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
pub(crate) async fn settlement_report(
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
