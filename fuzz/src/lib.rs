//! What the fuzz targets share: the fixed "now", a runtime for the async
//! verifiers, and the two shapes an input takes.
//!
//! A webhook target's input starts with one mode byte:
//! - even: the rest is a body, which the target signs correctly (with the
//!   test secret or key its adapter is set up with) before verifying, so
//!   the fuzzer reaches the parsers behind the signature check;
//! - odd: the rest is `name: value` header lines, an empty line, then the
//!   body, verified as it comes (the signature checks themselves).
//!
//! A seed corpus is each target's published examples (scripts/fuzz), the
//! body prefixed with mode 0.

use finality_core::Timestamp;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// 2026-01-01T00:00:00Z: every signature is made and checked at it.
pub const NOW: Timestamp = Timestamp(1_767_225_600_000);

/// Run a verifier's future to its end on a one-thread runtime, built once.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    thread_local! {
        static RT: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime builds");
    }
    RT.with(|rt| rt.block_on(f))
}

/// An input, read by its mode byte.
pub enum Input<'a> {
    /// Sign this body as the provider would, then verify.
    Signed(&'a [u8]),
    /// Verify these headers and body as they are.
    Raw(HeaderMap, &'a [u8]),
}

impl<'a> Input<'a> {
    pub fn of(data: &'a [u8]) -> Option<Input<'a>> {
        let (&mode, rest) = data.split_first()?;
        if mode % 2 == 0 {
            return Some(Input::Signed(rest));
        }
        let split = rest
            .windows(2)
            .position(|w| w == b"\n\n")
            .unwrap_or(rest.len());
        let (head, body) = rest.split_at(split);
        let body = body.get(2..).unwrap_or_default();
        let mut headers = HeaderMap::new();
        for line in head.split(|b| *b == b'\n') {
            let Some(colon) = line.iter().position(|b| *b == b':') else {
                continue;
            };
            let (name, value) = line.split_at(colon);
            let value = value[1..].trim_ascii();
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.trim_ascii()),
                HeaderValue::from_bytes(value),
            ) {
                headers.append(n, v);
            }
        }
        Some(Input::Raw(headers, body))
    }
}

/// Headers from fixed pairs (the values a target computed).
pub fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        if let Ok(v) = HeaderValue::from_str(v) {
            h.insert(*k, v);
        }
    }
    h
}

/// Drain a report reader: every line read or refused, nothing more.
pub fn read_report(format: &finality_providers::settlement::Format, data: &[u8]) {
    if let Ok(lines) = format.read(data) {
        for line in lines {
            let _ = line;
        }
    }
}
