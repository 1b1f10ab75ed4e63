//! `/v1/events/destinations`: where each push destination stands, and what
//! an admin does to one (rewind to a position or a time, redeliver one
//! event, pause, resume), each recorded in the audit trail. The console
//! and the CLI call the same functions (`finality_relay::replay`).

use crate::auth::Caller;
use crate::identity::Permission;
use crate::openapi::ErrorBody;
use crate::{ApiError, App, AppState};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use finality_core::Timestamp;
use finality_relay::replay::{self, Action, ReplayError, RewindTo};
use finality_store::{DestinationState, Redelivery};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<App> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(rewind))
        .routes(routes!(redeliver))
        .routes(routes!(pause))
        .routes(routes!(resume))
}

impl From<ReplayError> for ApiError {
    fn from(e: ReplayError) -> Self {
        match e {
            ReplayError::UnknownDestination(_) | ReplayError::UnknownEvent(_) => {
                ApiError::NotFound(e.to_string())
            }
            ReplayError::OutOfRange { .. } => ApiError::invalid("to_seq", e.to_string()),
            ReplayError::Forward { field, .. } => ApiError::invalid(field, e.to_string()),
            ReplayError::Pruned { .. } | ReplayError::Empty => ApiError::Conflict {
                code: "events_pruned",
                message: e.to_string(),
                field: None,
            },
            ReplayError::Store(s) => s.into(),
        }
    }
}

/// One push destination.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DestinationOut {
    /// `http:<name>`, `nats`, `rabbitmq` or `redis`.
    name: String,
    /// Every event at or below this feed position was delivered.
    delivered_seq: i64,
    /// Events waiting (the feed head minus `delivered_seq`; type filters aside).
    backlog: i64,
    /// Failed tries of the next event.
    attempts: u32,
    failing_since: Option<String>,
    next_attempt_at: Option<String>,
    last_error: Option<String>,
    /// When an admin paused it: no attempts and no alert until resumed.
    paused_at: Option<String>,
    paused_by: Option<String>,
}

impl DestinationOut {
    fn of(d: DestinationState, backlog: i64) -> Self {
        DestinationOut {
            name: d.name,
            delivered_seq: d.delivered_seq,
            backlog,
            attempts: d.attempts,
            failing_since: d.failing_since.map(Timestamp::to_rfc3339),
            next_attempt_at: d.next_attempt_at.map(Timestamp::to_rfc3339),
            last_error: d.last_error,
            paused_at: d.paused_at.map(Timestamp::to_rfc3339),
            paused_by: d.paused_by,
        }
    }
}

/// One redelivery asked for.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RedeliveryOut {
    id: i64,
    destination: String,
    event_id: String,
    requested_at: String,
    requested_by: String,
    done_at: Option<String>,
    /// `delivered`, or why not; `null` while waiting.
    outcome: Option<String>,
}

impl From<Redelivery> for RedeliveryOut {
    fn from(r: Redelivery) -> Self {
        RedeliveryOut {
            id: r.id,
            destination: r.destination,
            event_id: r.event_id,
            requested_at: r.requested_at.to_rfc3339(),
            requested_by: r.requested_by,
            done_at: r.done_at.map(Timestamp::to_rfc3339),
            outcome: r.outcome,
        }
    }
}

/// The destinations, the feed's bounds and the newest redeliveries.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DestinationsOut {
    /// The last feed position given.
    head: i64,
    /// The oldest event kept (`null`: none is), as far back as a rewind reaches.
    oldest_seq: Option<i64>,
    oldest_at: Option<String>,
    destinations: Vec<DestinationOut>,
    /// The 20 newest, newest first.
    redeliveries: Vec<RedeliveryOut>,
}

/// Every push destination with its cursor, backlog, retry and pause state.
#[utoipa::path(get, path = "/events/destinations", operation_id = "list_destinations", tag = "events",
    responses(
        (status = 200, description = "Destinations, by name", body = DestinationsOut),
        (status = 401, description = "No valid token", body = ErrorBody),
    ))]
