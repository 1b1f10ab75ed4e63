//! `/v1/payments`: register, read, list, attempts, resolve, poll now.

mod actions;
mod input;
mod output;

use crate::error::ApiQuery;
use crate::payments::actions::{PollAnswer, ResolveIn};
use crate::payments::input::{differences, required, PaymentIn};
use crate::payments::output::{
    load, view, AttemptOut, AttemptsOut, ListParams, PaymentOut, PaymentPage,
};
use crate::replica::Reads;
pub(crate) use actions::{actor_of, check_resolve_text, poll_now_as, resolve_as, ResolveAsk};
pub(crate) use input::{parse_body, parse_limit};

use crate::auth::Caller;
use crate::identity::Permission;
use crate::openapi::ErrorBody;
use crate::{ApiError, App};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use finality_core::money::{MerchantRef, ProviderRef};
use finality_core::Status;
use finality_store::{AttemptRecord, ListFilter, PollNow, Registered};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<App> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(show))
        .routes(routes!(attempts))
        .routes(routes!(resolve))
        .routes(routes!(poll_now))
}

/// Register a payment to drive to its final status. Idempotent on `id`:
/// the same body again answers 200 with the stored payment.
#[utoipa::path(post, path = "/payments", operation_id = "register_payment", tag = "payments", request_body = PaymentIn,
    responses(
        (status = 201, description = "Registered", body = PaymentOut),
        (status = 200, description = "Already registered with this body", body = PaymentOut),
        (status = 400, description = "Not JSON", body = ErrorBody),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token's role may not register", body = ErrorBody),
        (status = 409, description = "The id or a reference is taken by another body", body = ErrorBody),
        (status = 422, description = "A field is missing or invalid", body = ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub(crate) async fn create(
    State(app): State<App>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<PaymentOut>), ApiError> {
    caller.identity.require(Permission::Register)?;
    let p = parse_body::<PaymentIn>(body)?.into_domain(&app)?;
    let now = app.clock.now();
    let first_poll_at = app.providers[&p.provider].first_poll_at(&app.health, &p.provider, now);
    match app.store.register(&p, now, first_poll_at).await? {
        Registered::Created(_) => {
            tracing::info!(payment_id = %p.id, provider = %p.provider, "payment registered");
            Ok((StatusCode::CREATED, Json(load(&app, p.id.as_str()).await?)))
        }
        Registered::Existing(_) => Ok((StatusCode::OK, Json(load(&app, p.id.as_str()).await?))),
        Registered::Conflict(existing) => {
            let fields = differences(&existing, &p);
            Err(ApiError::Conflict {
                code: "id_conflict",
                message: format!(
                    "payment `{}` is already registered with a different body (differs in: {fields})",
                    p.id
                ),
                field: Some("id".into()),
            })
        }
        Registered::RefTaken { other_id, field } => {
            let value = match field {
                "provider_ref" => p.provider_ref.as_ref().map(ProviderRef::as_str),
                _ => p.merchant_ref.as_ref().map(MerchantRef::as_str),
            };
            Err(ApiError::Conflict {
                code: if field == "provider_ref" {
                    "provider_ref_conflict"
                } else {
                    "merchant_ref_conflict"
                },
                message: format!(
                    "provider `{}` {field} `{}` is already tracked by payment `{other_id}`",
                    p.provider,
                    value.unwrap_or_default()
                ),
                field: Some(field.into()),
            })
        }
    }
}

/// One payment with its poll job and history.
#[utoipa::path(get, path = "/payments/{id}", operation_id = "get_payment", tag = "payments",
    params(("id" = String, Path, description = "The payment's id")),
    responses(
        (status = 200, description = "The payment", body = PaymentOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 404, description = "No such payment", body = ErrorBody),
        (status = 410, description = "Archived by retention: `error.archive` names the file", body = ErrorBody),
    ))]
#[tracing::instrument(skip(reads))]
pub(crate) async fn show(
    reads: Reads,
    Path(id): Path<String>,
) -> Result<Json<PaymentOut>, ApiError> {
    Ok(Json(PaymentOut::full(view(&reads, &id).await?)))
}

/// Every status query made for a payment, oldest first.
#[utoipa::path(get, path = "/payments/{id}/attempts", operation_id = "list_attempts", tag = "payments",
    params(("id" = String, Path, description = "The payment's id")),
    responses(
        (status = 200, description = "The provider calls", body = AttemptsOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 404, description = "No such payment", body = ErrorBody),
        (status = 410, description = "Archived by retention: `error.archive` names the file", body = ErrorBody),
    ))]
