//! What a caller sends: a registration read and checked field by field
//! (each refusal a 422 naming its field), and query limits.

use crate::{ApiError, AppState};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use finality_core::money::{limits, Amount, Currency, MerchantRef, PaymentId, ProviderRef};
use finality_core::Kind;
use finality_store::{NewPayment, Payment};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// Parse a JSON body, naming the field at fault in every error.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let body = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(1024 * 1024),
        _ => ApiError::Malformed(e.body_text()),
    })?;
    let de = &mut serde_json::Deserializer::from_slice(&body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ApiError::Malformed(format!("request body is not valid JSON: {inner}"))
        } else if path == "." {
            let msg = inner.to_string();
            // "unknown field `x`" / "missing field `x`": name it as the field.
            let field = msg.split('`').nth(1).unwrap_or("body").to_string();
            ApiError::invalid(field, msg)
        } else {
            ApiError::invalid(path, inner.to_string())
        }
    })
}

/// `limit` from a query string: `default` when absent, else 1..=`max`.
pub(crate) fn parse_limit(raw: Option<String>, default: u32, max: u32) -> Result<u32, ApiError> {
    match raw {
        None => Ok(default),
        Some(l) => l
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| {
                ApiError::invalid("limit", format!("`{l}` is not an integer from 1 to {max}"))
            }),
    }
}

pub(crate) fn required<T>(v: Option<T>, field: &'static str) -> Result<T, ApiError> {
    v.ok_or_else(|| ApiError::invalid(field, format!("missing field `{field}`")))
}

/// `POST /v1/payments` body. Fields are optional here so that a missing one
/// is reported by name, with the same shape as every other field error.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PaymentIn {
    /// Your id for it: 1 to 255 printable ASCII characters, no spaces or `/`.
    #[schema(required = true, value_type = String)]
    pub(crate) id: Option<String>,
    /// A configured provider's name.
    #[schema(required = true, value_type = String)]
    pub(crate) provider: Option<String>,
    /// The provider's id; give `merchant_ref` instead when it is not known
    /// (the create call timed out).
    pub(crate) provider_ref: Option<String>,
    pub(crate) merchant_ref: Option<String>,
    /// One of the provider's accounts (a Stripe connected account `acct_…`,
    /// an Adyen merchant account, an Alipay app id): the payment is polled
    /// as that account. Absent: the provider's own.
    pub(crate) account: Option<String>,
    /// `payment` (default), `refund` or `payout`.
    #[schema(value_type = Option<Kind>)]
    pub(crate) kind: Option<String>,
    /// Minor units of the currency (cents; yen for JPY), positive, at most
    /// 2^53 − 1 and what the provider takes.
    #[schema(required = true, value_type = i64, minimum = 1, maximum = 9_007_199_254_740_991_i64)]
    pub(crate) amount: Option<i64>,
    /// An ISO 4217 code with a minor unit, upper case.
    #[schema(required = true, value_type = String)]
    pub(crate) currency: Option<String>,
    /// Your own keys and values, kept on the payment and returned (at
    /// most 16,384 bytes as compact JSON).
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Value>,
}

impl PaymentIn {
    pub(crate) fn into_domain(self, app: &AppState) -> Result<NewPayment, ApiError> {
        let id = PaymentId::parse(&required(self.id, "id")?)?;
        let provider = required(self.provider, "provider")?;
        if !app.providers.contains_key(&provider) {
            let mut known: Vec<&str> = app.providers.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(ApiError::invalid(
                "provider",
                format!(
                    "unknown provider `{provider}` (configured: {})",
                    known.join(", ")
                ),
            ));
        }
        let provider_ref = self
            .provider_ref
            .as_deref()
            .map(ProviderRef::parse)
            .transpose()?;
        let merchant_ref = self
            .merchant_ref
            .as_deref()
            .map(MerchantRef::parse)
            .transpose()?;
        if provider_ref.is_none() && merchant_ref.is_none() {
            return Err(ApiError::invalid(
                "provider_ref",
                "missing field `provider_ref` (give `merchant_ref` instead when the provider's \
                 id is not known, e.g. the create call timed out)",
            ));
        }
        let account = match self.account {
            None => None,
            Some(a) => {
                let accounts = &app.providers[&provider].accounts;
                match accounts.get(&a) {
                    Some(known) if known.disabled => {
                        return Err(ApiError::invalid(
                            "account",
                            format!("account `{a}` of provider `{provider}` is disabled"),
                        ))
                    }
                    Some(_) => Some(a),
                    None => {
                        return Err(ApiError::invalid(
                            "account",
                            format!(
                                "unknown account `{a}` of provider `{provider}` ({} configured; \
                                 add it with POST /v1/accounts or `finality accounts add`)",
                                accounts.all().len()
                            ),
                        ))
                    }
                }
            }
        };
        let kind = match self.kind {
            None => Kind::Payment,
            Some(k) => k
                .parse::<Kind>()
                .map_err(|e| ApiError::invalid("kind", e.to_string()))?,
        };
        if let Some(r) = &provider_ref {
            // Each adapter knows which ids it can ask about for which kind
            // (a Stripe `po_` is a payout): refused now, not after a week of
            // polls at the wrong endpoint.
            app.providers[&provider]
                .adapter
                .check_ref(kind, r.as_str())
                .map_err(|e| ApiError::invalid("provider_ref", e))?;
        }
        let currency = Currency::parse(&required(self.currency, "currency")?)?;
        let amount = Amount::new(required(self.amount, "amount")?, currency)?;
        app.providers[&provider]
            .adapter
            .check_amount(&amount)
            .map_err(|e| ApiError::invalid("amount", e))?;
        let metadata = match self.metadata {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err(ApiError::invalid("metadata", "must be a JSON object")),
        };
        // Stored on the payment and carried by its events: bounded, so one
        // registration cannot store megabytes a hundred times over.
        let size = metadata.to_string().len();
        if size > limits::METADATA_BYTES {
            return Err(ApiError::invalid(
                "metadata",
                format!(
                    "is {size} bytes as JSON; at most {}",
                    limits::METADATA_BYTES
                ),
            ));
        }
        Ok(NewPayment {
            id,
            provider,
            provider_ref,
            merchant_ref,
            account,
            kind,
            amount,
            metadata,
        })
    }
}

/// Name the fields in which a repeated registration differs.
pub(crate) fn differences(existing: &Payment, p: &NewPayment) -> String {
    let mut d = Vec::new();
    if existing.provider != p.provider {
        d.push("provider");
    }
    if let Some(r) = &p.provider_ref {
        if existing.provider_ref.as_deref() != Some(r.as_str()) {
            d.push("provider_ref");
        }
    }
    if existing.merchant_ref.as_deref() != p.merchant_ref.as_ref().map(MerchantRef::as_str) {
        d.push("merchant_ref");
    }
    if existing.account != p.account {
        d.push("account");
    }
    if existing.kind != p.kind {
        d.push("kind");
    }
    if existing.amount != p.amount.minor {
        d.push("amount");
    }
    if existing.currency != p.amount.currency.as_str() {
        d.push("currency");
    }
    if existing.metadata != p.metadata {
        d.push("metadata");
    }
    d.join(", ")
}
