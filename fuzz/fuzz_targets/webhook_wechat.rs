//! WeChat Pay v3: the platform's RSA signature over the headers and body,
//! the AES-256-GCM resource behind it, and the transaction and refund
//! parsers behind that. In signed mode the input (after a byte choosing
//! transaction or refund) is the resource's plaintext, which the target
//! encrypts under the APIv3 key and signs with the fuzz key (fuzz/keys/),
//! whose public half the adapter holds as the platform's.
#![no_main]
use finality_fuzz::{block_on, headers, Input, NOW};
use finality_providers::wechat::{WeChatAdapter, WeChatConfig};
use finality_providers::Provider;
use finality_sim::schemes::{rsa_sign, wechat_encrypt};
use finality_sim::wire::wechat_keys;
use libfuzzer_sys::fuzz_target;
use rsa::pkcs8::DecodePrivateKey;
use std::sync::OnceLock;
use std::time::Duration;

const SERIAL: &str = "PUB_KEY_ID_SIMULATED";

fn adapter() -> &'static WeChatAdapter {
    static A: OnceLock<WeChatAdapter> = OnceLock::new();
    A.get_or_init(|| {
        let cfg = WeChatConfig {
            mchid: wechat_keys::MCHID.into(),
            serial_no: wechat_keys::SERIAL_NO.into(),
            private_key_env: "-".into(),
            platform_public_key_env: "-".into(),
            platform_serial: Some(SERIAL.into()),
            platform_keys: Default::default(),
            api_v3_key_env: "-".into(),
            appid: None,
            sub_mchid: None,
        };
        let timeouts = finality_providers::http::Timeouts {
            connect: Duration::from_millis(1),
            total: Duration::from_millis(1),
        };
        WeChatAdapter::new(
            "http://127.0.0.1:9",
            &cfg,
            wechat_keys::MERCHANT_PRIVATE_PEM,
            include_str!("../keys/fuzz_rsa1024_public.pem"),
            wechat_keys::API_V3_KEY,
            timeouts,
            Duration::from_secs(300),
        )
        .expect("the keys load")
    })
}

fn platform_key() -> &'static rsa::RsaPrivateKey {
    static K: OnceLock<rsa::RsaPrivateKey> = OnceLock::new();
    K.get_or_init(|| {
        rsa::RsaPrivateKey::from_pkcs8_pem(include_str!("../keys/fuzz_rsa1024_private.pem"))
            .expect("key")
    })
}

/// The notification carrying `plaintext` as its resource, with headers.
fn signed(kind_byte: u8, plaintext: &[u8]) -> (reqwest::header::HeaderMap, Vec<u8>) {
    let kind = if kind_byte % 2 == 0 {
        "transaction"
    } else {
        "refund"
    };
    let event = if kind == "refund" {
        "REFUND.SUCCESS"
    } else {
        "TRANSACTION.SUCCESS"
    };
    let key: &[u8; 32] = wechat_keys::API_V3_KEY
        .as_bytes()
        .try_into()
        .expect("32 bytes");
    let nonce = "fuzznonce012";
    let ciphertext = wechat_encrypt(key, nonce, kind, plaintext);
    let body = serde_json::json!({"id": "EV-fuzz", "create_time": "2026-01-01T08:00:00+08:00",
        "resource_type": "encrypt-resource", "event_type": event, "summary": "fuzz",
        "resource": {"original_type": kind, "algorithm": "AEAD_AES_256_GCM",
                     "ciphertext": ciphertext, "associated_data": kind, "nonce": nonce}})
    .to_string();
    let ts = NOW.0 / 1000;
    let sig = rsa_sign(platform_key(), &format!("{ts}\nfuzz\n{body}\n"));
    let h = headers(&[
        ("wechatpay-timestamp", ts.to_string()),
        ("wechatpay-nonce", "fuzz".to_string()),
        ("wechatpay-signature", sig),
        ("wechatpay-serial", SERIAL.to_string()),
    ]);
    (h, body.into_bytes())
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::of(data) else { return };
    let (h, body) = match input {
        Input::Signed(rest) => match rest.split_first() {
            Some((&k, plaintext)) => signed(k, plaintext),
            None => return,
        },
        Input::Raw(h, body) => (h, body.to_vec()),
    };
    let _ = block_on(adapter().verify_webhook(&h, &body, NOW));
    let _ = adapter().peek_ref(&body);
    let _ = adapter().webhook_account(&body);
});
