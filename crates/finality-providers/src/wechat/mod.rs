//! WeChat Pay API v3: query by merchant order number, and notifications
//! whose signature is verified and whose resource is decrypted.
//!
//! - Requests carry `Authorization: WECHATPAY2-SHA256-RSA2048 mchid=…,
//!   nonce_str=…,signature=…,timestamp=…,serial_no=…`, the signature being
//!   RSA-SHA256 (PKCS#1 v1.5) with the merchant's API private key over
//!   `METHOD\nPATH?QUERY\nTIMESTAMP\nNONCE\nBODY\n`.
//! - Poll: `GET /v3/pay/transactions/out-trade-no/{out_trade_no}?mchid=…`
//!   when the payment has a `merchant_ref` (the merchant's order number, so
//!   a payment whose create call timed out is still found; its
//!   `transaction_id` is recorded once WeChat Pay names it), else
//!   `GET /v3/pay/transactions/id/{transaction_id}?mchid=…`. 404
//!   `ORDER_NOT_EXIST` is "not known yet".
//! - Answers are signed like notifications (`Wechatpay-Signature` over
//!   `TIMESTAMP\nNONCE\nBODY\n` by the platform key) and checked before a
//!   byte is trusted: a bad signature is a configuration (or interception)
//!   problem, classified permanent so the provider pauses with an alert.
//! - Notifications: `Wechatpay-Timestamp`, `-Nonce`, `-Signature` (base64
//!   RSA-SHA256 by the platform key over `TIMESTAMP\nNONCE\nBODY\n`),
//!   `-Serial`; the timestamp must be within the tolerance. The transaction
//!   is in `resource`, encrypted with AES-256-GCM under the APIv3 key
//!   (`nonce`, `associated_data`, base64 `ciphertext` with its tag).
//! - Service provider mode (`sub_mchid` set, one account per sub-merchant):
//!   the service provider's `mchid` signs every call as `sp_mchid`; a
//!   transaction is queried at `GET /v3/pay/partner/transactions/
//!   out-trade-no/{out_trade_no}?sp_mchid=…&sub_mchid=…` (or `…/id/{id}`),
//!   a refund at `GET /v3/refund/domestic/refunds/{out_refund_no}?
//!   sub_mchid=…` (wechatpay-go `services/partnerpayments`,
//!   `refunddomestic.QueryByOutRefundNoRequest.SubMchid`). Answers and
//!   notifications name `sp_mchid`/`sub_mchid` (`sp_appid`) instead of
//!   `mchid` (`appid`); every sub-merchant's notification is signed and
//!   encrypted with the service provider's keys, so the account it is for
//!   is read from the decrypted resource's `sub_mchid`.

pub(crate) mod bill;
pub mod contract;

use crate::http::Traced;
use crate::http::{classify_transport, client, failure, request_id, Timeouts};
use crate::setup::SetupError;
use crate::webhook::{check_timestamp, RejectReason, WebhookError, WebhookEvent};
use crate::{Capabilities, Observation, PollTarget, Provider, ProviderError};
use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use finality_core::{Kind, Status, Timestamp};
use reqwest::StatusCode;
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::signature::{SignatureEncoding, Signer, Verifier};
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use std::time::Duration;

/// `[providers.NAME.wechat]`: who the merchant is and where its keys are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeChatConfig {
    pub mchid: String,
    /// The serial number of the merchant's API certificate.
    pub serial_no: String,
    /// Environment variable holding the merchant's API private key (PEM).
    pub private_key_env: String,
    /// Environment variable holding the platform public key (PEM), which
    /// signs notifications.
    pub platform_public_key_env: String,
    /// The `Wechatpay-Serial` that key signs under (a platform certificate
    /// serial, or a `PUB_KEY_ID_…`). Unset: it verifies every serial not
    /// listed in `platform_keys`.
    #[serde(default)]
    pub platform_serial: Option<String>,
    /// More platform keys, serial → environment variable holding the PEM:
    /// while WeChat Pay rotates its certificate it signs with the old and the
    /// new one, and `Wechatpay-Serial` says which.
    #[serde(default)]
    pub platform_keys: std::collections::BTreeMap<String, String>,
    /// Environment variable holding the 32-byte APIv3 key.
    pub api_v3_key_env: String,
    /// The app id payments are made under (`appid`), when known: an answer
    /// or notification naming another is not applied (WeChat Pay's
    /// notification rules ask the merchant to check it beside `mchid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appid: Option<String>,
    /// Service provider mode: the sub-merchant (`sub_mchid`) the service
    /// provider `mchid` acts for. Set per account (the account's id); in
    /// this mode `appid`, when set, is checked against `sp_appid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_mchid: Option<String>,
}

