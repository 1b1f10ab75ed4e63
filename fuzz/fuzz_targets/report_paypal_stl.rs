//! PayPal's Settlement Report (STL): every line read or refused with a reason, never a panic or a hang.
#![no_main]
use finality_providers::settlement::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    finality_fuzz::read_report(&Format::PaypalStl, data);
});
