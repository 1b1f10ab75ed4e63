//! The money a generic provider's answers and webhooks state, read where
//! `amount_pointer` and `currency_pointer` say and compared with the
//! registered money like every adapter's ([`finality_core::Reported`]):
//! "final" then means the same money for the fund channels the generic
//! adapter serves too.

use finality_core::{ConfigError, Reported};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a provider writes amounts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AmountUnit {
    /// Whole minor units: `1250` is 12.50 EUR (Stripe's, Adyen's way).
    #[default]
    Minor,
    /// Major units as written, `"12.50"` or `12.5`, read exactly in the
    /// currency's minor units (a third decimal for EUR is a mismatch, never
    /// rounded).
    Decimal,
}

/// `prefix` names the table (`webhook.`) in errors.
pub(super) fn validate(
    prefix: &str,
    amount: Option<&str>,
    currency: Option<&str>,
    unit: AmountUnit,
) -> Result<(), ConfigError> {
    for (field, p) in [("amount_pointer", amount), ("currency_pointer", currency)] {
        if p.is_some_and(|p| !p.starts_with('/')) {
            return Err(ConfigError::new(
                format!("{prefix}{field}"),
                "a JSON pointer starts with /",
            ));
        }
    }
    if currency.is_some() && amount.is_none() {
        return Err(ConfigError::new(
            format!("{prefix}amount_pointer"),
            "currency_pointer needs amount_pointer (a currency alone checks nothing)",
        ));
    }
    if amount.is_some() && currency.is_none() && unit == AmountUnit::Decimal {
        return Err(ConfigError::new(
            format!("{prefix}currency_pointer"),
            "amount_unit = \"decimal\" needs currency_pointer: a decimal amount's minor \
             units depend on its currency",
        ));
    }
    Ok(())
}

/// What `v` says about the money, where the pointers say (nothing
/// configured, or nothing there: nothing reported, nothing compared). An
/// amount that does not read is itself a mismatch, naming the pointer.
pub(super) fn read(
    v: &Value,
    amount: Option<&str>,
    currency: Option<&str>,
    unit: AmountUnit,
) -> Reported {
    let Some(at) = amount else {
        return Reported::default();
    };
    let Some(raw) = v.pointer(at).filter(|x| !x.is_null()) else {
        return Reported::default();
    };
    let ccy = currency
        .and_then(|p| v.pointer(p))
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase);
    let text = match raw {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return unreadable(at, &other.to_string(), "neither a number nor a string");
        }
    };
    match (unit, ccy) {
        (AmountUnit::Decimal, Some(c)) => Reported::decimal(Some(&text), &c),
        (AmountUnit::Decimal, None) => unreadable(at, &text, "no currency beside it"),
        (AmountUnit::Minor, c) => match text.parse::<i64>() {
            Ok(minor) => Reported {
                pieces: Vec::new(),
                amount: Some(minor),
                currency: c,
                mismatch: None,
            },
            Err(_) => unreadable(at, &text, "not a whole number of minor units"),
        },
    }
}

fn unreadable(at: &str, text: &str, why: &str) -> Reported {
    Reported {
        mismatch: Some(format!(
            "amount_mismatch: the provider's amount `{text}` at {at} does not read: {why}"
        )),
        ..Reported::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn minor_and_decimal_amounts_read_exactly() {
        let v = json!({"data": {"amount": 1250, "currency": "eur", "text": "12.50"}});
        let r = read(
            &v,
            Some("/data/amount"),
            Some("/data/currency"),
            AmountUnit::Minor,
        );
        assert_eq!(r, Reported::money(1250, "EUR"));
        let r = read(
            &v,
            Some("/data/text"),
            Some("/data/currency"),
            AmountUnit::Decimal,
        );
        assert_eq!(r.amount, Some(1250));
        let bad = read(&json!({"a": "12.5x"}), Some("/a"), None, AmountUnit::Minor);
        assert_eq!(
            bad.mismatch.as_deref(),
            Some("amount_mismatch: the provider's amount `12.5x` at /a does not read: not a whole number of minor units")
        );
        let bad = read(
            &json!({"a": "1.005", "c": "EUR"}),
            Some("/a"),
            Some("/c"),
            AmountUnit::Decimal,
        );
        assert!(bad.mismatch.unwrap().starts_with("amount_mismatch"));
    }

    #[test]
    fn nothing_configured_or_there_is_nothing_reported() {
        let v = json!({"data": {}});
        assert!(read(&v, None, None, AmountUnit::Minor).is_empty());
        assert!(read(&v, Some("/data/amount"), None, AmountUnit::Minor).is_empty());
    }

    #[test]
    fn settings_that_cannot_work_name_their_field() {
        let e = validate("webhook.", Some("/a"), None, AmountUnit::Decimal).unwrap_err();
        assert_eq!(e.field, "webhook.currency_pointer");
        let e = validate("", None, Some("/c"), AmountUnit::Minor).unwrap_err();
        assert_eq!(e.field, "amount_pointer");
        let e = validate("", Some("a"), None, AmountUnit::Minor).unwrap_err();
        assert_eq!(e.field, "amount_pointer");
    }
}
