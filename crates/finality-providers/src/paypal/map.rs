//! What PayPal's statuses, event types and objects mean: the adapter's
//! reading of an order, a capture or a refund, and of the money in it.

use super::contract;
use finality_core::Status;
use serde_json::Value;

/// Order statuses → ours (`COMPLETED`: see [`order_status`]).
pub fn map_order(status: &str) -> Option<Status> {
    crate::contract::status(contract::ROWS, contract::ORDER, status)
}

/// Refund statuses → ours.
pub fn map_refund(status: &str) -> Option<Status> {
    crate::contract::status(contract::ROWS, contract::REFUND_STATUS, status)
}

/// Capture statuses → ours, for a payment tracked as its capture.
pub fn map_capture(status: &str) -> Option<Status> {
    crate::contract::status(contract::ROWS, contract::CAPTURE, status)
}

/// Transaction Search's one-letter statuses → ours (S success, P pending,
/// V reversed or refunded, D denied).
pub fn map_transaction(status: &str) -> Option<Status> {
    match status {
        "S" => Some(Status::Succeeded),
        "P" => Some(Status::Processing),
        "V" => Some(Status::Reversed),
        "D" => Some(Status::Failed),
        _ => None,
    }
}

/// Webhook event types → ours (from their rows in [`contract::ROWS`]), and
/// whether the payment is named by the resource's order id
/// (`supplementary_data.related_ids.order_id`): the capture events.
/// `PAYMENT.CAPTURE.REFUNDED` has no status of its own: the capture's,
/// asked again, decides (see [`super::parse_event`]).
pub fn map_event(event_type: &str) -> (Option<Status>, bool) {
    let about_capture = event_type.starts_with("PAYMENT.CAPTURE.");
    let status = match crate::contract::lookup(contract::ROWS, contract::EVENT, event_type) {
        Some(r) => match r.action {
            crate::contract::Action::Status(s) => Some(s),
            crate::contract::Action::Review => Some(Status::NeedsReview),
            _ => None,
        },
        None => None,
    };
    (status, about_capture)
}

/// An order's status, from its captures: PayPal marks an order `COMPLETED`
/// once a capture was attempted, but the money is in
/// `purchase_units[].payments.captures[]`, and a `PENDING` (eCheck, review)
/// or `DECLINED` capture inside a completed order is not a success. A
/// completed order with no capture (intent `AUTHORIZE`) is authorised only.
pub fn order_status(order: &Value) -> (Option<Status>, String) {
    let word = order["status"].as_str().unwrap_or_default();
    if word != "COMPLETED" {
        return (map_order(word), word.to_string());
    }
    let captures: Vec<&Value> = order["purchase_units"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|u| u["payments"]["captures"].as_array().into_iter().flatten())
        .collect();
    if captures.is_empty() {
        let authorized = order["purchase_units"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|u| u["payments"]["authorizations"].is_array());
        let what = if authorized {
            "authorized, not captured"
        } else {
            "no capture"
        };
        return (Some(Status::Processing), format!("COMPLETED ({what})"));
    }
    // Money captured decides: an order with a completed capture is a
    // success for what was captured, whatever its other captures did (a
    // declined one beside it moved nothing).
    let moved = captures
        .iter()
        .filter(|c| {
            map_capture(c["status"].as_str().unwrap_or_default()) == Some(Status::Succeeded)
        })
        .count();
    if moved > 0 && moved < captures.len() {
        let others: Vec<&str> = captures
            .iter()
            .map(|c| c["status"].as_str().unwrap_or("?"))
            .collect();
        return (
            Some(Status::Succeeded),
            format!("COMPLETED captures {}", others.join(", ")),
        );
    }
    // Otherwise the least settled capture decides: all must be in for a
    // success.
    let rank = |s: Option<Status>| match s {
        Some(Status::Failed) => 0,
        None | Some(Status::Pending | Status::Processing | Status::NeedsReview) => 1,
        Some(Status::Reversed) => 2,
        Some(Status::Cancelled) => 3,
        Some(Status::Succeeded) => 4,
    };
    let worst = captures
        .iter()
        .min_by_key(|c| rank(map_capture(c["status"].as_str().unwrap_or_default())))
        .copied()
        .unwrap_or(&Value::Null);
    let cw = worst["status"].as_str().unwrap_or_default();
    let reason = worst["status_details"]["reason"]
        .as_str()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    (map_capture(cw), format!("COMPLETED capture {cw}{reason}"))
}

/// The money one PayPal amount object names (`{"value": "10.00",
/// "currency_code": "USD"}`), in minor units; empty when absent.
pub(crate) fn amount_of(v: &Value) -> finality_core::Reported {
    match v["currency_code"].as_str() {
        Some(c) => finality_core::Reported::decimal(v["value"].as_str(), c),
        None => finality_core::Reported::default(),
    }
}

