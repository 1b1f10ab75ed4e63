//! A report in columns the configuration names (`format = "csv"`), with a
//! kind column mapped by `kinds` and decimal amounts.
#![no_main]
use finality_providers::settlement::{Format, FormatSpec};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn format() -> &'static Format {
    static F: OnceLock<Format> = OnceLock::new();
    F.get_or_init(|| {
        FormatSpec {
            format: "csv".into(),
            reference: Some("ref".into()),
            amount: Some("gross".into()),
            currency: Some("ccy".into()),
            kind: Some("type".into()),
            kinds: vec!["SALE=charge".into(), "RFND=refund".into()],
            fee: Some("fee".into()),
            merchant_ref: Some("order".into()),
            decimal: true,
        }
        .build()
        .expect("a valid spec")
    })
}

fuzz_target!(|data: &[u8]| {
    finality_fuzz::read_report(format(), data);
});
