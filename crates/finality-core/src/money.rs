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
