//! Each provider's signing and encryption scheme, written here from the
//! providers' published descriptions, **not** taken from the adapters: if
//! the simulator borrowed the adapters' functions, a mistake in one would
//! be a mistake in both and every test would stay green. Only the
//! primitives (HMAC-SHA256, RSA PKCS#1 v1.5 with SHA-256, AES-256-GCM,
//! CRC-32) come from crates.
//!
//! Sources, per scheme:
//! - Standard Webhooks: the specification (standard-webhooks/standard-webhooks
//!   `spec/standard-webhooks.md`): `v1,` + base64 HMAC-SHA256 over
//!   `{msg_id}.{timestamp}.{body}` under the base64-decoded `whsec_` secret.
//! - Stripe: "Verify the signature manually" (docs.stripe.com/webhooks):
//!   `t={unix},v1={hex HMAC-SHA256 over "{t}.{body}"}`, the `whsec_…` secret
//!   used as bytes.
//! - Adyen: "Verify HMAC signatures" (docs.adyen.com): base64 HMAC-SHA256,
//!   under the hex-decoded key, of the eight fields joined by `:`.
//! - WeChat Pay v3: "签名生成" / "签名验证" (pay.weixin.qq.com, wechatpay-go
//!   `core/auth`): SHA256withRSA over `METHOD\nURL\nTS\nNONCE\nBODY\n` for
//!   requests and `TS\nNONCE\nBODY\n` for answers and notifications;
//!   resources in AEAD_AES_256_GCM under the APIv3 key.
//! - Alipay: "自行实现验签" (opendocs.alipay.com): parameters sorted by
//!   name, `k=v` joined by `&`, without `sign` (and, for notifications,
//!   `sign_type`) and empty values; SHA256withRSA, base64.
//! - PayPal: "Verify webhook signatures" (developer.paypal.com): the
//!   message `transmission_id|transmission_time|webhook_id|crc32(body)`,
//!   over the exact bytes sent. PayPal signs it with a certificate; the
//!   simulator keeps an HMAC of it as the stand-in, since only the
//!   simulated PayPal itself ever checks it.

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::signature::{SignatureEncoding, Signer, Verifier};
use rsa::{RsaPrivateKey, RsaPublicKey};
use sha2::Sha256;
use std::collections::BTreeMap;

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().to_vec()
}

/// Standard Webhooks' `webhook-signature` value (`key`: the decoded secret).
pub fn standard_webhooks(key: &[u8], msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let sig = hmac(key, &[format!("{msg_id}.{timestamp}.").as_bytes(), body]);
    format!("v1,{}", B64.encode(sig))
}

/// Stripe's `Stripe-Signature` header value.
pub fn stripe_signature(secret: &str, t: i64, body: &[u8]) -> String {
    let sig = hmac(secret.as_bytes(), &[format!("{t}.").as_bytes(), body]);
    format!("t={t},v1={}", hex::encode(sig))
}

