//! The operator's console under `/console`: the review queue, a payment's
//! whole story with the actions that settle it, the providers' health, the
//! event destinations (rewind, redeliver, pause), the audit trail and the API document, as server-rendered HTML (askama
//! templates, checked at compile time). No script, no build step, nothing
//! fetched from the internet: one stylesheet, served from here.
//!
//! Every action goes through the same functions as the API
//! (`payments::resolve_as`, `payments::poll_now_as`), so the console cannot
//! do anything the API would refuse, and records the same audit entries.

mod charts;
mod pages;
pub mod session;
mod views;

use crate::App;
use axum::routing::{get, post};
use axum::Router;

pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/console", get(pages::home))
        .route("/console/", get(pages::home))
        .route("/console/console.css", get(pages::stylesheet))
        .route("/console/login", get(pages::login_form).post(pages::login))
        .route("/console/logout", post(pages::logout))
        .route("/console/review", get(pages::review))
        .route("/console/review/bulk", post(pages::bulk_resolve))
        .route("/console/payments/{id}", get(pages::payment))
        .route("/console/payments/{id}/resolve", post(pages::resolve))
        .route("/console/payments/{id}/poll", post(pages::poll_now))
        .route("/console/providers", get(pages::providers))
        .route("/console/audit", get(pages::audit))
        .route("/console/events", get(pages::events))
        .route("/console/events/{name}/{action}", post(pages::event_action))
        .route("/console/health", get(pages::health))
        .route("/console/api", get(pages::api))
        .layer(axum::middleware::from_fn(protect))
}

/// Headers that keep the console's pages in their own frame and origin:
/// no embedding (clickjacking a confirm button), no script at all, forms
/// posted only back here, no referrer leaking payment ids elsewhere.
async fn protect(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::HeaderValue;
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}
