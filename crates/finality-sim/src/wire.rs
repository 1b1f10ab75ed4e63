//! Provider wire formats: how one simulated payment looks in each provider's
//! own vocabulary, so every adapter is tested over HTTP against the words
//! and shapes it will meet in production.
//!
//! The simulator's own words (`pending`, `processing`, `succeeded`,
//! `failed`, `canceled`) are the model; each format renders them.

use serde_json::{json, Value};

/// What a simulated payment is for, as each provider writes it: every
/// answer and notification names the payment's own amount and currency
/// (real providers do, and finality compares them with the registration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Money<'a> {
    /// Minor units.
    pub amount: i64,
    /// ISO 4217, upper case.
    pub currency: &'a str,
}

impl<'a> Money<'a> {
    /// For a payment the simulator does not know (its answer names no
    /// money).
    pub const NONE: Money<'static> = Money {
        amount: 0,
        currency: "EUR",
    };

    pub fn of(plan: &'a crate::plan::PaymentPlan) -> Self {
        Money {
            amount: plan.amount,
            currency: &plan.currency,
        }
    }

    /// `12.50`: a decimal in major units (PayPal, Alipay).
    pub fn decimal(&self) -> String {
        finality_core::money::decimal_in(self.amount, self.currency)
    }

    /// `12.5` as a JSON number in major units (Bakong).
    pub fn major_number(&self) -> Value {
        let text = self.decimal();
        serde_json::from_str::<serde_json::Number>(&text)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

/// The webhook signature scheme (and body shape) deliveries use.
#[derive(Clone)]
pub enum WireFormat {
    /// Standard Webhooks, the simulator's own body (`{"type", "data"}`);
    /// the key is the decoded `whsec_` secret.
    Standard { key: Vec<u8> },
    /// Stripe events signed with `Stripe-Signature` (the secret's bytes).
    Stripe { secret: String },
    /// Adyen notification batches, each item HMAC-signed with `key`
    /// (hex-decoded).
    Adyen {
        key: Vec<u8>,
        merchant_account: String,
    },
    /// "Acme", a made-up provider for the generic adapter: its own JSON,
    /// `X-Acme-Signature: sha256=<hex HMAC-SHA256 of the body>`.
    Acme { secret: String },
    /// PayPal events with `paypal-transmission-*` headers, which only the
    /// simulator's verify endpoint can check (as only PayPal can).
    PayPal { webhook_id: String },
    /// WeChat Pay v3 notifications: signed with the platform key, the
    /// transaction encrypted under `api_v3_key`.
    WeChat { api_v3_key: [u8; 32] },
    /// Alipay asynchronous notifications (forms signed with Alipay's key).
    Alipay,
}

/// A Stripe PaymentIntent's status for a simulator status word. A declined
/// payment is not final at Stripe: it goes back to
/// `requires_payment_method` with a `last_payment_error`.
pub fn stripe_payment_intent(sim_status: &str) -> (&'static str, Option<Value>) {
    match sim_status {
        "pending" => ("requires_action", None),
        "processing" => ("processing", None),
        "succeeded" => ("succeeded", None),
        "canceled" => ("canceled", None),
        "failed" => (
            "requires_payment_method",
            Some(json!({"code": "card_declined", "type": "card_error"})),
        ),
        _ => ("processing", None),
    }
}

/// A Stripe Refund's status for a simulator status word.
pub fn stripe_refund(sim_status: &str) -> &'static str {
    match sim_status {
        "succeeded" => "succeeded",
        "failed" => "failed",
        "canceled" => "canceled",
        _ => "pending",
    }
}

