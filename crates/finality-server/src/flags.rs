//! `/v1/flags` and `/v1/payments/{id}/flags/{flag}/resolve`: facts after
//! final (a capture failure beside a succeeded payment, a failure reported
//! after success, money that does not match) listed beside the review
//! queue and resolved by a person, audited.

use crate::auth::Caller;
use crate::error::ApiQuery;
use crate::identity::Permission;
use crate::openapi::ErrorBody;
use crate::payments::{actor_of, parse_limit};
use crate::replica::Reads;
use crate::{ApiError, App};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::Json;
use finality_core::money::{bounded_text, limits};
use finality_store::flags::{Flag, FlagResolve};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<App> {
    OpenApiRouter::new()
        .routes(routes!(list_open))
        .routes(routes!(resolve))
}

/// A fact about a final payment that needs a person.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlagOut {
    pub(crate) id: i64,
    pub(crate) payment_id: String,
    /// Why a person must look.
    pub(crate) reason: String,
    /// The provider's event that raised it.
    pub(crate) event_id: Option<String>,
    pub(crate) provider_status: Option<String>,
    /// The provider's sub-object it is about (`capture:8825408195409505`);
    /// a later report of it succeeding closes the flag by itself.
    pub(crate) piece: Option<String>,
    pub(crate) opened_at: String,
    /// `null` while open.
    pub(crate) closed_at: Option<String>,
    /// The token's name of whoever resolved it, or `provider`.
    pub(crate) closed_by: Option<String>,
    pub(crate) resolution: Option<String>,
}

impl From<Flag> for FlagOut {
    fn from(f: Flag) -> Self {
        FlagOut {
            id: f.id,
            payment_id: f.payment_id,
            reason: f.reason,
            event_id: f.event_id,
            provider_status: f.provider_status,
            piece: f.piece_key,
            opened_at: f.opened_at.to_rfc3339(),
            closed_at: f.closed_at.map(|t| t.to_rfc3339()),
            closed_by: f.closed_by,
            resolution: f.resolution,
        }
    }
}

/// A page of open flags.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlagPage {
    flags: Vec<FlagOut>,
    /// Pass as `after` for the next page; `null` on the last.
    next_after: Option<i64>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct FlagParams {
    /// Flags with a larger id than this (the previous page's `next_after`).
    after: Option<i64>,
    /// 1 to 500; 100 when absent.
    #[param(value_type = Option<u32>)]
    limit: Option<String>,
}

/// Open flags of every payment, oldest first: the facts after final that
/// wait for a person, beside the review queue of open payments.
#[utoipa::path(get, path = "/flags", operation_id = "list_open_flags", tag = "payments",
    params(FlagParams),
    responses(
        (status = 200, description = "Open flags, oldest first", body = FlagPage),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 422, description = "A parameter is invalid", body = ErrorBody),
    ))]
pub(crate) async fn list_open(
    reads: Reads,
    _caller: Caller,
    ApiQuery(q): ApiQuery<FlagParams>,
) -> Result<Json<FlagPage>, ApiError> {
    let limit = parse_limit(q.limit, 100, 500)?;
    let flags = reads.store.flags_open(q.after.unwrap_or(0), limit).await?;
    let next_after = (flags.len() == limit as usize)
        .then(|| flags.last().map(|f| f.id))
        .flatten();
    Ok(Json(FlagPage {
        flags: flags.into_iter().map(FlagOut::from).collect(),
        next_after,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlagResolveIn {
    /// What was done or checked (kept on the flag and in the audit trail).
    #[schema(required = true, value_type = String, max_length = 500)]
    reason: Option<String>,
    /// Only with the one shared token; with named tokens the actor is the
    /// token's name.
    #[schema(max_length = 100)]
    actor: Option<String>,
}

/// Close a flag by hand: who (the token's name) and why are kept on it and
/// in the audit trail, in one transaction. A flag closed already (by a
/// person or by the provider's later report) is answered as it is.
#[utoipa::path(post, path = "/payments/{id}/flags/{flag}/resolve", operation_id = "resolve_flag",
    tag = "payments", request_body = FlagResolveIn,
    params(("id" = String, Path, description = "The payment's id"),
           ("flag" = i64, Path, description = "The flag's id")),
    responses(
        (status = 200, description = "Resolved, or closed already", body = FlagOut),
        (status = 400, description = "Not JSON", body = ErrorBody),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token's role may not resolve", body = ErrorBody),
        (status = 404, description = "No such flag on that payment", body = ErrorBody),
        (status = 422, description = "A field is missing or invalid", body = ErrorBody),
    ))]
pub(crate) async fn resolve(
    State(app): State<App>,
    caller: Caller,
    Path((id, flag)): Path<(String, i64)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<FlagOut>, ApiError> {
    caller.identity.require(Permission::Resolve)?;
    let r: FlagResolveIn = crate::payments::parse_body(body)?;
    let reason = r
        .reason
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::invalid("reason", "missing field `reason`"))?;
    bounded_text("reason", &reason, limits::REASON_CHARS)?;
    if let Some(a) = r.actor.as_deref() {
        bounded_text("actor", a.trim(), limits::ACTOR_CHARS)?;
    }
    let actor = actor_of(&caller, r.actor.as_deref())?;
    let now = app.clock.now();
    let mut audit = caller.audit(
        "resolve_flag",
        Some(&id),
        json!({"flag": flag, "reason": reason}),
        now,
    );
    audit.actor = actor;
    match app
        .store
        .flag_resolve(&id, flag, &reason, &audit, now)
        .await?
    {
        FlagResolve::Resolved(f) | FlagResolve::AlreadyClosed(f) => Ok(Json(f.into())),
        FlagResolve::NotFound => Err(ApiError::NotFound(format!(
            "payment `{id}` has no flag {flag}"
        ))),
    }
}
