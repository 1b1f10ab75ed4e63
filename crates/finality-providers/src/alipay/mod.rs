//! Alipay (open platform): `alipay.trade.query` by merchant order number,
//! and RSA2-signed asynchronous notifications answered `success`.
//!
//! - Requests: form parameters `app_id, method, format=JSON, charset=utf-8,
//!   sign_type=RSA2, timestamp, version=1.0, biz_content`, signed with the
//!   app's private key: RSA-SHA256 (PKCS#1 v1.5), base64, over the
//!   parameters sorted by name as `k=v&k=v` (without `sign`).
//! - Query by `out_trade_no` when the payment has a `merchant_ref` (found
//!   even if the create call timed out; Alipay's `trade_no` is recorded),
//!   else by `trade_no`.
//! - Answer: `{"alipay_trade_query_response": {…}, "sign": "…"}`, `sign`
//!   being RSA2 by Alipay's key over the response object's exact text; it is
//!   checked before anything is read (a mismatch is a configuration or
//!   interception problem: permanent, the provider pauses with an alert).
//!   `code` `10000` comes with a `trade_status`; `40004` / `ACQ.TRADE_NOT_EXIST` is "not known yet";
//!   `20001` / `40002` (bad credentials or configuration) are permanent;
//!   `20000` (service unavailable) is transient.
//! - Notifications: a form with `notify_id`, `out_trade_no`,
//!   `trade_status`, `sign_type`, `sign`; verified with Alipay's public key
//!   over every other parameter sorted as above. The answer must be exactly
//!   `success`, or Alipay keeps retrying (for about a day).

pub(crate) mod bill;
/// Reached from the `report_alipay_zip` fuzz target too.
pub use bill::detail_from_zip;
pub mod contract;

use crate::http::Traced;
use crate::http::{classify_transport, client, failure, request_id, Timeouts};
use crate::setup::SetupError;
use crate::webhook::{Disposition, RejectReason, WebhookError, WebhookEvent};
use crate::wechat::{sign, verify};
use crate::{Capabilities, Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
use finality_core::{Kind, Status, Timestamp};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `[providers.NAME.alipay]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlipayConfig {
    pub app_id: String,
    /// Environment variable holding the app's private key (PKCS#8 PEM).
    pub private_key_env: String,
    /// Environment variable holding Alipay's public key (PEM).
    pub alipay_public_key_env: String,
    /// The merchant's Alipay account (`seller_id`, `2088…`), when known:
    /// a notification naming another is not applied (Alipay's notification
    /// rules ask the merchant to check it beside `app_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seller_id: Option<String>,
    /// An integrator (ISV) acting for a merchant: the variable holding the
    /// merchant's `app_auth_token`, sent with every call ("应用授权令牌，代商家
    /// 调用支付宝开放接口必填", alipay-sdk-nodejs-all `src/alipay.ts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_auth_token_env: Option<String>,
}

/// `trade_status` → ours, from its row in [`contract::ROWS`];
/// `TRADE_CLOSED` is closed unpaid here (`cancelled`): where Alipay says
/// the trade was paid first, the caller decides (see [`closed_trade`]).
pub fn map_trade_status(s: &str) -> Option<Status> {
    match s {
        "TRADE_CLOSED" => Some(Status::Cancelled),
        _ => crate::contract::status(contract::ROWS, contract::TRADE_STATUS, s),
    }
}

/// A `TRADE_CLOSED` trade: "closed unpaid on timeout, or fully refunded
/// after payment" (`未付款交易超时关闭，或支付完成后全额退款`). A query answer
/// that names a payment time (`send_pay_date`) was paid, so the close is a
/// full refund the answer cannot prove: a human decides.
fn closed_trade(answer: &Value) -> Option<Status> {
    match answer["send_pay_date"].as_str() {
        Some(t) if !t.is_empty() => Some(Status::NeedsReview),
        _ => Some(Status::Cancelled),
    }
}

