//! Bakong (KHQR), Cambodia's national payment system. Bakong has no push of
//! its own, so its payments rely on polls, and polls are coalesced: the
//! engine hands this adapter up to 50 due payments at once and one
//! `check_transaction_by_md5_list` request answers them all.
//!
//! - Auth: `Authorization: Bearer <token>` (renewed every 90 days by the
//!   merchant; an expired one answers 401).
//! - A payment's `provider_ref` is the MD5 of its KHQR string (32 hex
//!   characters), or the full transaction hash (64) when known.
//! - One: `POST /v1/check_transaction_by_md5 {"md5"}` or
//!   `POST /v1/check_transaction_by_hash {"hash"}`; many:
//!   `POST /v1/check_transaction_by_md5_list ["md5", …]` (50 at most), whose
//!   items carry `status` `SUCCESS | NOT_FOUND | FAILED`.
//! - Answers are an envelope `{responseCode, responseMessage, errorCode,
//!   data}`: `responseCode 0` with data is a completed transaction (final);
//!   `errorCode 1` "could not be found" is *not yet paid*, never a failure;
//!   `errorCode 3` "transaction failed" is; `errorCode 6` is an
//!   unauthorised token. HTTP 401 (expired token) and 403 (the caller is
//!   outside Cambodia; Bakong answers only Cambodian addresses) are
//!   permanent: the provider pauses and alerts. 429 is rate limited.
//! - One KHQR can be paid more than once. The check answers with one
//!   transaction (the first); finality settles the payment on it and keeps
//!   its hash as the provider status, so a second payment of the same QR is
//!   not seen here: it must be found on the account statement. Issue one QR
//!   per order (a unique bill number) so a repeat is rare and visible there.

pub mod contract;

use crate::http::Traced;
use crate::http::{classify_status, classify_transport, client, request_id, Timeouts};
use crate::{Capabilities, Observation, PollTarget, Provider, ProviderError};
use async_trait::async_trait;
use finality_core::Status;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Most MD5s Bakong accepts in one list request.
pub const BULK_LIMIT: usize = 50;

pub struct BakongAdapter {
    base_url: String,
    token: String,
    http: reqwest::Client,
    timeouts: Timeouts,
}

/// What one answer means for one payment.
pub fn observe(envelope: &Value) -> Result<Observation, ProviderError> {
    let code = envelope["responseCode"].as_i64();
    let error = envelope["errorCode"].as_i64();
    let message = envelope["responseMessage"].as_str().unwrap_or_default();
    match (code, error) {
        (Some(0), _) if !envelope["data"].is_null() => Ok(Observation::new(
            Some(Status::Succeeded),
            format!(
                "SUCCESS hash={}",
                envelope["data"]["hash"].as_str().unwrap_or("?")
            ),
        )
        .reporting(money(&envelope["data"]))),
        (_, Some(1)) => Ok(Observation::new(None, "NOT_FOUND")),
        (_, Some(3)) => Ok(Observation::new(
            Some(Status::Failed),
            format!("FAILED: {message}"),
        )),
        (_, Some(6)) => Err(ProviderError::Permanent {
            message: format!("Bakong: unauthorised token (errorCode 6): {message}"),
        }),
        _ => Err(ProviderError::Transient {
            message: format!(
                "Bakong answered responseCode {code:?}, errorCode {error:?}: {message}"
            ),
        }),
    }
}

/// The money a completed transaction names: `amount` is a JSON number in
/// major units (`1.0` USD), read through its decimal text so no float
/// arithmetic touches it.
fn money(data: &Value) -> finality_core::Reported {
    match (&data["amount"], data["currency"].as_str()) {
        (Value::Number(n), Some(c)) => finality_core::Reported::decimal(Some(&n.to_string()), c),
        (_, Some(c)) => finality_core::Reported {
            currency: Some(c.to_string()),
            ..Default::default()
        },
        _ => finality_core::Reported::default(),
    }
}

/// One item of a list answer.
fn observe_item(item: &Value) -> Observation {
    match item["status"].as_str().unwrap_or_default() {
        "SUCCESS" => Observation::new(
            Some(Status::Succeeded),
            format!(
                "SUCCESS hash={}",
                item["data"]["hash"].as_str().unwrap_or("?")
            ),
        )
        .reporting(money(&item["data"])),
        "FAILED" => Observation::new(Some(Status::Failed), "FAILED"),
        "NOT_FOUND" => Observation::new(None, "NOT_FOUND"),
        other => Observation::new(None, other.to_string()),
    }
}

