//! Stripe's `Stripe-Signature: t=<unix>,v1=<hex>[,v1=…]`: HMAC-SHA256 over
//! `t.body` with the endpoint's signing secret (`whsec_…`, used as bytes),
//! hex-encoded; other schemes (`v0`) are ignored, as Stripe documents.

use super::{check_timestamp, Disposition, RejectReason, WebhookError, WebhookEvent};
use crate::setup::SetupError;
use finality_core::{Status, Timestamp};
use hmac::{Hmac, Mac};
use reqwest::header::HeaderMap;
use sha2::Sha256;
use std::time::Duration;

type HmacSha256 = Hmac<Sha256>;

pub const AUDIT_HEADERS: &[&str] = &["stripe-signature"];

/// A verifier holding every active signing secret of one Stripe endpoint.
#[derive(Clone)]
pub struct StripeSignature {
    secrets: Vec<String>,
    tolerance: Duration,
}

impl std::fmt::Debug for StripeSignature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "StripeSignature({} secrets, {:?})",
            self.secrets.len(),
            self.tolerance
        )
    }
}

/// The header value Stripe would send for `body` at `t`.
pub fn sign(secret: &str, t: i64, body: &[u8]) -> String {
    let mut mac =
        HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

impl StripeSignature {
    pub fn new(secrets: Vec<String>, tolerance: Duration) -> Result<Self, SetupError> {
        if secrets.is_empty() {
            return Err(SetupError::Missing("Stripe webhook signing secret"));
        }
        Ok(StripeSignature { secrets, tolerance })
    }

    /// Returns the signed timestamp when the body is authentic.
    pub fn verify(&self, h: &HeaderMap, body: &[u8], now: Timestamp) -> Result<i64, WebhookError> {
        let raw = h
            .get("stripe-signature")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                WebhookError::reject(
                    RejectReason::MissingHeader,
                    "missing header Stripe-Signature",
                )
            })?;
        super::mac::check_count(
            raw.split(',')
                .filter(|p| p.trim().starts_with("v1="))
                .count(),
            "Stripe-Signature",
        )?;
        let mut t = None;
        let mut v1 = Vec::new();
        for part in raw.split(',') {
            match part.trim().split_once('=') {
                Some(("t", v)) => t = Some(v.to_string()),
                Some(("v1", v)) => v1.extend(hex::decode(v).ok()),
                _ => {}
            }
        }
        let t = t.ok_or_else(|| {
            WebhookError::reject(RejectReason::MissingHeader, "Stripe-Signature has no t=")
        })?;
        let ts: i64 = t.parse().map_err(|_| {
            WebhookError::reject(
                RejectReason::BadTimestamp,
                format!("t=`{t}` is not unix seconds"),
            )
        })?;
        if v1.is_empty() {
            return Err(WebhookError::reject(
                RejectReason::MissingHeader,
                "Stripe-Signature has no v1= signature",
            ));
        }
        check_timestamp(ts, now, self.tolerance)?;
        let prefix = format!("{t}.");
        if super::mac::any_matches(
            self.secrets.iter().map(|s| s.as_bytes()),
            &[prefix.as_bytes(), body],
            &v1,
        ) {
            return Ok(ts);
        }
        Err(WebhookError::reject(
            RejectReason::BadSignature,
            format!(
                "no v1 signature matches any of {} active secrets",
                self.secrets.len()
            ),
        ))
    }
}

/// Stripe's words → ours, per object, from their rows in
/// [`crate::stripe::contract::ROWS`]. PaymentIntents have no `failed` (a
/// decline returns them to `requires_payment_method`); a refund or payout
/// that fails after it succeeded is recorded `reversed` (the transition
/// table's follow-up).
pub fn map_status(object: &str, status: &str) -> Option<Status> {
    use crate::stripe::contract::*;
    let list = match object {
        "payment_intent" => PAYMENT_INTENT,
        "refund" => REFUND_STATUS,
        "payout" => PAYOUT_STATUS,
        _ => return None,
    };
    crate::contract::status(ROWS, list, status)
}

