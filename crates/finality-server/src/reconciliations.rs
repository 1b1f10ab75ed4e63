//! `GET /v1/reconciliations` and `GET /v1/reconciliations/{id}`: the
//! settlement reports imported (`finality reconcile`), with their counts by
//! outcome and every line that did not simply match.

use crate::auth::Caller;
use crate::error::ApiQuery;
use crate::identity::Permission;
use crate::openapi::ErrorBody;
use crate::payments::parse_limit;
use crate::replica::Reads;
use crate::sweep::RunsParams;
use crate::{ApiError, App};
use axum::extract::{Path, State};
use axum::Json;
use finality_store::reconciliations::{ReconLine, ReconRun};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<App> {
    OpenApiRouter::new()
        .routes(routes!(list, import))
        .routes(routes!(show))
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
    /// The line in the file; null for a payment the report should have
    /// listed and did not (`missing_from_report`).
    pub line: Option<i64>,
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
#[utoipa::path(get, path = "/reconciliations", operation_id = "list_reconciliations", tag = "operations", params(RunsParams),
    responses(
        (status = 200, description = "The newest imports", body = ReconRunsOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 422, description = "`limit` is invalid", body = ErrorBody),
    ))]
async fn list(
    reads: Reads,
    ApiQuery(q): ApiQuery<RunsParams>,
) -> Result<Json<ReconRunsOut>, ApiError> {
    let limit = parse_limit(q.limit, 20, 200)?;
    let runs = reads.store.recon_runs(limit).await?;
    Ok(Json(ReconRunsOut {
        runs: runs.into_iter().map(ReconRunOut::from).collect(),
    }))
}

/// One import and its lines that did not simply match.
#[utoipa::path(get, path = "/reconciliations/{id}", operation_id = "get_reconciliation", tag = "operations",
    params(("id" = i64, Path, description = "The run's id")),
    responses(
        (status = 200, description = "The import", body = ReconRunDetail),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 404, description = "No such import", body = ErrorBody),
    ))]
async fn show(reads: Reads, Path(id): Path<String>) -> Result<Json<ReconRunDetail>, ApiError> {
    let not_found = || ApiError::NotFound(format!("no reconciliation run `{id}`"));
    let n: i64 = id.parse().map_err(|_| not_found())?;
    let run = reads.store.recon_run(n).await?.ok_or_else(not_found)?;
    let lines = reads.store.recon_lines(n, 1000).await?;
    Ok(Json(ReconRunDetail {
        run: run.into(),
        lines: lines.into_iter().map(ReconLineOut::from).collect(),
    }))
}

/// Largest settlement report accepted by upload (the CLI has no limit).
pub const UPLOAD_LIMIT: u64 = 2 * 1024 * 1024 * 1024;
/// Longest silence between two chunks of an upload.
const CHUNK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImportParams {
    /// The provider the report is from (a configured name).
    provider: String,
    /// `adyen-settlement-details`, `stripe-itemized`, `paypal-stl`,
    /// `wechat-trade-bill`, `alipay-trade-bill`, or `csv` with the columns
    /// named below.
    format: String,
    /// The report's name, kept with the run (default `upload.csv`).
    file_name: Option<String>,
    /// The account whose report it is (a configured account of the
    /// provider; default the provider's own): its lines reach only that
    /// account's payments (or the account a line names), and missing
    /// payments are looked for within it.
    account: Option<String>,
    /// `csv`: the column holding the provider's payment id.
    reference: Option<String>,
    /// `csv`: the gross amount's column.
    amount: Option<String>,
    /// `csv`: the currency's column.
    currency: Option<String>,
    /// `csv`: the column saying what a line is.
    kind: Option<String>,
    /// `csv`: `VALUE=kind,…` (charge, refund, chargeback, fee, payout, other).
    kinds: Option<String>,
    /// `csv`: the fee's column.
    fee: Option<String>,
    /// `csv`: the merchant reference's column.
    merchant_ref: Option<String>,
    /// `csv`: amounts are decimals (`12.50`).
    decimal: Option<bool>,
    /// `FROM..UNTIL` (dates, midnight UTC, or RFC 3339 times with their
    /// offset): the payments that became final here as succeeded within it
    /// and are not in the report are listed as `missing_from_report`.
    /// Without it they are not looked for.
    period: Option<String>,
}

/// What an import did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImportOut {
    run_id: i64,
    /// The same file had been imported before: nothing was done.
    already_imported: bool,
    lines: i64,
    counts: BTreeMap<String, i64>,
}

fn format_of(q: &ImportParams) -> Result<finality_providers::settlement::Format, ApiError> {
    finality_providers::settlement::FormatSpec {
        format: q.format.clone(),
        reference: q.reference.clone(),
        amount: q.amount.clone(),
        currency: q.currency.clone(),
        kind: q.kind.clone(),
        kinds: q
            .kinds
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .filter(|k| !k.is_empty())
            .map(str::to_string)
            .collect(),
        fee: q.fee.clone(),
        merchant_ref: q.merchant_ref.clone(),
        decimal: q.decimal.unwrap_or(false),
    }
    .build()
    .map_err(|e| ApiError::invalid(e.field, e.message))
}

