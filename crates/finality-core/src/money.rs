//! Validated payment fields, built only valid at the edge ("parse, don't
//! validate"): handlers and the store only ever see good values.

use std::fmt;

/// Why a field was rejected; the field name travels with it to the API error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        FieldError {
            field,
            message: message.into(),
        }
    }
}

/// Printable ASCII without spaces, 1..=255 bytes: safe in URLs, logs and
/// both databases' indexes.
fn check_token(field: &'static str, v: &str) -> Result<(), FieldError> {
    if v.is_empty() || v.len() > 255 {
        return Err(FieldError::new(field, "must be 1 to 255 characters"));
    }
    if !v.bytes().all(|b| b.is_ascii_graphic() && b != b'/') {
        return Err(FieldError::new(
            field,
            "may only contain printable ASCII without spaces or '/'",
        ));
    }
    // In a URL path these walk it (`/payments/../status` is `/status`).
    if v == "." || v == ".." {
        return Err(FieldError::new(
            field,
            "must not be `.` or `..` (a URL path would walk up with it)",
        ));
    }
    Ok(())
}

/// The caller's id for a payment: the idempotency key of registration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PaymentId(String);

impl PaymentId {
    pub fn parse(v: &str) -> Result<Self, FieldError> {
        check_token("id", v)?;
        Ok(PaymentId(v.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PaymentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The provider's id for the operation (PaymentIntent id, order id, md5…).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProviderRef(String);

impl ProviderRef {
    pub fn parse(v: &str) -> Result<Self, FieldError> {
        check_token("provider_ref", v)?;
        Ok(ProviderRef(v.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The merchant's own reference for the operation (order number, invoice
/// id, `out_trade_no`): what a caller knows when the provider's create call
/// timed out before it answered with the provider's id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MerchantRef(String);

impl MerchantRef {
    pub fn parse(v: &str) -> Result<Self, FieldError> {
        check_token("merchant_ref", v)?;
        Ok(MerchantRef(v.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A currency of ISO 4217's list with a minor unit (the `iso_currency`
/// crate's table): any three letters used to pass, and an amount in a
/// made-up currency can be checked against nothing. Codes without a minor
/// unit (gold `XAU`, the test code `XTS`, `XXX`) are refused: an amount in
/// minor units means nothing in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency(iso_currency::Currency);

impl Currency {
    pub fn parse(v: &str) -> Result<Self, FieldError> {
        let known = iso_currency::Currency::from_code(v).filter(|c| c.exponent().is_some());
        known.map(Currency).ok_or_else(|| {
            FieldError::new(
                "currency",
                format!(
                    "`{}` is not an ISO 4217 currency code with a minor unit \
                     (three upper-case letters, e.g. USD, EUR, JPY)",
                    v.chars().take(16).collect::<String>()
                ),
            )
        })
    }
    pub fn as_str(&self) -> &str {
        self.0.code()
    }

    /// Decimal places of the minor unit (ISO 4217): two for most, none
    /// (JPY, KRW, …), three (KWD, BHD, …) or four (CLF, UYW).
    pub fn exponent(&self) -> u32 {
        // `parse` only keeps codes that have one.
        self.0.exponent().map_or(2, u32::from)
    }

    /// `12.50` in this currency as minor units (`1250`), exactly: no float.
    /// At most the currency's decimal places; a sign and thousands
    /// separators are not accepted (reports that use them say so, and their
    /// parser removes them first).
    pub fn parse_decimal(&self, text: &str) -> Result<i64, DecimalError> {
        let t = text.trim();
        let (neg, t) = match t.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        let exp = self.exponent() as usize;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(int) || (!frac.is_empty() && !digits(frac)) || t.ends_with('.') {
            return Err(DecimalError::NotDecimal(text.to_string()));
        }
        if frac.len() > exp {
            return Err(DecimalError::Places {
                text: text.to_string(),
                places: exp,
                currency: self.as_str().to_string(),
            });
        }
        let scale = 10_i64.pow(exp as u32);
        let whole: i64 = int
            .parse()
            .map_err(|_| DecimalError::TooLarge(text.to_string()))?;
        let part: i64 = if frac.is_empty() {
            0
        } else {
            format!("{frac:0<exp$}")
                .parse()
                .map_err(|_| DecimalError::NotDecimal(text.to_string()))?
        };
        let minor = whole
            .checked_mul(scale)
            .and_then(|w| w.checked_add(part))
            .ok_or_else(|| DecimalError::TooLarge(text.to_string()))?;
        Ok(if neg { -minor } else { minor })
    }
}

/// Why a decimal amount cannot be read exactly in its currency.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    #[error("`{0}` is not a decimal amount")]
    NotDecimal(String),
    #[error("`{text}` has more than {places} decimal places for {currency}")]
    Places {
        text: String,
        places: usize,
        currency: String,
    },
    #[error("`{0}` is too large")]
    TooLarge(String),
}

/// An amount in integer minor units (cents), never a float.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Amount {
    pub minor: i64,
    pub currency: Currency,
}

impl Amount {
    /// The largest amount finality takes, in minor units: 2^53 − 1, the
    /// largest integer a JSON reader holding numbers as doubles (every
    /// JavaScript consumer of the events) reads exactly. Far above what any
    /// provider accepts; each adapter checks its own, lower bound.
    pub const MAX_MINOR: i64 = 9_007_199_254_740_991;

    pub fn new(minor: i64, currency: Currency) -> Result<Self, FieldError> {
        if minor <= 0 {
            return Err(FieldError::new(
                "amount",
                "must be a positive integer number of minor units",
            ));
        }
        if minor > Self::MAX_MINOR {
            return Err(FieldError::new(
                "amount",
                format!(
                    "{minor} is above the largest amount finality takes ({} minor units)",
                    Self::MAX_MINOR
                ),
            ));
        }
        Ok(Amount { minor, currency })
    }

    /// `1250` EUR as `12.50`: the currency's own decimal places.
    pub fn decimal(&self) -> String {
        decimal(self.minor, self.currency.exponent())
    }
}

/// `minor` units of the currency `code` written out, as [`Amount::decimal`]
/// (two places for a code `parse` does not know: shown, never checked).
pub fn decimal_in(minor: i64, code: &str) -> String {
    decimal(minor, Currency::parse(code).map_or(2, |c| c.exponent()))
}

/// `minor` units with `exponent` decimal places, exactly (no float).
pub fn decimal(minor: i64, exponent: u32) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let abs = minor.unsigned_abs();
    if exponent == 0 {
        return format!("{sign}{abs}");
    }
    let unit = 10u64.pow(exponent);
    format!(
        "{sign}{}.{:0width$}",
        abs / unit,
        abs % unit,
        width = exponent as usize
    )
}

/// Free text a person or a client writes (a resolve's `reason` and `note`,
/// an actor's name): at most `max` characters, so one request cannot store
/// a megabyte on a payment's history and in every audit record and event.
pub fn bounded_text(field: &'static str, v: &str, max: usize) -> Result<(), FieldError> {
    let n = v.chars().count();
    if n > max {
        return Err(FieldError::new(
            field,
            format!("is {n} characters long; at most {max}"),
        ));
    }
    Ok(())
}

/// Limits on what callers write, with their defaults documented in
/// `docs/SECURITY.md`.
pub mod limits {
    /// A resolve's `reason` (kept on the history row and in events).
    pub const REASON_CHARS: usize = 500;
    /// A resolve's `note` (kept in the audit record).
    pub const NOTE_CHARS: usize = 2_000;
    /// An `actor` named in a body (the shared token only).
    pub const ACTOR_CHARS: usize = 100;
    /// A payment's `metadata`, as compact JSON.
    pub const METADATA_BYTES: usize = 16_384;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_amounts_in_minor_units() {
        let usd = Currency::parse("USD").unwrap();
        let jpy = Currency::parse("JPY").unwrap();
        let kwd = Currency::parse("KWD").unwrap();
        assert_eq!(usd.parse_decimal("12.50"), Ok(1250));
        assert_eq!(usd.parse_decimal("12.5"), Ok(1250));
        assert_eq!(usd.parse_decimal("12"), Ok(1200));
        assert_eq!(usd.parse_decimal("-0.05"), Ok(-5));
        assert_eq!(jpy.parse_decimal("1250"), Ok(1250));
        assert!(jpy.parse_decimal("12.5").is_err());
        assert_eq!(kwd.parse_decimal("1.250"), Ok(1250));
        assert!(usd.parse_decimal("1.234").is_err());
        for bad in [
            "",
            "-",
            ".5",
            "1.",
            "1,000.00",
            "abc",
            "1e3",
            "99999999999999999999",
        ] {
            assert!(usd.parse_decimal(bad).is_err(), "{bad}");
        }
    }

    /// Minor units from ISO 4217's table, as each currency's amounts are
    /// written (e.g. ¥1250, 1.250 KWD, 12.50 €, 1.2345 CLF).
    #[test]
    fn exponents_and_display_follow_iso_4217() {
        for (code, minor, text) in [
            ("JPY", 1250, "1250"),
            ("KRW", 1250, "1250"),
            ("KWD", 1250, "1.250"),
            ("BHD", 5, "0.005"),
            ("EUR", 1250, "12.50"),
            ("USD", 7, "0.07"),
            ("CLF", 12345, "1.2345"),
        ] {
            let c = Currency::parse(code).unwrap();
            let a = Amount::new(minor, c).unwrap();
            assert_eq!(a.decimal(), text, "{code}");
            assert_eq!(c.parse_decimal(text), Ok(minor), "{code}");
        }
        assert_eq!(decimal(-1250, 2), "-12.50");
    }

    proptest::proptest! {
        #[test]
        fn minor_units_round_trip(minor in -10_000_000_000i64..10_000_000_000) {
            let usd = Currency::parse("USD").unwrap();
            let text = format!("{}{}.{:02}", if minor < 0 { "-" } else { "" }, minor.abs() / 100, minor.abs() % 100);
            proptest::prop_assert_eq!(usd.parse_decimal(&text), Ok(minor));
        }
    }

    #[test]
    fn rejects_bad_fields_by_name() {
        assert_eq!(Currency::parse("usd").unwrap_err().field, "currency");
        assert_eq!(Currency::parse("USDT").unwrap_err().field, "currency");
        assert_eq!(
            Currency::parse("KHR").map(|c| c.as_str().to_string()),
            Ok("KHR".into())
        );
        let usd = Currency::parse("USD").unwrap();
        assert_eq!(Amount::new(-5, usd).unwrap_err().field, "amount");
        // Three letters are not a currency; a code without a minor unit
        // takes no amount in minor units.
        for bad in ["ABC", "ZZZ", "XAU", "XTS", "XXX", "US", "EURO", ""] {
            let e = Currency::parse(bad).unwrap_err();
            assert_eq!(e.field, "currency", "{bad}");
            assert!(e.message.contains("ISO 4217"), "{bad}: {e}");
        }
        let e = Amount::new(i64::MAX, usd).unwrap_err();
        assert!(e.message.contains("largest amount"), "{e}");
        assert!(Amount::new(Amount::MAX_MINOR, usd).is_ok());
        assert_eq!(PaymentId::parse("a b").unwrap_err().field, "id");
        assert_eq!(ProviderRef::parse("").unwrap_err().field, "provider_ref");
        assert_eq!(MerchantRef::parse("a b").unwrap_err().field, "merchant_ref");
    }
}