/// `trade_state` → ours, from its row in [`contract::ROWS`].
pub fn map_trade_state(state: &str) -> Option<Status> {
    crate::contract::status(contract::ROWS, contract::TRADE_STATE, state)
}

/// Refund `status` → ours. `ABNORMAL`: the refund could not reach the
/// buyer (card closed or frozen); WeChat Pay holds the money for the
/// merchant to return another way: a human's case (`needs_review`), not a
/// failure.
pub fn map_refund_status(status: &str) -> Option<Status> {
    crate::contract::status(contract::ROWS, contract::REFUND_STATUS, status)
}

/// Sign `message` as WeChat Pay does (base64 RSA-SHA256, PKCS#1 v1.5).
pub fn sign(key: &RsaPrivateKey, message: &str) -> String {
    let signer = SigningKey::<Sha256>::new(key.clone());
    B64.encode(signer.sign(message.as_bytes()).to_bytes())
}

/// Check a base64 RSA-SHA256 signature.
pub fn verify(key: &RsaPublicKey, message: &str, signature_b64: &str) -> bool {
    let Ok(raw) = B64.decode(signature_b64.trim()) else {
        return false;
    };
    let Ok(sig) = Signature::try_from(raw.as_slice()) else {
        return false;
    };
    VerifyingKey::<Sha256>::new(key.clone())
        .verify(message.as_bytes(), &sig)
        .is_ok()
}

/// Encrypt a notification resource (what the platform does; the simulator
/// uses it). Returns base64 ciphertext with the tag appended.
pub fn encrypt_resource(key: &[u8; 32], nonce: &str, aad: &str, plaintext: &[u8]) -> String {
    let cipher = Aes256Gcm::new(key.into());
    let out = cipher
        .encrypt(
            Nonce::from_slice(nonce.as_bytes()),
            Payload {
                msg: plaintext,
                aad: aad.as_bytes(),
            },
        )
        .unwrap_or_default();
    B64.encode(out)
}

/// Decrypt a notification resource; `None` when it does not authenticate.
pub fn decrypt_resource(
    key: &[u8; 32],
    nonce: &str,
    aad: &str,
    ciphertext_b64: &str,
) -> Option<Vec<u8>> {
    if nonce.len() != 12 {
        return None;
    }
    let data = B64.decode(ciphertext_b64).ok()?;
    Aes256Gcm::new(key.into())
        .decrypt(
            Nonce::from_slice(nonce.as_bytes()),
            Payload {
                msg: &data,
                aad: aad.as_bytes(),
            },
        )
        .ok()
}

/// A `Wechatpay-Serial` no configured platform key answers to.
#[derive(Debug, thiserror::Error)]
#[error(
    "Wechatpay-Serial `{serial}` names no configured platform key (configured: {known}); add it \
     under platform_keys"
)]
pub struct UnknownSerial {
    serial: String,
    known: String,
}

pub struct WeChatAdapter {
    base_url: String,
    mchid: String,
    appid: Option<String>,
    /// Service provider mode: the sub-merchant acted for.
    sub_mchid: Option<String>,
    serial_no: String,
    key: RsaPrivateKey,
    /// Platform keys by the serial they sign under; `None` verifies any
    /// serial not listed.
    platform: Vec<(Option<String>, RsaPublicKey)>,
    api_v3_key: [u8; 32],
    http: reqwest::Client,
    timeouts: Timeouts,
    tolerance: Duration,
}

