//! What every request passes first, in one middleware: its request id,
//! its log span, the header-size guard and the body's deadline.
//!
//! Written as one function rather than four tower layers (tower-http's
//! `SetRequestId`, `PropagateRequestId` and `Trace`, and a `from_fn` per
//! guard): axum clones each layer's inner service and boxes a future for
//! it on every request, which under webhook load was about a tenth of
//! the server's CPU (`docs/PERFORMANCE.md`, session 25).

use crate::{ApiError, BODY_LIMIT, HEADER_LIMIT};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use std::future::Future;
use std::time::{Duration, Instant};
use tracing::Instrument;

static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The caller's `X-Request-Id` kept (or one made: a UUID v4), on the
/// request for the handlers and sent back on the response; a span naming
/// it, the method and the path (never the query or headers: tokens) on
/// every line logged while serving; then the guards.
pub(crate) async fn front(
    State(timeout): State<Duration>,
    mut req: Request,
    next: Next,
) -> Response {
    let id = match req.headers().get(&X_REQUEST_ID) {
        Some(v) => v.clone(),
        None => {
            let mut buf = uuid::Uuid::encode_buffer();
            let made = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf);
            // A UUID is always a valid header value.
            let v = HeaderValue::from_str(made).unwrap_or(HeaderValue::from_static("-"));
            req.headers_mut().insert(X_REQUEST_ID.clone(), v.clone());
            v
        }
    };
    let span = tracing::info_span!(
        "request",
        method = %req.method(),
        path = %req.uri().path(),
        request_id = id.to_str().unwrap_or_default()
    );
    let started = Instant::now();
    let mut res = guarded(timeout, req, next).instrument(span.clone()).await;
    // As tower-http's trace layer did: a 5xx is logged with its latency.
    if res.status().is_server_error() {
        let _in = span.enter();
        tracing::error!(
            status = res.status().as_u16(),
            latency_ms = started.elapsed().as_millis() as u64,
            "response failed"
        );
    }
    res.headers_mut().entry(&X_REQUEST_ID).or_insert(id);
    res
}

/// Headers over [`HEADER_LIMIT`] refused, then the body read in time.
async fn guarded(timeout: Duration, req: Request, next: Next) -> Response {
    if let Some(refused) = headers_too_large(&req) {
        return refused;
    }
    match body_in_time(timeout, req, next).await {
        Ok(res) => res,
        Err(e) => axum::response::IntoResponse::into_response(e),
    }
}

/// A 431 for a request whose headers exceed [`HEADER_LIMIT`], if they do.
fn headers_too_large(req: &Request) -> Option<Response> {
    let size: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    if size <= HEADER_LIMIT {
        return None;
    }
    ::metrics::counter!("finality_http_refused_total", "reason" => "headers_too_large")
        .increment(1);
    let body = serde_json::json!({"error": {"code": "headers_too_large",
        "message": format!("request headers total {size} bytes; at most {HEADER_LIMIT} are accepted")}});
    Some(axum::response::IntoResponse::into_response((
        axum::http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        axum::Json(body),
    )))
}

/// Read the whole body within `timeout` (every handler reads it whole
/// anyway, up to [`BODY_LIMIT`]): a client trickling its body is answered
/// 408 and its connection freed, instead of holding them as long as it
/// keeps sending a byte now and then (a per-read timeout would not). A
/// body announced larger than the limit is refused before a byte of it is
/// read.
async fn body_in_time(timeout: Duration, req: Request, next: Next) -> Result<Response, ApiError> {
    // A settlement report is streamed to disk by its own handler, with its
    // own limits: a report is not held in memory.
    if req.method() == axum::http::Method::POST && req.uri().path() == "/v1/reconciliations" {
        return Ok(next.run(req).await);
    }
    // Announced too large: refused at once, not after waiting for it.
    let announced = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if announced.is_some_and(|n| n > BODY_LIMIT) {
        return Err(ApiError::TooLarge(BODY_LIMIT));
    }
    let (parts, body) = req.into_parts();
    let mut read = std::pin::pin!(axum::body::to_bytes(body, BODY_LIMIT));
    // A small body usually came with the headers: read without arming a
    // timer (an insert into the runtime's timer wheel, and its removal,
    // on every request); the deadline is armed only for a body still
    // arriving.
    let now = std::future::poll_fn(|cx| std::task::Poll::Ready(read.as_mut().poll(cx))).await;
    let in_time = match now {
        std::task::Poll::Ready(done) => Ok(done),
        std::task::Poll::Pending => tokio::time::timeout(timeout, read).await,
    };
    let bytes = match in_time {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => return Err(ApiError::TooLarge(BODY_LIMIT)),
        Err(_) => {
            ::metrics::counter!("finality_http_refused_total", "reason" => "slow_body")
                .increment(1);
            let body = serde_json::json!({"error": {"code": "request_timeout",
                "message": format!("the request body did not arrive within {timeout:?}")}});
            return Ok(axum::response::IntoResponse::into_response((
                axum::http::StatusCode::REQUEST_TIMEOUT,
                [(axum::http::header::CONNECTION, "close")],
                axum::Json(body),
            )));
        }
    };
    refuse_nul(&parts, &bytes)?;
    Ok(next
        .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await)
}

/// PostgreSQL keeps no NUL character in text or JSON (`unsupported Unicode
/// escape sequence`), and no name finality gives or takes holds one: an
/// API request carrying one (`%00` in its path or query, `\u0000` in its
/// JSON) is refused here, naming where, before a handler, the audit trail
/// or the database sees it (it was a 500; the API fuzzer found it).
fn refuse_nul(parts: &axum::http::request::Parts, body: &[u8]) -> Result<(), ApiError> {
    let uri = &parts.uri;
    if !uri.path().starts_with("/v1/") {
        return Ok(());
    }
    let pct00 = |s: &str| s.as_bytes().windows(3).any(|w| w == b"%00");
    if pct00(uri.path()) {
        return Err(ApiError::NotFound(
            "no resource's name holds the NUL character (`%00` in the path)".into(),
        ));
    }
    if uri.query().is_some_and(pct00) {
        return Err(ApiError::invalid(
            "query",
            "a parameter holds the NUL character (`%00`), which no value may",
        ));
    }
    if json_has_nul(body) {
        return Err(ApiError::invalid(
            "body",
            "a string holds the NUL character (`\\u0000`), which no text finality keeps may",
        ));
    }
    Ok(())
}

/// Whether JSON text holds a NUL character: the escape `\u0000` (not an
/// escaped backslash followed by `u0000`), or a raw NUL byte.
fn json_has_nul(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                if b.get(i + 1..i + 6) == Some(b"u0000".as_slice()) {
                    return true;
                }
                // The escaped character is skipped whole: `\\` is one.
                i += 2;
            }
            0 => return true,
            _ => i += 1,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::json_has_nul;

    #[test]
    fn a_nul_escape_is_found_and_an_escaped_backslash_is_not_one() {
        assert!(json_has_nul(br#"{"a":"x\u0000y"}"#));
        assert!(json_has_nul(b"{\"a\":\"\0\"}"));
        assert!(json_has_nul(br#"{"a":"\\\u0000"}"#));
        assert!(!json_has_nul(br#"{"a":"\\u0000"}"#));
        assert!(json_has_nul(br#"{"a":"\u00001"}"#));
        assert!(!json_has_nul(br#"{"a":"\u0001","b":"u0000"}"#));
    }
}
