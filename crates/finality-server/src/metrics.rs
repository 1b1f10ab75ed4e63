//! Prometheus metrics: the binary installs one process-wide recorder
//! ([`install`]) and hands its handle to [`crate::AppState`]; the library
//! never installs a global on its own, so an embedding application keeps
//! its recorder.

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Install the recorder once per process (several servers in one test
/// process share it). `None` if another recorder was installed first.
pub fn install() -> Option<PrometheusHandle> {
    handle().cloned()
}

fn handle() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("finality_webhook_ack_seconds".into()),
                    &[
                        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                    ],
                )
                .and_then(|b| b.install_recorder())
                .map_err(|e| tracing::warn!(error = %e, "metrics recorder not installed"))
                .ok()
        })
        .as_ref()
}

pub(crate) async fn render(
    axum::extract::State(app): axum::extract::State<crate::AppState>,
) -> impl IntoResponse {
    let body = app.metrics.as_ref().map(|h| h.render()).unwrap_or_default();
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}
