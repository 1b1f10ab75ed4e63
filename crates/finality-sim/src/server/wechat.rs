//! WeChat Pay v3 as the simulator answers it: signed queries by order
//! number or transaction id, refunds; a merchant's own (`mchid`), or a
//! service provider's for its sub-merchants (`/v3/pay/partner/…?sp_mchid=
//! …&sub_mchid=…`, refunds `?sub_mchid=…`). A sub-merchant's order is not
//! found under another sub-merchant or the merchant's own paths; one whose
//! authorization was withdrawn answers 403 `NO_AUTH`.

use crate::model::Simulator;
use crate::server::gate::faults;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

/// Verify a WeChat Pay v3 request signature against the merchant key.
pub(crate) fn wechat_signed(method: &str, uri: &axum::http::Uri, headers: &HeaderMap) -> bool {
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

/// By order number; also the service provider's partner path (the
/// sub-merchant is in the query, read by [`wechat_query`]).
pub(crate) async fn wechat_by_order_no(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let plan = sim.plan_by_order_no(&id);
    wechat_query(sim, id, plan, uri, headers, wechat_transaction).await
}

/// A refund by `out_refund_no` (the simulator's payment created with it).
pub(crate) async fn wechat_refund(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let plan = sim.plan_by_order_no(&id);
    let render = |plan: &crate::plan::PaymentPlan, word: &str, _sub: Option<&str>| {
        json!({"refund_id": crate::wire::wechat_refund_id(&plan.id),
               "out_refund_no": plan.merchant_ref.clone().unwrap_or_else(|| plan.id.clone()),
               "status": crate::wire::wechat_refund_status(word),
               "amount": {"refund": plan.amount, "total": plan.amount,
                          "currency": plan.currency}})
    };
    wechat_query(sim, id, plan, uri, headers, render).await
}

/// A transaction as WeChat Pay shows it: `transaction_id` only once the
/// buyer has started paying; a sub-merchant's names the service provider
/// and the sub-merchant (`sub_mchid`, the account it was made for).
pub(crate) fn wechat_transaction(
    plan: &crate::plan::PaymentPlan,
    word: &str,
    sub_mchid: Option<&str>,
) -> serde_json::Value {
    let state = crate::wire::wechat_trade_state(word);
    let mut body = json!({
        "out_trade_no": plan.merchant_ref.clone().unwrap_or_else(|| plan.id.clone()),
        "trade_state": state,
        "amount": {"total": plan.amount, "currency": plan.currency}});
    crate::wire::wechat_merchant(&mut body, sub_mchid);
    if state != "NOTPAY" {
        body["transaction_id"] = json!(crate::wire::wechat_transaction_id(&plan.id));
    }
    body
}

pub(crate) async fn wechat_by_id(
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
pub(crate) async fn wechat_query(
    sim: Arc<Simulator>,
    id: String,
    plan: Option<crate::plan::PaymentPlan>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    render: impl Fn(&crate::plan::PaymentPlan, &str, Option<&str>) -> serde_json::Value,
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
    // The sub-merchant asked for (`sub_mchid`); none: the merchant's own.
    let asked = uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "sub_mchid")
            .map(|(_, v)| v.into_owned())
    });
    if asked.as_ref().is_some_and(|sub| sim.is_revoked(sub)) {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({"code": "NO_AUTH", "message": "商户无权限"})),
        )
            .into_response();
    }
    // Another sub-merchant's order (or the merchant's own asked for as a
    // sub-merchant's) is not found.
    let plan = plan.filter(|p| sim.account_of(&p.id) == asked);
    match plan {
        Some(plan) => {
            let mut v = render(&plan, plan.status_at(sim.now()), asked.as_deref());
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