async fn list(State(app): State<App>) -> Result<Json<DestinationsOut>, ApiError> {
    let o = replay::overview(&*app.store).await?;
    Ok(Json(DestinationsOut {
        head: o.bounds.head,
        oldest_seq: o.bounds.oldest.map(|(s, _)| s),
        oldest_at: o.bounds.oldest.map(|(_, t)| t.to_rfc3339()),
        destinations: o
            .destinations
            .into_iter()
            .map(|(d, b)| DestinationOut::of(d, b))
            .collect(),
        redeliveries: o.redeliveries.into_iter().map(Into::into).collect(),
    }))
}

/// Exactly one of `to_seq` and `to_time`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RewindIn {
    /// Send again every event after this feed position.
    to_seq: Option<i64>,
    /// Send again every event from the first that occurred at or after
    /// this time (RFC 3339).
    to_time: Option<String>,
}

/// What a rewind did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RewoundOut {
    destination: String,
    from_seq: i64,
    to_seq: i64,
    /// Events that will be sent again, in feed order.
    replays: i64,
}

/// Read `to_seq` / `to_time` of a rewind, from the API or a console form.
pub(crate) fn rewind_target(
    to_seq: Option<i64>,
    to_time: Option<&str>,
) -> Result<RewindTo, ApiError> {
    match (to_seq, to_time) {
        (Some(s), None) => Ok(RewindTo::Seq(s)),
        (None, Some(t)) => Timestamp::parse_rfc3339(t)
            .map(RewindTo::Time)
            .map_err(|e| {
                ApiError::invalid(
                    "to_time",
                    format!("`{t}` is not an RFC 3339 time (e.g. 2026-12-01T09:30:00Z): {e}"),
                )
            }),
        (Some(_), Some(_)) => Err(ApiError::invalid(
            "to_seq",
            "give to_seq or to_time, not both",
        )),
        (None, None) => Err(ApiError::invalid(
            "to_seq",
            "give to_seq (a feed position) or to_time (RFC 3339)",
        )),
    }
}

/// Rewind as `caller`, audited.
pub(crate) async fn rewind_as(
    app: &AppState,
    caller: &Caller,
    name: &str,
    to: RewindTo,
) -> Result<replay::Rewound, ApiError> {
    caller.identity.require(Permission::ManageEvents)?;
    let result = replay::rewind(&*app.store, name, to).await;
    let (action, outcome) = replay::audited(Action::Rewind, &result, replay::Rewound::outcome);
    audit(app, caller, action, to.asked(name), outcome).await?;
    Ok(result?)
}

/// Redeliver as `caller`, audited; the request's id.
pub(crate) async fn redeliver_as(
    app: &AppState,
    caller: &Caller,
    name: &str,
    event_id: &str,
) -> Result<i64, ApiError> {
    caller.identity.require(Permission::ManageEvents)?;
    let now = app.clock.now();
    let result = replay::redeliver(&*app.store, name, event_id, now, &caller.identity.name).await;
    let (action, outcome) = replay::audited(Action::Redeliver, &result, |id| {
        format!("redelivery {id} queued")
    });
    let asked = json!({"destination": name, "event_id": event_id});
    audit(app, caller, action, asked, outcome).await?;
    Ok(result?)
}

/// Pause (`true`) or resume as `caller`, audited.
pub(crate) async fn pause_as(
    app: &AppState,
    caller: &Caller,
    name: &str,
    paused: bool,
) -> Result<DestinationState, ApiError> {
    caller.identity.require(Permission::ManageEvents)?;
    let now = app.clock.now();
    let by = caller.identity.name.to_string();
    let result = replay::pause(&*app.store, name, paused.then_some((now, by.as_str()))).await;
    let act = if paused {
        Action::Pause
    } else {
        Action::Resume
    };
    let (action, outcome) = replay::audited(act, &result, |d| replay::pause_outcome(paused, d));
    audit(app, caller, action, json!({"destination": name}), outcome).await?;
    Ok(result?)
}

/// A pause or resume answered as the destination's state after it.
async fn paused_answer(
    app: &AppState,
    caller: &Caller,
    name: &str,
    paused: bool,
) -> Result<Json<DestinationOut>, ApiError> {
    let d = pause_as(app, caller, name, paused).await?;
    let head = app.store.feed_bounds().await?.head;
    let backlog = (head - d.delivered_seq).max(0);
    Ok(Json(DestinationOut::of(d, backlog)))
}

