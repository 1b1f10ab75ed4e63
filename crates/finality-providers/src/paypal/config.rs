//! `[providers.NAME.paypal]`: which PayPal object a payment is, and how
//! webhooks are verified.

/// What a PayPal payment's id names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentObject {
    /// Checkout orders (`/v2/checkout/orders/{id}`): no search exists.
    #[default]
    Orders,
    /// Captures (`/v2/payments/captures/{id}`): findable by invoice id.
    Captures,
}

/// `[providers.NAME.paypal]`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PayPalConfig {
    #[serde(default)]
    pub payments: PaymentObject,
    /// Verification calls to PayPal a second, at most (each webhook that
    /// passes the local checks costs one, on the merchant's rate limit);
    /// webhooks over it are answered 429 and PayPal delivers them again.
    /// `None`: [`super::VERIFY_PER_SECOND`]; 0 is taken as 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_per_second: Option<u32>,
}