/// The Stripe object for a payment: a refund when its id starts `re_`.
/// A test-mode Stripe's: `"livemode": false`, as its events say.
pub fn stripe_object(id: &str, sim_status: &str, m: Money<'_>) -> Value {
    let currency = m.currency.to_ascii_lowercase();
    if id.starts_with("po_") {
        let status = match sim_status {
            "succeeded" => "paid",
            "processing" => "in_transit",
            "failed" => "failed",
            "canceled" => "canceled",
            _ => "pending",
        };
        return json!({"id": id, "object": "payout", "status": status,
                      "amount": m.amount, "currency": currency, "livemode": false});
    }
    if id.starts_with("re_") {
        json!({"id": id, "object": "refund", "status": stripe_refund(sim_status),
               "amount": m.amount, "currency": currency, "livemode": false})
    } else {
        let (status, err) = stripe_payment_intent(sim_status);
        let received = if status == "succeeded" { m.amount } else { 0 };
        json!({"id": id, "object": "payment_intent", "status": status,
               "amount": m.amount, "amount_received": received, "currency": currency,
               "last_payment_error": err, "livemode": false})
    }
}

/// A Stripe event (`payment_intent.succeeded`, `refund.updated`, …).
pub fn stripe_event(
    event_id: &str,
    created_s: i64,
    id: &str,
    merchant_ref: Option<&str>,
    sim_status: &str,
    m: Money<'_>,
) -> Value {
    let mut object = stripe_object(id, sim_status, m);
    if let Some(m) = merchant_ref {
        object["metadata"] = json!({ "merchant_ref": m });
    }
    let kind = if id.starts_with("re_") {
        "refund.updated".to_string()
    } else {
        match object["status"].as_str().unwrap_or_default() {
            "requires_payment_method" => "payment_intent.payment_failed".into(),
            "requires_action" => "payment_intent.requires_action".into(),
            s => format!("payment_intent.{s}"),
        }
    };
    json!({"id": event_id, "object": "event", "created": created_s, "type": kind,
           "livemode": false, "data": {"object": object}})
}

/// An Adyen notification batch of one item for a simulator status word, or
/// `None` when Adyen would send nothing (it has no "processing" event).
pub fn adyen_notification(
    key: &[u8],
    merchant_account: &str,
    id: &str,
    merchant_ref: Option<&str>,
    sim_status: &str,
    m: Money<'_>,
) -> Option<Value> {
    let merchant_ref = merchant_ref.map_or_else(|| format!("order-{id}"), String::from);
    let (code, success, psp, original) = match sim_status {
        "succeeded" => ("AUTHORISATION", true, id.to_string(), String::new()),
        "failed" => ("AUTHORISATION", false, id.to_string(), String::new()),
        "canceled" => ("CANCELLATION", true, format!("{id}C"), id.to_string()),
        _ => return None,
    };
    let item = adyen_item(
        key,
        merchant_account,
        AdyenItem {
            psp: &psp,
            original: &original,
            merchant_ref: &merchant_ref,
            code,
            success,
            money: m,
        },
    );
    Some(json!({"live": "false", "notificationItems": [{"NotificationRequestItem": item}]}))
}

/// The PayPal account the simulator's settlement reports are of.
pub const PAYPAL_REPORT_ACCOUNT: &str = "SIMPAYPAL0001";

/// The merchant account the simulator's Adyen reports are made for.
pub const ADYEN_REPORT_MERCHANT: &str = "SimMerchant";

/// A signed `REPORT_AVAILABLE` notification, shaped as Adyen's own example
/// (docs.adyen.com/reporting/automatically-get-reports): the file's name in
/// `pspReference`, its download URL in `reason`, a zero EUR amount.
pub fn adyen_report_available(key: &[u8], merchant_account: &str, name: &str, url: &str) -> Value {
    let mut item = json!({
        "amount": {"currency": "EUR", "value": 0},
        "eventCode": "REPORT_AVAILABLE", "eventDate": "2026-12-04T10:03:08+02:00",
        "merchantAccountCode": merchant_account, "merchantReference": "",
        "pspReference": name, "reason": url, "success": "true", "additionalData": {}
    });
    item["additionalData"]["hmacSignature"] = json!(crate::schemes::adyen_hmac(key, &item));
    json!({"live": "false", "notificationItems": [{"NotificationRequestItem": item}]})
}

