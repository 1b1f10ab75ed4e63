//! Bearer-token authentication for `/v1`: the token's name and role ride
//! on the request as an [`Identity`] for the handlers to check.

use crate::identity::Identity;
use crate::throttle::Verdict;
use crate::{ApiError, App, AppState};
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::Response;

pub(crate) async fn require_token(
    State(app): State<App>,
    mut req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let given = given_token(req.headers());
    let identity: Identity = match app.tokens.find(given.as_bytes()) {
        Some(t) if !given.is_empty() => app.tokens.identity(t),
        _ => {
            // Counted and logged, never with what was sent.
            metrics::counter!("finality_auth_failures_total", "surface" => "api").increment(1);
            let source = peer(req.extensions());
            let now = app.clock.now().0;
            return Err(refuse("api", &app, source.as_deref(), None, now, || {
                tracing::warn!(path = %req.uri().path(), remote = ?source, "API request with a missing or unknown token");
            }));
        }
    };
    req.extensions_mut().insert(identity);
    Ok(next.run(req).await)
}

/// Whether `headers` carry a token this node knows (any role): what an
/// endpoint open to all (`/readyz`) needs before it says more than a
/// stranger may read.
pub(crate) fn known_token(app: &AppState, headers: &axum::http::HeaderMap) -> bool {
    let given = given_token(headers);
    !given.is_empty() && app.tokens.find(given.as_bytes()).is_some()
}

/// The bearer token `headers` carry (empty: none).
fn given_token(headers: &axum::http::HeaderMap) -> &str {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
        .unwrap_or_default()
}

/// The token of an `Authorization: Bearer <token>` value. The scheme is
/// case-insensitive (RFC 9110 §11.1): `bearer` is as good as `Bearer`.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The authenticated caller of a `/v1` request and the address it came
/// from (for the audit trail).
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub identity: Identity,
    pub remote: Option<String>,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, ApiError> {
        let identity = parts
            .extensions
            .get::<Identity>()
            .cloned()
            .ok_or(ApiError::Unauthorized)?;
        Ok(Caller {
            identity,
            remote: remote_addr(parts),
        })
    }
}

/// The answer to a failed authentication from `source` (naming the token
/// `name`, when the credential says whose it is): 401 and `log`, or, over
/// the limit, 429 logged once per window (see [`crate::throttle`]).
pub(crate) fn refuse(
    surface: &'static str,
    app: &AppState,
    source: Option<&str>,
    name: Option<&str>,
    now_ms: i64,
    log: impl FnOnce(),
) -> ApiError {
    match app.throttle.failed(source, name, now_ms) {
        Verdict::Refuse => {
            log();
            ApiError::Unauthorized
        }
        Verdict::Throttled { retry_after, first } => {
            metrics::counter!("finality_auth_throttled_total", "surface" => surface).increment(1);
            if first {
                tracing::warn!(
                    surface,
                    remote = ?source,
                    token = ?name,
                    "ALERT: failed authentications over the limit; answered 429 (and logged once) \
                     for the rest of the minute"
                );
            }
            ApiError::TooMany {
                message: format!(
                    "too many failed authentications from this address; retry in {retry_after}s"
                ),
                retry_after,
            }
        }
    }
}

/// The peer's address as the server accepted the connection.
pub(crate) fn remote_addr(parts: &axum::http::request::Parts) -> Option<String> {
    peer(&parts.extensions)
}

fn peer(extensions: &axum::http::Extensions) -> Option<String> {
    extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string())
}

impl Caller {
    /// An audit record of `action` by this caller, outcome to be filled in.
    pub fn audit(
        &self,
        action: &str,
        payment_id: Option<&str>,
        detail: serde_json::Value,
        at: finality_core::Timestamp,
    ) -> finality_store::review::NewAudit {
        finality_store::review::NewAudit {
            at,
            actor: self.identity.name.to_string(),
            role: self.identity.role.as_str().into(),
            action: action.into(),
            payment_id: payment_id.map(str::to_string),
            detail,
            outcome: String::new(),
            remote_addr: self.remote.clone(),
        }
    }
}
