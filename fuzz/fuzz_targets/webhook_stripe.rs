//! Stripe: `Stripe-Signature` and the event parser behind it.
#![no_main]
use finality_fuzz::{block_on, headers, Input, NOW};
use finality_providers::webhook::stripe::{sign, StripeSignature};
use finality_providers::Provider;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::time::Duration;

const SECRET: &str = "whsec_fuzz_secret_0123456789";

fn adapter() -> &'static finality_providers::stripe::StripeAdapter {
    static A: OnceLock<finality_providers::stripe::StripeAdapter> = OnceLock::new();
    A.get_or_init(|| {
        let timeouts = finality_providers::http::Timeouts {
            connect: Duration::from_millis(1),
            total: Duration::from_millis(1),
        };
        finality_providers::stripe::StripeAdapter::new(
            "http://127.0.0.1:9",
            "sk_test_fuzz".into(),
            timeouts,
        )
        .expect("adapter")
        .with_webhooks(
            StripeSignature::new(vec![SECRET.into()], Duration::from_secs(300)).expect("secret"),
        )
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::of(data) else { return };
    let (h, body) = match input {
        Input::Signed(body) => (
            headers(&[("stripe-signature", sign(SECRET, NOW.0 / 1000, body))]),
            body,
        ),
        Input::Raw(h, body) => (h, body),
    };
    let _ = block_on(adapter().verify_webhook(&h, body, NOW));
    let _ = adapter().peek_ref(body);
    let _ = adapter().body_live(body);
    let _ = adapter().webhook_account(body);
});
