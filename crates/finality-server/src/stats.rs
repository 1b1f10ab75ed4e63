//! `GET /v1/stats/providers?window=24h`: per provider, over the payments
//! registered in the window: queries until final, time to final, how final
//! statuses arrived, what is in review or open, and error classes.

use crate::{ApiError, AppState};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/stats/providers", get(providers))
}

#[derive(Debug, Deserialize)]
struct Params {
    window: Option<String>,
}

/// The longest window: the statistics read every payment registered in it.
const MAX_WINDOW: Duration = Duration::from_secs(90 * 24 * 3600);

async fn providers(
    State(app): State<AppState>,
    q: Result<Query<Params>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::invalid("query", e.body_text()))?;
    let window = match q.window.as_deref() {
        None | Some("") => Duration::from_secs(24 * 3600),
        Some(w) => humantime::parse_duration(w)
            .ok()
            .filter(|d| !d.is_zero() && *d <= MAX_WINDOW)
            .ok_or_else(|| {
                ApiError::invalid(
                    "window",
                    format!("`{w}` is not a duration between 1s and 90days (e.g. 24h)"),
                )
            })?,
    };
    let since = finality_core::Timestamp(app.clock.now().0 - window.as_millis() as i64);
    let rows = app.store.stats_rows(since).await?;
    let errors = app.store.error_counts(since).await?;
    let stats = finality_store::stats::compute(&rows, &errors);
    Ok(Json(json!({
        "window_s": window.as_secs(),
        "since": since.0,
        "providers": stats,
    })))
}