/// Parse a verified Stripe event (`{"id", "type", "created", "data": {"object": …}}`).
/// `merchant_ref_key`: the metadata key that holds the merchant's reference.
///
/// PaymentIntents, refunds and payouts are followed by their own status.
/// Money leaving a payment is followed through the charge or dispute that
/// names its PaymentIntent: a full refund (`charge.refunded` with
/// `refunded: true`) and a lost chargeback (`charge.dispute.funds_withdrawn`,
/// `charge.dispute.closed` as `lost`) are `reversed`; funds reinstated after
/// a dispute are kept for review. Every other event is authentic and
/// acknowledged, and stored as ignored with the reason.
pub fn parse_event(body: &[u8], merchant_ref_key: &str) -> Result<WebhookEvent, WebhookError> {
    event_of(&read(body)?, merchant_ref_key)
}

/// Every row a verified Stripe event yields, from one read of the body:
/// [`parse_event`]'s, and `refund_undone`'s when it applies.
pub fn parse_events(
    body: &[u8],
    merchant_ref_key: &str,
) -> Result<Vec<WebhookEvent>, WebhookError> {
    events_of(&read(body)?, merchant_ref_key)
}

/// The events one Stripe event object means (a failed refund is also news
/// about its PaymentIntent): what a webhook body or an item of the event
/// list (`GET /v1/events`) carries.
pub fn events_of(
    v: &serde_json::Value,
    merchant_ref_key: &str,
) -> Result<Vec<WebhookEvent>, WebhookError> {
    let mut events = vec![event_of(v, merchant_ref_key)?];
    events.extend(refund_undone(v));
    Ok(events)
}

fn read(body: &[u8]) -> Result<serde_json::Value, WebhookError> {
    serde_json::from_slice(body).map_err(|e| WebhookError::Unparseable {
        event_id: String::new(),
        detail: format!("not JSON: {e}"),
    })
}

fn event_of(v: &serde_json::Value, merchant_ref_key: &str) -> Result<WebhookEvent, WebhookError> {
    let event_id = v["id"].as_str().unwrap_or_default().to_string();
    let unparseable = |detail: &str| WebhookError::Unparseable {
        event_id: event_id.clone(),
        detail: detail.to_string(),
    };
    if event_id.is_empty() {
        return Err(unparseable("event has no id"));
    }
    let event_type = v["type"].as_str().unwrap_or_default();
    let obj = &v["data"]["object"];
    let kind = obj["object"]
        .as_str()
        .ok_or_else(|| unparseable("data.object.object missing"))?;
    let word = obj["status"].as_str().unwrap_or_default();
    let mut ev = WebhookEvent {
        event_id: event_id.clone(),
        provider_ref: obj["id"].as_str().map(String::from),
        merchant_ref: obj["metadata"][merchant_ref_key].as_str().map(String::from),
        status: None,
        provider_status: Some(format!("{event_type} {word}").trim().to_string()),
        occurred_at: v["created"].as_i64().map(|s| Timestamp(s * 1000)),
        reported: money(obj),
        disposition: Disposition::Apply,
    };
    use crate::contract::{lookup, Action};
    use crate::stripe::contract::{DISPUTE_STATUS, EVENT, ROWS};
    let Some(row) = lookup(ROWS, EVENT, event_type) else {
        ev.disposition = Disposition::Review(format!(
            "Stripe event type `{event_type}` is not in Stripe's published list: kept for \
             review, not applied"
        ));
        return Ok(ev);
    };
    match (row.action, kind) {
        (Action::Ignore, _) => {
            ev.disposition = Disposition::Ignore(format!("`{event_type}`: {}", row.does));
        }
        (Action::Status(_) | Action::Depends, "payment_intent" | "refund" | "payout") => {
            if word.is_empty() {
                return Err(unparseable("data.object.status missing"));
            }
            ev.status = map_status(kind, word);
        }
        (_, "charge" | "dispute") => {
            // About a PaymentIntent's money: the PaymentIntent is named.
            let Some(pi) = obj["payment_intent"].as_str() else {
                ev.disposition = Disposition::Ignore(format!(
                    "`{event_type}` names no PaymentIntent (a charge made without one)"
                ));
                return Ok(ev);
            };
            ev.provider_ref = Some(pi.to_string());
            ev.merchant_ref = None;
            if event_type == "charge.refunded" {
                ev.reported.pieces = charge_pieces(obj);
            }
            let (status, why) = match (row.action, event_type) {
                (Action::Review, _) => (Some(Status::NeedsReview), None),
                (_, "charge.refunded") if obj["refunded"] == true => (Some(Status::Reversed), None),
                // The refunds listed: counted by their ids, so the payment
                // stays succeeded with its refunded amount stated.
                (_, "charge.refunded") if !ev.reported.pieces.is_empty() => {
                    (Some(Status::Succeeded), None)
                }
                (_, "charge.refunded") => (
                    None,
                    Some(format!(
                        "partial refund ({} of {} refunded): the payment stays succeeded",
                        obj["amount_refunded"], obj["amount"]
                    )),
                ),
                (_, "charge.dispute.closed" | "charge.dispute.created") => {
                    match lookup(ROWS, DISPUTE_STATUS, word).map(|r| (r.action, r.does)) {
                        Some((Action::Status(s), _)) => (Some(s), None),
                        Some((Action::Review, _)) => (Some(Status::NeedsReview), None),
                        Some((_, does)) => (None, Some(format!("dispute {word}: {does}"))),
                        None => {
                            ev.disposition = Disposition::Review(format!(
                                "dispute status `{word}` is not in Stripe's published list: \
                                 kept for review"
                            ));
                            (None, None)
                        }
                    }
                }
                _ => (
                    None,
                    Some(format!("`{event_type}` changes no status finality follows")),
                ),
            };
            ev.status = status;
            if let Some(why) = why {
                ev.disposition = Disposition::Ignore(why);
            }
        }
        (_, other) => {
            ev.disposition = Disposition::Ignore(format!(
                "`{event_type}` is about a `{other}`, which finality does not track"
            ));
        }
    }
    Ok(ev)
}