/// What one Adyen `NotificationRequestItem` says: its references, event
/// code, outcome and money.
#[derive(Debug, Clone, Copy)]
pub struct AdyenItem<'a> {
    pub psp: &'a str,
    pub original: &'a str,
    pub merchant_ref: &'a str,
    pub code: &'a str,
    pub success: bool,
    pub money: Money<'a>,
}

/// One signed Adyen `NotificationRequestItem`, any event code.
pub fn adyen_item(key: &[u8], merchant_account: &str, i: AdyenItem<'_>) -> Value {
    let success = if i.success { "true" } else { "false" };
    let mut item = json!({
        "pspReference": i.psp, "originalReference": i.original,
        "merchantAccountCode": merchant_account, "merchantReference": i.merchant_ref,
        "amount": {"value": i.money.amount, "currency": i.money.currency},
        "eventCode": i.code, "success": success,
        "eventDate": "2026-11-30T12:00:00+00:00", "reason": "", "additionalData": {}
    });
    item["additionalData"]["hmacSignature"] = json!(crate::schemes::adyen_hmac(key, &item));
    item
}

/// "Acme"'s words for a simulator status word.
pub fn acme_state(sim_status: &str) -> &'static str {
    match sim_status {
        "pending" => "CREATED",
        "processing" => "IN_PROGRESS",
        "succeeded" => "COMPLETED",
        "failed" => "REJECTED",
        "canceled" => "CANCELLED",
        _ => "IN_PROGRESS",
    }
}

/// An "Acme" transfer as its status API returns it.
pub fn acme_transfer(id: &str, sim_status: &str, m: Money<'_>) -> Value {
    json!({"data": {"id": id, "state": acme_state(sim_status), "amount": m.decimal(),
                    "currency": m.currency}})
}

/// An "Acme" webhook (its transfer as the API answers) and its `X-Acme-Signature`.
pub fn acme_webhook(secret: &str, ev: &str, id: &str, st: &str, m: Money) -> (String, String) {
    use hmac::{Hmac, Mac};
    let body = json!({"id": ev, "type": "transfer.updated",
                      "data": acme_transfer(id, st, m)["data"]})
    .to_string();
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(body.as_bytes());
    (
        body,
        format!("sha256={}", hex::encode(mac.finalize().into_bytes())),
    )
}

/// A Bakong transaction hash for a simulated payment (64 hex characters).
pub fn bakong_hash(id: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(id.as_bytes()))
}

/// Bakong's answer to a single check for a simulator status word.
pub fn bakong_single(id: &str, sim_status: &str, m: Money<'_>) -> Value {
    match sim_status {
        "succeeded" => {
            json!({"responseCode": 0, "responseMessage": "Getting transaction successfully.",
            "errorCode": null, "data": {"hash": bakong_hash(id), "fromAccountId": "payer@aclb",
            "toAccountId": "merchant@abaa", "currency": m.currency, "amount": m.major_number(),
            "description": "", "createdDateMs": 0, "acknowledgedDateMs": 0}})
        }
        "failed" => json!({"responseCode": 1, "responseMessage": "Transaction failed.",
            "errorCode": 3, "data": null}),
        _ => json!({"responseCode": 1,
            "responseMessage": "Transaction could not be found. Please check and try again.",
            "errorCode": 1, "data": null}),
    }
}

/// One item of Bakong's answer to an MD5 list check.
pub fn bakong_list_item(md5: &str, sim_status: Option<&str>, m: Money<'_>) -> Value {
    match sim_status {
        Some("succeeded") => {
            json!({"md5": md5, "status": "SUCCESS", "message": "Getting transaction successfully.",
            "data": {"hash": bakong_hash(md5), "currency": m.currency, "amount": m.major_number()}})
        }
        Some("failed") => {
            json!({"md5": md5, "status": "FAILED", "message": "Transaction failed.", "data": null})
        }
        _ => {
            json!({"md5": md5, "status": "NOT_FOUND", "message": "Transaction could not be found.", "data": null})
        }
    }
}