/// Append an admin action to the audit trail with its outcome.
pub(crate) async fn audit(
    app: &AppState,
    caller: &Caller,
    action: &str,
    asked: serde_json::Value,
    outcome: String,
) -> Result<(), ApiError> {
    let mut a = caller.audit(action, None, asked, app.clock.now());
    a.outcome = outcome;
    app.store.audit_append(&a).await?;
    Ok(())
}

fn body<T>(b: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    b.map(|Json(v)| v).map_err(|e| match e {
        JsonRejection::JsonDataError(e) => ApiError::invalid("body", e.body_text()),
        other => ApiError::Malformed(other.body_text()),
    })
}

/// Send every event after a position, or since a time, again (admin; audited).
#[utoipa::path(post, path = "/events/destinations/{name}/rewind", operation_id = "rewind_destination", tag = "events",
    params(("name" = String, Path, description = "The destination's name")),
    request_body = RewindIn,
    responses(
        (status = 200, description = "Rewound", body = RewoundOut),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "Only an admin may", body = ErrorBody),
        (status = 404, description = "No such destination", body = ErrorBody),
        (status = 409, description = "The events it would need were deleted by retention", body = ErrorBody),
        (status = 422, description = "Neither or both of to_seq and to_time, out of the feed, or after what the destination has delivered (a rewind only moves back)", body = ErrorBody),
    ))]
async fn rewind(
    State(app): State<App>,
    caller: Caller,
    Path(name): Path<String>,
    b: Result<Json<RewindIn>, JsonRejection>,
) -> Result<Json<RewoundOut>, ApiError> {
    caller.identity.require(Permission::ManageEvents)?;
    let b = body(b)?;
    let to = rewind_target(b.to_seq, b.to_time.as_deref())?;
    let r = rewind_as(&app, &caller, &name, to).await?;
    Ok(Json(RewoundOut {
        destination: r.destination,
        from_seq: r.from_seq,
        to_seq: r.to_seq,
        replays: r.replays,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RedeliverIn {
    /// The event's `id`.
    event_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RedeliverOut {
    /// The request's id (see `redeliveries` in the destinations' list).
    redelivery_id: i64,
}

/// Send one event to a destination again, once (admin; audited). Its
/// pusher takes the request within a second unless the destination is paused.
#[utoipa::path(post, path = "/events/destinations/{name}/redeliver", operation_id = "redeliver_events", tag = "events",
    params(("name" = String, Path, description = "The destination's name")),
    request_body = RedeliverIn,
    responses(
        (status = 202, description = "Queued", body = RedeliverOut),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "Only an admin may", body = ErrorBody),
        (status = 404, description = "No such destination or event", body = ErrorBody),
        (status = 422, description = "event_id is missing", body = ErrorBody),
    ))]
async fn redeliver(
    State(app): State<App>,
    caller: Caller,
    Path(name): Path<String>,
    b: Result<Json<RedeliverIn>, JsonRejection>,
) -> Result<(StatusCode, Json<RedeliverOut>), ApiError> {
    caller.identity.require(Permission::ManageEvents)?;
    let b = body(b)?;
    let id = redeliver_as(&app, &caller, &name, b.event_id.trim()).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(RedeliverOut { redelivery_id: id }),
    ))
}

/// Stop sending to a destination without alerting; its backlog waits (admin; audited).
#[utoipa::path(post, path = "/events/destinations/{name}/pause", operation_id = "pause_destination", tag = "events",
    params(("name" = String, Path, description = "The destination's name")),
    responses(
        (status = 200, description = "Paused", body = DestinationOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "Only an admin may", body = ErrorBody),
        (status = 404, description = "No such destination", body = ErrorBody),
    ))]
async fn pause(
    State(app): State<App>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<DestinationOut>, ApiError> {
    paused_answer(&app, &caller, &name, true).await
}

/// Send to a paused destination again, from where it stopped (admin; audited).
#[utoipa::path(post, path = "/events/destinations/{name}/resume", operation_id = "resume_destination", tag = "events",
    params(("name" = String, Path, description = "The destination's name")),
    responses(
        (status = 200, description = "Resumed", body = DestinationOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "Only an admin may", body = ErrorBody),
        (status = 404, description = "No such destination", body = ErrorBody),
    ))]
async fn resume(
    State(app): State<App>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<DestinationOut>, ApiError> {
    paused_answer(&app, &caller, &name, false).await
}
