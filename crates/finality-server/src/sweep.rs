//! `GET /v1/sweep/runs`: what the reconciliation sweep found and repaired,
//! run by run, newest first.

use crate::error::ApiQuery;
use crate::openapi::ErrorBody;
use crate::payments::parse_limit;
use crate::replica::Reads;
use crate::{ApiError, App};
use axum::Json;
use finality_store::sweep::SweepRun;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<App> {
    OpenApiRouter::new().routes(routes!(runs))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunsParams {
    /// 1 to 200; default 20.
    #[param(value_type = Option<u32>)]
    pub limit: Option<String>,
}

/// One run of the sweep.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SweepRunOut {
    pub id: i64,
    /// The node (engine worker id) that ran it.
    pub holder: String,
    pub started_at: String,
    pub finished_at: String,
    /// Payments read.
    pub scanned: i64,
    /// The run reached the last payment: a pass over all of them ended.
    pub pass_complete: bool,
    /// Findings by kind: `job_missing`, `job_of_final_payment`,
    /// `status_behind_provider`, `open_past_give_up`, `webhook_stuck`,
    /// `webhook_orphaned`.
    pub findings: BTreeMap<String, i64>,
    /// How many findings were repaired (orphaned webhooks are only reported).
    pub repaired: i64,
}

impl From<SweepRun> for SweepRunOut {
    fn from(r: SweepRun) -> Self {
        SweepRunOut {
            id: r.id,
            holder: r.holder,
            started_at: r.started_at.to_rfc3339(),
            finished_at: r.finished_at.to_rfc3339(),
            scanned: r.scanned,
            pass_complete: r.pass_complete,
            findings: r.findings,
            repaired: r.repaired,
        }
    }
}

/// The newest runs.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SweepRunsOut {
    runs: Vec<SweepRunOut>,
}

/// The reconciliation sweep's runs, newest first.
#[utoipa::path(get, path = "/sweep/runs", operation_id = "list_sweep_runs", tag = "operations", params(RunsParams),
    responses(
        (status = 200, description = "The newest runs", body = SweepRunsOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 422, description = "`limit` is invalid", body = ErrorBody),
    ))]
async fn runs(
    reads: Reads,
    ApiQuery(q): ApiQuery<RunsParams>,
) -> Result<Json<SweepRunsOut>, ApiError> {
    let limit = parse_limit(q.limit, 20, 200)?;
    let runs = reads.store.sweep_runs(limit).await?;
    Ok(Json(SweepRunsOut {
        runs: runs.into_iter().map(SweepRunOut::from).collect(),
    }))
}
