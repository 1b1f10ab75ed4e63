//! `/v1/payments`: register, read, list, attempts, resolve, poll now.

use crate::auth::Caller;
use crate::identity::Permission;
use crate::openapi::{Cursor, ErrorBody};
use crate::{ApiError, AppState};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use finality_core::money::{
    bounded_text, limits, Amount, Currency, MerchantRef, PaymentId, ProviderRef,
};
use finality_core::{Kind, Source, Status};
use finality_store::manual::{ResolveError, Resolved};
use finality_store::{
    AttemptRecord, HistoryEntry, ListFilter, NewPayment, Payment, PaymentView, PollNow, PollState,
    Registered,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(show))
        .routes(routes!(attempts))
        .routes(routes!(resolve))
        .routes(routes!(poll_now))
}

/// Parse a JSON body, naming the field at fault in every error.
fn parse_body<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let body = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(1024 * 1024),
        _ => ApiError::Malformed(e.body_text()),
    })?;
    let de = &mut serde_json::Deserializer::from_slice(&body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ApiError::Malformed(format!("request body is not valid JSON: {inner}"))
        } else if path == "." {
            let msg = inner.to_string();
            // "unknown field `x`" / "missing field `x`": name it as the field.
            let field = msg.split('`').nth(1).unwrap_or("body").to_string();
            ApiError::invalid(field, msg)
        } else {
            ApiError::invalid(path, inner.to_string())
        }
    })
}

/// `limit` from a query string: `default` when absent, else 1..=`max`.
pub(crate) fn parse_limit(raw: Option<String>, default: u32, max: u32) -> Result<u32, ApiError> {
    match raw {
        None => Ok(default),
        Some(l) => l
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| {
                ApiError::invalid("limit", format!("`{l}` is not an integer from 1 to {max}"))
            }),
    }
}

fn required<T>(v: Option<T>, field: &'static str) -> Result<T, ApiError> {
    v.ok_or_else(|| ApiError::invalid(field, format!("missing field `{field}`")))
}

/// `POST /v1/payments` body. Fields are optional here so that a missing one
/// is reported by name, with the same shape as every other field error.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PaymentIn {
    /// Your id for it: 1 to 255 printable ASCII characters, no spaces or `/`.
    #[schema(required = true, value_type = String)]
    id: Option<String>,
    /// A configured provider's name.
    #[schema(required = true, value_type = String)]
    provider: Option<String>,
    /// The provider's id; give `merchant_ref` instead when it is not known
    /// (the create call timed out).
    provider_ref: Option<String>,
    merchant_ref: Option<String>,
    /// `payment` (default), `refund` or `payout`.
    #[schema(value_type = Option<Kind>)]
    kind: Option<String>,
    /// Minor units of the currency (cents; yen for JPY), positive, at most
    /// 2^53 − 1 and what the provider takes.
    #[schema(required = true, value_type = i64, minimum = 1, maximum = 9_007_199_254_740_991_i64)]
    amount: Option<i64>,
    /// An ISO 4217 code with a minor unit, upper case.
    #[schema(required = true, value_type = String)]
    currency: Option<String>,
    /// Your own keys and values, kept on the payment and returned (at
    /// most 16,384 bytes as compact JSON).
    #[schema(value_type = Option<Object>)]
    metadata: Option<Value>,
}

impl PaymentIn {
    fn into_domain(self, app: &AppState) -> Result<NewPayment, ApiError> {
        let id = PaymentId::parse(&required(self.id, "id")?)?;
        let provider = required(self.provider, "provider")?;
        if !app.providers.contains_key(&provider) {
            let mut known: Vec<&str> = app.providers.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(ApiError::invalid(
                "provider",
                format!(
                    "unknown provider `{provider}` (configured: {})",
                    known.join(", ")
                ),
            ));
        }
        let provider_ref = self
            .provider_ref
            .as_deref()
            .map(ProviderRef::parse)
            .transpose()?;
        let merchant_ref = self
            .merchant_ref
            .as_deref()
            .map(MerchantRef::parse)
            .transpose()?;
        if provider_ref.is_none() && merchant_ref.is_none() {
            return Err(ApiError::invalid(
                "provider_ref",
                "missing field `provider_ref` (give `merchant_ref` instead when the provider's \
                 id is not known, e.g. the create call timed out)",
            ));
        }
        let kind = match self.kind {
            None => Kind::Payment,
            Some(k) => k
                .parse::<Kind>()
                .map_err(|e| ApiError::invalid("kind", e.to_string()))?,
        };
        if let Some(r) = &provider_ref {
            // Each adapter knows which ids it can ask about for which kind
            // (a Stripe `po_` is a payout): refused now, not after a week of
            // polls at the wrong endpoint.
            app.providers[&provider]
                .adapter
                .check_ref(kind, r.as_str())
                .map_err(|e| ApiError::invalid("provider_ref", e))?;
        }
        let currency = Currency::parse(&required(self.currency, "currency")?)?;
        let amount = Amount::new(required(self.amount, "amount")?, currency)?;
        app.providers[&provider]
            .adapter
            .check_amount(&amount)
            .map_err(|e| ApiError::invalid("amount", e))?;
        let metadata = match self.metadata {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err(ApiError::invalid("metadata", "must be a JSON object")),
        };
        // Stored on the payment and carried by its events: bounded, so one
        // registration cannot store megabytes a hundred times over.
        let size = metadata.to_string().len();
        if size > limits::METADATA_BYTES {
            return Err(ApiError::invalid(
                "metadata",
                format!(
                    "is {size} bytes as JSON; at most {}",
                    limits::METADATA_BYTES
                ),
            ));
        }
        Ok(NewPayment {
            id,
            provider,
            provider_ref,
            merchant_ref,
            kind,
            amount,
            metadata,
        })
    }
}

