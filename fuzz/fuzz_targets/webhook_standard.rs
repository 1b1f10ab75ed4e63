//! Standard Webhooks (the simulator's and generic providers' scheme):
//! `webhook-id`, `webhook-timestamp`, `webhook-signature`.
#![no_main]
use base64::Engine;
use finality_fuzz::{headers, Input, NOW};
use finality_providers::webhook::standard::{sign, StandardWebhooks};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::time::Duration;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn verifier() -> &'static StandardWebhooks {
    static V: OnceLock<StandardWebhooks> = OnceLock::new();
    V.get_or_init(|| {
        StandardWebhooks::new(&[SECRET.to_string()], Duration::from_secs(300)).expect("secret")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::of(data) else { return };
    let (h, body) = match input {
        Input::Signed(body) => {
            let key = base64::engine::general_purpose::STANDARD
                .decode(SECRET.trim_start_matches("whsec_"))
                .expect("the secret is base64");
            let t = NOW.0 / 1000;
            (
                headers(&[
                    ("webhook-id", "msg_fuzz".to_string()),
                    ("webhook-timestamp", t.to_string()),
                    ("webhook-signature", sign(&key, "msg_fuzz", t, body)),
                ]),
                body,
            )
        }
        Input::Raw(h, body) => (h, body),
    };
    let _ = verifier().verify(&h, body, NOW);
});