/// The money a Stripe object names, in the minor units Stripe always
/// uses: what a PaymentIntent took (`amount_received`), a refund's or a
/// payout's `amount`, a charge's `amount` (its full refund reverses it all:
/// `refunded` is true only when `amount_refunded` reached it), a dispute's
/// `amount` (a partial dispute is then not the registered amount, and a
/// human decides). `currency` is Stripe's lower-case ISO code.
pub fn money(obj: &serde_json::Value) -> finality_core::Reported {
    let amount = match obj["object"].as_str() {
        Some("payment_intent") => obj["amount_received"].as_i64(),
        _ => obj["amount"].as_i64(),
    };
    finality_core::Reported {
        pieces: Vec::new(),
        amount,
        currency: obj["currency"].as_str().map(String::from),
        mismatch: None,
    }
}

/// A charge's money as counted pieces ([`finality_core::amounts`]): the
/// capture (`amount_captured`, by the charge's id) and each refund the
/// charge lists (`refunds.data[]`, by its `re_` id, in the state its
/// status's row in [`crate::stripe::contract::MONEY`] says), so a refund
/// named by two events counts once.
/// Stripe lists the refunds only where the account's API version expands
/// them (before 2022-11-15, or with `expand[]=refunds`); without them no
/// piece is named and the event decides by `refunded` alone.
pub fn charge_pieces(obj: &serde_json::Value) -> Vec<finality_core::amounts::Piece> {
    use finality_core::amounts::{Piece, PieceKind, PieceState};
    let (Some(refunds), Some(charge), Some(currency)) = (
        obj["refunds"]["data"].as_array(),
        obj["id"].as_str(),
        obj["currency"].as_str(),
    ) else {
        return Vec::new();
    };
    let currency = currency.to_ascii_uppercase();
    let mut out = Vec::new();
    if let Some(captured) = obj["amount_captured"].as_i64().filter(|a| *a > 0) {
        out.push(Piece {
            kind: PieceKind::Capture,
            id: charge.to_string(),
            state: PieceState::Succeeded,
            amount: captured,
            currency: currency.clone(),
        });
    }
    for r in refunds {
        use crate::stripe::contract::{MONEY, REFUND_STATUS};
        let Some(state) = r["status"]
            .as_str()
            .and_then(|s| crate::contract::money_lookup(MONEY, REFUND_STATUS, s))
            .and_then(|row| row.state)
        else {
            continue;
        };
        let (Some(id), Some(amount)) = (r["id"].as_str(), r["amount"].as_i64()) else {
            continue;
        };
        out.push(Piece {
            kind: PieceKind::Refund,
            id: id.to_string(),
            state,
            amount,
            currency: r["currency"]
                .as_str()
                .map(str::to_ascii_uppercase)
                .unwrap_or_else(|| currency.clone()),
        });
    }
    out
}