/// The poll job of an open payment.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PollOut {
    attempts: u32,
    /// Status queries that failed in a row without an answer.
    errors: u32,
    next_poll_at: Option<String>,
    in_flight: bool,
    last_error: Option<String>,
}

/// One status change.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct HistoryOut {
    from: Option<Status>,
    to: Status,
    source: Source,
    event_id: Option<String>,
    reason: Option<String>,
    actor: Option<String>,
    at: String,
}

/// The payment resource, as `GET /v1/payments/{id}` returns it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PaymentOut {
    id: String,
    provider: String,
    /// `null` until found when registered by `merchant_ref` alone.
    provider_ref: Option<String>,
    merchant_ref: Option<String>,
    kind: Kind,
    amount: i64,
    currency: String,
    #[schema(value_type = Object)]
    metadata: Value,
    status: Status,
    status_source: Option<Source>,
    created_at: String,
    updated_at: String,
    finalized_at: Option<String>,
    /// On the single resource: the poll job, `null` once final. Absent in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<PollOut>, required = false)]
    poll: Option<Option<PollOut>>,
    /// On the single resource: every status change, oldest first. Absent in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    history: Option<Vec<HistoryOut>>,
}

impl PaymentOut {
    fn summary(p: Payment) -> Self {
        PaymentOut {
            id: p.id,
            provider: p.provider,
            provider_ref: p.provider_ref,
            merchant_ref: p.merchant_ref,
            kind: p.kind,
            amount: p.amount,
            currency: p.currency,
            metadata: p.metadata,
            status: p.status,
            status_source: p.status_source,
            created_at: p.created_at.to_rfc3339(),
            updated_at: p.updated_at.to_rfc3339(),
            finalized_at: p.finalized_at.map(|t| t.to_rfc3339()),
            poll: None,
            history: None,
        }
    }

    fn full(v: PaymentView) -> Self {
        let poll = v.poll.map(|p: PollState| PollOut {
            attempts: p.attempts,
            errors: p.errors,
            next_poll_at: p.next_poll_at.map(|t| t.to_rfc3339()),
            in_flight: p.locked_by.is_some(),
            last_error: p.last_error,
        });
        let history = v
            .history
            .into_iter()
            .map(|h: HistoryEntry| HistoryOut {
                from: h.from,
                to: h.to,
                source: h.source,
                event_id: h.event_id,
                reason: h.reason,
                actor: h.actor,
                at: h.at.to_rfc3339(),
            })
            .collect();
        PaymentOut {
            poll: Some(poll),
            history: Some(history),
            ..PaymentOut::summary(v.payment)
        }
    }
}

async fn load(app: &AppState, id: &str) -> Result<PaymentOut, ApiError> {
    match app.store.get(id).await? {
        Some(v) => Ok(PaymentOut::full(v)),
        None => Err(missing(app, id).await),
    }
}

/// A payment not in the database: archived by retention (410, with where
/// it went), or never registered (404).
pub(crate) async fn missing(app: &AppState, id: &str) -> ApiError {
    match app.store.archived_payment(id).await {
        Ok(Some(t)) => ApiError::Gone {
            message: format!(
                "payment `{id}` was {} and archived on {} by retention; `finality archive restore {}` brings its day back",
                t.status,
                t.archived_at.to_rfc3339(),
                t.archive
            ),
            archive: t.archive,
            archived_at: t.archived_at.to_rfc3339(),
        },
        Ok(None) => ApiError::NotFound(format!("no payment with id `{id}`")),
        Err(e) => e.into(),
    }
}

/// Name the fields in which a repeated registration differs.
fn differences(existing: &Payment, p: &NewPayment) -> String {
    let mut d = Vec::new();
    if existing.provider != p.provider {
        d.push("provider");
    }
    if let Some(r) = &p.provider_ref {
        if existing.provider_ref.as_deref() != Some(r.as_str()) {
            d.push("provider_ref");
        }
    }
    if existing.merchant_ref.as_deref() != p.merchant_ref.as_ref().map(MerchantRef::as_str) {
        d.push("merchant_ref");
    }
    if existing.kind != p.kind {
        d.push("kind");
    }
    if existing.amount != p.amount.minor {
        d.push("amount");
    }
    if existing.currency != p.amount.currency.as_str() {
        d.push("currency");
    }
    if existing.metadata != p.metadata {
        d.push("metadata");
    }
    d.join(", ")
}

