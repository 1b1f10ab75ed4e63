//! The finality service assembled: the HTTP API v1 over a [`Store`], the poll
//! engine beside it, and one [`run`] that both the binary and the tests call.
//!
//! # Layout
//! - [`error`]: [`ApiError`], the one error type of every handler.
//! - `auth`: bearer-token check for `/v1`.
//! - `payments`: `/v1/payments` routes and their DTOs.
//! - `health`: `/healthz` and `/readyz`.
#![forbid(unsafe_code)]

mod auth;
pub mod error;
mod health;
mod payments;

pub use error::ApiError;

use axum::Router;
use finality_core::Clock;
use finality_engine::{Engine, EngineConfig, Health, Providers};
use finality_store::Store;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Everything a handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub providers: Arc<Providers>,
    pub health: Arc<Health>,
    /// The bearer token `/v1` requires. Never logged.
    pub api_token: Arc<str>,
}

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    let v1 = payments::router().route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::require_token,
    ));
    Router::new()
        .nest("/v1", v1)
        .merge(health::router())
        .layer(axum::extract::DefaultBodyLimit::max(1024 * 1024))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}

/// Serve the API on `listener` and, when `engine` is given, run the poll
/// engine beside it, until `shutdown` is cancelled. In-flight polls finish
/// before this returns.
pub async fn run(
    state: AppState,
    engine: Option<EngineConfig>,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let engine_task = engine.map(|cfg| {
        let e = Engine::new(
            state.store.clone(),
            state.clock.clone(),
            state.providers.clone(),
            cfg,
            state.health.clone(),
        );
        tokio::spawn(e.run(shutdown.clone()))
    });
    let stop = shutdown.clone();
    let served = axum::serve(listener, router(state))
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await;
    shutdown.cancel();
    if let Some(t) = engine_task {
        if let Err(e) = t.await {
            tracing::error!(error = %e, "poll engine task failed");
        }
    }
    served
}
