//! Alipay: the RSA2 signature over a notification's sorted parameters, and
//! the notification parser behind it. In signed mode the input is a form
//! body whose parameters the target signs (with the fuzz key, fuzz/keys/,
//! whose public half the adapter holds as Alipay's).
#![no_main]
use finality_fuzz::{block_on, Input, NOW};
use finality_providers::alipay::{AlipayAdapter, AlipayConfig};
use finality_providers::Provider;
use finality_sim::schemes::{alipay_content, rsa_sign};
use finality_sim::wire::{wechat_keys, ALIPAY_APP_ID};
use libfuzzer_sys::fuzz_target;
use reqwest::header::HeaderMap;
use rsa::pkcs8::DecodePrivateKey;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

fn adapter() -> &'static AlipayAdapter {
    static A: OnceLock<AlipayAdapter> = OnceLock::new();
    A.get_or_init(|| {
        let cfg = AlipayConfig {
            app_id: ALIPAY_APP_ID.into(),
            private_key_env: "-".into(),
            alipay_public_key_env: "-".into(),
            seller_id: None,
            app_auth_token_env: None,
        };
        let timeouts = finality_providers::http::Timeouts {
            connect: Duration::from_millis(1),
            total: Duration::from_millis(1),
        };
        AlipayAdapter::new(
            "http://127.0.0.1:9/gateway.do",
            &cfg,
            wechat_keys::MERCHANT_PRIVATE_PEM,
            include_str!("../keys/fuzz_rsa1024_public.pem"),
            timeouts,
        )
        .expect("the keys load")
    })
}

fn key() -> &'static rsa::RsaPrivateKey {
    static K: OnceLock<rsa::RsaPrivateKey> = OnceLock::new();
    K.get_or_init(|| {
        rsa::RsaPrivateKey::from_pkcs8_pem(include_str!("../keys/fuzz_rsa1024_private.pem"))
            .expect("key")
    })
}

/// The form's parameters signed as Alipay signs a notification.
fn signed(form: &[u8]) -> Vec<u8> {
    let mut p: BTreeMap<String, String> = url::form_urlencoded::parse(form)
        .into_owned()
        .filter(|(k, _)| k != "sign")
        .collect();
    p.entry("sign_type".into()).or_insert_with(|| "RSA2".into());
    let sig = rsa_sign(key(), &alipay_content(&p, true));
    p.insert("sign".into(), sig);
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(p.iter())
        .finish()
        .into_bytes()
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::of(data) else { return };
    let (h, body) = match input {
        Input::Signed(form) => (HeaderMap::new(), signed(form)),
        Input::Raw(h, body) => (h, body.to_vec()),
    };
    let _ = block_on(adapter().verify_webhook(&h, &body, NOW));
    let _ = adapter().peek_ref(&body);
    let _ = adapter().webhook_account(&body);
});
