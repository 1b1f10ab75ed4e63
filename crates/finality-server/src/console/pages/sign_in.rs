//! Signing in and out: a named token's secret in, a signed session cookie out; cross-site posts refused, failures throttled.

use crate::console::pages::respond::{api_error, error_page, render, Form, Remote};
use crate::console::session::{self, Session};
use crate::console::views::*;
use crate::{ApiError, App};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use finality_core::Timestamp;
use std::collections::HashMap;

/// A request a browser says came from another site (`Sec-Fetch-Site`), or
/// whose `Origin` is not this host.
pub(crate) fn cross_site(headers: &HeaderMap) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("sec-fetch-site") == Some("cross-site") {
        return true;
    }
    match (header("origin"), header("host")) {
        (Some("null"), _) => true,
        (Some(origin), Some(host)) => {
            let origin_host = origin.split_once("://").map_or(origin, |(_, h)| h);
            origin_host != host
        }
        _ => false,
    }
}

/// Only paths of the console itself: never a redirect to another site.
pub(crate) fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/console") && !n.starts_with("//") && !n.contains('\\') => {
            n.to_string()
        }
        _ => "/console/review".into(),
    }
}

pub async fn login_form(Query(q): Query<HashMap<String, String>>) -> Response {
    render(&Login {
        next: safe_next(q.get("next").map(String::as_str)),
        error: None,
    })
}

pub async fn login(
    State(app): State<App>,
    Remote(remote): Remote,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // No session yet, so no form token: refuse a sign-in posted from
    // another site (which would sign the browser into the poster's token).
    if cross_site(&headers) {
        return error_page(
            StatusCode::FORBIDDEN,
            "sign-in refused: the form was posted from another site",
            "/console/login",
        );
    }
    let form = Form::parse(&body);
    let next = safe_next(form.get("next"));
    let given = form.text("token");
    let Some(token) = app
        .tokens
        .find(given.as_bytes())
        .filter(|_| !given.is_empty())
    else {
        metrics::counter!("finality_auth_failures_total", "surface" => "console").increment(1);
        let now = app.clock.now().0;
        let refused = crate::auth::refuse("console", &app, remote.as_deref(), None, now, || {
            tracing::warn!(remote = ?remote, "console sign-in with an invalid token");
        });
        let (status, error, retry) = match refused {
            ApiError::TooMany {
                message,
                retry_after,
            } => (StatusCode::TOO_MANY_REQUESTS, message, Some(retry_after)),
            _ => (
                StatusCode::UNAUTHORIZED,
                "That is not a valid API token.".to_string(),
                None,
            ),
        };
        let mut r = render(&Login {
            next,
            error: Some(error),
        });
        *r.status_mut() = status;
        if let Some(s) = retry {
            r.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, s.into());
        }
        return r;
    };
    if app.tokens.is_shared() {
        let mut r = render(&Login {
            next,
            error: Some(
                "The console needs named tokens ([[server.tokens]] in finality.toml), so that \
                 it can record who did what; the one shared token cannot tell people apart."
                    .into(),
            ),
        });
        *r.status_mut() = StatusCode::FORBIDDEN;
        return r;
    }
    let now = app.clock.now();
    let cookie = session::issue(token, Timestamp(now.0 + session::SESSION_MS));
    let audit = finality_store::review::NewAudit {
        at: now,
        actor: token.name.clone(),
        role: token.role.to_string(),
        action: "sign_in".into(),
        payment_id: None,
        detail: serde_json::json!({"via": "console"}),
        outcome: "signed in".into(),
        remote_addr: remote,
    };
    if let Err(e) = app.store.audit_append(&audit).await {
        // No sign-in without its record.
        return api_error(e.into(), "/console/login");
    }
    let set = session::set_cookie(
        &cookie,
        app.tokens.cookie_secure(session::over_tls(&headers)),
        session::SESSION_MS / 1000,
    );
    (StatusCode::SEE_OTHER, [(SET_COOKIE, set), (LOCATION, next)]).into_response()
}

pub async fn logout(
    State(app): State<App>,
    s: Session,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = Form::parse(&body);
    if let Err(r) = s.check_csrf(form.get("_csrf")) {
        return *r;
    }
    let clear = session::set_cookie("", app.tokens.cookie_secure(session::over_tls(&headers)), 0);
    (
        StatusCode::SEE_OTHER,
        [
            (SET_COOKIE, clear),
            (LOCATION, "/console/login".to_string()),
        ],
    )
        .into_response()
}
