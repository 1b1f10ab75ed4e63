//! `GET /v1/events?after=<cursor>&limit=…`: the pull feed. The cursor is a
//! feed position; positions are given after commit (see `finality-relay`),
//! so paging by them never skips an event.

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
}

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
    let events = app.store.feed_after(after, limit).await?;
    let next = events.last().map_or(after, |e| e.seq);
    let events: Vec<Value> = events.iter().map(finality_relay::event::to_json).collect();
    Ok(Json(
        json!({"events": events, "next_cursor": next.to_string()}),
    ))
}
