//! The sub-objects an Adyen notification names, counted into the payment's
//! amounts ([`finality_core::amounts`]): each by its own `pspReference`
//! (an authorisation attempt's, a capture's, a refund's, a chargeback's),
//! for `amount.value` minor units of `amount.currency`. Only codes applied
//! to payments name pieces; a refund operation finality tracks by its own
//! pspReference keeps its money compared with its registration.
//!
//! Sources (quotes and their pages in `testdata/research/adyen_contract.md`):
//! "W" is Adyen's webhook description per code (Webhooks-v1.json); "CO"
//! is the Checkout API's captures and reversals pages; "FR" is "CAPTURE_FAILED
//! and REFUND_FAILED reasons"; "WX" the webhook examples. Not sourced, and
//! said so in the rows: that a re-capture names the first capture's
//! `pspReference` (the research found no sentence either way).

use super::Capture;
use finality_core::amounts::{Piece, PieceKind, PieceState};
use serde_json::Value;

/// One rule: a code (with `success`) names these pieces, each by the
/// item's `pspReference`; `capture` narrows it to one capture mode.
#[derive(Debug, Clone, Copy)]
pub struct PieceRow {
    pub code: &'static str,
    pub success: bool,
    pub capture: Option<Capture>,
    pub pieces: &'static [(PieceKind, PieceState)],
    /// Adyen's sentence the rule rests on.
    pub source: &'static str,
}

use PieceKind as K;
use PieceState as S;

/// Every code that names money of a payment. A code not here names no
/// piece (its status is still decided by [`super::contract::ROWS`]).
pub const ROWS: &[PieceRow] = &[
    PieceRow {
        code: "AUTHORISATION",
        success: true,
        capture: Some(Capture::Automatic),
        pieces: &[(K::Authorisation, S::Succeeded), (K::Capture, S::Succeeded)],
        source:
            "\"If `true`: The payment request was successful.\" (W); Authorised: \"The payment \
                 was successfully authorised. This state serves as an indicator to proceed with \
                 the delivery of goods and services.\" (CO): with automatic capture no CAPTURE \
                 follows, so the authorisation is the capture",
    },
    PieceRow {
        code: "AUTHORISATION",
        success: true,
        capture: Some(Capture::Manual),
        pieces: &[(K::Authorisation, S::Succeeded)],
        source: "\"The authorization reserves the funds on the shopper's bank account.\" (Adyen, \
                 Capture)",
    },
    PieceRow {
        code: "AUTHORISATION",
        success: false,
        capture: None,
        pieces: &[(K::Authorisation, S::Failed)],
        source: "\"If `false`: The payment request failed.\" (W); the pspReference is the \
                 payment request's own (WX), so a shopper's retry is another attempt, counted \
                 apart",
    },
    PieceRow {
        code: "CAPTURE",
        success: true,
        capture: None,
        pieces: &[(K::Capture, S::Succeeded)],
        source: "\"You can capture either the full authorised amount or a part of the authorised \
                 amount. By default, any unclaimed amount after a partial capture gets \
                 cancelled.\" (CO, captures); a re-capture (\"you receive a webhook event with: \
                 eventCode CAPTURE, success true\", FR) is taken to name the same capture (not \
                 sourced)",
    },
    PieceRow {
        code: "CAPTURE_FAILED",
        success: true,
        capture: None,
        pieces: &[(K::Capture, S::Failed)],
        source: "\"The capture request failed due to rejection by the card scheme.\" (W); \"Adyen \
                 will try to fix the issue and re-capture the transaction.\" (FR)",
    },
    PieceRow {
        code: "CANCEL_OR_REFUND",
        success: true,
        capture: None,
        pieces: &[(K::Refund, S::Succeeded)],
        source: "\"The reversed amount is always the full payment amount.\" (Checkout API, \
                 /reversals): a refund of all that was captured (none when the action is \
                 `cancel`)",
    },
    PieceRow {
        code: "CHARGEBACK",
        success: true,
        capture: None,
        pieces: &[(K::Dispute, S::Succeeded)],
        source: "\"The payment was charged back, and the funds were deducted from your \
                 account.\" (W)",
    },
];

/// The pieces `item` names (none when it names no amount, or is not about
/// a payment's money): its row in [`ROWS`], each piece by its
/// `pspReference`, except a capture under automatic capture (by the
/// payment's, see below).
pub fn pieces(item: &Value, capture: Capture) -> Vec<Piece> {
    let text = |f: &str| item[f].as_str().unwrap_or_default();
    let (Some(amount), Some(currency)) = (
        item["amount"]["value"].as_i64(),
        item["amount"]["currency"].as_str(),
    ) else {
        return Vec::new();
    };
    let psp = text("pspReference");
    let code = text("eventCode");
    let success = text("success") == "true";
    let cancel_only = code == "CANCEL_OR_REFUND"
        && item["additionalData"]["modification.action"].as_str() == Some("cancel");
    if psp.is_empty() || cancel_only {
        return Vec::new();
    }
    let Some(row) = ROWS
        .iter()
        .find(|r| r.code == code && r.success == success && r.capture.is_none_or(|c| c == capture))
    else {
        return Vec::new();
    };
    // Under automatic capture a payment has one capture, the payment's
    // own: named by the payment's pspReference (the AUTHORISATION's, a
    // CAPTURE's `originalReference`), so an account that also receives
    // CAPTURE notifications counts it once, not twice.
    let original = text("originalReference");
    row.pieces
        .iter()
        .map(|(kind, state)| Piece {
            kind: *kind,
            id: if *kind == PieceKind::Capture
                && capture == Capture::Automatic
                && !original.is_empty()
            {
                original.to_string()
            } else {
                psp.to_string()
            },
            state: *state,
            amount,
            currency: currency.to_ascii_uppercase(),
        })
        .collect()
}

