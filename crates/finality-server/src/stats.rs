//! `GET /v1/stats/providers?window=24h`: per provider, over the payments
//! registered in the window: queries until final, time to final, how final
//! statuses arrived, what is in review or open, and error classes.

use crate::error::ApiQuery;
use crate::openapi::ErrorBody;
use crate::replica::Reads;
use crate::{ApiError, App, AppState};
use axum::extract::State;
use axum::Json;
use finality_store::stats::{By, ProviderStats};
use finality_store::Store;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<App> {
    OpenApiRouter::new().routes(routes!(providers))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct Params {
    /// Payments registered within this long (`24h` default, at most `90days`).
    window: Option<String>,
    /// `provider` (default) or `account`: each account of a provider apart
    /// (the provider's own payments with `account: null`).
    by: Option<String>,
}

/// Per-provider figures over a window.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatsOut {
    pub window_s: u64,
    /// The window's start, milliseconds since the epoch.
    pub since: i64,
    pub providers: Vec<ProviderStats>,
}

/// The longest window: the statistics read every payment registered in it.
const MAX_WINDOW: Duration = Duration::from_secs(90 * 24 * 3600);

/// Queries until final, time to final, how final statuses arrived, what
/// is open or in review, and error classes, per provider or per account.
#[utoipa::path(get, path = "/stats/providers", operation_id = "provider_stats", tag = "operations", params(Params),
    responses(
        (status = 200, description = "One entry per provider", body = StatsOut),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 422, description = "`window` is invalid", body = ErrorBody),
    ))]
async fn providers(
    State(app): State<App>,
    reads: Reads,
    ApiQuery(q): ApiQuery<Params>,
) -> Result<Json<StatsOut>, ApiError> {
    let by = match q.by.as_deref() {
        None | Some("provider") => By::Provider,
        Some("account") => By::Account,
        Some(other) => {
            return Err(ApiError::invalid(
                "by",
                format!("`{other}` is not `provider` or `account`"),
            ))
        }
    };
    Ok(Json(
        compute(&app, &*reads.store, q.window.as_deref(), by).await?,
    ))
}

/// The statistics over `window` (default 24 h), for the API and the console.
pub(crate) async fn compute(
    app: &AppState,
    store: &dyn Store,
    window: Option<&str>,
    by: By,
) -> Result<StatsOut, ApiError> {
    let window = match window {
        None | Some("") => Duration::from_secs(24 * 3600),
        Some(w) => humantime::parse_duration(w)
            .ok()
            .filter(|d| !d.is_zero() && *d <= MAX_WINDOW)
            .ok_or_else(|| {
                ApiError::invalid(
                    "window",
                    format!("`{w}` is not a duration between 1s and 90days (e.g. 24h)"),
                )
            })?,
    };
    let since = finality_core::Timestamp(app.clock.now().0 - window.as_millis() as i64);
    let rows = store.stats_rows(since).await?;
    let errors = store.error_counts(since).await?;
    let stats = finality_store::stats::compute(&rows, &errors, by);
    Ok(StatsOut {
        window_s: window.as_secs(),
        since: since.0,
        providers: stats,
    })
}
