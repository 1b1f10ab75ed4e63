//! PayPal: what is checked before asking PayPal (transmission time,
//! certificate URL), and the event parser for a verified body. PayPal's
//! own verification is its answer to a call, not a parser here.
#![no_main]
use finality_fuzz::{headers, Input, NOW};
use finality_providers::paypal::{parse_event, precheck, PaymentObject};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::of(data) else { return };
    let (h, body) = match input {
        Input::Signed(body) => (
            headers(&[
                (
                    "paypal-transmission-time",
                    "2026-01-01T00:00:00Z".to_string(),
                ),
                (
                    "paypal-cert-url",
                    "https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77"
                        .to_string(),
                ),
                (
                    "paypal-transmission-id",
                    "69cd13f0-d67a-11e5-baa3-778b53f4ae55".to_string(),
                ),
                (
                    "paypal-transmission-sig",
                    "bm90IGEgc2lnbmF0dXJl".to_string(),
                ),
                ("paypal-auth-algo", "SHA256withRSA".to_string()),
            ]),
            body,
        ),
        Input::Raw(h, body) => (h, body),
    };
    let _ = precheck(&h, NOW, Duration::from_secs(300));
    let _ = parse_event(body, PaymentObject::Orders);
    let _ = parse_event(body, PaymentObject::Captures);
});
