//! The finality service assembled: the HTTP API v1 over a [`Store`], the poll
//! engine beside it, and one [`run`] that both the binary and the tests call.
//!
//! # Layout
//! - [`error`]: [`ApiError`], the one error type of every handler.
//! - `auth`: bearer-token check for `/v1`; [`identity`]: named tokens and roles.
//! - `audit`: `/v1/audit`, the trail of manual actions.
//! - `sweep`: `/v1/sweep/runs`, what the reconciliation sweep found.
//! - `reconciliations`: `/v1/reconciliations`, settlement reports imported.
//! - [`console`]: the operator's console under `/console` (HTML), one
//!   module of `pages` per page.
//! - `payments`: `/v1/payments` routes (`input`, `output`, and `actions`:
//!   resolve and poll now, shared with the console).
//! - `events`: `/v1/events`, the pull feed.
//! - `stats`: `/v1/stats/providers`, per-provider statistics over a window.
//! - `health`: `/healthz` and `/readyz`.
//! - `webhooks`: `/webhooks/{provider}` into the durable inbox.
//! - [`metrics`]: the Prometheus recorder and `/metrics`.
//! - [`openapi`]: the OpenAPI 3.1 document of `/v1`, generated from the handlers.
#![forbid(unsafe_code)]

mod accounts;
mod audit;
mod auth;
pub mod console;
mod destinations;
pub mod error;
mod events;
mod flags;
mod front;
mod health;
pub mod identity;
pub mod inbox_writer;
pub mod metrics;
pub mod openapi;
mod payments;
mod reconciliations;
mod refusals;
pub mod replica;
pub mod serve;
mod stats;
mod sweep;
pub mod throttle;
mod webhooks;

pub use webhooks::Nudges;

pub use error::ApiError;
pub use serve::cancel_on_signal;

use axum::Router;
use finality_core::Clock;
use finality_engine::inbox::{InboxConfig, InboxProcessor};
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
    /// The bearer tokens `/v1` accepts, with their names and roles. Never logged.
    pub tokens: Arc<identity::Tokens>,
    pub nudges: Arc<Nudges>,
    /// Failed authentication per source and name, uploads in progress.
    pub throttle: Arc<throttle::Throttle>,
    /// What `/metrics` renders: the recorder the binary installed
    /// ([`metrics::install`]); `None` renders nothing.
    pub metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// A streaming replica for the read-only handlers
    /// (`[database] read_url`); `None`: every read is the primary's.
    pub replica: Option<Arc<replica::Replica>>,
}

/// What every handler is given: the [`AppState`], and the group commit
/// that stores verified webhooks, behind one `Arc`.
///
/// Axum clones a route's state several times a request (the boxed route,
/// a `from_fn` layer's inner service, the `State` extractor). A clone of
/// `AppState` itself is one atomic increment, and later decrement, per
/// field, on cache lines both cores write; under webhook load that was a
/// few per cent of the server's CPU (`docs/PERFORMANCE.md`, session 25).
/// This makes each clone one.
#[derive(Clone)]
pub(crate) struct App(Arc<Shared>);

struct Shared {
    state: AppState,
    inbox: inbox_writer::InboxWriter,
    webhook_series: webhooks::Series,
}

impl App {
    fn new(state: AppState, inbox: inbox_writer::InboxWriter) -> Self {
        App(Arc::new(Shared {
            state,
            inbox,
            webhook_series: webhooks::Series::default(),
        }))
    }

    /// Where verified webhooks are stored: the answer waits for the commit.
    pub(crate) fn inbox(&self) -> &inbox_writer::InboxWriter {
        &self.0.inbox
    }

    /// The per-provider series each stored webhook updates.
    pub(crate) fn webhook_series(&self) -> &webhooks::Series {
        &self.0.webhook_series
    }
}

impl std::ops::Deref for App {
    type Target = AppState;
    fn deref(&self) -> &AppState {
        &self.0.state
    }
}