impl WeChatAdapter {
    /// `private_key_pem`, `platform_public_key_pem`, `api_v3_key`: the
    /// values of the configured environment variables.
    pub fn new(
        base_url: &str,
        cfg: &WeChatConfig,
        private_key_pem: &str,
        platform_public_key_pem: &str,
        api_v3_key: &str,
        timeouts: Timeouts,
        tolerance: Duration,
    ) -> Result<Self, SetupError> {
        let key = RsaPrivateKey::from_pkcs8_pem(private_key_pem).map_err(|e| SetupError::Key {
            setting: cfg.private_key_env.clone(),
            expected: "a PKCS#8 PEM private key",
            detail: e.to_string(),
        })?;
        let platform = RsaPublicKey::from_public_key_pem(platform_public_key_pem).map_err(|e| {
            SetupError::Key {
                setting: cfg.platform_public_key_env.clone(),
                expected: "a PEM public key",
                detail: e.to_string(),
            }
        })?;
        let api_v3_key: [u8; 32] =
            api_v3_key
                .as_bytes()
                .try_into()
                .map_err(|_| SetupError::Setting {
                    setting: cfg.api_v3_key_env.clone(),
                    problem: "the APIv3 key must be exactly 32 bytes",
                })?;
        Ok(WeChatAdapter {
            base_url: base_url.trim_end_matches('/').to_string(),
            mchid: cfg.mchid.clone(),
            appid: cfg.appid.clone(),
            sub_mchid: cfg.sub_mchid.clone(),
            serial_no: cfg.serial_no.clone(),
            key,
            platform: vec![(cfg.platform_serial.clone(), platform)],
            api_v3_key,
            http: client(timeouts)?,
            timeouts,
            tolerance,
        })
    }

    /// Add a platform key for one `Wechatpay-Serial` (certificate rotation).
    pub fn with_platform_key(mut self, serial: &str, pem: &str) -> Result<Self, SetupError> {
        let key = RsaPublicKey::from_public_key_pem(pem).map_err(|e| SetupError::Key {
            setting: format!("platform key {serial}"),
            expected: "a PEM public key",
            detail: e.to_string(),
        })?;
        self.platform.insert(0, (Some(serial.to_string()), key));
        Ok(self)
    }