pub(crate) async fn attempts(
    reads: Reads,
    Path(id): Path<String>,
) -> Result<Json<AttemptsOut>, ApiError> {
    view(&reads, &id).await?;
    let list: Vec<AttemptOut> = reads
        .store
        .attempts(&id)
        .await?
        .into_iter()
        .map(|AttemptRecord { id, attempt: a }| AttemptOut {
            id,
            started_at: a.started_at.to_rfc3339(),
            latency_ms: a.latency_ms,
            worker: a.worker,
            outcome: a.outcome,
            provider_status: a.provider_status,
            error_class: a.error_class,
            error: a.error,
        })
        .collect();
    Ok(Json(AttemptsOut {
        payment_id: id,
        attempts: list,
    }))
}

/// Payments in id order, filtered by status and provider.
#[utoipa::path(get, path = "/payments", operation_id = "list_payments", tag = "payments", params(ListParams),
    responses(
        (status = 200, description = "A page", body = PaymentPage),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 422, description = "A parameter is invalid", body = ErrorBody),
    ))]
pub(crate) async fn list(
    reads: Reads,
    ApiQuery(q): ApiQuery<ListParams>,
) -> Result<Json<PaymentPage>, ApiError> {
    let status = q
        .status
        .map(|s| {
            s.parse::<Status>()
                .map_err(|e| ApiError::invalid("status", e.to_string()))
        })
        .transpose()?;
    let limit = parse_limit(q.limit, 50, 500)?;
    let page = reads
        .store
        .list(&ListFilter {
            status,
            provider: q.provider,
            after_id: q.cursor,
            limit,
        })
        .await?;
    let next_cursor = (page.len() as u32 == limit)
        .then(|| page.last().map(|p| p.id.clone()))
        .flatten();
    let payments: Vec<PaymentOut> = page.into_iter().map(PaymentOut::summary).collect();
    Ok(Json(PaymentPage {
        payments,
        next_cursor,
    }))
}

/// Settle a payment by hand (from review or any non-final status). The
/// actor recorded is the token's name; the change and its audit record
/// commit together.
#[utoipa::path(post, path = "/payments/{id}/resolve", operation_id = "resolve_payment", tag = "payments", request_body = ResolveIn,
    params(("id" = String, Path, description = "The payment's id")),
    responses(
        (status = 200, description = "Resolved (or it already had that status)", body = PaymentOut),
        (status = 400, description = "Not JSON", body = ErrorBody),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token's role may not resolve", body = ErrorBody),
        (status = 404, description = "No such payment", body = ErrorBody),
        (status = 409, description = "The transition is not allowed from its status", body = ErrorBody),
        (status = 422, description = "A field is missing or invalid", body = ErrorBody),
    ))]
#[tracing::instrument(skip(app, caller, body))]
pub(crate) async fn resolve(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<PaymentOut>, ApiError> {
    caller.identity.require(Permission::Resolve)?;
    let r: ResolveIn = parse_body(body)?;
    let status = required(r.status, "status")?;
    let reason = required(r.reason.filter(|s| !s.trim().is_empty()), "reason")?;
    let ask = ResolveAsk {
        status: &status,
        reason: &reason,
        note: r.note.as_deref(),
        actor: r.actor.as_deref(),
    };
    resolve_as(&app, &caller, &id, ask).await?;
    Ok(Json(load(&app, &id).await?))
}

/// Query the provider as soon as a worker is free.
#[utoipa::path(post, path = "/payments/{id}/poll", operation_id = "poll_now", tag = "payments",
    params(("id" = String, Path, description = "The payment's id")),
    responses(
        (status = 202, description = "Scheduled, or already in flight", body = PollAnswer),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token's role may not ask for polls", body = ErrorBody),
        (status = 404, description = "No such payment", body = ErrorBody),
        (status = 409, description = "Already final", body = ErrorBody),
    ))]
pub(crate) async fn poll_now(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<PollAnswer>), ApiError> {
    match poll_now_as(&app, &caller, &id).await? {
        PollNow::Scheduled => Ok((StatusCode::ACCEPTED, Json(PollAnswer { poll: "scheduled" }))),
        PollNow::InFlight => Ok((StatusCode::ACCEPTED, Json(PollAnswer { poll: "in_flight" }))),
        PollNow::AlreadyFinal => Err(ApiError::Conflict {
            code: "already_final",
            message: format!("payment `{id}` is already final; there is nothing to poll"),
            field: None,
        }),
        PollNow::NotFound => Err(ApiError::NotFound(format!("no payment with id `{id}`"))),
    }
}