/// Largest request body accepted (webhooks and API alike).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// What runs beside the HTTP server.
#[derive(Debug, Clone, Default)]
pub struct Background {
    /// The poll engine, if this node polls.
    pub engine: Option<EngineConfig>,
    /// The webhook inbox processor, if this node applies webhooks.
    pub inbox: Option<InboxConfig>,
    /// The event feed sequencer, pushers and pruner.
    pub events: Option<finality_relay::config::EventsConfig>,
    /// The reconciliation sweep (runs only where the engine does).
    pub sweep: Option<finality_engine::sweep::SweepConfig>,
    /// Retention with archives (runs only where the engine does; one node
    /// at a time, by its lease).
    pub retention: Option<finality_engine::lifecycle::RetentionConfig>,
    /// The cluster gauges (one node at a time computes them), when the
    /// metrics recorder is installed.
    pub gauges: Option<metrics::MetricsConfig>,
    /// How often this node reads the accounts added at run time (default
    /// [`ACCOUNTS_REFRESH`]).
    pub accounts_refresh: Option<std::time::Duration>,
    /// Where fetched settlement reports are kept, one folder per provider
    /// (default `finality-archive/settlement`). Fetching runs where the
    /// engine does, for providers with `[providers.NAME.settlement]`.
    pub settlement_dir: Option<std::path::PathBuf>,
    /// After shutdown is asked for, how long in-flight requests and polls
    /// may take before they are cut off (default [`SHUTDOWN_GRACE`]); the
    /// leases of polls cut off are handed back for another node at once.
    pub shutdown_grace: Option<std::time::Duration>,
    /// How long a client may take to send a request's headers, and then
    /// its body (default [`serve::CLIENT_TIMEOUT`]).
    pub client_timeout: Option<std::time::Duration>,
    /// Connections served at once (default [`serve::MAX_CONNECTIONS`]).
    pub max_connections: Option<usize>,
    /// Connections at once from one address (default: half of
    /// `max_connections`).
    pub max_connections_per_address: Option<usize>,
    /// A connection with no request in flight this long is closed
    /// (default [`serve::IDLE_TIMEOUT`]).
    pub idle_timeout: Option<std::time::Duration>,
}

/// How often every node reads the accounts added at run time by default:
/// an account added on one node is used by all within this.
pub const ACCOUNTS_REFRESH: std::time::Duration = std::time::Duration::from_secs(2);

/// The default grace period of a shutdown.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The `/v1` routes with their OpenAPI description; with `state`, behind
/// the bearer-token check (the document itself is public).
fn v1(state: Option<&App>) -> utoipa_axum::router::OpenApiRouter<App> {
    let mut authed = payments::router()
        .merge(events::router())
        .merge(flags::router())
        .merge(destinations::router())
        .merge(accounts::router())
        .merge(stats::router())
        .merge(audit::router())
        .merge(sweep::router())
        .merge(reconciliations::router());
    if let Some(state) = state {
        authed = authed.route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ));
    }
    utoipa_axum::router::OpenApiRouter::with_openapi(
        <openapi::ApiDoc as utoipa::OpenApi>::openapi(),
    )
    .nest("/v1", authed.merge(openapi::router()))
}

/// The OpenAPI 3.1 document of every `/v1` route, as `/v1/openapi.json`
/// serves it.
pub fn api_doc() -> utoipa::openapi::OpenApi {
    let mut doc = v1(None).into_openapi();
    // After the routes are merged in: `#[openapi(modifiers)]` runs on the
    // document before any route is in it.
    utoipa::Modify::modify(&openapi::ThrottledAuth, &mut doc);
    doc
}

