//! `GET /v1/reconciliations` and `GET /v1/reconciliations/{id}`: the
//! settlement reports imported (`finality reconcile`), with their counts by
//! outcome and every line that did not simply match.

use crate::openapi::ErrorBody;
use crate::payments::parse_limit;
use crate::{ApiError, AppState};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::Json;
use finality_store::reconciliations::{ReconLine, ReconRun};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(show))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListParams {
    /// 1 to 200; default 20.
    #[param(value_type = Option<u32>)]
    limit: Option<String>,
}

/// One imported settlement report.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReconRunOut {
    pub id: i64,
    pub provider: String,
    pub file_name: String,
    /// SHA-256 of the file: the same file imported again changes nothing.
    pub sha256: String,
    pub started_at: String,
    /// `null` while running, or if the import died (it is redone from the
    /// start on the next import of the same file).
    pub finished_at: Option<String>,
    pub lines: i64,
    /// Lines by outcome: `matched`, `applied`, `reversed`,
    /// `amount_mismatch`, `contradiction`, `unknown_here`, `ignored`.
    pub counts: BTreeMap<String, i64>,
}

impl From<ReconRun> for ReconRunOut {
    fn from(r: ReconRun) -> Self {
        ReconRunOut {
            id: r.id,
            provider: r.provider,
            file_name: r.file_name,
            sha256: r.sha256,
            started_at: r.started_at.to_rfc3339(),
            finished_at: r.finished_at.map(|t| t.to_rfc3339()),
            lines: r.lines,
            counts: r.counts,
        }
    }
}

/// A line that did not simply match, and what became of it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReconLineOut {
    pub line: i64,
    /// charge, refund, chargeback, fee, payout, other.
    pub kind: String,
    pub provider_ref: Option<String>,
    /// Minor units; negative for money going back.
    pub amount: i64,
    pub currency: String,
    pub outcome: String,
    pub reason: String,
    pub payment_id: Option<String>,
}

impl From<ReconLine> for ReconLineOut {
    fn from(l: ReconLine) -> Self {
        ReconLineOut {
            line: l.line,
            kind: l.kind,
            provider_ref: l.provider_ref,
            amount: l.amount,
            currency: l.currency,
            outcome: l.outcome,
            reason: l.reason,
            payment_id: l.payment_id,
        }
    }
}

/// The newest imports.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReconRunsOut {
    runs: Vec<ReconRunOut>,
}

/// One import with the lines that did not simply match (the first 1,000).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReconRunDetail {
    run: ReconRunOut,
    lines: Vec<ReconLineOut>,
}

/// Settlement reports imported, newest first.
#[utoipa::path(get, path = "/reconciliations", tag = "operations", params(ListParams),
    responses(
        (status = 200, description = "The newest imports", body = ReconRunsOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 422, description = "`limit` is invalid", body = ErrorBody),
    ))]
async fn list(
    State(app): State<AppState>,
    q: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<ReconRunsOut>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::invalid("query", e.body_text()))?;
    let limit = parse_limit(q.limit, 20, 200)?;
    let runs = app.store.recon_runs(limit).await?;
    Ok(Json(ReconRunsOut {
        runs: runs.into_iter().map(ReconRunOut::from).collect(),
    }))
}

/// One import and its lines that did not simply match.
#[utoipa::path(get, path = "/reconciliations/{id}", tag = "operations",
    params(("id" = i64, Path, description = "The run's id")),
    responses(
        (status = 200, description = "The import", body = ReconRunDetail),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 404, description = "No such import", body = ErrorBody),
    ))]
async fn show(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ReconRunDetail>, ApiError> {
    let not_found = || ApiError::NotFound(format!("no reconciliation run `{id}`"));
    let n: i64 = id.parse().map_err(|_| not_found())?;
    // Runs are few: the newest thousand are read and the one picked.
    let run = app
        .store
        .recon_runs(1000)
        .await?
        .into_iter()
        .find(|r| r.id == n)
        .ok_or_else(not_found)?;
    let lines = app.store.recon_lines(n, 1000).await?;
    Ok(Json(ReconRunDetail {
        run: run.into(),
        lines: lines.into_iter().map(ReconLineOut::from).collect(),
    }))
}