/// The money an order took: its captures' amounts added up (a completed
/// order's money is in its captures, and a capture may be for less than
/// the order), or, before any capture, its purchase units' amounts. Amounts
/// in more than one currency cannot be compared with one registration:
/// a mismatch for a human.
pub fn order_money(order: &Value) -> finality_core::Reported {
    let units: Vec<&Value> = order["purchase_units"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let captures: Vec<&Value> = units
        .iter()
        .flat_map(|u| u["payments"]["captures"].as_array().into_iter().flatten())
        .collect();
    // The captures that moved money, when any did (a declined capture
    // beside a completed one took nothing).
    let moved: Vec<&Value> = captures
        .iter()
        .filter(|c| {
            matches!(
                c["status"].as_str(),
                Some("COMPLETED" | "PARTIALLY_REFUNDED" | "REFUNDED")
            )
        })
        .map(|c| &c["amount"])
        .collect();
    let amounts: Vec<&Value> = if captures.is_empty() {
        units.iter().map(|u| &u["amount"]).collect()
    } else if !moved.is_empty() {
        moved
    } else {
        captures.iter().map(|c| &c["amount"]).collect()
    };
    let mut total = finality_core::Reported::default();
    for a in amounts.iter().map(|a| amount_of(a)) {
        if a.mismatch.is_some() {
            return a;
        }
        let (Some(minor), Some(c)) = (a.amount, a.currency) else {
            continue;
        };
        if total.currency.as_deref().is_some_and(|t| t != c) {
            total.mismatch = Some(format!(
                "amount_mismatch: the order's amounts are in more than one currency ({} and {c})",
                total.currency.as_deref().unwrap_or("?")
            ));
            return total;
        }
        total.amount = Some(total.amount.unwrap_or(0).saturating_add(minor));
        total.currency = Some(c);
    }
    total
}

/// The transaction a dispute is about, as PayPal names it.
pub(crate) fn disputed(resource: &Value) -> Option<&str> {
    resource["disputed_transactions"].as_array()?.first()?["seller_transaction_id"].as_str()
}

/// The capture a refund resource belongs to: the id at the end of its `up`
/// link (`…/v2/payments/captures/{id}`).
pub(crate) fn refunded_capture(resource: &Value) -> Option<&str> {
    resource["links"]
        .as_array()?
        .iter()
        .find(|l| l["rel"] == "up")?["href"]
        .as_str()?
        .rsplit('/')
        .next()
}

pub(crate) fn money(v: &Value) -> String {
    match (v["value"].as_str(), v["currency_code"].as_str()) {
        (Some(a), Some(c)) => format!("{a} {c}"),
        _ => "an unknown amount".into(),
    }
}

/// One capture as a counted piece ([`finality_core::amounts`]): by its
/// `id`, for its `amount`, in the state its status's row in
/// [`contract::MONEY`] says. `None` when it names no id, no readable
/// amount, or a status with no row.
pub fn capture_piece(c: &Value) -> Option<finality_core::amounts::Piece> {
    use finality_core::amounts::Piece;
    let row =
        crate::contract::money_lookup(contract::MONEY, contract::CAPTURE, c["status"].as_str()?)?;
    let money = amount_of(&c["amount"]);
    Some(Piece {
        kind: row.kind,
        state: row.state?,
        id: c["id"].as_str()?.to_string(),
        amount: money.amount?,
        currency: money.currency?.to_ascii_uppercase(),
    })
}

/// Every capture of an order, as pieces.
pub fn order_pieces(order: &Value) -> Vec<finality_core::amounts::Piece> {
    order["purchase_units"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|u| u["payments"]["captures"].as_array().into_iter().flatten())
        .filter_map(capture_piece)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The poll path reads the same order: a completed capture beside a
    /// declined one is a success for the completed capture's money
    /// (`COMPLETED` capture: "The funds for this captured payment were
    /// credited to the payee's PayPal account"; `DECLINED`: "The funds
    /// could not be captured", PayPal's capture_status), not the least
    /// settled capture's `failed`.
    #[test]
    fn a_completed_capture_beside_a_declined_one_is_money_taken() {
        let capture = |id: &str, status: &str, value: &str| {
            json!({"id": id, "status": status,
                   "amount": {"currency_code": "EUR", "value": value}})
        };
        let order = json!({"id": "5O190127TN364715T", "status": "COMPLETED",
            "purchase_units": [{"amount": {"currency_code": "EUR", "value": "11.30"},
                "payments": {"captures": [capture("3C679366HH908993F", "DECLINED", "11.30"),
                                          capture("8MC585209K746392H", "COMPLETED", "11.30")]}}]});
        let (status, word) = order_status(&order);
        assert_eq!(status, Some(Status::Succeeded), "{word}");
        let money = order_money(&order);
        assert_eq!(
            (money.amount, money.currency.as_deref()),
            (Some(1130), Some("EUR"))
        );
        let pieces = order_pieces(&order);
        assert_eq!(pieces.len(), 2);
        // Only declined captures: failed, as before.
        let declined = json!({"id": "X", "status": "COMPLETED",
            "purchase_units": [{"payments": {"captures": [capture("A", "DECLINED", "11.30")]}}]});
        assert_eq!(order_status(&declined).0, Some(Status::Failed));
    }
}
