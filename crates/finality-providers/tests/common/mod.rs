//! What the provider tests share: the published fixtures under `testdata/`,
//! and adapters built over the SDKs' published test keys.
#![allow(dead_code)] // each test binary uses a part

use finality_core::Timestamp;
use finality_providers::alipay::{AlipayAdapter, AlipayConfig};
use finality_providers::http::Timeouts;
use finality_providers::wechat::{WeChatAdapter, WeChatConfig};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use std::time::Duration;

pub fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, HeaderValue::from_str(v).expect("header value"));
    }
    h
}

pub fn at(unix_s: i64) -> Timestamp {
    Timestamp(unix_s * 1000)
}

pub fn testdata(path: &str) -> Vec<u8> {
    let full = format!("{}/testdata/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

pub fn text(path: &str) -> String {
    String::from_utf8(testdata(path)).expect("fixture is UTF-8")
}

pub fn json(path: &str) -> Value {
    serde_json::from_slice(&testdata(path)).expect("fixture is JSON")
}

pub fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(1),
        total: Duration::from_secs(2),
    }
}

/// WeChat Pay at `url` with wechatpay-go's published test key as merchant
/// key, and as platform key the public half of that key (certificate
/// `D7CE59D1F522D701`, derived with `openssl pkey -pubout`), signing under
/// `platform_serial`. The APIv3 key is a stand-in: the Go vectors use a
/// 16-byte (AES-128) key a real APIv3 key cannot be.
pub fn wechat_adapter(url: &str, platform_serial: Option<&str>) -> WeChatAdapter {
    wechat_adapter_for(url, platform_serial, "1234567890", None)
}

/// [`wechat_adapter`] as merchant `mchid`, or as the service provider
/// `mchid` acting for `sub_mchid` when one is given.
pub fn wechat_adapter_for(
    url: &str,
    platform_serial: Option<&str>,
    mchid: &str,
    sub_mchid: Option<&str>,
) -> WeChatAdapter {
    let cfg = WeChatConfig {
        mchid: mchid.into(),
        serial_no: "F5765756002FDD77".into(),
        private_key_env: "-".into(),
        platform_public_key_env: "-".into(),
        platform_serial: platform_serial.map(String::from),
        platform_keys: Default::default(),
        api_v3_key_env: "-".into(),
        appid: None,
        sub_mchid: sub_mchid.map(String::from),
    };
    WeChatAdapter::new(
        url,
        &cfg,
        &text("wechatpay/go_sdk_test_private_key.pem"),
        &text("wechatpay/go_sdk_test_public_key.DERIVED.pem"),
        "0123456789abcdef0123456789abcdef",
        timeouts(),
        Duration::from_secs(300),
    )
    .expect("the published test keys load")
}

/// Alipay (never called) whose notifications are checked with the public
/// key in `public_pem` (under `testdata/`). Only verification is exercised,
/// so any PKCS#8 key serves as the app key.
pub fn alipay_adapter(app_id: &str, public_pem: &str) -> AlipayAdapter {
    let cfg = AlipayConfig {
        app_id: app_id.into(),
        private_key_env: "-".into(),
        alipay_public_key_env: "-".into(),
        seller_id: None,
        app_auth_token_env: None,
    };
    AlipayAdapter::new(
        "http://127.0.0.1:9/gateway.do",
        &cfg,
        &text("wechatpay/go_sdk_test_private_key.pem"),
        &text(public_pem),
        timeouts(),
    )
    .expect("the published test keys load")
}
