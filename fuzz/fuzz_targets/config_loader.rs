//! `finality.toml`: parsed and validated, or refused with `FILE:LINE:COL:
//! FIELD: problem`, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match finality_cli::config::Config::parse(text, "fuzz.toml") {
        Ok(cfg) => {
            let _ = cfg.database_url();
        }
        Err(e) => {
            let m = e.to_string();
            assert!(
                m.starts_with("fuzz.toml:"),
                "an error that names no place: {m}"
            );
        }
    }
});