    /// The platform key for a `Wechatpay-Serial`, or why there is none.
    fn platform_key(&self, serial: &str) -> Result<&RsaPublicKey, UnknownSerial> {
        self.platform
            .iter()
            .find(|(s, _)| s.as_deref() == Some(serial))
            .or_else(|| self.platform.iter().find(|(s, _)| s.is_none()))
            .map(|(_, k)| k)
            .ok_or_else(|| UnknownSerial {
                serial: serial.to_string(),
                known: self
                    .platform
                    .iter()
                    .filter_map(|(s, _)| s.as_deref())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    fn authorization(&self, method: &str, path_and_query: &str, body: &str) -> String {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let message = format!("{method}\n{path_and_query}\n{ts}\n{nonce}\n{body}\n");
        format!(
            "WECHATPAY2-SHA256-RSA2048 mchid=\"{}\",nonce_str=\"{nonce}\",signature=\"{}\",timestamp=\"{ts}\",serial_no=\"{}\"",
            self.mchid,
            sign(&self.key, &message),
            self.serial_no
        )
    }

    /// Query one transaction, by the merchant's order number (`by_merchant`)
    /// or by WeChat Pay's transaction id.
    /// One signed GET; `None` on 404 (not known yet). The answer's
    /// signature is checked before its body is read.
    async fn signed_get(&self, path: &str) -> Result<Option<Value>, ProviderError> {
        let url = reqwest::Url::parse(&format!("{}{path}", self.base_url)).map_err(|e| {
            ProviderError::Permanent {
                message: format!("bad WeChat Pay URL: {e}"),
            }
        })?;
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let resp = self
            .http
            .get(url)
            .header("authorization", self.authorization("GET", &path, ""))
            .header("accept", "application/json")
            .header("x-request-id", request_id())
            .traced()
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(failure(resp).await);
        }
        let headers = resp.headers().clone();
        let text = resp
            .text()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        self.verify_answer(&headers, &text)?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| ProviderError::Transient {
                message: format!("WeChat Pay answer is not JSON: {e}"),
            })
    }

    /// One transaction, by the merchant's order number (`by_merchant`) or by
    /// WeChat Pay's transaction id.
    async fn query(
        &self,
        reference: &str,
        by_merchant: bool,
    ) -> Result<Observation, ProviderError> {
        let segment = if by_merchant { "out-trade-no" } else { "id" };
        let reference = crate::http::segment(reference);
        let path = match &self.sub_mchid {
            Some(sub) => format!(
                "/v3/pay/partner/transactions/{segment}/{reference}?sp_mchid={}&sub_mchid={}",
                self.mchid,
                crate::http::segment(sub)
            ),
            None => format!(
                "/v3/pay/transactions/{segment}/{reference}?mchid={}",
                self.mchid
            ),
        };
        let Some(body) = self.signed_get(&path).await? else {
            return Ok(Observation::new(None, "ORDER_NOT_EXIST"));
        };
        let state = body["trade_state"].as_str().unwrap_or_default().to_string();
        Ok(Observation {
            provider_ref: body["transaction_id"]
                .as_str()
                .filter(|id| by_merchant && !id.is_empty())
                .map(String::from),
            status: map_trade_state(&state),
            provider_status: state,
            reported: self.money(&body, false),
        })
    }

    /// One refund, by the merchant's refund number (the only way WeChat Pay
    /// offers); its `refund_id` is recorded.
    async fn query_refund(&self, out_refund_no: &str) -> Result<Observation, ProviderError> {
        let mut path = format!(
            "/v3/refund/domestic/refunds/{}",
            crate::http::segment(out_refund_no)
        );
        if let Some(sub) = &self.sub_mchid {
            path.push_str(&format!("?sub_mchid={}", crate::http::segment(sub)));
        }
        let Some(body) = self.signed_get(&path).await? else {
            return Ok(Observation::new(None, "RESOURCE_NOT_EXISTS"));
        };
        let state = body["status"].as_str().unwrap_or_default().to_string();
        Ok(Observation {
            provider_ref: body["refund_id"]
                .as_str()
                .filter(|id| !id.is_empty())
                .map(String::from),
            status: map_refund_status(&state),
            provider_status: state,
            reported: self.money(&body, true),
        })
    }

    /// The amount a transaction or refund names (in fen: `amount.total`
    /// for a payment, `amount.refund` for a refund), its currency, and
    /// whether it is this merchant's (`mchid`, `appid` where configured; a
    /// refund answer names no `appid`). In service provider mode: the
    /// service provider's `sp_mchid` (`sp_appid`) and this account's
    /// `sub_mchid`; a partner transaction naming no `sub_mchid` is not this
    /// account's to apply.
    fn money(&self, v: &Value, refund: bool) -> finality_core::Reported {
        let amount = &v["amount"];
        let minor = if refund {
            amount["refund"].as_i64()
        } else {
            amount["total"].as_i64()
        };
        let r = finality_core::Reported {
            pieces: Vec::new(),
            amount: minor,
            currency: amount["currency"].as_str().map(String::from),
            mismatch: None,
        };
        let (r, appid_field) = match &self.sub_mchid {
            Some(sub) => {
                // A direct-mode body (`mchid`, no `sub_mchid`) is a
                // merchant's own, not this sub-merchant's.
                let named = v["sub_mchid"].as_str().or(v["mchid"].as_str().map(|_| ""));
                let r = r.with_account("sp_mchid", v["sp_mchid"].as_str(), &self.mchid);
                match r.mismatch {
                    None => (r.with_account("sub_mchid", named, sub), "sp_appid"),
                    Some(_) => (r, "sp_appid"),
                }
            }
            // A sub-merchant's body reaching the merchant's own adapter
            // is not the merchant's.
            None => match v["sub_mchid"].as_str() {
                Some(sub) => (
                    finality_core::Reported {
                        mismatch: Some(format!(
                            "account_mismatch: the provider reports sub_mchid `{sub}`, \
                             configured none (a sub-merchant's: add it as an account)"
                        )),
                        ..r
                    },
                    "appid",
                ),
                None => (
                    r.with_account("mchid", v["mchid"].as_str(), &self.mchid),
                    "appid",
                ),
            },
        };
        match (&r.mismatch, &self.appid) {
            (None, Some(appid)) => r.with_account(appid_field, v[appid_field].as_str(), appid),
            _ => r,
        }
    }

    /// Check the platform's signature on an answer (WeChat Pay signs every
    /// 2xx answer as it signs notifications).
    fn verify_answer(
        &self,
        h: &reqwest::header::HeaderMap,
        body: &str,
    ) -> Result<(), ProviderError> {
        let get = |name: &str| {
            h.get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
        };
        let (ts, nonce, sig, serial) = (
            get("wechatpay-timestamp"),
            get("wechatpay-nonce"),
            get("wechatpay-signature"),
            get("wechatpay-serial"),
        );
        if ts.is_empty() || nonce.is_empty() || sig.is_empty() {
            return Err(ProviderError::Permanent {
                message: "WeChat Pay answer is not signed (Wechatpay-Signature, -Timestamp, \
                          -Nonce missing): wrong base_url, or a proxy in between"
                    .into(),
            });
        }
        // Checked like a notification's, as the official SDKs do: an old
        // signed answer replayed by something in between is not news.
        let now = Timestamp(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        );
        let at: i64 = ts.parse().map_err(|_| ProviderError::Transient {
            message: format!("WeChat Pay answer's Wechatpay-Timestamp `{ts}` is not unix seconds"),
        })?;
        check_timestamp(at, now, self.tolerance).map_err(|e| ProviderError::Transient {
            message: format!("WeChat Pay answer refused: {e}"),
        })?;
        let key = self
            .platform_key(serial)
            .map_err(|e| ProviderError::Permanent {
                message: e.to_string(),
            })?;
        if !verify(key, &format!("{ts}\n{nonce}\n{body}\n"), sig) {
            return Err(ProviderError::Permanent {
                message: format!(
                    "WeChat Pay answer's signature does not verify with the platform key for \
                     serial {serial}: wrong or rotated platform certificate"
                ),
            });
        }
        Ok(())
    }

    /// A notification's `resource`, decrypted with the APIv3 key.
    fn resource(&self, notification: &Value) -> Option<Vec<u8>> {
        let r = &notification["resource"];
        decrypt_resource(
            &self.api_v3_key,
            r["nonce"].as_str().unwrap_or_default(),
            r["associated_data"].as_str().unwrap_or_default(),
            r["ciphertext"].as_str().unwrap_or_default(),
        )
    }
}

fn header<'a>(h: &'a reqwest::header::HeaderMap, name: &str) -> Result<&'a str, WebhookError> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            WebhookError::reject(
                RejectReason::MissingHeader,
                format!("missing header {name}"),
            )
        })
}

