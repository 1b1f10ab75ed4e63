//! The providers' settlement report fetch APIs as the simulator answers
//! them, each in its provider's wire format (docs/SETTLEMENT_FORMATS.md):
//!
//! - WeChat Pay: `GET /v3/bill/tradebill?bill_date=…&bill_type=…` (signed
//!   request, signed answer: `hash_type`, `hash_value`, `download_url`),
//!   then `GET /v3/billdownload/file?token=…`; 400 `NO_STATEMENT_EXIST`
//!   before 09:00 Beijing time the day after, or for a withheld day.
//! - Stripe: `POST /v1/reporting/report_runs` (one run per
//!   `Idempotency-Key`), `GET /v1/reporting/report_runs/{id}`, and the
//!   result File's contents; a run whose interval ends in the future (or a
//!   withheld day) is refused, as Stripe refuses one past
//!   `data_available_end`.
//! - Alipay: `alipay.data.dataservice.bill.downloadurl.query` through the
//!   gateway (server/alipay.rs), then the zip at `bill_download_url`.

use crate::model::Simulator;
use crate::reports::{day_bounds, ReportKind, Whose, BEIJING_MS};
use crate::server::gate::authorized;
use crate::server::wechat::wechat_signed;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::NaiveDate;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// `http://HOST` the request was sent to: where download links point.
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// Whether a Beijing-time bill of `date` is made at `now` (WeChat Pay and
/// Alipay start at 09:00 the day after).
fn bill_made(sim: &Simulator, provider: &str, date: NaiveDate) -> bool {
    let (_, until) = day_bounds(date, BEIJING_MS);
    sim.now().millis() >= until.millis() + 9 * 3600 * 1000 && !sim.report_withheld(provider, date)
}

fn file_response(sim: &Simulator, id: &str) -> Response {
    match sim.serve_file(id) {
        Some(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/octet-stream")],
            body,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

pub(crate) async fn wechat_tradebill(
    State(sim): State<Arc<Simulator>>,
    Query(q): Query<HashMap<String, String>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    if !wechat_signed("GET", &uri, &headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"code": "SIGN_ERROR", "message": "签名错误"})),
        )
            .into_response();
    }
    let Some(date) = q
        .get("bill_date")
        .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
    else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"code": "PARAM_ERROR", "message": "bill_date"})),
        )
            .into_response();
    };
    // Not made yet: "账单生成中"; made, for a day without a trade or a
    // refund: "账单文件不存在" (WeChat Pay's 下载账单 error table).
    if !bill_made(&sim, "wechat", date) {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"code": "STATEMENT_CREATING", "message": "账单生成中"})),
        )
            .into_response();
    }
    let (from, until) = day_bounds(date, BEIJING_MS);
    // A service provider's bill of one sub-merchant, or its own.
    let sub = q.get("sub_mchid").filter(|s| !s.is_empty());
    let whose = sub.map_or(Whose::Own, |s| Whose::Account(s));
    if sim.nothing_settled(whose, from, until) {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"code": "NO_STATEMENT_EXIST", "message": "账单文件不存在"})),
        )
            .into_response();
    }
    let body = match sim.make_report(&ReportKind::WeChat, whose, date, from, until) {
        Ok(b) => b,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    };
    let hash = {
        use sha1::Digest;
        hex::encode(sha1::Sha1::digest(&body))
    };
    let bill_type = q.get("bill_type").cloned().unwrap_or_else(|| "ALL".into());
    let token = format!(
        "wx-{date}-{bill_type}-{}",
        sub.map_or("own", String::as_str)
    );
    sim.keep_file(&token, body);
    let text = json!({"hash_type": "SHA1", "hash_value": hash,
        "download_url": format!("{}/wechat/v3/billdownload/file?token={token}", origin(&headers))})
    .to_string();
    let mut resp = ([(header::CONTENT_TYPE, "application/json")], text.clone()).into_response();
    for (k, v) in crate::wire::wechat_answer_headers(&text, sim.now().millis() / 1000) {
        if let Ok(v) = axum::http::HeaderValue::from_str(&v) {
            resp.headers_mut().insert(k, v);
        }
    }
    resp
}

