//! Adyen: the HMAC signature inside each notification item, and the
//! notification parser behind it.
#![no_main]
use finality_fuzz::{block_on, Input, NOW};
use finality_providers::adyen::{sign, AdyenAdapter};
use finality_providers::Provider;
use libfuzzer_sys::fuzz_target;
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::sync::OnceLock;

/// Adyen's own test key (the Java SDK's HMAC validation test).
const KEY: &str = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

fn adapter() -> &'static AdyenAdapter {
    static A: OnceLock<AdyenAdapter> = OnceLock::new();
    A.get_or_init(|| AdyenAdapter::new(&[KEY.into()]).expect("key"))
}

/// Each item signed as Adyen would sign it; a body that is not a
/// notification is left as it is.
fn signed(body: &[u8]) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(body) else {
        return body.to_vec();
    };
    let key = hex::decode(KEY).expect("hex key");
    if let Some(items) = v.get_mut("notificationItems").and_then(Value::as_array_mut) {
        for item in items {
            if let Some(i) = item.get_mut("NotificationRequestItem") {
                let sig = sign(&key, i);
                if let Some(obj) = i.as_object_mut() {
                    let extra = obj
                        .entry("additionalData")
                        .or_insert_with(|| Value::Object(Default::default()));
                    if let Some(extra) = extra.as_object_mut() {
                        extra.insert("hmacSignature".into(), Value::String(sig));
                    }
                }
            }
        }
    }
    serde_json::to_vec(&v).unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::of(data) else { return };
    let (h, body) = match input {
        Input::Signed(body) => (HeaderMap::new(), signed(body)),
        Input::Raw(h, body) => (h, body.to_vec()),
    };
    let _ = block_on(adapter().verify_webhook(&h, &body, NOW));
    let _ = adapter().peek_ref(&body);
    let _ = adapter().body_live(&body);
    let _ = adapter().webhook_account(&body);
});