/// A refund that fails or is canceled after its payment was reversed by
/// `charge.refunded` means the money is back with the merchant: the
/// PaymentIntent it names gets a `review` row (`{event id}:payment_intent`),
/// since `reversed` is final and only a human can undo it.
fn refund_undone(v: &serde_json::Value) -> Option<WebhookEvent> {
    let obj = &v["data"]["object"];
    let word = obj["status"].as_str()?;
    if obj["object"] != "refund" || !matches!(word, "failed" | "canceled") {
        return None;
    }
    let pi = obj["payment_intent"].as_str()?;
    Some(WebhookEvent {
        event_id: format!("{}:payment_intent", v["id"].as_str()?),
        provider_ref: Some(pi.to_string()),
        merchant_ref: None,
        status: None,
        provider_status: Some(format!(
            "refund {} {word}",
            obj["id"].as_str().unwrap_or("?")
        )),
        occurred_at: v["created"].as_i64().map(|s| Timestamp(s * 1000)),
        reported: Default::default(),
        disposition: Disposition::Review(format!(
            "refund {} of {pi} is {word}{}: if the payment was marked reversed by its refund, the \
             money is back; decide by hand",
            obj["id"].as_str().unwrap_or("?"),
            obj["failure_reason"]
                .as_str()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    const SECRET: &str = "whsec_test_secret_abc";
    const NOW_S: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"id":"evt_1","created":1700000000,"type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","status":"succeeded"}}}"#;

    fn h(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("stripe-signature", HeaderValue::from_str(v).unwrap());
        h
    }

    fn verifier(secrets: &[&str]) -> StripeSignature {
        StripeSignature::new(
            secrets.iter().map(|s| s.to_string()).collect(),
            Duration::from_secs(300),
        )
        .unwrap()
    }

    /// Built as Stripe documents: hex HMAC-SHA256 of "{t}.{payload}".
    #[test]
    fn documented_signature_verifies_and_parses() {
        let mut mac = HmacSha256::new_from_slice(SECRET.as_bytes()).unwrap();
        mac.update(b"1700000000.");
        mac.update(BODY);
        let expected = hex::encode(mac.finalize().into_bytes());
        let header = format!("t={NOW_S},v1={expected},v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39");
        assert_eq!(
            sign(SECRET, NOW_S, BODY),
            format!("t={NOW_S},v1={expected}")
        );
        let now = Timestamp(NOW_S * 1000);
        assert_eq!(
            verifier(&[SECRET]).verify(&h(&header), BODY, now),
            Ok(NOW_S)
        );
        // During rotation Stripe sends one v1 per active secret.
        let two = format!(
            "{},v1={}",
            sign("whsec_old", NOW_S, BODY),
            sign(SECRET, NOW_S, BODY).split_once("v1=").unwrap().1
        );
        assert!(verifier(&[SECRET]).verify(&h(&two), BODY, now).is_ok());
        let ev = parse_event(BODY, "merchant_ref").unwrap();
        assert_eq!(ev.event_id, "evt_1");
        assert_eq!(ev.provider_ref.as_deref(), Some("pi_1"));
        assert_eq!(ev.status, Some(Status::Succeeded));
    }

    #[test]
    fn failures_are_rejected() {
        let now = Timestamp(NOW_S * 1000);
        let good = sign(SECRET, NOW_S, BODY);
        let reason = |r: Result<i64, WebhookError>| match r {
            Err(WebhookError::Rejected { reason, .. }) => reason,
            other => panic!("expected rejection, got {other:?}"),
        };
        let mut changed = BODY.to_vec();
        changed[10] ^= 1;
        assert_eq!(
            reason(verifier(&[SECRET]).verify(&h(&good), &changed, now)),
            RejectReason::BadSignature
        );
        assert_eq!(
            reason(verifier(&["whsec_other"]).verify(&h(&good), BODY, now)),
            RejectReason::BadSignature
        );
        let stale = sign(SECRET, NOW_S - 400, BODY);
        assert_eq!(
            reason(verifier(&[SECRET]).verify(&h(&stale), BODY, now)),
            RejectReason::StaleTimestamp
        );
        let future = sign(SECRET, NOW_S + 400, BODY);
        assert_eq!(
            reason(verifier(&[SECRET]).verify(&h(&future), BODY, now)),
            RejectReason::FutureTimestamp
        );
        assert_eq!(
            reason(verifier(&[SECRET]).verify(&HeaderMap::new(), BODY, now)),
            RejectReason::MissingHeader
        );
        assert_eq!(
            reason(verifier(&[SECRET]).verify(&h("t=1700000000"), BODY, now)),
            RejectReason::MissingHeader
        );
    }
}