/// Adyen's `additionalData.hmacSignature` for one notification item, from
/// its fields (a missing field is signed as empty).
pub fn adyen_hmac(key: &[u8], item: &serde_json::Value) -> String {
    let field = |k: &str| item[k].as_str().unwrap_or_default().to_string();
    let value = match &item["amount"]["value"] {
        serde_json::Value::Number(n) => n.to_string(),
        other => other.as_str().unwrap_or_default().to_string(),
    };
    let signed = [
        field("pspReference"),
        field("originalReference"),
        field("merchantAccountCode"),
        field("merchantReference"),
        value,
        item["amount"]["currency"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        field("eventCode"),
        field("success"),
    ]
    .join(":");
    B64.encode(hmac(key, &[signed.as_bytes()]))
}

/// SHA256withRSA (PKCS#1 v1.5), base64: WeChat Pay's and Alipay's signature.
pub fn rsa_sign(key: &RsaPrivateKey, message: &str) -> String {
    let signer = SigningKey::<Sha256>::new(key.clone());
    B64.encode(signer.sign(message.as_bytes()).to_bytes())
}

/// Check a base64 SHA256withRSA signature.
pub fn rsa_verify(key: &RsaPublicKey, message: &str, signature_b64: &str) -> bool {
    let Ok(raw) = B64.decode(signature_b64.trim()) else {
        return false;
    };
    let Ok(sig) = Signature::try_from(raw.as_slice()) else {
        return false;
    };
    VerifyingKey::<Sha256>::new(key.clone())
        .verify(message.as_bytes(), &sig)
        .is_ok()
}

/// WeChat Pay's encrypted `resource.ciphertext`: AES-256-GCM, the 16-byte
/// tag appended, base64.
pub fn wechat_encrypt(key: &[u8; 32], nonce: &str, aad: &str, plaintext: &[u8]) -> String {
    let out = Aes256Gcm::new(key.into())
        .encrypt(
            Nonce::from_slice(nonce.as_bytes()),
            Payload {
                msg: plaintext,
                aad: aad.as_bytes(),
            },
        )
        .unwrap_or_default();
    B64.encode(out)
}

/// The text Alipay signs for a parameter set.
pub fn alipay_content(params: &BTreeMap<String, String>, notification: bool) -> String {
    params
        .iter()
        .filter(|(k, v)| {
            k.as_str() != "sign" && !(notification && k.as_str() == "sign_type") && !v.is_empty()
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The simulated PayPal's transmission signature over the exact event bytes.
pub fn paypal_transmission_sig(
    key: &[u8],
    transmission_id: &str,
    time: &str,
    webhook_id: &str,
    body: &[u8],
) -> String {
    let crc = crc32fast::hash(body);
    let message = format!("{transmission_id}|{time}|{webhook_id}|{crc}");
    hex::encode(hmac(key, &[message.as_bytes()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// standard-webhooks/standard-webhooks, the vector every reference
    /// library tests (`libraries/python/tests/test_webhooks.py`,
    /// `libraries/javascript/src/index.test.ts`, …).
    #[test]
    fn standard_webhooks_published_vector() {
        let key = B64
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .expect("base64");
        assert_eq!(
            standard_webhooks(
                &key,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    /// stripe/stripe-dotnet `src/StripeTests/Services/Events/EventUtilityTest.cs`
    /// with `Resources/event_test_signature.json`.
    #[test]
    fn stripe_published_vector() {
        let body = include_bytes!("../../finality-providers/testdata/stripe/customer.created.json");
        assert_eq!(
            stripe_signature("webhook_secret", 1533204620, body),
            "t=1533204620,v1=2220f87ef101a04665f11cdf770523143f875572008577fa0f20882ddb9cc3c7"
        );
    }

    /// Adyen/adyen-python-api-library `test/UtilTest.py`
    /// `test_notification_request_item_hmac`.
    #[test]
    fn adyen_published_vector() {
        let key = hex::decode("44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056")
            .expect("hex");
        let item = serde_json::json!({"pspReference": "7914073381342284", "originalReference": "",
            "merchantAccountCode": "TestMerchant", "merchantReference": "TestPayment-1407325143704",
            "amount": {"value": 1130, "currency": "EUR"}, "eventCode": "AUTHORISATION", "success": "true"});
        assert_eq!(
            adyen_hmac(&key, &item),
            "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="
        );
    }
}

#[cfg(test)]
mod independence {
    /// The simulator must not share the adapters' code: a test fails if
    /// `finality-sim` depends on `finality-providers` in any section.
    #[test]
    fn the_simulator_does_not_depend_on_the_adapters() {
        let manifest: toml::Table =
            toml::from_str(include_str!("../Cargo.toml")).expect("Cargo.toml parses");
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            if let Some(deps) = manifest.get(section).and_then(|d| d.as_table()) {
                assert!(
                    !deps.contains_key("finality-providers"),
                    "finality-sim [{section}] names finality-providers"
                );
            }
        }
    }
}