/// Register a payment to drive to its final status. Idempotent on `id`:
/// the same body again answers 200 with the stored payment.
#[utoipa::path(post, path = "/payments", tag = "payments", request_body = PaymentIn,
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
async fn create(
    State(app): State<AppState>,
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
#[utoipa::path(get, path = "/payments/{id}", tag = "payments",
    params(("id" = String, Path, description = "The payment's id")),
    responses(
        (status = 200, description = "The payment", body = PaymentOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 404, description = "No such payment", body = ErrorBody),
        (status = 410, description = "Archived by retention: `error.archive` names the file", body = ErrorBody),
    ))]
#[tracing::instrument(skip(app))]
async fn show(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PaymentOut>, ApiError> {
    Ok(Json(load(&app, &id).await?))
}

/// One status query to the provider.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct AttemptOut {
    id: i64,
    started_at: String,
    latency_ms: i64,
    worker: String,
    outcome: String,
    provider_status: Option<String>,
    error_class: Option<String>,
    error: Option<String>,
}

/// A payment's provider calls.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct AttemptsOut {
    payment_id: String,
    attempts: Vec<AttemptOut>,
}

/// Every status query made for a payment, oldest first.
#[utoipa::path(get, path = "/payments/{id}/attempts", tag = "payments",
    params(("id" = String, Path, description = "The payment's id")),
    responses(
        (status = 200, description = "The provider calls", body = AttemptsOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 404, description = "No such payment", body = ErrorBody),
        (status = 410, description = "Archived by retention: `error.archive` names the file", body = ErrorBody),
    ))]
async fn attempts(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<AttemptsOut>, ApiError> {
    if app.store.get(&id).await?.is_none() {
        return Err(missing(&app, &id).await);
    }
    let list: Vec<AttemptOut> = app
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

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only payments with this status.
    #[param(value_type = Option<Status>)]
    status: Option<String>,
    /// Only payments of this provider.
    provider: Option<String>,
    /// 1 to 500; default 50.
    #[param(value_type = Option<u32>)]
    limit: Option<String>,
    #[param(value_type = Option<Cursor>)]
    cursor: Option<String>,
}

/// A page of payments, in id order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PaymentPage {
    payments: Vec<PaymentOut>,
    /// Pass as `cursor` for the next page; `null` on the last.
    next_cursor: Option<String>,
}

/// Payments in id order, filtered by status and provider.
#[utoipa::path(get, path = "/payments", tag = "payments", params(ListParams),
    responses(
        (status = 200, description = "A page", body = PaymentPage),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 422, description = "A parameter is invalid", body = ErrorBody),
    ))]
async fn list(
    State(app): State<AppState>,
    q: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<PaymentPage>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::invalid("query", e.body_text()))?;
    let status = q
        .status
        .map(|s| {
            s.parse::<Status>()
                .map_err(|e| ApiError::invalid("status", e.to_string()))
        })
        .transpose()?;
    let limit = parse_limit(q.limit, 50, 500)?;
    let page = app
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

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ResolveIn {
    /// A final status: succeeded, failed, cancelled or reversed.
    #[schema(required = true, value_type = Status)]
    status: Option<String>,
    /// Why (kept on the history row).
    #[schema(required = true, value_type = String, max_length = 500)]
    reason: Option<String>,
    /// Free text kept in the audit record beside the reason.
    #[schema(max_length = 2000)]
    note: Option<String>,
    /// Only with the one shared token, which cannot tell people apart;
    /// with named tokens the actor is the token's name.
    #[schema(max_length = 100)]
    actor: Option<String>,
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
    let given = ask.actor.map(str::trim).filter(|a| !a.is_empty());
    let actor = if caller.identity.shared {
        // One token for everyone: the caller says who they are, as before
        // named tokens existed.
        given
            .ok_or_else(|| ApiError::invalid("actor", "missing field `actor`"))?
            .to_string()
    } else {
        match given {
            Some(a) if a != &*caller.identity.name => {
                return Err(ApiError::invalid(
                    "actor",
                    format!(
                        "the actor is the name of the token used (`{}`), not chosen in the body; \
                         leave `actor` out and put remarks in `note`",
                        caller.identity.name
                    ),
                ))
            }
            _ => caller.identity.name.to_string(),
        }
    };
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

/// Settle a payment by hand (from review or any non-final status). The
/// actor recorded is the token's name; the change and its audit record
/// commit together.
#[utoipa::path(post, path = "/payments/{id}/resolve", tag = "payments", request_body = ResolveIn,
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
async fn resolve(
    State(app): State<AppState>,
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
struct PollAnswer {
    /// `scheduled`, or `in_flight` when a worker is asking right now.
    poll: &'static str,
}

/// Query the provider as soon as a worker is free.
#[utoipa::path(post, path = "/payments/{id}/poll", tag = "payments",
    params(("id" = String, Path, description = "The payment's id")),
    responses(
        (status = 202, description = "Scheduled, or already in flight", body = PollAnswer),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token's role may not ask for polls", body = ErrorBody),
        (status = 404, description = "No such payment", body = ErrorBody),
        (status = 409, description = "Already final", body = ErrorBody),
    ))]
async fn poll_now(
    State(app): State<AppState>,
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
