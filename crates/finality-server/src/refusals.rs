//! Every refused privileged action is audited: one rule for the API and
//! the console. A 403 answer carries what was refused ([`Refused`], put
//! there by `Identity::require`); this layer, around every route that
//! authenticates a caller, writes an audit record of it (actor, role, what
//! was asked, where from) and a log line. The CLI acts with the database's
//! own credentials and has no roles to refuse (`docs/SECURITY.md`).

use crate::error::Refused;
use crate::App;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use finality_store::review::NewAudit;
use serde_json::json;

pub(crate) async fn audit(State(app): State<App>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let remote = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string());
    let resp = next.run(req).await;
    let Some(r) = resp.extensions().get::<Refused>() else {
        return resp;
    };
    tracing::warn!(actor = %r.actor, role = %r.role, %method, %path, remote = ?remote, "refused: {}", r.doing);
    metrics::counter!("finality_refused_actions_total").increment(1);
    let record = NewAudit {
        at: app.clock.now(),
        actor: r.actor.clone(),
        role: r.role.clone(),
        action: "refused".into(),
        payment_id: None,
        detail: json!({"method": method.as_str(), "path": path, "doing": r.doing}),
        outcome: format!("refused: {}", r.message),
        remote_addr: remote,
    };
    if let Err(e) = app.store.audit_append(&record).await {
        // The refusal stands either way; the log line above records it.
        tracing::error!(error = %e, "could not write the audit record of a refused action");
    }
    resp
}
