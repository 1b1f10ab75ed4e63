//! Settling by hand and polling now: the one implementation the API and
//! the console share, each audited.

use crate::auth::Caller;
use crate::identity::Permission;
use crate::{ApiError, AppState};
use finality_core::money::{bounded_text, limits};
use finality_core::Status;
use finality_store::manual::{ResolveError, Resolved};
use finality_store::PollNow;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveIn {
    /// A final status: succeeded, failed, cancelled or reversed.
    #[schema(required = true, value_type = Status)]
    pub(crate) status: Option<String>,
    /// Why (kept on the history row).
    #[schema(required = true, value_type = String, max_length = 500)]
    pub(crate) reason: Option<String>,
    /// Free text kept in the audit record beside the reason.
    #[schema(max_length = 2000)]
    pub(crate) note: Option<String>,
    /// Only with the one shared token, which cannot tell people apart;
    /// with named tokens the actor is the token's name.
    #[schema(max_length = 100)]
    pub(crate) actor: Option<String>,
}

/// What a person asks when settling a payment, from the API or the console.
pub(crate) struct ResolveAsk<'a> {
    pub status: &'a str,
    pub reason: &'a str,
    pub note: Option<&'a str>,
    /// The name given in the body (the shared token only).
    pub actor: Option<&'a str>,
}

/// The bounds on what a person writes when resolving (the console checks
/// them before its confirm page too).
pub(crate) fn check_resolve_text(ask: &ResolveAsk<'_>) -> Result<(), ApiError> {
    bounded_text("reason", ask.reason.trim(), limits::REASON_CHARS)?;
    if let Some(n) = ask.note {
        bounded_text("note", n, limits::NOTE_CHARS)?;
    }
    if let Some(a) = ask.actor {
        bounded_text("actor", a.trim(), limits::ACTOR_CHARS)?;
    }
    Ok(())
}

/// Settle one payment by hand as `caller`: the rules of who may, the actor
/// taken from the token, the change and its audit record in one
/// transaction. Used by `POST /v1/payments/{id}/resolve` and the console.
pub(crate) async fn resolve_as(
    app: &AppState,
    caller: &Caller,
    id: &str,
    ask: ResolveAsk<'_>,
) -> Result<Resolved, ApiError> {
    caller.identity.require(Permission::Resolve)?;
    let status = ask
        .status
        .parse::<Status>()
        .map_err(|e| ApiError::invalid("status", e.to_string()))?;
    let reason = ask.reason.trim();
    if reason.is_empty() {
        return Err(ApiError::invalid("reason", "missing field `reason`"));
    }
    check_resolve_text(&ask)?;
    let actor = actor_of(caller, ask.actor)?;
    let now = app.clock.now();
    let mut audit = caller.audit(
        "resolve",
        Some(id),
        json!({"status": status.as_str(), "reason": reason, "note": ask.note}),
        now,
    );
    audit.actor = actor.clone();
    match finality_store::manual::resolve(&*app.store, id, status, reason, &audit, now).await {
        Ok(r) => {
            if let Resolved::Changed { from, to } = &r {
                tracing::info!(payment_id = %id, %from, %to, %actor, "resolved by hand");
            }
            Ok(r)
        }
        Err(e @ ResolveError::NotFinal(_)) => Err(ApiError::invalid("status", e.to_string())),
        Err(e @ ResolveError::Missing(field)) => Err(ApiError::invalid(field, e.to_string())),
        Err(e @ ResolveError::NotAllowed { .. }) => Err(ApiError::Conflict {
            code: "transition_not_allowed",
            message: e.to_string(),
            field: Some("status".into()),
        }),
        Err(e @ ResolveError::NotFound(_)) => Err(ApiError::NotFound(e.to_string())),
        Err(ResolveError::Store(e)) => Err(e.into()),
    }
}

/// Ask for a poll now as `caller`, recorded in the audit trail.
pub(crate) async fn poll_now_as(
    app: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<PollNow, ApiError> {
    caller.identity.require(Permission::PollNow)?;
    let now = app.clock.now();
    // The request and its audit record commit together.
    let audit = caller.audit("poll_now", Some(id), json!({}), now);
    Ok(app.store.poll_now_manual(id, &audit, now).await?)
}

/// What a poll-now request did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PollAnswer {
    /// `scheduled`, or `in_flight` when a worker is asking right now.
    pub(crate) poll: &'static str,
}

/// Who acts: the token's name; with the one shared token (which cannot
/// tell people apart), the `actor` the caller gives, required.
pub(crate) fn actor_of(caller: &Caller, given: Option<&str>) -> Result<String, ApiError> {
    let given = given.map(str::trim).filter(|a| !a.is_empty());
    if caller.identity.shared {
        // One token for everyone: the caller says who they are, as before
        // named tokens existed.
        return Ok(given
            .ok_or_else(|| ApiError::invalid("actor", "missing field `actor`"))?
            .to_string());
    }
    match given {
        Some(a) if a != &*caller.identity.name => Err(ApiError::invalid(
            "actor",
            format!(
                "the actor is the name of the token used (`{}`), not chosen in the body; \
                 leave `actor` out and put remarks in `note`",
                caller.identity.name
            ),
        )),
        _ => Ok(caller.identity.name.to_string()),
    }
}