/// The simulated PayPal's own signing key: only its verify endpoint knows it.
const PAYPAL_SIGNING_KEY: &[u8] = b"finality-simulated-paypal-signing-key";

/// PayPal's order status for a simulator status word. A declined capture
/// leaves the order `COMPLETED` (Orders v2: the order completes when the
/// capture is attempted; the capture carries the outcome).
pub fn paypal_order(sim_status: &str) -> &'static str {
    match sim_status {
        "pending" => "CREATED",
        "processing" => "APPROVED",
        "succeeded" | "failed" => "COMPLETED",
        _ => "VOIDED",
    }
}

/// `GET /v2/checkout/orders/{id}` as PayPal answers it: a completed order
/// carries its capture under `purchase_units[].payments.captures[]`.
pub fn paypal_order_body(id: &str, sim_status: &str, m: Money<'_>) -> Value {
    let status = paypal_order(sim_status);
    let amount = paypal_amount(m);
    if status != "COMPLETED" {
        return json!({"id": id, "intent": "CAPTURE", "status": status,
                      "purchase_units": [{"reference_id": "default", "amount": amount}]});
    }
    json!({"id": id, "intent": "CAPTURE", "status": status,
    "purchase_units": [{"reference_id": "default", "amount": amount, "payments": {"captures": [
        {"id": paypal_capture_id(id), "status": paypal_capture(sim_status), "final_capture": true,
         "amount": amount}
    ]}}]})
}

/// PayPal's amount object: `{"currency_code", "value"}` in major units.
pub fn paypal_amount(m: Money<'_>) -> Value {
    json!({"currency_code": m.currency, "value": m.decimal()})
}

/// PayPal's refund status for a simulator status word.
pub fn paypal_refund(sim_status: &str) -> &'static str {
    match sim_status {
        "succeeded" => "COMPLETED",
        "failed" => "FAILED",
        "canceled" => "CANCELLED",
        _ => "PENDING",
    }
}

/// PayPal's capture status for a simulator status word.
pub fn paypal_capture(sim_status: &str) -> &'static str {
    match sim_status {
        "succeeded" => "COMPLETED",
        "failed" | "canceled" => "DECLINED",
        _ => "PENDING",
    }
}

/// Transaction Search's one-letter status for a simulator status word.
pub fn paypal_transaction_status(sim_status: &str) -> &'static str {
    match sim_status {
        "succeeded" => "S",
        "failed" | "canceled" => "D",
        _ => "P",
    }
}

/// PayPal's capture id for the simulator payment `id`.
pub fn paypal_capture_id(id: &str) -> String {
    format!("CAP{id}")
}

/// Sign a WeChat Pay answer as the platform does: the headers to add.
pub fn wechat_answer_headers(body: &str, ts: i64) -> Vec<(&'static str, String)> {
    use rsa::pkcs8::DecodePrivateKey;
    let nonce = format!("a{ts}");
    let sig = rsa::RsaPrivateKey::from_pkcs8_pem(wechat_keys::PLATFORM_PRIVATE_PEM)
        .map(|key| crate::schemes::rsa_sign(&key, &format!("{ts}\n{nonce}\n{body}\n")))
        .unwrap_or_default();
    vec![
        ("wechatpay-timestamp", ts.to_string()),
        ("wechatpay-nonce", nonce),
        ("wechatpay-signature", sig),
        ("wechatpay-serial", "PUB_KEY_ID_SIMULATED".to_string()),
    ]
}

/// An Alipay gateway answer: the response object and Alipay's RSA2 sign
/// over its exact text (the simulator's platform key stands in for Alipay's).
pub fn alipay_answer(method_key: &str, response: &Value) -> String {
    use rsa::pkcs8::DecodePrivateKey;
    let text = response.to_string();
    let sign = rsa::RsaPrivateKey::from_pkcs8_pem(wechat_keys::PLATFORM_PRIVATE_PEM)
        .map(|key| crate::schemes::rsa_sign(&key, &text))
        .unwrap_or_default();
    format!("{{\"{method_key}\":{text},\"sign\":{}}}", json!(sign))
}