#[async_trait]
impl Provider for WeChatAdapter {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        match (t.kind, t.merchant_ref, t.provider_ref) {
            (Kind::Refund, Some(m), _) => self.query_refund(m).await,
            (_, Some(m), _) => self.query(m, true).await,
            (Kind::Refund, None, _) => Err(t.no_reference()),
            (_, None, Some(r)) => self.query(r, false).await,
            (_, None, None) => Err(t.no_reference()),
        }
    }

    fn unqueryable(&self, t: &PollTarget<'_>) -> Option<String> {
        if t.kind == Kind::Refund && t.merchant_ref.is_none() {
            return Some(
                "WeChat Pay queries refunds by out_refund_no only: register the refund with \
                 merchant_ref = its out_refund_no"
                    .into(),
            );
        }
        crate::lookup::needs_some_ref(t)
    }

    async fn verify_webhook(
        &self,
        headers: &reqwest::header::HeaderMap,
        body: &[u8],
        now: Timestamp,
    ) -> Result<Vec<WebhookEvent>, WebhookError> {
        let ts = header(headers, "wechatpay-timestamp")?;
        let nonce = header(headers, "wechatpay-nonce")?;
        let signature = header(headers, "wechatpay-signature")?;
        let ts_s: i64 = ts.parse().map_err(|_| {
            WebhookError::reject(
                RejectReason::BadTimestamp,
                format!("Wechatpay-Timestamp `{ts}` is not unix seconds"),
            )
        })?;
        check_timestamp(ts_s, now, self.tolerance)?;
        let text = std::str::from_utf8(body)
            .map_err(|_| WebhookError::reject(RejectReason::BadSignature, "body is not UTF-8"))?;
        let serial = headers
            .get("wechatpay-serial")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let key = self
            .platform_key(serial)
            .map_err(|e| WebhookError::reject(RejectReason::BadSignature, e.to_string()))?;
        if !verify(key, &format!("{ts}\n{nonce}\n{text}\n"), signature) {
            return Err(WebhookError::reject(
                RejectReason::BadSignature,
                format!("Wechatpay-Signature does not verify with the platform key for serial `{serial}`"),
            ));
        }
        let v: Value = serde_json::from_str(text).map_err(|e| WebhookError::Unparseable {
            event_id: String::new(),
            detail: e.to_string(),
        })?;
        let event_id = v["id"].as_str().unwrap_or_default().to_string();
        let unparseable = |detail: &str| WebhookError::Unparseable {
            event_id: event_id.clone(),
            detail: detail.to_string(),
        };
        let plain = self
            .resource(&v)
            .ok_or_else(|| unparseable("resource does not decrypt with the APIv3 key"))?;
        let tx: Value = serde_json::from_slice(&plain)
            .map_err(|_| unparseable("decrypted resource is not JSON"))?;
        // A refund notification carries `refund_status`, a payment's
        // `trade_state`.
        let refund = tx["refund_status"].is_string();
        let (state, status, provider_ref, merchant_ref) = match tx["refund_status"].as_str() {
            Some(r) => (
                r,
                map_refund_status(r),
                &tx["refund_id"],
                &tx["out_refund_no"],
            ),
            None => {
                let s = tx["trade_state"].as_str().unwrap_or_default();
                (
                    s,
                    map_trade_state(s),
                    &tx["transaction_id"],
                    &tx["out_trade_no"],
                )
            }
        };
        Ok(vec![WebhookEvent {
            event_id: event_id.clone(),
            provider_ref: provider_ref.as_str().map(String::from),
            merchant_ref: merchant_ref.as_str().map(String::from),
            status,
            provider_status: Some(state.to_string()),
            occurred_at: Some(Timestamp(ts_s * 1000)),
            reported: self.money(&tx, refund),
            disposition: Default::default(),
        }])
    }

    /// A sub-merchant's notification names it only inside the encrypted
    /// resource (`sub_mchid`), under the service provider's APIv3 key every
    /// sub-merchant shares: decrypted here to route it, then verified in
    /// full by that account's adapter. A notification that does not
    /// decrypt is the provider's own, whose verification refuses it.
    fn webhook_account(&self, body: &[u8]) -> Option<String> {
        let v: Value = serde_json::from_slice(body).ok()?;
        let plain = self.resource(&v)?;
        let tx: Value = serde_json::from_slice(&plain).ok()?;
        tx["sub_mchid"].as_str().map(String::from)
    }

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

    fn audit_headers(&self) -> &'static [&'static str] {
        &["wechatpay-serial", "wechatpay-timestamp", "wechatpay-nonce"]
    }

    async fn check(&self) -> Result<String, ProviderError> {
        let o = self.query("finality-credential-check", true).await?;
        Ok(format!("signed query answered ({})", o.provider_status))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            poll: true,
            webhooks: true,
            lookup: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_round_trip_and_tampering_fails() {
        let key = *b"0123456789abcdef0123456789abcdef";
        let c = encrypt_resource(&key, "abcdefghijkl", "transaction", b"{\"a\":1}");
        assert_eq!(
            decrypt_resource(&key, "abcdefghijkl", "transaction", &c).as_deref(),
            Some(&b"{\"a\":1}"[..])
        );
        assert!(decrypt_resource(&key, "abcdefghijkl", "other", &c).is_none());
        let wrong = *b"0123456789abcdef0123456789abcdeX";
        assert!(decrypt_resource(&wrong, "abcdefghijkl", "transaction", &c).is_none());
    }
}
