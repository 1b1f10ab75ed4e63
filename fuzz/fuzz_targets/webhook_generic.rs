//! A generic provider (from the config file alone): its HMAC header and
//! the JSON-pointer event parser, as `docs/PROVIDERS.md` configures one.
#![no_main]
use finality_fuzz::{block_on, headers, Input, NOW};
use finality_providers::config::ProviderConfig;
use finality_providers::Provider;
use hmac::{Hmac, Mac};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

const SECRET: &str = "fuzz-generic-webhook-secret-0123";

const CONFIG: &str = r#"
adapter = "generic"
base_url = "http://127.0.0.1:9"
webhook_secret_envs = ["FUZZ_GENERIC_WEBHOOK_SECRET"]

[generic]
url = "{base_url}/v2/transfers/{provider_ref}"
status_pointer = "/data/state"
status_map = { CREATED = "pending", IN_PROGRESS = "processing", COMPLETED = "succeeded", REJECTED = "failed", "2" = "succeeded" }
amount_pointer = "/data/amount"
currency_pointer = "/data/currency"
amount_unit = "decimal"

[generic.webhook]
scheme = "hmac"
header = "X-Acme-Signature"
prefix = "sha256="
encoding = "hex"
event_id_pointer = "/id"
ref_pointer = "/data/id"
status_pointer = "/data/state"
merchant_ref_pointer = "/data/order_id"
amount_pointer = "/data/amount"
currency_pointer = "/data/currency"
"#;

fn adapter() -> &'static Arc<dyn Provider> {
    static A: OnceLock<Arc<dyn Provider>> = OnceLock::new();
    A.get_or_init(|| {
        // Read once, before any thread: the adapter keeps what it derives.
        std::env::set_var("FUZZ_GENERIC_WEBHOOK_SECRET", SECRET);
        let cfg: ProviderConfig = toml::from_str(CONFIG).expect("the documented table parses");
        finality_providers::config::build("acme", &cfg).expect("builds")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Input::of(data) else { return };
    let (h, body) = match input {
        Input::Signed(body) => {
            let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).expect("any key");
            mac.update(body);
            let sig = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
            (headers(&[("x-acme-signature", sig)]), body)
        }
        Input::Raw(h, body) => (h, body),
    };
    let _ = block_on(adapter().verify_webhook(&h, body, NOW));
    let _ = adapter().peek_ref(body);
});
