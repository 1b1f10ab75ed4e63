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

/// An ISO 4217 alphabetic code: three upper-case ASCII letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency([u8; 3]);

impl Currency {
    pub fn parse(v: &str) -> Result<Self, FieldError> {
        let b = v.as_bytes();
        if b.len() != 3 || !b.iter().all(u8::is_ascii_uppercase) {
            return Err(FieldError::new(
                "currency",
                format!("`{v}` is not an ISO 4217 code (three upper-case letters, e.g. USD)"),
            ));
        }
        Ok(Currency([b[0], b[1], b[2]]))
    }
    pub fn as_str(&self) -> &str {
        // Only ever built from three ASCII letters.
        std::str::from_utf8(&self.0).unwrap_or("???")
    }

    /// Decimal places of the minor unit (ISO 4217): two for most, none or
    /// three for these few.
    pub fn exponent(&self) -> u32 {
        const ZERO: &[&str] = &[
            "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI",
            "VND", "VUV", "XAF", "XOF", "XPF",
        ];
        const THREE: &[&str] = &["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"];
        let code = self.as_str();
        if ZERO.contains(&code) {
            0
        } else if THREE.contains(&code) {
            3
        } else {
            2
        }
    }

    /// `12.50` in this currency as minor units (`1250`), exactly: no float.
    /// At most the currency's decimal places; a sign and thousands
    /// separators are not accepted (reports that use them say so, and their
    /// parser removes them first).
    pub fn parse_decimal(&self, text: &str) -> Result<i64, String> {
        let t = text.trim();
        let (neg, t) = match t.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        let exp = self.exponent() as usize;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(int) || (!frac.is_empty() && !digits(frac)) || t.ends_with('.') {
            return Err(format!("`{text}` is not a decimal amount"));
        }
        if frac.len() > exp {
            return Err(format!(
                "`{text}` has more than {exp} decimal places for {}",
                self.as_str()
            ));
        }
        let scale = 10_i64.pow(exp as u32);
        let whole: i64 = int.parse().map_err(|_| format!("`{text}` is too large"))?;
        let part: i64 = if frac.is_empty() {
            0
        } else {
            format!("{frac:0<exp$}")
                .parse()
                .map_err(|_| format!("`{text}` is not a decimal amount"))?
        };
        let minor = whole
            .checked_mul(scale)
            .and_then(|w| w.checked_add(part))
            .ok_or_else(|| format!("`{text}` is too large"))?;
        Ok(if neg { -minor } else { minor })
    }
}

/// An amount in integer minor units (cents), never a float.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Amount {
    pub minor: i64,
    pub currency: Currency,
}

impl Amount {
    pub fn new(minor: i64, currency: Currency) -> Result<Self, FieldError> {
        if minor <= 0 {
            return Err(FieldError::new(
                "amount",
                "must be a positive integer number of minor units",
            ));
        }
        Ok(Amount { minor, currency })
    }
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
        assert_eq!(PaymentId::parse("a b").unwrap_err().field, "id");
        assert_eq!(ProviderRef::parse("").unwrap_err().field, "provider_ref");
        assert_eq!(MerchantRef::parse("a b").unwrap_err().field, "merchant_ref");
    }
}
