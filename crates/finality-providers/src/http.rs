//! The HTTP client every adapter uses, and the classification of HTTP
//! failures into [`ProviderError`] classes.

use crate::ProviderError;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;
use std::time::Duration;

/// Timeouts for one provider. Both are always set: a provider that never
/// answers must not hold a worker forever.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub total: Duration,
}

/// A pooled rustls client with the provider's timeouts. It follows no
/// redirect: a redirected request would carry the provider's credentials
/// (API key headers, signed bodies) to wherever the `Location` points, so
/// a 3xx is an error naming it ([`classify_status`]).
pub fn client(t: Timeouts) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(t.connect)
        .timeout(t.total)
        .pool_idle_timeout(Duration::from_secs(60))
        .user_agent(concat!("finality/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ProviderError::Permanent {
            message: format!("cannot build HTTP client: {e}"),
        })
}

/// `v` as one URL path segment: every byte but the unreserved ones
/// (RFC 3986 §2.3) percent-encoded, so a provider reference cannot add a
/// segment, a query or a fragment to the provider's URL. (`.` and `..`,
/// which walk a path, are refused at registration.) Hand-written: eight
/// lines, where the `url` crate offers only form encoding (`+` for space).
pub fn segment(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A fresh id for one outgoing request, sent as `X-Request-Id` and logged,
/// so one call can be found on both sides.
pub fn request_id() -> String {
    format!("req_{}", uuid::Uuid::new_v4().simple())
}

/// Classify a transport error (no HTTP status was received).
pub fn classify_transport(e: &reqwest::Error, t: Timeouts) -> ProviderError {
    let message = if e.is_timeout() {
        format!("no answer within {:?} (timeout)", t.total)
    } else if e.is_connect() {
        format!("connect failed: {}", root_cause(e))
    } else if e.is_decode() || e.is_body() {
        format!("unreadable response body: {}", root_cause(e))
    } else {
        format!("request failed: {}", root_cause(e))
    };
    ProviderError::Transient { message }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// Classify a non-success HTTP status: 429 is a rate limit (honouring
/// `Retry-After` in seconds), 408 and 5xx are transient, 401/403/407 and
/// redirects are permanent (credentials or configuration: retrying cannot
/// help), other 4xx refuse this one request (its payment goes to review).
/// A non-2xx answer, classified (its body read, in part, for the message).
pub async fn failure(resp: reqwest::Response) -> ProviderError {
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp.text().await.unwrap_or_default();
    classify_status(status, &headers, &body)
}

pub fn classify_status(status: StatusCode, headers: &HeaderMap, body: &str) -> ProviderError {
    let snippet: String = body.chars().take(200).collect();
    let message = format!("HTTP {}: {}", status.as_u16(), snippet.trim());
    if status == StatusCode::TOO_MANY_REQUESTS {
        let retry_after = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        ProviderError::RateLimited {
            retry_after,
            message,
        }
    } else if status.is_redirection() {
        let to = headers
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("(no Location)");
        ProviderError::Permanent {
            message: format!(
                "HTTP {}: redirect to {to} not followed (finality sends credentials to the \
                 configured base_url only): fix base_url, or what sits in front of the provider",
                status.as_u16()
            ),
        }
    } else if status.is_server_error() || status == StatusCode::REQUEST_TIMEOUT {
        ProviderError::Transient { message }
    } else if status.is_client_error()
        && !matches!(
            status,
            StatusCode::UNAUTHORIZED
                | StatusCode::FORBIDDEN
                | StatusCode::PROXY_AUTHENTICATION_REQUIRED
        )
    {
        // About this request (its reference), not the credentials: the
        // engine sends the one payment to review.
        ProviderError::Refused { message }
    } else {
        ProviderError::Permanent { message }
    }
}

/// Requests that carry the current span's W3C trace context (nothing when
/// traces are off), so a provider's traces can join finality's.
pub trait Traced {
    fn traced(self) -> Self;
}

impl Traced for reqwest::RequestBuilder {
    fn traced(self) -> Self {
        finality_core::trace_context::trace_headers()
            .into_iter()
            .fold(self, |b, (k, v)| b.header(k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn classifies_statuses() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(
            classify_status(StatusCode::TOO_MANY_REQUESTS, &h, "slow down"),
            ProviderError::RateLimited {
                retry_after: Some(Duration::from_secs(7)),
                message: "HTTP 429: slow down".into()
            }
        );
        let none = HeaderMap::new();
        assert!(matches!(
            classify_status(StatusCode::BAD_GATEWAY, &none, ""),
            ProviderError::Transient { .. }
        ));
        assert!(matches!(
            classify_status(StatusCode::UNAUTHORIZED, &none, ""),
            ProviderError::Permanent { .. }
        ));
        assert!(matches!(
            classify_status(StatusCode::FORBIDDEN, &none, ""),
            ProviderError::Permanent { .. }
        ));
        for one_payment in [
            StatusCode::BAD_REQUEST,
            StatusCode::NOT_FOUND,
            StatusCode::UNPROCESSABLE_ENTITY,
        ] {
            assert!(matches!(
                classify_status(one_payment, &none, ""),
                ProviderError::Refused { .. }
            ));
        }
        let mut to = HeaderMap::new();
        to.insert(
            reqwest::header::LOCATION,
            HeaderValue::from_static("http://elsewhere.test/steal"),
        );
        let ProviderError::Permanent { message } =
            classify_status(StatusCode::TEMPORARY_REDIRECT, &to, "")
        else {
            panic!("a redirect is permanent")
        };
        assert!(message.contains("redirect to http://elsewhere.test/steal not followed"));
    }

    #[test]
    fn a_reference_is_one_path_segment() {
        assert_eq!(segment("pi_3Mtw-._~"), "pi_3Mtw-._~");
        assert_eq!(segment("a?b#c%d/e f"), "a%3Fb%23c%25d%2Fe%20f");
    }
}