pub(crate) async fn wechat_billdownload(
    State(sim): State<Arc<Simulator>>,
    Query(q): Query<HashMap<String, String>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    if !wechat_signed("GET", &uri, &headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    file_response(&sim, q.get("token").map_or("", String::as_str))
}

fn stripe_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"type": "invalid_request_error", "message": message}})),
    )
        .into_response()
}

pub(crate) async fn stripe_report_run_create(
    State(sim): State<Arc<Simulator>>,
    headers: HeaderMap,
    axum::extract::Form(form): axum::extract::Form<HashMap<String, String>>,
) -> Response {
    if !authorized(&sim, &headers) {
        return stripe_error(StatusCode::UNAUTHORIZED, "Invalid API Key provided");
    }
    let num = |k: &str| form.get(k).and_then(|v| v.parse::<i64>().ok());
    let (Some(start), Some(end)) = (
        num("parameters[interval_start]"),
        num("parameters[interval_end]"),
    ) else {
        return stripe_error(StatusCode::BAD_REQUEST, "interval_start and interval_end");
    };
    let date = chrono::DateTime::from_timestamp(start, 0)
        .map(|d| d.date_naive())
        .unwrap_or_default();
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map_or_else(|| format!("run-{start}-{end}"), String::from);
    // Stripe keeps the first answer to a key, a refusal too, and answers
    // every later request with that key with it (for 24 hours).
    if end * 1000 > sim.now().millis() || sim.report_withheld("stripe", date) {
        let refused = sim.stripe_run(&key, || {
            json!({"error": {"type": "invalid_request_error", "message":
                "parameters[interval_end] must be before the report type's \
                 data_available_end: data for this interval is not available yet"}})
        });
        if refused.get("error").is_some() {
            return (StatusCode::BAD_REQUEST, Json(refused)).into_response();
        }
        return Json(refused).into_response();
    }
    let report_type = form.get("report_type").cloned().unwrap_or_default();
    // The Connect report types cover connected accounts (one, by
    // `connected_account`, or all); the others the platform's own.
    let connected = form.get("parameters[connected_account]").cloned();
    let connect = report_type.starts_with("connected_account_");
    // `parameters[columns][0]`, `[1]`, … in their order.
    let columns: Vec<String> = (0..)
        .map_while(|i| form.get(&format!("parameters[columns][{i}]")).cloned())
        .collect();
    let host = origin(&headers);
    let n = key.len() + start as usize;
    let made = sim.stripe_run(&key, || {
        let (from, until) = (
            finality_core::Timestamp(start * 1000),
            finality_core::Timestamp(end * 1000),
        );
        let file = format!("file_sim{n}");
        let whose = match &connected {
            _ if !connect => Whose::Own,
            Some(a) => Whose::Account(a.as_str()),
            None => Whose::Accounts,
        };
        let (size, status) =
            match sim.make_report(&ReportKind::Stripe(columns), whose, date, from, until) {
                Ok(body) => {
                    let size = body.len();
                    sim.keep_file(&file, body);
                    (size, "succeeded")
                }
                Err(_) => (0, "failed"),
            };
        json!({"id": format!("frr_sim{n}"), "object": "reporting.report_run",
            "report_type": report_type, "status": status,
            "parameters": {"interval_start": start, "interval_end": end,
                           "connected_account": connected},
            "result": {"id": file, "object": "file", "size": size,
                       "url": format!("{host}/stripe/files/v1/files/{file}/contents")}})
    });
    if made.get("error").is_some() {
        return (StatusCode::BAD_REQUEST, Json(made)).into_response();
    }
    Json(made).into_response()
}

