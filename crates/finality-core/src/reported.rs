//! What a provider said about the money itself, beside the status: the
//! amount, the currency and the receiving account. A final answer counts
//! only for the money that was registered; "paid" for 1 cent, for another
//! currency, or to another merchant's account is a different fact, and a
//! human decides it (`needs_review`), never `succeeded`.
//!
//! Adapters fill [`Reported`] from each answer and notification where the
//! provider reports the fields; [`money_mismatch`] is the one comparison,
//! used by the poll engine and by the webhook inbox alike.

use crate::status::Status;

/// The money a provider's answer or event names. Every field is `None`
/// where the provider does not report it (nothing to compare, nothing
/// wrong).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reported {
    /// Minor units of `currency` (a decimal string like Alipay's
    /// `total_amount = "88.88"` converted exactly).
    pub amount: Option<i64>,
    /// ISO 4217 code as the provider wrote it (Stripe writes `usd`).
    pub currency: Option<String>,
    /// What the adapter itself found wrong with the money, as the reason
    /// for review: the account the answer is for (Adyen
    /// `merchantAccountCode`, WeChat Pay `appid`/`mchid`, Alipay
    /// `app_id`/`seller_id`) is not the configured one
    /// (`account_mismatch: …`, both values), or an amount it could not
    /// read (`amount_mismatch: …`).
    pub mismatch: Option<String>,
    /// The provider's sub-objects this answer names (an authorisation
    /// attempt, a capture, a refund, a dispute, each by its own id): when
    /// there are any and the operation is a payment, its amounts are
    /// counted from them ([`crate::amounts`]) instead of the event's amount
    /// being compared with the registration, so a partial capture or
    /// refund is money, not a mismatch.
    pub pieces: Vec<crate::amounts::Piece>,
}

impl Reported {
    /// An amount in minor units and its currency.
    pub fn money(amount: i64, currency: impl Into<String>) -> Self {
        Reported {
            amount: Some(amount),
            currency: Some(currency.into()),
            mismatch: None,
            pieces: Vec::new(),
        }
    }

    /// The same, with the account compared: `reported` is the account the
    /// provider names, `configured` the one finality was set up for;
    /// `field` is the provider's name for it.
    pub fn with_account(mut self, field: &str, reported: Option<&str>, configured: &str) -> Self {
        if let Some(r) = reported {
            if !configured.is_empty() && r != configured {
                self.mismatch = Some(format!(
                    "account_mismatch: the provider reports {field} `{r}`, configured `{configured}`"
                ));
            }
        }
        self
    }

    /// A decimal amount as the provider wrote it (`"88.88"`), in
    /// `currency`'s minor units; one that does not read is itself a
    /// mismatch (a success for an amount nobody can read is not applied).
    pub fn decimal(text: Option<&str>, currency: &str) -> Self {
        // No amount: nothing reported (the currency alone is the
        // adapter's assumption, not the provider's word).
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            return Reported::default();
        };
        let mut r = Reported {
            currency: Some(currency.to_string()),
            ..Reported::default()
        };
        // Zeros after the last significant decimal say nothing (Bakong
        // writes `1250.0` for 1,250 yen).
        let trimmed = match text.split_once('.') {
            Some((int, frac)) if frac.bytes().all(|b| b == b'0') => int,
            Some(_) => text.trim_end_matches('0'),
            None => text,
        };
        let parsed = crate::money::Currency::parse(&currency.to_ascii_uppercase())
            .map_err(|e| e.message)
            .and_then(|c| c.parse_decimal(trimmed).map_err(|e| e.to_string()));
        match parsed {
            Ok(minor) => r.amount = Some(minor),
            Err(e) => {
                r.mismatch = Some(format!(
                    "amount_mismatch: the provider's amount `{text}` {currency} does not read: {e}"
                ))
            }
        }
        r
    }

    /// Nothing reported.
    pub fn is_empty(&self) -> bool {
        self.amount.is_none() && self.currency.is_none() && self.mismatch.is_none()
    }
}

/// Whether a report of `status` is about money that moved, so its amount
/// must be the registered one: a success (the money arrived, was refunded
/// or paid out) and a reversal (it went back).
pub fn is_checked(status: Status) -> bool {
    matches!(status, Status::Succeeded | Status::Reversed)
}

