//! Alipay's bill zip: the detail entry found and copied out, every byte
//! checked by its CRC-32, an entry expanding past the bound refused.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else { return };
    let zip = dir.path().join("bill.zip");
    if std::fs::write(&zip, data).is_err() {
        return;
    }
    let _ = finality_providers::alipay::detail_from_zip(&zip, &dir.path().join("detail.csv"));
});