/// The request `timestamp` as Alipay's gateway reads it: local time in
/// China (UTC+8, no daylight saving), `yyyy-MM-dd HH:mm:ss`, as the official
/// SDKs send it (alipay-sdk-java sets `Asia/Shanghai` on its formatter). A
/// UTC time is 8 hours in the past there, outside the gateway's window.
pub fn request_timestamp(now: chrono::DateTime<chrono::Utc>) -> String {
    (now + chrono::TimeDelta::hours(8))
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// The string Alipay signs: parameters sorted by name, `k=v` joined by
/// `&`, without `sign` (and, for notifications, `sign_type`) or empty values.
pub fn signing_content(params: &BTreeMap<String, String>, skip_sign_type: bool) -> String {
    params
        .iter()
        .filter(|(k, v)| {
            k.as_str() != "sign" && !(skip_sign_type && k.as_str() == "sign_type") && !v.is_empty()
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Sign a parameter set (what the app does; the simulator does it for
/// notifications with Alipay's key).
pub fn sign_params(
    key: &RsaPrivateKey,
    params: &BTreeMap<String, String>,
    skip_sign_type: bool,
) -> String {
    sign(key, &signing_content(params, skip_sign_type))
}

pub struct AlipayAdapter {
    gateway: String,
    app_id: String,
    seller_id: Option<String>,
    key: RsaPrivateKey,
    alipay: RsaPublicKey,
    http: reqwest::Client,
    timeouts: Timeouts,
    /// Sent as the public parameter `app_auth_token` when acting for a merchant.
    app_auth_token: Option<String>,
}

impl AlipayAdapter {
    /// Act for the merchant that granted `token` (an integrator's app).
    pub fn with_app_auth_token(mut self, token: &str) -> Self {
        self.app_auth_token = Some(token.to_string());
        self
    }

    pub fn new(
        gateway: &str,
        cfg: &AlipayConfig,
        private_key_pem: &str,
        alipay_public_key_pem: &str,
        timeouts: Timeouts,
    ) -> Result<Self, SetupError> {
        Ok(AlipayAdapter {
            gateway: gateway.to_string(),
            app_id: cfg.app_id.clone(),
            seller_id: cfg.seller_id.clone(),
            key: RsaPrivateKey::from_pkcs8_pem(private_key_pem).map_err(|e| SetupError::Key {
                setting: cfg.private_key_env.clone(),
                expected: "a PKCS#8 PEM private key",
                detail: e.to_string(),
            })?,
            alipay: RsaPublicKey::from_public_key_pem(alipay_public_key_pem).map_err(|e| {
                SetupError::Key {
                    setting: cfg.alipay_public_key_env.clone(),
                    expected: "a PEM public key",
                    detail: e.to_string(),
                }
            })?,
            http: client(timeouts)?,
            timeouts,
            app_auth_token: None,
        })
    }

    /// One signed gateway call of `method`: the response object (under
    /// `{method with _}_response`), once Alipay's signature checks out.
    async fn call(&self, method: &str, biz_content: Value) -> Result<Value, ProviderError> {
        let mut params = BTreeMap::new();
        params.insert("app_id".to_string(), self.app_id.clone());
        params.insert("method".into(), method.into());
        params.insert("format".into(), "JSON".into());
        params.insert("charset".into(), "utf-8".into());
        params.insert("sign_type".into(), "RSA2".into());
        params.insert("timestamp".into(), request_timestamp(chrono::Utc::now()));
        params.insert("version".into(), "1.0".into());
        params.insert("biz_content".into(), biz_content.to_string());
        if let Some(token) = &self.app_auth_token {
            // A public parameter, signed with the rest.
            params.insert("app_auth_token".into(), token.clone());
        }
        let signature = sign_params(&self.key, &params, false);
        params.insert("sign".into(), signature);
        let resp = self
            .http
            .post(&self.gateway)
            .header("x-request-id", request_id())
            .form(&params)
            .traced()
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(failure(resp).await);
        }
        let text = resp
            .text()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        self.verified_response(&text, &format!("{}_response", method.replace('.', "_")))
    }

    /// `alipay.trade.query` by `out_trade_no` (`by_merchant`) or `trade_no`.
    async fn query(
        &self,
        reference: &str,
        by_merchant: bool,
    ) -> Result<Observation, ProviderError> {
        let biz = if by_merchant {
            json!({"out_trade_no": reference})
        } else {
            json!({"trade_no": reference})
        };
        let r = self.call("alipay.trade.query", biz).await?;
        let r = &r;
        match code_of(r) {
            Answer::Ok => {
                let s = r["trade_status"].as_str().unwrap_or_default().to_string();
                Ok(Observation {
                    provider_ref: r["trade_no"]
                        .as_str()
                        .filter(|id| by_merchant && !id.is_empty())
                        .map(String::from),
                    status: match s.as_str() {
                        "TRADE_CLOSED" => closed_trade(r),
                        other => map_trade_status(other),
                    },
                    provider_status: s,
                    reported: trade_money(|k| r[k].as_str()),
                })
            }
            Answer::NotFound => Ok(Observation::new(None, "ACQ.TRADE_NOT_EXIST")),
            Answer::Err(e) => Err(e),
        }
    }

    /// `alipay.trade.fastpay.refund.query`: a refund is read through the
    /// refund query, never inferred from its trade. It is named by its
    /// trade and the merchant's refund request number, registered as
    /// `provider_ref = "TRADE_NO:OUT_REQUEST_NO"`. No `refund_status` in a
    /// success answer is "not received, or failed" and "may still
    /// succeed later" (Alipay's refund query): not final, asked again.
    async fn query_refund(&self, provider_ref: &str) -> Result<Observation, ProviderError> {
        let Some((trade_no, out_request_no)) = split_refund_ref(provider_ref) else {
            return Err(ProviderError::Permanent {
                message: format!(
                    "Alipay refund reference `{provider_ref}` is not TRADE_NO:OUT_REQUEST_NO"
                ),
            });
        };
        let biz = json!({"trade_no": trade_no, "out_request_no": out_request_no});
        let r = self.call("alipay.trade.fastpay.refund.query", biz).await?;
        match code_of(&r) {
            Answer::Ok => {
                let s = r["refund_status"].as_str().unwrap_or_default();
                let word = if s.is_empty() {
                    "(no refund_status)"
                } else {
                    s
                };
                Ok(Observation::new(contract_refund(s), word).reporting(
                    finality_core::Reported::decimal(r["refund_amount"].as_str(), "CNY"),
                ))
            }
            Answer::NotFound => Ok(Observation::new(None, "ACQ.TRADE_NOT_EXIST")),
            Answer::Err(e) => Err(e),
        }
    }
}

/// The trade's amount as Alipay reports it: `total_amount` in yuan (or in
/// `trans_currency`, for a trade priced in another currency).
fn trade_money<'a>(get: impl Fn(&str) -> Option<&'a str>) -> finality_core::Reported {
    let currency = get("trans_currency")
        .filter(|c| !c.is_empty())
        .unwrap_or("CNY");
    finality_core::Reported::decimal(get("total_amount"), currency)
}

/// A refund's `provider_ref`: `TRADE_NO:OUT_REQUEST_NO`.
fn split_refund_ref(r: &str) -> Option<(&str, &str)> {
    r.split_once(':')
        .filter(|(t, o)| !t.is_empty() && !o.is_empty())
}

/// `refund_status` → ours.
fn contract_refund(s: &str) -> Option<Status> {
    crate::contract::status(contract::ROWS, contract::REFUND_STATUS, s)
}

/// How a gateway answer's `code` reads.
enum Answer {
    Ok,
    NotFound,
    Err(ProviderError),
}

fn code_of(r: &Value) -> Answer {
    let code = r["code"].as_str().unwrap_or_default();
    let sub = r["sub_code"].as_str().unwrap_or_default();
    let msg = format!(
        "{code} {sub} {}",
        r["sub_msg"]
            .as_str()
            .unwrap_or(r["msg"].as_str().unwrap_or_default())
    );
    match code {
        "10000" => Answer::Ok,
        "40004" if sub == "ACQ.TRADE_NOT_EXIST" => Answer::NotFound,
        "20001" | "40002" | "40006" => Answer::Err(ProviderError::Permanent {
            message: format!("Alipay refused the call (credentials or configuration): {msg}"),
        }),
        _ => Answer::Err(ProviderError::Transient {
            message: format!("Alipay answered {msg}"),
        }),
    }
}

impl AlipayAdapter {
    /// A notification's amount, and whether it is for this app and seller:
    /// Alipay's notification rules require both checks before a trade is
    /// taken as paid.
    fn notified_money(&self, params: &BTreeMap<String, String>) -> finality_core::Reported {
        let get = |k: &str| params.get(k).map(String::as_str);
        let r = trade_money(get).with_account("app_id", get("app_id"), &self.app_id);
        match (&r.mismatch, &self.seller_id) {
            (None, Some(seller)) => r.with_account("seller_id", get("seller_id"), seller),
            _ => r,
        }
    }

    /// The response object, once Alipay's signature over its exact text
    /// checks out.
    fn verified_response(&self, text: &str, key: &str) -> Result<Value, ProviderError> {
        let env: std::collections::HashMap<&str, &serde_json::value::RawValue> =
            serde_json::from_str(text).map_err(|e| ProviderError::Transient {
                message: format!("Alipay answer is not the expected JSON: {e}"),
            })?;
        let raw = env
            .get(key)
            .ok_or_else(|| ProviderError::Transient {
                message: format!("Alipay answer has no `{key}`"),
            })?
            .get();
        let sign: Option<String> = env
            .get("sign")
            .and_then(|s| serde_json::from_str(s.get()).ok());
        let r: Value = serde_json::from_str(raw).map_err(|e| ProviderError::Transient {
            message: format!("Alipay response is not JSON: {e}"),
        })?;
        match sign.as_deref() {
            Some(sig) if verify(&self.alipay, raw, sig) => Ok(r),
            // Alipay does not sign some gateway errors (e.g. a bad app
            // signature): those are classified by their code, never trusted
            // as a payment status.
            None if r["code"].as_str() != Some("10000")
                && r["sub_code"].as_str() != Some("ACQ.TRADE_NOT_EXIST") =>
            {
                Ok(r)
            }
            _ => Err(ProviderError::Permanent {
                message: "Alipay answer's sign does not verify with Alipay's public key \
                          (alipay_public_key_env): wrong key, or a proxy in between"
                    .into(),
            }),
        }
    }
}

#[async_trait]
impl Provider for AlipayAdapter {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        match (t.kind, t.merchant_ref, t.provider_ref) {
            (Kind::Refund, _, Some(r)) => self.query_refund(r).await,
            (Kind::Refund, _, None) => Err(t.no_reference()),
            (_, Some(m), _) => self.query(m, true).await,
            (_, None, Some(r)) => self.query(r, false).await,
            (_, None, None) => Err(t.no_reference()),
        }
    }

    fn unqueryable(&self, t: &PollTarget<'_>) -> Option<String> {
        if t.kind == Kind::Refund && t.provider_ref.is_none() {
            return Some(
                "Alipay refunds are queried by their trade and refund request number: register \
                 the refund with provider_ref = \"TRADE_NO:OUT_REQUEST_NO\""
                    .into(),
            );
        }
        crate::lookup::needs_some_ref(t)
    }

    fn check_ref(&self, kind: Kind, provider_ref: &str) -> Result<(), crate::setup::Refused> {
        match kind {
            Kind::Refund if split_refund_ref(provider_ref).is_none() => {
                Err(crate::setup::Refused::Shape {
                    shape: "an Alipay refund is named by its trade and its refund request \
                            number, `TRADE_NO:OUT_REQUEST_NO`",
                    reference: provider_ref.to_string(),
                })
            }
            _ => Ok(()),
        }
    }

    /// `total_amount` is in yuan, "取值范围[0.01,100000000]" (Alipay's
    /// alipay.trade.pay / alipay.trade.query reference).
    fn check_amount(
        &self,
        amount: &finality_core::money::Amount,
    ) -> Result<(), crate::setup::Refused> {
        const MAX_FEN: i64 = 10_000_000_000;
        if amount.currency.as_str() == "CNY" && amount.minor > MAX_FEN {
            return Err(crate::setup::Refused::Amount {
                amount: format!("{} CNY", amount.decimal()),
                bound: "an Alipay trade takes (total_amount at most 100000000.00)".into(),
            });
        }
        Ok(())
    }

    async fn verify_webhook(
        &self,
        _headers: &reqwest::header::HeaderMap,
        body: &[u8],
        _now: Timestamp,
    ) -> Result<Vec<WebhookEvent>, WebhookError> {
        let params: BTreeMap<String, String> = url::form_urlencoded::parse(body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let Some(signature) = params.get("sign") else {
            return Err(WebhookError::reject(
                RejectReason::MissingHeader,
                "no sign parameter",
            ));
        };
        // rsaCheckV1 (without sign_type: trade notifications) first, then
        // rsaCheckV2 (with it: other notification types), as the official
        // Node SDK's checkNotifySign does.
        if !verify(&self.alipay, &signing_content(&params, true), signature)
            && !verify(&self.alipay, &signing_content(&params, false), signature)
        {
            return Err(WebhookError::reject(
                RejectReason::BadSignature,
                "sign does not verify with Alipay's public key",
            ));
        }
        let get = |k: &str| params.get(k).cloned().unwrap_or_default();
        let event_id = get("notify_id");
        if event_id.is_empty() {
            return Err(WebhookError::Unparseable {
                event_id: String::new(),
                detail: "no notify_id".into(),
            });
        }
        let status = get("trade_status");
        if status.is_empty() {
            let kind = get("notify_type");
            return Ok(vec![WebhookEvent {
                event_id,
                provider_ref: None,
                merchant_ref: None,
                status: None,
                provider_status: Some(kind.clone()),
                occurred_at: None,
                reported: Default::default(),
                disposition: Disposition::Ignore(format!(
                    "Alipay `{kind}` notification carries no trade_status"
                )),
            }]);
        }
        // Refunds are notified on the trade: a partial one as TRADE_SUCCESS
        // with refund_fee (still a success: applied, a no-op once
        // succeeded), a full one as TRADE_CLOSED with refund_fee and
        // gmt_refund, which is the trade's money gone (reversed) and not a
        // trade closed unpaid (cancelled).
        let refund_fee = get("refund_fee");
        let refunded = !refund_fee.is_empty() || !get("gmt_refund").is_empty();
        let mapped = match status.as_str() {
            "TRADE_CLOSED" if refunded => Some(Status::Reversed),
            other => map_trade_status(other),
        };
        Ok(vec![WebhookEvent {
            event_id,
            provider_ref: params.get("trade_no").cloned(),
            merchant_ref: params.get("out_trade_no").cloned(),
            status: mapped,
            provider_status: Some(if refund_fee.is_empty() {
                status
            } else {
                format!("{status} refund_fee={refund_fee}")
            }),
            occurred_at: None,
            reported: self.notified_money(&params),
            disposition: Disposition::Apply,
        }])
    }

    fn peek_ref(&self, body: &[u8]) -> Option<String> {
        url::form_urlencoded::parse(body)
            .find(|(k, _)| k == "out_trade_no")
            .map(|(_, v)| v.into_owned())
    }

    /// The app the notification is for: `auth_app_id` (the merchant's app
    /// an integrator acts for) when present, else `app_id` (the official
    /// Node SDK's notify fixture carries both).
    async fn fetch_report(
        &self,
        day: &crate::settlement::fetch::ReportDay,
        dest: &std::path::Path,
    ) -> Result<crate::settlement::fetch::Fetched, crate::settlement::fetch::FetchError> {
        self.fetch_bill(day, dest).await
    }

    fn account_reports(&self) -> bool {
        true
    }

    fn webhook_account(&self, body: &[u8]) -> Option<String> {
        let params: Vec<(String, String)> = url::form_urlencoded::parse(body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        get("auth_app_id").or_else(|| get("app_id"))
    }

    fn ack(&self) -> Option<&'static str> {
        Some("success")
    }

    async fn check(&self) -> Result<String, ProviderError> {
        let o = self.query("finality-credential-check", true).await?;
        Ok(format!(
            "signed trade query answered ({})",
            o.provider_status
        ))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            poll: true,
            webhooks: true,
            lookup: true,
        }
    }
}