/// Import a settlement report sent as the body (CSV), streamed to a
/// temporary file and checked line by line like `finality reconcile`. The
/// same file imported again changes nothing.
#[utoipa::path(post, path = "/reconciliations", operation_id = "import_report", tag = "operations", params(ImportParams),
    request_body(content = String, content_type = "text/csv", description = "The report"),
    responses(
        (status = 201, description = "Imported", body = ImportOut),
        (status = 200, description = "Imported before: nothing changed", body = ImportOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 403, description = "The token's role may not import reports", body = ErrorBody),
        (status = 409, description = "The same report is being imported right now", body = ErrorBody),
        (status = 413, description = "Larger than 2 GiB", body = ErrorBody),
        (status = 429, description = "Too many uploads are in progress", body = ErrorBody),
        (status = 422, description = "A parameter is invalid, or a line does not read (nothing was applied)", body = ErrorBody),
    ))]
async fn import(
    State(app): State<App>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ImportParams>,
    body: axum::body::Body,
) -> Result<(axum::http::StatusCode, Json<ImportOut>), ApiError> {
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;
    caller.identity.require(Permission::Resolve)?;
    if !app.providers.contains_key(&q.provider) {
        return Err(ApiError::invalid(
            "provider",
            format!("unknown provider `{}`", q.provider),
        ));
    }
    let entry = &app.providers[&q.provider];
    if let Some(a) = &q.account {
        if entry.accounts.get(a).is_none() {
            return Err(ApiError::invalid(
                "account",
                format!("provider `{}` has no account `{a}`", q.provider),
            ));
        }
    }
    let format = format_of(&q)?;
    let period = q
        .period
        .as_deref()
        .map(str::parse::<finality_engine::reconcile::Period>)
        .transpose()
        .map_err(|e| ApiError::invalid("period", e))?;
    let name = q.file_name.clone().unwrap_or_else(|| "upload.csv".into());
    if name.is_empty() || name.contains(['/', '\\']) || name.len() > 200 {
        return Err(ApiError::invalid(
            "file_name",
            "1 to 200 characters, no path",
        ));
    }
    // Each upload may be 2 GiB on disk: a few at a time.
    let Ok(_permit) = app.throttle.uploads.try_acquire() else {
        return Err(ApiError::TooMany {
            message: format!(
                "{} report uploads are in progress; retry when one has finished",
                crate::throttle::CONCURRENT_UPLOADS
            ),
            retry_after: 10,
        });
    };
    // A name no other user of the machine can guess or claim first
    // (created exclusively, mode 0600), removed when the import ends.
    let tmp = tempfile::Builder::new()
        .prefix("finality-upload-")
        .tempfile()
        .map_err(|e| ApiError::Internal(format!("creating the upload's temporary file: {e}")))?;
    let mut file =
        tokio::fs::File::from_std(tmp.as_file().try_clone().map_err(|e| {
            ApiError::Internal(format!("opening the upload's temporary file: {e}"))
        })?);
    let mut stream = body.into_data_stream();
    let mut size = 0u64;
    // However steadily it trickles, an upload holds its slot at most this
    // long.
    let deadline = tokio::time::Instant::now() + app.throttle.upload_deadline;
    loop {
        let until = (tokio::time::Instant::now() + CHUNK_TIMEOUT).min(deadline);
        let chunk = match tokio::time::timeout_at(until, stream.next()).await {
            Ok(Some(Ok(c))) => c,
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::Malformed(format!("the upload broke off: {e}")))
            }
            Err(_) if tokio::time::Instant::now() >= deadline => {
                return Err(ApiError::Malformed(format!(
                    "the upload took longer than {}s, as long as one may (nothing was \
                     imported): send the file faster, or from nearer",
                    app.throttle.upload_deadline.as_secs()
                )))
            }
            Err(_) => {
                return Err(ApiError::Malformed(format!(
                    "the upload stalled for {}s",
                    CHUNK_TIMEOUT.as_secs()
                )))
            }
        };
        size += chunk.len() as u64;
        if size > UPLOAD_LIMIT {
            return Err(ApiError::TooLarge(UPLOAD_LIMIT as usize));
        }
        file.write_all(&chunk)
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
    }
    file.flush()
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    drop(file);
    let now = app.clock.now();
    let import = finality_engine::reconcile::Import {
        provider: &q.provider,
        owner: entry.accounts.report_owner(q.account.as_deref()),
        name: &name,
        format: &format,
        period,
    };
    let out =
        match finality_engine::reconcile::reconcile(&*app.store, &import, tmp.path(), now).await {
            Ok(o) => o,
            Err(finality_engine::reconcile::ReconcileError::Report { error, .. }) => {
                return Err(ApiError::invalid(
                    format!("line {}: {}", error.line, error.column),
                    format!("{name}: {error} (nothing was applied)"),
                ))
            }
            Err(e @ finality_engine::reconcile::ReconcileError::Busy { .. }) => {
                return Err(ApiError::Conflict {
                    code: "import_running",
                    message: e.to_string(),
                    field: None,
                })
            }
            Err(finality_engine::reconcile::ReconcileError::Io { error, .. }) => {
                return Err(ApiError::Internal(error.to_string()))
            }
            Err(finality_engine::reconcile::ReconcileError::Store(e)) => return Err(e.into()),
        };
    let mut audit = caller.audit(
        "reconcile",
        None,
        serde_json::json!({"provider": q.provider, "file_name": name, "run_id": out.run_id}),
        now,
    );
    audit.outcome = if out.already_imported {
        "imported before: nothing changed".into()
    } else {
        format!("{} lines: {:?}", out.lines, out.counts)
    };
    app.store.audit_append(&audit).await?;
    let status = if out.already_imported {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::CREATED
    };
    Ok((
        status,
        Json(ImportOut {
            run_id: out.run_id,
            already_imported: out.already_imported,
            lines: out.lines,
            counts: out.counts,
        }),
    ))
}