/// The transmission signature the simulated PayPal puts on an event's
/// exact bytes.
pub fn paypal_signature(
    transmission_id: &str,
    time: &str,
    webhook_id: &str,
    body: &[u8],
) -> String {
    crate::schemes::paypal_transmission_sig(
        PAYPAL_SIGNING_KEY,
        transmission_id,
        time,
        webhook_id,
        body,
    )
}

/// A PayPal event for an order and its headers, or `None` for "pending".
pub fn paypal_event(
    event_id: &str,
    order_id: &str,
    invoice_id: Option<&str>,
    sim_status: &str,
    webhook_id: &str,
    time: &str,
    m: Money<'_>,
) -> Option<(String, Vec<(&'static str, String)>)> {
    let (kind, resource) = match sim_status {
        "processing" => (
            "CHECKOUT.ORDER.APPROVED",
            json!({"id": order_id, "status": "APPROVED"}),
        ),
        "succeeded" => (
            "PAYMENT.CAPTURE.COMPLETED",
            json!({"id": format!("CAP{order_id}"), "status": "COMPLETED",
                   "amount": paypal_amount(m),
                   "supplementary_data": {"related_ids": {"order_id": order_id}}}),
        ),
        "failed" => (
            "PAYMENT.CAPTURE.DENIED",
            json!({"id": format!("CAP{order_id}"), "status": "DECLINED",
                   "supplementary_data": {"related_ids": {"order_id": order_id}}}),
        ),
        "canceled" => (
            "CHECKOUT.ORDER.VOIDED",
            json!({"id": order_id, "status": "VOIDED"}),
        ),
        _ => return None,
    };
    let mut resource = resource;
    if let Some(inv) = invoice_id {
        resource["invoice_id"] = json!(inv);
    }
    Some(paypal_event_of(event_id, kind, &resource, webhook_id, time))
}

/// A PayPal event `kind` carrying `resource`, signed for `webhook_id`, with
/// its `paypal-transmission-*` headers.
pub fn paypal_event_of(
    event_id: &str,
    kind: &str,
    resource: &Value,
    webhook_id: &str,
    time: &str,
) -> (String, Vec<(&'static str, String)>) {
    // In PayPal's own key order (id, create_time, resource_type, …), not
    // sorted: a receiver that re-serialises the event before asking PayPal
    // to verify it gets FAILURE, as it would from PayPal.
    let event = format!(
        r#"{{"id":{},"create_time":{},"resource_type":"checkout-order","event_type":{},"summary":"simulated","resource":{}}}"#,
        json!(event_id),
        json!(time),
        json!(kind),
        resource
    );
    let transmission_id = format!("tx-{event_id}");
    let sig = paypal_signature(&transmission_id, time, webhook_id, event.as_bytes());
    let headers = vec![
        ("paypal-auth-algo", "SHA256withRSA".to_string()),
        (
            "paypal-cert-url",
            "https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-simulated"
                .to_string(),
        ),
        ("paypal-transmission-id", transmission_id),
        ("paypal-transmission-sig", sig),
        ("paypal-transmission-time", time.to_string()),
    ];
    (event, headers)
}

/// The simulator's throw-away WeChat Pay keys (`testdata/wechat/README.md`).
pub mod wechat_keys {
    pub const MERCHANT_PRIVATE_PEM: &str = include_str!("../testdata/wechat/merchant_private.pem");
    pub const MERCHANT_PUBLIC_PEM: &str = include_str!("../testdata/wechat/merchant_public.pem");
    pub const PLATFORM_PRIVATE_PEM: &str = include_str!("../testdata/wechat/platform_private.pem");
    pub const PLATFORM_PUBLIC_PEM: &str = include_str!("../testdata/wechat/platform_public.pem");
    /// 32 bytes, as an APIv3 key is.
    pub const API_V3_KEY: &str = "finality-sim-apiv3-key-32-bytes!";
    pub const MCHID: &str = "1900000109";
    pub const APPID: &str = "wxd678efh567hg6787";
    pub const SERIAL_NO: &str = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1";
}

/// WeChat Pay's id for the simulator payment `id`.
pub fn wechat_transaction_id(id: &str) -> String {
    format!("4200{id}")
}

/// WeChat Pay's `refund_id` for the simulator payment `id`.
pub fn wechat_refund_id(id: &str) -> String {
    format!("50{id}")
}

/// WeChat Pay's refund `status` for a simulator status word.
pub fn wechat_refund_status(sim_status: &str) -> &'static str {
    match sim_status {
        "succeeded" => "SUCCESS",
        "failed" => "ABNORMAL",
        "canceled" => "CLOSED",
        _ => "PROCESSING",
    }
}

/// The app id the simulated Alipay notifies for.
pub const ALIPAY_APP_ID: &str = "2021000000000001";

/// Alipay's `trade_no` for the simulator payment `id`.
pub fn alipay_trade_no(id: &str) -> String {
    format!("2026{id}")
}

/// WeChat Pay's `trade_state` for a simulator status word.
pub fn wechat_trade_state(sim_status: &str) -> &'static str {
    match sim_status {
        "pending" => "NOTPAY",
        "processing" => "USERPAYING",
        "succeeded" => "SUCCESS",
        "failed" => "PAYERROR",
        _ => "CLOSED",
    }
}

