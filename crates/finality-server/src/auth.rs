//! Bearer-token authentication for `/v1`.

use crate::{ApiError, AppState};
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::Response;

/// Constant-time equality, so response timing does not reveal how much of a
/// guessed token was right. Small enough to write here rather than pull in a
/// crate for it.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(crate) async fn require_token(
    State(app): State<AppState>,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let given = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if given.is_empty() || !same(given.as_bytes(), app.api_token.as_bytes()) {
        return Err(ApiError::Unauthorized);
    }
    Ok(next.run(req).await)
}