impl BakongAdapter {
    pub fn new(base_url: &str, token: String, timeouts: Timeouts) -> Result<Self, ProviderError> {
        if token.trim().is_empty() {
            return Err(ProviderError::Permanent {
                message: "Bakong needs a token (api_key_env)".into(),
            });
        }
        Ok(BakongAdapter {
            base_url: base_url.trim_end_matches('/').to_string(),
            token,
            http: client(timeouts)?,
            timeouts,
        })
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, ProviderError> {
        let rid = request_id();
        let resp = self
            .http
            .post(format!("{}{path}", self.base_url))
            .bearer_auth(&self.token)
            .header("x-request-id", &rid)
            .json(&body)
            .traced()
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        let status = resp.status();
        if !status.is_success() {
            let headers = resp.headers().clone();
            let text = resp.text().await.unwrap_or_default();
            let err = match status {
                StatusCode::FORBIDDEN => ProviderError::Permanent {
                    message: format!(
                        "HTTP 403: Bakong refuses callers outside Cambodia; run the poller from a Cambodian address ({})",
                        text.chars().take(120).collect::<String>()
                    ),
                },
                StatusCode::UNAUTHORIZED => ProviderError::Permanent {
                    message: "HTTP 401: the Bakong token has expired or is wrong; renew it (renew_token) and update the secret".into(),
                },
                _ => classify_status(status, &headers, &text),
            };
            tracing::debug!(request_id = %rid, error = %err, "bakong request failed");
            return Err(err);
        }
        resp.json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))
    }

    fn is_full_hash(r: &str) -> bool {
        r.len() == 64
    }
}

#[async_trait]
impl Provider for BakongAdapter {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        let r = t.require_provider_ref()?;
        let envelope = if Self::is_full_hash(r) {
            self.post("/v1/check_transaction_by_hash", json!({"hash": r}))
                .await?
        } else {
            self.post("/v1/check_transaction_by_md5", json!({"md5": r}))
                .await?
        };
        observe(&envelope)
    }

    fn unqueryable(&self, t: &PollTarget<'_>) -> Option<String> {
        t.provider_ref.is_none().then(|| {
            "Bakong is asked by the KHQR's md5 or hash only; it has no query by merchant \
             reference (register the payment with provider_ref = the md5 of its QR string)"
                .to_string()
        })
    }

    fn bulk_limit(&self) -> usize {
        BULK_LIMIT
    }

    /// MD5s go in one list request; a full hash (rare) is asked on its own.
    async fn query_status_bulk(
        &self,
        targets: &[PollTarget<'_>],
    ) -> Result<Vec<Result<Observation, ProviderError>>, ProviderError> {
        let md5s: Vec<&str> = targets
            .iter()
            .filter_map(|t| t.provider_ref)
            .filter(|r| !Self::is_full_hash(r))
            .collect();
        let mut by_md5: HashMap<String, Observation> = HashMap::new();
        if !md5s.is_empty() {
            let envelope = self
                .post("/v1/check_transaction_by_md5_list", json!(md5s))
                .await?;
            if envelope["responseCode"].as_i64() != Some(0) {
                observe(&envelope)?;
                return Err(ProviderError::Transient {
                    message: format!(
                        "Bakong list answer without data: {}",
                        envelope["responseMessage"].as_str().unwrap_or_default()
                    ),
                });
            }
            for item in envelope["data"].as_array().into_iter().flatten() {
                if let Some(md5) = item["md5"].as_str() {
                    by_md5.insert(md5.to_string(), observe_item(item));
                }
            }
        }
        let mut out = Vec::with_capacity(targets.len());
        for t in targets {
            match t.provider_ref {
                Some(r) if !Self::is_full_hash(r) => {
                    out.push(by_md5.remove(r).ok_or_else(|| ProviderError::Transient {
                        message: format!("Bakong's list answer left out {r}"),
                    }))
                }
                _ => out.push(self.query_status(t).await),
            }
        }
        Ok(out)
    }

    /// An MD5 no one paid: errorCode 1 means the token and address work.
    async fn check(&self) -> Result<String, ProviderError> {
        let envelope = self
            .post(
                "/v1/check_transaction_by_md5",
                json!({"md5": "00000000000000000000000000000000"}),
            )
            .await?;
        observe(&envelope)?;
        Ok(format!("token accepted at {}", self.base_url))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            poll: true,
            webhooks: false,
            lookup: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_are_classified() {
        let paid = json!({"responseCode": 0, "errorCode": null, "responseMessage": "ok",
                          "data": {"hash": "ab12", "amount": 1.5}});
        assert_eq!(observe(&paid).unwrap().status, Some(Status::Succeeded));
        let not_yet = json!({"responseCode": 1, "errorCode": 1, "data": null,
                             "responseMessage": "Transaction could not be found. Please check and try again."});
        let o = observe(&not_yet).unwrap();
        assert_eq!((o.status, o.provider_status.as_str()), (None, "NOT_FOUND"));
        let failed = json!({"responseCode": 1, "errorCode": 3, "data": null,
                            "responseMessage": "Transaction failed."});
        assert_eq!(observe(&failed).unwrap().status, Some(Status::Failed));
        let unauthorised = json!({"responseCode": 1, "errorCode": 6, "data": null,
                                  "responseMessage": "Unauthorized"});
        assert!(matches!(
            observe(&unauthorised),
            Err(ProviderError::Permanent { .. })
        ));
        let odd = json!({"responseCode": 1, "errorCode": 9, "data": null,
                         "responseMessage": "Cannot connect to server"});
        assert!(matches!(
            observe(&odd),
            Err(ProviderError::Transient { .. })
        ));
    }
}
