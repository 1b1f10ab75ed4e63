//! `GET /v1/events?after=<cursor>&limit=…&wait=30s`: the pull feed. The
//! cursor is a feed position; positions are given after commit (see
//! `finality-relay`), so paging by them never skips an event. With `wait`,
//! a reader at the head is answered as soon as the feed grows (a long
//! poll), or with no events when the wait is over.

use crate::{ApiError, AppState};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/events", get(feed))
}

#[derive(Debug, Deserialize)]
struct FeedParams {
    after: Option<String>,
    limit: Option<String>,
    wait: Option<String>,
}

/// The longest a feed reader may wait for the next event in one request.
pub const MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

async fn feed(
    State(app): State<AppState>,
    q: Result<Query<FeedParams>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::invalid("query", e.body_text()))?;
    let after = match q.after.as_deref() {
        None | Some("") => 0,
        Some(c) => c.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            ApiError::invalid("after", format!("`{c}` is not a cursor from this feed"))
        })?,
    };
    let limit = crate::payments::parse_limit(q.limit, 100, 1000)?;
    let wait = match q.wait.as_deref() {
        None | Some("") => std::time::Duration::ZERO,
        Some(w) => humantime::parse_duration(w)
            .ok()
            .or_else(|| w.parse::<u64>().ok().map(std::time::Duration::from_secs))
            .filter(|d| *d <= MAX_WAIT)
            .ok_or_else(|| {
                ApiError::invalid(
                    "wait",
                    format!("`{w}` is not a wait of at most 60s (e.g. `30s`)"),
                )
            })?,
    };
    let deadline = tokio::time::Instant::now() + wait;
    // Subscribed before the first read, so growth between the read and
    // the wait is not missed.
    let mut grew = app.store.subscribe_feed();
    let mut events = app.store.feed_after(after, limit).await?;
    while events.is_empty() && tokio::time::Instant::now() < deadline {
        match tokio::time::timeout_at(deadline, grew.changed()).await {
            Ok(Ok(())) => events = app.store.feed_after(after, limit).await?,
            // The wait is over, or the store is gone: answer what there is.
            _ => break,
        }
    }
    let next = events.last().map_or(after, |e| e.seq);
    let events: Vec<Value> = events.iter().map(finality_relay::event::to_json).collect();
    Ok(Json(
        json!({"events": events, "next_cursor": next.to_string()}),
    ))
}