/// The whole HTTP surface; verified webhooks are stored through `inbox`;
/// a request body must arrive within `client_timeout`.
pub fn router(
    state: AppState,
    inbox: inbox_writer::InboxWriter,
    client_timeout: std::time::Duration,
) -> Router {
    let state = App::new(state, inbox);
    let (v1, _) = v1(Some(&state)).split_for_parts();
    // Only the API and the console read from a replica: webhooks, health
    // and metrics never pass through the routing of reads.
    let reads = Router::new()
        .merge(v1)
        .merge(console::router())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            refusals::audit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            replica::route,
        ));
    Router::new()
        .merge(reads)
        .merge(webhooks::router())
        .merge(health::router())
        .route("/metrics", axum::routing::get(metrics::render))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        // Everything every request passes first, as one layer: each layer
        // cost a clone of what is inside it and a boxed future per request
        // (`docs/PERFORMANCE.md`, session 25).
        .layer(axum::middleware::from_fn_with_state(
            client_timeout,
            front::front,
        ))
        .with_state(state)
}

/// Most bytes of header names and values a request may carry: providers'
/// signature headers and a bearer token need a few KiB. The HTTP server
/// itself caps what it reads (hyper: 100 headers, about 400 KiB), so this
/// bounds what a handler ever sees and answers with a clear 431.
pub const HEADER_LIMIT: usize = 32 * 1024;

