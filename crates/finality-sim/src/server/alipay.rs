//! Alipay's gateway as the simulator answers it: signed trade and refund queries.

use crate::model::Simulator;
use crate::server::gate::faults;
use crate::wire::Money;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

/// `alipay.trade.query`, and `alipay.trade.fastpay.refund.query` for a
/// refund (the payment created with the refund's `out_request_no` as its
/// merchant reference): the request's RSA2 signature is checked with the
/// app's public key (the simulator's merchant key).
pub(crate) async fn alipay_gateway(
    State(sim): State<Arc<Simulator>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
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
    if method == "alipay.data.dataservice.bill.downloadurl.query" {
        return answer(crate::server::reports::alipay_bill_url(
            &sim, &biz, &params, &headers,
        ));
    }
    if let Some(refused) = plan
        .as_ref()
        .and_then(|p| sim.alipay_token_gate(&p.id, &params))
    {
        return answer(refused);
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