/// A WeChat Pay v3 notification for an order that reached `sim_status`
/// (WeChat notifies successes only), with its headers: the merchant's own,
/// or with `sub_mchid` a sub-merchant's, which the service provider
/// receives (`sp_mchid`/`sub_mchid`, `sp_appid`, as wechatpay-go's
/// `partnerpayments.Transaction`).
#[allow(clippy::too_many_arguments)] // one notification's every part, as the wire names them
pub fn wechat_notification(
    api_v3_key: &[u8; 32],
    event_id: &str,
    id: &str,
    out_trade_no: &str,
    sim_status: &str,
    ts: i64,
    m: Money<'_>,
    sub_mchid: Option<&str>,
) -> Option<(String, Vec<(&'static str, String)>)> {
    if sim_status != "succeeded" {
        return None;
    }
    let mut tx = json!({"out_trade_no": out_trade_no, "transaction_id": wechat_transaction_id(id),
                    "trade_type": "JSAPI", "trade_state": "SUCCESS", "trade_state_desc": "支付成功",
                    "amount": {"total": m.amount, "payer_total": m.amount,
                               "currency": m.currency, "payer_currency": m.currency}});
    wechat_merchant(&mut tx, sub_mchid);
    wechat_notification_of(api_v3_key, event_id, "transaction", &tx, ts)
}

/// Name the merchant in a transaction: `mchid`/`appid`, or for a
/// sub-merchant the service provider's `sp_mchid`/`sp_appid` and its
/// `sub_mchid`.
pub fn wechat_merchant(tx: &mut Value, sub_mchid: Option<&str>) {
    match sub_mchid {
        Some(sub) => {
            tx["sp_mchid"] = json!(wechat_keys::MCHID);
            tx["sp_appid"] = json!(wechat_keys::APPID);
            tx["sub_mchid"] = json!(sub);
        }
        None => {
            tx["mchid"] = json!(wechat_keys::MCHID);
            tx["appid"] = json!(wechat_keys::APPID);
        }
    }
}

/// A WeChat Pay v3 notification carrying `resource` (a transaction or a
/// refund, `kind`), encrypted under `api_v3_key` and signed by the
/// platform key, with its headers.
pub fn wechat_notification_of(
    api_v3_key: &[u8; 32],
    event_id: &str,
    kind: &str,
    resource: &Value,
    ts: i64,
) -> Option<(String, Vec<(&'static str, String)>)> {
    use rsa::pkcs8::DecodePrivateKey;
    let nonce = format!(
        "{:0>12}",
        &event_id.chars().rev().take(12).collect::<String>()
    );
    let ciphertext =
        crate::schemes::wechat_encrypt(api_v3_key, &nonce, kind, resource.to_string().as_bytes());
    let event_type = if kind == "refund" {
        "REFUND.SUCCESS"
    } else {
        "TRANSACTION.SUCCESS"
    };
    let body = json!({"id": event_id, "create_time": "2026-11-30T12:00:00+08:00",
                      "resource_type": "encrypt-resource", "event_type": event_type,
                      "summary": "支付成功",
                      "resource": {"original_type": kind, "algorithm": "AEAD_AES_256_GCM",
                                   "ciphertext": ciphertext, "associated_data": kind,
                                   "nonce": nonce}})
    .to_string();
    let header_nonce = format!("n{ts}");
    let key = rsa::RsaPrivateKey::from_pkcs8_pem(wechat_keys::PLATFORM_PRIVATE_PEM).ok()?;
    let sig = crate::schemes::rsa_sign(&key, &format!("{ts}\n{header_nonce}\n{body}\n"));
    Some((
        body,
        vec![
            ("wechatpay-timestamp", ts.to_string()),
            ("wechatpay-nonce", header_nonce),
            ("wechatpay-signature", sig),
            ("wechatpay-serial", "PUB_KEY_ID_SIMULATED".to_string()),
        ],
    ))
}

/// Alipay's `trade_status` for a simulator status word.
pub fn alipay_trade_status(sim_status: &str) -> &'static str {
    match sim_status {
        "pending" | "processing" => "WAIT_BUYER_PAY",
        "succeeded" => "TRADE_SUCCESS",
        _ => "TRADE_CLOSED",
    }
}

/// An Alipay notification form for an order that reached `sim_status`
/// (none while waiting for the buyer), signed with "Alipay's" key (the
/// simulator's platform key).
pub fn alipay_notification(
    notify_id: &str,
    id: &str,
    out_trade_no: &str,
    sim_status: &str,
    m: Money<'_>,
) -> Option<String> {
    let status = alipay_trade_status(sim_status);
    if status == "WAIT_BUYER_PAY" {
        return None;
    }
    alipay_notification_for(notify_id, id, out_trade_no, status, m, None)
}

/// An Alipay `trade_status_sync` notification form with `trade_status`,
/// signed with "Alipay's" key (the simulator's platform key). For a
/// merchant an integrator (ISV) acts for, its app in `auth_app_id` beside
/// the integrator's `app_id`, as the official Node SDK's notify fixture
/// carries both (alipay-sdk-nodejs-all `test/alipay.test.ts`).
pub fn alipay_notification_for(
    notify_id: &str,
    id: &str,
    out_trade_no: &str,
    status: &str,
    m: Money<'_>,
    auth_app_id: Option<&str>,
) -> Option<String> {
    use rsa::pkcs8::DecodePrivateKey;
    let total = m.decimal();
    let mut p = std::collections::BTreeMap::new();
    for (k, v) in [
        ("notify_time", "2026-11-30 12:00:00"),
        ("notify_type", "trade_status_sync"),
        ("notify_id", notify_id),
        ("app_id", ALIPAY_APP_ID),
        ("charset", "utf-8"),
        ("version", "1.0"),
        ("sign_type", "RSA2"),
        ("out_trade_no", out_trade_no),
        ("trade_status", status),
        ("total_amount", total.as_str()),
    ] {
        p.insert(k.to_string(), v.to_string());
    }
    p.insert("trade_no".into(), alipay_trade_no(id));
    if let Some(a) = auth_app_id {
        p.insert("auth_app_id".into(), a.to_string());
    }
    let key = rsa::RsaPrivateKey::from_pkcs8_pem(wechat_keys::PLATFORM_PRIVATE_PEM).ok()?;
    let sig = crate::schemes::rsa_sign(&key, &crate::schemes::alipay_content(&p, true));
    p.insert("sign".into(), sig);
    Some(
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(p.iter())
            .finish(),
    )
}
