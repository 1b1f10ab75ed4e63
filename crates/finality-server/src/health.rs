//! Liveness and readiness.

use crate::replica::Condition;
use crate::App;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(readyz))
}

/// Ready when the database answers. Paused providers, open circuit breakers,
/// webhook outages and a replica that lags or is down (`replica`: reads go
/// to the primary) make it `degraded` with the reason, but still 200: webhooks and
/// the API keep working, and taking the node out of rotation would not bring
/// the provider back.
///
/// Anyone may ask (load balancers send no token), so without a known
/// bearer token the answer names what is paused, open or down and its
/// class, never the reason's words: those quote providers' and databases'
/// own error bodies, which may echo a credential.
async fn readyz(State(app): State<App>, headers: HeaderMap) -> (StatusCode, Json<Value>) {
    let detailed = crate::auth::known_token(&app, &headers);
    let now = app.clock.now();
    let pauses: serde_json::Map<String, Value> = app
        .health
        .pauses(now)
        .into_iter()
        .map(|(name, p)| {
            let mut v = json!({"paused_until": p.until.to_rfc3339(), "class": p.class.as_str()});
            if detailed {
                v["reason"] = json!(p.reason);
            }
            (name, v)
        })
        .collect();
    let breakers: serde_json::Map<String, Value> = app
        .health
        .breakers()
        .tripped()
        .into_iter()
        .map(|t| {
            let v = json!({"state": t.state, "next_probe_at": t.until.to_rfc3339()});
            (t.provider, v)
        })
        .collect();
    let outages: serde_json::Map<String, Value> = app
        .health
        .webhook_outages()
        .into_iter()
        .map(|(name, since)| {
            let v = json!({"since": since.to_rfc3339(), "polling": "outage schedule"});
            (name, v)
        })
        .collect();
    // A replica that lags or is down sends reads to the primary: degraded,
    // still ready (the primary serves them).
    let replica = app.replica.as_ref().map(|r| {
        let c = r.condition();
        let mut v = json!({"state": c.as_str(), "reads_from": if r.serving() { "replica" } else { "primary" }});
        match &c {
            Condition::Serving(lag) | Condition::Lagging(lag) => {
                v["lag_seconds"] = json!(lag.as_secs_f64());
            }
            Condition::Down(why) if detailed => v["reason"] = json!(why),
            Condition::Down(_) => {}
            Condition::Starting => {}
        }
        v
    });
    let replica_ok = app.replica.as_ref().is_none_or(|r| r.serving());
    match app.store.next_due_at().await {
        Ok(_) => {
            let status =
                if pauses.is_empty() && breakers.is_empty() && outages.is_empty() && replica_ok {
                    "ready"
                } else {
                    "degraded"
                };
            let mut body = json!({"status": status, "database": "ok", "paused_providers": pauses,
                            "open_circuits": breakers, "webhook_outages": outages});
            if let Some(r) = replica {
                body["replica"] = r;
            }
            (StatusCode::OK, Json(body))
        }
        Err(e) => {
            tracing::error!(error = %e, "readiness check: database unreachable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(
                    json!({"status": "unavailable", "database": "unreachable", "paused_providers": pauses}),
                ),
            )
        }
    }
}