pub(crate) async fn stripe_report_run(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&sim, &headers) {
        return stripe_error(StatusCode::UNAUTHORIZED, "Invalid API Key provided");
    }
    match sim.stripe_run_by_id(&id) {
        Some(run) => Json(run).into_response(),
        None => stripe_error(
            StatusCode::NOT_FOUND,
            &format!("No such reporting.report_run: '{id}'"),
        ),
    }
}

pub(crate) async fn stripe_file_contents(
    State(sim): State<Arc<Simulator>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&sim, &headers) {
        return stripe_error(StatusCode::UNAUTHORIZED, "Invalid API Key provided");
    }
    file_response(&sim, &id)
}

/// Alipay's answer to `alipay.data.dataservice.bill.downloadurl.query`:
/// the bill of the merchant whose `app_auth_token` the call carries (an
/// integrator acting for it), else the calling app's own.
pub(crate) fn alipay_bill_url(
    sim: &Simulator,
    biz: &Value,
    params: &std::collections::BTreeMap<String, String>,
    headers: &HeaderMap,
) -> Value {
    let merchant = match params.get("app_auth_token") {
        Some(token) => match sim.alipay_account_by_token(token) {
            Some(m) => Some(m),
            None => {
                return json!({"code": "20001", "msg": "Insufficient Token Permissions",
                   "sub_code": "aop.invalid-app-auth-token", "sub_msg": "无效的应用授权令牌"})
            }
        },
        None => None,
    };
    let whose = merchant.as_deref().map_or(Whose::Own, Whose::Account);
    let date = biz["bill_date"]
        .as_str()
        .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
    // Not made yet, or made for a day without trades: the same answer.
    let not_exist = json!({"code": "40004", "msg": "Business Failed",
                           "sub_code": "isp.bill_not_exist", "sub_msg": "账单不存在"});
    let Some(date) = date.filter(|d| bill_made(sim, "alipay", *d)) else {
        return not_exist;
    };
    let (from, until) = day_bounds(date, BEIJING_MS);
    if sim.nothing_settled(whose, from, until) {
        return not_exist;
    }
    match sim.make_report(&ReportKind::Alipay, whose, date, from, until) {
        Ok(zip) => {
            let id = format!("ali-{date}-{}", merchant.as_deref().unwrap_or("own"));
            sim.keep_file(&id, zip);
            json!({"code": "10000", "msg": "Success",
                   "bill_download_url": format!("{}/alipay/downloadBillFile.resource?fileId={id}", origin(headers))})
        }
        Err(e) => json!({"code": "20000", "msg": "Service Currently Unavailable",
                         "sub_code": "isp.unknow-error", "sub_msg": e.to_string()}),
    }
}

pub(crate) async fn alipay_bill_file(
    State(sim): State<Arc<Simulator>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    file_response(&sim, q.get("fileId").map_or("", String::as_str))
}

/// Adyen's report download: basic authentication as the report user (the
/// simulator's API key as its password) or the key as `X-API-Key`; the
/// merchant account the simulator reports for; 404 for a file not made.
pub(crate) async fn adyen_report_download(
    State(sim): State<Arc<Simulator>>,
    Path((account, file)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    use base64::Engine as _;
    if let Some(key) = &sim.config.api_key {
        let header_key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
        let basic_password = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|up| up.split_once(':').map(|(_, p)| p.to_string()));
        if header_key != Some(key.as_str()) && basic_password.as_deref() != Some(key.as_str()) {
            return (StatusCode::UNAUTHORIZED, "HTTP Status 401 - Unauthorized").into_response();
        }
    }
    if account != crate::wire::ADYEN_REPORT_MERCHANT {
        return StatusCode::NOT_FOUND.into_response();
    }
    match sim.serve_adyen_report(&file) {
        Some(body) => (StatusCode::OK, [(header::CONTENT_TYPE, "text/csv")], body).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