/// Serve the API on `listener` with the background roles asked for, until
/// `shutdown` is cancelled. In-flight polls finish before this returns.
pub async fn run(
    state: AppState,
    background: Background,
    listener: tokio::net::TcpListener,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let grace = background.shutdown_grace.unwrap_or(SHUTDOWN_GRACE);
    let worker = background.engine.as_ref().map(|c| c.worker_id.clone());
    let (store, clock) = (state.store.clone(), state.clock.clone());
    let inbox_task = background.inbox.map(|cfg| {
        let p = InboxProcessor::learning(
            state.store.clone(),
            state.clock.clone(),
            cfg,
            state.health.clone(),
            &state.providers,
        );
        tokio::spawn(p.run(shutdown.clone()))
    });
    // Every node (API or engine) keeps the run-time accounts current: the
    // API verifies webhooks with them, the engine polls as them.
    let accounts_task = Some(tokio::spawn(finality_engine::accounts::keep_fresh(
        state.providers.clone(),
        state.store.clone(),
        state.clock.clone(),
        background.accounts_refresh.unwrap_or(ACCOUNTS_REFRESH),
        shutdown.clone(),
    )));
    let mut relay_tasks = Vec::new();
    if let Some(cfg) = &background.events {
        match finality_relay::start(
            state.store.clone(),
            state.clock.clone(),
            cfg,
            shutdown.clone(),
        )
        .await
        {
            Ok(t) => relay_tasks = t,
            Err(e) => {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e));
            }
        }
    }
    // The event-list catch-up runs where the engine does (a node that polls
    // also reads lists), under the engine's worker id as cursor holder.
    let catch_up_task = background.engine.as_ref().and_then(|cfg| {
        finality_engine::catch_up::CatchUp::new(
            state.store.clone(),
            state.clock.clone(),
            &state.providers,
            &cfg.worker_id,
        )
        .map(|c| tokio::spawn(c.run(shutdown.clone())))
    });
    // Settlement reports, fetched where the engine runs; one node at a
    // time per provider, by the provider's lease.
    let settlement_task = background.engine.as_ref().and_then(|cfg| {
        let dir = background
            .settlement_dir
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from("finality-archive/settlement"));
        finality_engine::settlement::Fetcher::new(
            state.store.clone(),
            state.clock.clone(),
            &state.providers,
            &cfg.worker_id,
            &dir,
        )
        .map(|f| {
            let wake = state.store.subscribe_inbox();
            tokio::spawn(f.run(shutdown.clone(), Some(wake)))
        })
    });
    // The reconciliation sweep, where the engine runs, under its worker id
    // (its lease keeps it to one node at a time across the cluster).
    let sweep_task = match (&background.sweep, &background.engine) {
        (Some(cfg), Some(engine)) => {
            let s = finality_engine::sweep::Sweeper::new(
                state.store.clone(),
                state.clock.clone(),
                state.providers.clone(),
                cfg.clone(),
                &engine.worker_id,
            );
            Some(tokio::spawn(s.run(shutdown.clone())))
        }
        _ => None,
    };
    let retention_task = match (&background.retention, &background.engine) {
        // Disabled, it only makes PostgreSQL's day partitions ahead.
        (Some(cfg), Some(engine)) => {
            let a = finality_engine::lifecycle::Archiver::new(
                state.store.clone(),
                state.clock.clone(),
                cfg.clone(),
                engine.worker_id.clone(),
            );
            Some(tokio::spawn(a.run(shutdown.clone())))
        }
        _ => None,
    };
    if state.metrics.is_some() {
        let destinations: Vec<String> = background
            .events
            .iter()
            .flat_map(|e| {
                e.http
                    .iter()
                    .map(|h| h.name.clone())
                    .chain(e.nats.iter().map(|_| "nats".to_string()))
            })
            .collect();
        metrics::init_series(state.providers.keys().map(String::as_str), &destinations);
    }
    let replica_task = state
        .replica
        .clone()
        .map(|r| tokio::spawn(r.watch(shutdown.clone())));
    let upkeep = state
        .metrics
        .clone()
        .map(|h| metrics::spawn_upkeep(h, shutdown.clone()));
    // The cluster gauges, on any node with a recorder (a lease keeps them
    // to one at a time), under the engine's worker id when it runs here.
    let gauges_task = match (&background.gauges, &state.metrics) {
        (Some(cfg), Some(_)) => {
            let holder = background.engine.as_ref().map_or_else(
                || format!("api-{}", std::process::id()),
                |e| e.worker_id.clone(),
            );
            let g = metrics::ClusterGauges::new(
                state.store.clone(),
                state.clock.clone(),
                cfg.clone(),
                &holder,
                state.providers.keys().cloned().collect(),
            );
            Some(tokio::spawn(g.run(shutdown.clone())))
        }
        _ => None,
    };
    let engine_task = background.engine.map(|cfg| {
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
    let client_timeout = background.client_timeout.unwrap_or(serve::CLIENT_TIMEOUT);
    let inbox = inbox_writer::InboxWriter::start(
        state.store.clone(),
        inbox_writer::FLUSHERS,
        state.clock.clone(),
    );
    let app = router(state, inbox, client_timeout);
    let mut limits = serve::Limits::new(
        client_timeout,
        background.max_connections.unwrap_or(serve::MAX_CONNECTIONS),
    );
    if let Some(n) = background.max_connections_per_address {
        limits.per_address = n.max(1);
    }
    if let Some(idle) = background.idle_timeout {
        limits.idle_timeout = idle;
    }
    let serving = serve::serve(listener, app, limits, stop);
    // In-flight requests get the grace period (a long-polling feed reader
    // must not hold the process).
    let cut_off = async {
        shutdown.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    let served = tokio::select! {
        r = serving => r,
        _ = cut_off => {
            tracing::warn!(?grace, "requests still open after the grace period; closing");
            Ok(())
        }
    };
    shutdown.cancel();
    let deadline = tokio::time::Instant::now() + grace;
    for t in [
        engine_task,
        inbox_task,
        catch_up_task,
        settlement_task,
        sweep_task,
        retention_task,
        gauges_task,
        upkeep,
        accounts_task,
        replica_task,
    ]
    .into_iter()
    .flatten()
    .chain(relay_tasks)
    {
        let abort = t.abort_handle();
        match tokio::time::timeout_at(deadline, t).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if e.is_cancelled() => {}
            Ok(Err(e)) => tracing::error!(error = %e, "background task failed"),
            Err(_) => {
                abort.abort();
                tracing::warn!(
                    ?grace,
                    "a background task was still working after the grace period; stopped"
                );
            }
        }
    }
    // Polls cut off mid-call: their leases go back at once, not when they
    // expire (a clean stop already handed back everything).
    if let Some(w) = worker {
        match store.release_worker(&w, clock.now()).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(worker = %w, released = n, "handed back polls cut off by the shutdown")
            }
            Err(e) => {
                tracing::warn!(worker = %w, error = %e, "handing back leases failed; they fall due when they expire")
            }
        }
    }
    served
}
