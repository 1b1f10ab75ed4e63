//! `/v1/payments`: register, read, list, attempts, resolve, poll now.

use crate::auth::Caller;
use crate::identity::Permission;
use crate::{ApiError, AppState};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use finality_core::money::{Amount, Currency, MerchantRef, PaymentId, ProviderRef};
use finality_core::{Kind, Source, Status};
use finality_store::manual::{ResolveError, Resolved};
use finality_store::{
    AttemptRecord, HistoryEntry, ListFilter, NewPayment, Payment, PaymentView, PollNow, PollState,
    Registered,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/payments", post(create).get(list))
        .route("/payments/{id}", get(show))
        .route("/payments/{id}/attempts", get(attempts))
        .route("/payments/{id}/resolve", post(resolve))
        .route("/payments/{id}/poll", post(poll_now))
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
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PaymentIn {
    id: Option<String>,
    provider: Option<String>,
    provider_ref: Option<String>,
    merchant_ref: Option<String>,
    kind: Option<String>,
    amount: Option<i64>,
    currency: Option<String>,
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
        let metadata = match self.metadata {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err(ApiError::invalid("metadata", "must be a JSON object")),
        };
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

#[derive(Debug, Serialize)]
struct PollOut {
    attempts: u32,
    /// Status queries that failed in a row without an answer.
    errors: u32,
    next_poll_at: Option<String>,
    in_flight: bool,
    last_error: Option<String>,
}

#[derive(Debug, Serialize)]
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
#[derive(Debug, Serialize)]
struct PaymentOut {
    id: String,
    provider: String,
    /// `null` until found when registered by `merchant_ref` alone.
    provider_ref: Option<String>,
    merchant_ref: Option<String>,
    kind: Kind,
    amount: i64,
    currency: String,
    metadata: Value,
    status: Status,
    status_source: Option<Source>,
    created_at: String,
    updated_at: String,
    finalized_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    poll: Option<Option<PollOut>>,
    #[serde(skip_serializing_if = "Option::is_none")]
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
        None => Err(ApiError::NotFound(format!("no payment with id `{id}`"))),
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

#[tracing::instrument(skip(app))]
async fn show(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PaymentOut>, ApiError> {
    Ok(Json(load(&app, &id).await?))
}

#[derive(Debug, Serialize)]
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

async fn attempts(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if app.store.get(&id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no payment with id `{id}`")));
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
    Ok(Json(json!({"payment_id": id, "attempts": list})))
}

#[derive(Debug, Deserialize)]
struct ListParams {
    status: Option<String>,
    provider: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

async fn list(
    State(app): State<AppState>,
    q: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
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
    Ok(Json(
        json!({"payments": payments, "next_cursor": next_cursor}),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveIn {
    status: Option<String>,
    reason: Option<String>,
    /// Free text kept in the audit record beside the reason.
    note: Option<String>,
    /// Only with the one shared token, which cannot tell people apart;
    /// with named tokens the actor is the token's name.
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
    let out = app.store.poll_now(id, now).await?;
    let outcome = match out {
        PollNow::Scheduled => "scheduled",
        PollNow::InFlight => "in flight already",
        PollNow::AlreadyFinal => "refused: already final",
        PollNow::NotFound => "refused: no such payment",
    };
    if out != PollNow::NotFound {
        let mut audit = caller.audit("poll_now", Some(id), json!({}), now);
        audit.outcome = outcome.into();
        app.store.audit_append(&audit).await?;
    }
    Ok(out)
}

async fn poll_now(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    match poll_now_as(&app, &caller, &id).await? {
        PollNow::Scheduled => Ok((StatusCode::ACCEPTED, Json(json!({"poll": "scheduled"})))),
        PollNow::InFlight => Ok((StatusCode::ACCEPTED, Json(json!({"poll": "in_flight"})))),
        PollNow::AlreadyFinal => Err(ApiError::Conflict {
            code: "already_final",
            message: format!("payment `{id}` is already final; there is nothing to poll"),
            field: None,
        }),
        PollNow::NotFound => Err(ApiError::NotFound(format!("no payment with id `{id}`"))),
    }
}
