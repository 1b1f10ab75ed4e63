//! `GET /v1/audit`: the trail of manual actions, newest first.

use crate::auth::Caller;
use crate::error::ApiQuery;
use crate::identity::Permission;
use crate::openapi::{Cursor, ErrorBody};
use crate::payments::parse_limit;
use crate::replica::Reads;
use crate::{ApiError, App};
use axum::Json;
use finality_store::review::{AuditFilter, AuditRecord};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<App> {
    OpenApiRouter::new().routes(routes!(list))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditParams {
    /// Only actions by this token name.
    actor: Option<String>,
    /// Only actions on this payment.
    payment_id: Option<String>,
    /// 1 to 500; default 50.
    #[param(value_type = Option<u32>)]
    limit: Option<String>,
    #[param(value_type = Option<Cursor>)]
    cursor: Option<String>,
}

/// One manual action.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditOut {
    pub id: i64,
    pub at: String,
    /// The name of the token that acted.
    pub actor: String,
    pub role: String,
    pub action: String,
    pub payment_id: Option<String>,
    /// What was asked (status, reason, note, …).
    #[schema(value_type = Object)]
    pub detail: serde_json::Value,
    pub outcome: String,
    pub remote_addr: Option<String>,
}

impl From<AuditRecord> for AuditOut {
    fn from(r: AuditRecord) -> Self {
        let e = r.entry;
        AuditOut {
            id: r.id,
            at: e.at.to_rfc3339(),
            actor: e.actor,
            role: e.role,
            action: e.action,
            payment_id: e.payment_id,
            detail: e.detail,
            outcome: e.outcome,
            remote_addr: e.remote_addr,
        }
    }
}

/// A page of the audit trail, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditPage {
    records: Vec<AuditOut>,
    /// Pass as `cursor` for the next (older) page; `null` on the last.
    next_cursor: Option<String>,
}

/// Manual actions (resolves, polls asked for, console sign-ins), newest
/// first: who, what, when, from which address, and what came of it.
#[utoipa::path(get, path = "/audit", operation_id = "list_audit", tag = "operations", params(AuditParams),
    responses(
        (status = 200, description = "A page, newest first", body = AuditPage),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token's role may not read the audit trail", body = ErrorBody),
        (status = 422, description = "A parameter is invalid", body = ErrorBody),
    ))]
async fn list(
    reads: Reads,
    caller: Caller,
    ApiQuery(q): ApiQuery<AuditParams>,
) -> Result<Json<AuditPage>, ApiError> {
    caller.identity.require(Permission::Audit)?;
    let limit = parse_limit(q.limit, 50, 500)?;
    let before_id = q
        .cursor
        .map(|c| {
            c.parse::<i64>().map_err(|_| {
                ApiError::invalid("cursor", format!("`{c}` is not a cursor this API gave"))
            })
        })
        .transpose()?;
    let records = reads
        .store
        .audit_list(&AuditFilter {
            actor: q.actor,
            payment_id: q.payment_id,
            before_id,
            limit,
        })
        .await?;
    let next_cursor = (records.len() as u32 == limit)
        .then(|| records.last().map(|r| r.id.to_string()))
        .flatten();
    Ok(Json(AuditPage {
        records: records.into_iter().map(AuditOut::from).collect(),
        next_cursor,
    }))
}