/// The rows as one Markdown table, for `docs/PROVIDERS.md`.
pub fn render(rows: &[PieceRow]) -> String {
    let mut out = String::from(
        "\n| eventCode | counts as (by `pspReference`; under automatic capture, a capture by \
         the payment's) | source |\n| --- | --- | --- |\n",
    );
    for r in rows {
        let when = match r.capture {
            Some(Capture::Automatic) => " (automatic capture)",
            Some(Capture::Manual) => " (`capture = \"manual\"`)",
            None => "",
        };
        let counts: Vec<String> = r
            .pieces
            .iter()
            .map(|(k, s)| format!("{} {}", k.as_str(), s.as_str()))
            .collect();
        out.push_str(&format!(
            "| `{}` success={}{when} | {} | {} |\n",
            r.code,
            r.success,
            counts.join(" + "),
            r.source.replace('|', "\\|")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(code: &str, success: &str, psp: &str, value: i64) -> Value {
        json!({"pspReference": psp, "originalReference": "7914073381342284",
               "eventCode": code, "success": success,
               "amount": {"value": value, "currency": "EUR"}})
    }

    /// A code, its `success`, the capture mode, and the pieces it names.
    type Case = (
        &'static str,
        &'static str,
        super::Capture,
        &'static [(PieceKind, PieceState)],
    );

    /// What each documented case names, written apart from [`ROWS`]: a
    /// row deleted or changed there fails here.
    #[test]
    fn the_documented_cases_name_their_pieces() {
        use PieceKind::{Authorisation, Dispute, Refund};
        use PieceState::*;
        let a = super::Capture::Automatic;
        let m = super::Capture::Manual;
        let cases: &[Case] = &[
            (
                "AUTHORISATION",
                "true",
                a,
                &[(Authorisation, Succeeded), (PieceKind::Capture, Succeeded)],
            ),
            ("AUTHORISATION", "true", m, &[(Authorisation, Succeeded)]),
            ("AUTHORISATION", "false", a, &[(Authorisation, Failed)]),
            ("AUTHORISATION", "false", m, &[(Authorisation, Failed)]),
            ("CAPTURE", "true", m, &[(PieceKind::Capture, Succeeded)]),
            ("CAPTURE_FAILED", "true", m, &[(PieceKind::Capture, Failed)]),
            ("CANCEL_OR_REFUND", "true", a, &[(Refund, Succeeded)]),
            ("CHARGEBACK", "true", a, &[(Dispute, Succeeded)]),
            ("EXPIRE", "true", m, &[]),
            ("CAPTURE", "false", m, &[]),
            ("REFUND", "true", a, &[]),
        ];
        for (code, success, capture, want) in cases {
            let got: Vec<_> = pieces(&item(code, success, "8825408195409505", 500), *capture)
                .iter()
                .map(|p| (p.kind, p.state))
                .collect();
            assert_eq!(&got, want, "{code} success={success} {capture:?}");
        }
        assert_eq!(ROWS.len(), 7, "a row without its case above");
    }

    /// Automatic capture: the AUTHORISATION's capture and a CAPTURE
    /// notification about the same payment are one capture.
    #[test]
    fn an_automatic_capture_is_the_payments_own() {
        let auth = pieces(
            &item("AUTHORISATION", "true", "7914073381342284", 1130),
            super::Capture::Automatic,
        );
        let mut cap = item("CAPTURE", "true", "8825408195409505", 1130);
        cap["originalReference"] = json!("7914073381342284");
        let cap = pieces(&cap, super::Capture::Automatic);
        assert_eq!(auth[1], cap[0]);
        let mut manual = item("CAPTURE", "true", "8825408195409505", 500);
        manual["originalReference"] = json!("7914073381342284");
        assert_eq!(
            pieces(&manual, super::Capture::Manual)[0].id,
            "8825408195409505"
        );
    }

    /// Every row is read: deleting one changes what an item names.
    #[test]
    fn every_row_names_its_pieces() {
        for r in ROWS {
            let capture = r.capture.unwrap_or_default();
            let i = item(
                r.code,
                if r.success { "true" } else { "false" },
                "8825408195409505",
                500,
            );
            let got: Vec<_> = pieces(&i, capture)
                .iter()
                .map(|p| (p.kind, p.state))
                .collect();
            assert_eq!(got, r.pieces.to_vec(), "{}", r.code);
            assert!(!r.source.is_empty());
        }
        // A code without a row names none (its status still counts).
        assert!(pieces(&item("EXPIRE", "true", "x", 630), Capture::Manual).is_empty());
        let mut cancel = item("CANCEL_OR_REFUND", "true", "x", 1130);
        cancel["additionalData"]["modification.action"] = json!("cancel");
        assert!(pieces(&cancel, Capture::Automatic).is_empty());
    }
}
