//! Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`):
//! HMAC-SHA256 over `id.timestamp.body`, base64, keyed by a `whsec_` secret;
//! the signature header may carry several space-separated `v1,` signatures.

use super::{check_timestamp, RejectReason, WebhookError};
use crate::setup::SetupError;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use finality_core::Timestamp;
use hmac::{Hmac, Mac};
use reqwest::header::HeaderMap;
use sha2::Sha256;
use std::time::Duration;

type HmacSha256 = Hmac<Sha256>;

/// The headers kept with an inbox row for audit.
pub const AUDIT_HEADERS: &[&str] = &["webhook-id", "webhook-timestamp", "webhook-signature"];

/// What a verified request's headers said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub id: String,
    pub timestamp: i64,
}

/// A verifier holding every active secret of one provider.
#[derive(Clone)]
pub struct StandardWebhooks {
    keys: Vec<Vec<u8>>,
    tolerance: Duration,
}

impl std::fmt::Debug for StandardWebhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        write!(
            f,
            "StandardWebhooks({} keys, {:?})",
            self.keys.len(),
            self.tolerance
        )
    }
}

/// Decode a `whsec_…` secret (or bare base64) into key bytes.
pub fn decode_secret(secret: &str) -> Result<Vec<u8>, SetupError> {
    let b64 = secret
        .trim()
        .strip_prefix("whsec_")
        .unwrap_or(secret.trim());
    B64.decode(b64).map_err(|e| SetupError::Undecodable {
        what: "webhook secret",
        expected: "whsec_<base64>",
        detail: e.to_string(),
    })
}

/// `v1,<base64 signature>` for `id.timestamp.body` under `key`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", B64.encode(mac.finalize().into_bytes()))
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Result<&'a str, WebhookError> {
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

impl StandardWebhooks {
    pub fn new(secrets: &[String], tolerance: Duration) -> Result<Self, SetupError> {
        let keys = secrets
            .iter()
            .map(|s| decode_secret(s))
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(SetupError::Missing("webhook secret"));
        }
        Ok(StandardWebhooks { keys, tolerance })
    }

    /// Check headers and signature; on success the body is authentic.
    pub fn verify(
        &self,
        h: &HeaderMap,
        body: &[u8],
        now: Timestamp,
    ) -> Result<Verified, WebhookError> {
        let id = header(h, "webhook-id")?;
        let ts_raw = header(h, "webhook-timestamp")?;
        let sigs = header(h, "webhook-signature")?;
        let timestamp: i64 = ts_raw.trim().parse().map_err(|_| {
            WebhookError::reject(
                RejectReason::BadTimestamp,
                format!("webhook-timestamp `{ts_raw}` is not unix seconds"),
            )
        })?;
        check_timestamp(timestamp, now, self.tolerance)?;
        super::mac::check_count(sigs.split(' ').count(), "webhook-signature")?;
        let candidates: Vec<Vec<u8>> = sigs
            .split(' ')
            .filter_map(|s| s.strip_prefix("v1,"))
            .filter_map(|s| B64.decode(s).ok())
            .collect();
        let prefix = format!("{id}.{timestamp}.");
        if super::mac::any_matches(
            self.keys.iter().map(Vec::as_slice),
            &[prefix.as_bytes(), body],
            &candidates,
        ) {
            return Ok(Verified {
                id: id.to_string(),
                timestamp,
            });
        }
        Err(WebhookError::reject(
            RejectReason::BadSignature,
            format!(
                "no v1 signature matches any of {} active secrets",
                self.keys.len()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const NOW_S: i64 = 1_700_000_000;

    fn now() -> Timestamp {
        Timestamp(NOW_S * 1000)
    }

    fn headers(id: &str, ts: i64, sig: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("webhook-id", HeaderValue::from_str(id).unwrap());
        h.insert(
            "webhook-timestamp",
            HeaderValue::from_str(&ts.to_string()).unwrap(),
        );
        h.insert("webhook-signature", HeaderValue::from_str(sig).unwrap());
        h
    }

    fn verifier(secrets: &[&str]) -> StandardWebhooks {
        let s: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
        StandardWebhooks::new(&s, Duration::from_secs(300)).unwrap()
    }

    /// Signatures made by the spec authors' reference implementation.
    #[test]
    fn reference_implementation_signatures_verify() {
        let body = br#"{"type":"payment.updated","data":{"id":"sim_1","status":"succeeded"}}"#;
        let reference = standardwebhooks::Webhook::new(SECRET).unwrap();
        let sig = reference.sign("msg_1", NOW_S, body).unwrap();
        let got = verifier(&[SECRET])
            .verify(&headers("msg_1", NOW_S, &sig), body, now())
            .unwrap();
        assert_eq!(
            got,
            Verified {
                id: "msg_1".into(),
                timestamp: NOW_S
            }
        );
        // And ours signs exactly as theirs does.
        let ours = sign(&decode_secret(SECRET).unwrap(), "msg_2", NOW_S, body);
        assert_eq!(ours, reference.sign("msg_2", NOW_S, body).unwrap());
    }

    #[test]
    fn rotation_and_several_signatures() {
        let old = "whsec_b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZA==";
        let body = b"{}";
        let sig_new = sign(&decode_secret(SECRET).unwrap(), "m", NOW_S, body);
        let sig_old = sign(&decode_secret(old).unwrap(), "m", NOW_S, body);
        // The provider signs with the old secret; we hold both.
        assert!(verifier(&[SECRET, old])
            .verify(&headers("m", NOW_S, &sig_old), body, now())
            .is_ok());
        // The provider sends both signatures; we hold only the new one.
        let both = format!("{sig_old} {sig_new}");
        assert!(verifier(&[SECRET])
            .verify(&headers("m", NOW_S, &both), body, now())
            .is_ok());
    }

    #[test]
    fn every_tampering_is_rejected_by_reason() {
        let body = br#"{"a":1}"#;
        let sig = sign(&decode_secret(SECRET).unwrap(), "m", NOW_S, body);
        let v = verifier(&[SECRET]);
        let reason = |r: Result<Verified, WebhookError>| match r {
            Err(WebhookError::Rejected { reason, .. }) => reason,
            other => panic!("expected a rejection, got {other:?}"),
        };
        assert_eq!(
            reason(v.verify(&headers("m", NOW_S, &sig), br#"{"a":2}"#, now())),
            RejectReason::BadSignature
        );
        let wrong = verifier(&["whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA=="]);
        assert_eq!(
            reason(wrong.verify(&headers("m", NOW_S, &sig), body, now())),
            RejectReason::BadSignature
        );
        let stale = NOW_S - 301;
        let sig_stale = sign(&decode_secret(SECRET).unwrap(), "m", stale, body);
        assert_eq!(
            reason(v.verify(&headers("m", stale, &sig_stale), body, now())),
            RejectReason::StaleTimestamp
        );
        let future = NOW_S + 301;
        let sig_future = sign(&decode_secret(SECRET).unwrap(), "m", future, body);
        assert_eq!(
            reason(v.verify(&headers("m", future, &sig_future), body, now())),
            RejectReason::FutureTimestamp
        );
        let mut missing = headers("m", NOW_S, &sig);
        missing.remove("webhook-signature");
        assert_eq!(
            reason(v.verify(&missing, body, now())),
            RejectReason::MissingHeader
        );
        assert_eq!(
            reason(v.verify(&headers("m2", NOW_S, &sig), body, now())),
            RejectReason::BadSignature
        );
    }
}