/// What the adapter found wrong by itself, when it matters for a report of
/// `status` (`None`: a status it could not map): another account, whatever
/// the status; an unreadable amount, for a checked status. Decided before
/// the payment is known, so a webhook for another merchant is stored for
/// review at once and never applied.
pub fn found_by_adapter(status: Option<Status>, reported: &Reported) -> Option<&str> {
    let why = reported.mismatch.as_deref()?;
    (why.starts_with("account_mismatch") || status.is_some_and(is_checked)).then_some(why)
}

/// Why a report of `status` with `reported` money does not count for a
/// payment registered as `amount` minor units of `currency`: the reason for
/// review (`account_mismatch: …` or `amount_mismatch: …`, with both
/// values), or `None` when it counts. Another account is never applied,
/// whatever it says; the amount is compared for checked statuses only (see
/// [`is_checked`]); a field the provider did not report is not compared.
pub fn money_mismatch(
    status: Status,
    reported: &Reported,
    amount: i64,
    currency: &str,
) -> Option<String> {
    if let Some(why) = found_by_adapter(Some(status), reported) {
        return Some(why.to_string());
    }
    if !is_checked(status) {
        return None;
    }
    let amount_differs = reported.amount.is_some_and(|a| a != amount);
    let currency_differs = reported
        .currency
        .as_deref()
        .is_some_and(|c| !c.eq_ignore_ascii_case(currency));
    if !amount_differs && !currency_differs {
        return None;
    }
    let said = match (reported.amount, reported.currency.as_deref()) {
        (Some(a), Some(c)) => format!("{a} {}", c.to_ascii_uppercase()),
        (Some(a), None) => format!("{a} (no currency)"),
        (None, Some(c)) => format!("(no amount) {}", c.to_ascii_uppercase()),
        (None, None) => String::new(),
    };
    Some(format!(
        "amount_mismatch: the provider reports {status} for {said}, registered {amount} {currency}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registered_money_counts() {
        let r = Reported::money(1250, "eur");
        assert_eq!(money_mismatch(Status::Succeeded, &r, 1250, "EUR"), None);
        assert_eq!(
            money_mismatch(Status::Succeeded, &Reported::default(), 1, "EUR"),
            None
        );
    }

    #[test]
    fn another_amount_or_currency_is_a_mismatch_with_both_values() {
        let why = money_mismatch(Status::Succeeded, &Reported::money(1, "EUR"), 1250, "EUR");
        assert_eq!(
            why.as_deref(),
            Some("amount_mismatch: the provider reports succeeded for 1 EUR, registered 1250 EUR")
        );
        let why = money_mismatch(Status::Reversed, &Reported::money(1250, "usd"), 1250, "EUR");
        assert!(why.unwrap().contains("1250 USD, registered 1250 EUR"));
    }

    #[test]
    fn only_money_that_moved_is_compared() {
        let r = Reported::money(1, "EUR");
        for s in [
            Status::Pending,
            Status::Processing,
            Status::Failed,
            Status::Cancelled,
        ] {
            assert_eq!(money_mismatch(s, &r, 1250, "EUR"), None, "{s}");
        }
    }

    #[test]
    fn decimal_amounts_read_exactly_or_not_at_all() {
        assert_eq!(Reported::decimal(Some("88.88"), "CNY").amount, Some(8888));
        assert_eq!(Reported::decimal(Some("1250"), "JPY").amount, Some(1250));
        assert_eq!(Reported::decimal(Some("1250.0"), "JPY").amount, Some(1250));
        assert_eq!(Reported::decimal(Some("1.10"), "USD").amount, Some(110));
        let bad = Reported::decimal(Some("8.888"), "CNY");
        assert_eq!(bad.amount, None);
        assert!(money_mismatch(Status::Succeeded, &bad, 8888, "CNY")
            .unwrap()
            .starts_with("amount_mismatch: the provider's amount `8.888` CNY does not read"));
    }

    #[test]
    fn another_account_is_a_mismatch() {
        let r = Reported::money(1250, "EUR").with_account("app_id", Some("2021"), "2088");
        let why = money_mismatch(Status::Succeeded, &r, 1250, "EUR").unwrap();
        assert_eq!(
            why,
            "account_mismatch: the provider reports app_id `2021`, configured `2088`"
        );
        let same = Reported::money(1250, "EUR").with_account("app_id", Some("2088"), "2088");
        assert_eq!(money_mismatch(Status::Succeeded, &same, 1250, "EUR"), None);
    }
}
