//! `GET /v1/audit`: the trail of manual actions, newest first.

use crate::auth::Caller;
use crate::identity::Permission;
use crate::payments::parse_limit;
use crate::{ApiError, AppState};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use finality_store::review::{AuditFilter, AuditRecord};
use serde::{Deserialize, Serialize};

pub(crate) fn router() -> Router<AppState> {
    Router::new().route("/audit", get(list))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditParams {
    actor: Option<String>,
    payment_id: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// One manual action.
#[derive(Debug, Serialize)]
pub(crate) struct AuditOut {
    pub id: i64,
    pub at: String,
    /// The name of the token that acted.
    pub actor: String,
    pub role: String,
    pub action: String,
    pub payment_id: Option<String>,
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

#[derive(Debug, Serialize)]
pub(crate) struct AuditPage {
    records: Vec<AuditOut>,
    /// Pass as `cursor` for the next (older) page; `null` on the last.
    next_cursor: Option<String>,
}

async fn list(
    State(app): State<AppState>,
    caller: Caller,
    q: Result<Query<AuditParams>, QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    caller.identity.require(Permission::Audit)?;
    let Query(q) = q.map_err(|e| ApiError::invalid("query", e.body_text()))?;
    let limit = parse_limit(q.limit, 50, 500)?;
    let before_id = q
        .cursor
        .map(|c| {
            c.parse::<i64>().map_err(|_| {
                ApiError::invalid("cursor", format!("`{c}` is not a cursor this API gave"))
            })
        })
        .transpose()?;
    let records = app
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
