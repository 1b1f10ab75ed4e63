//! The console's handlers: read what the store knows, shape it for a
//! template, and route every action through the API's own functions.

use super::charts::{bars, Bar};
use super::session::{self, Session};
use super::views::*;
use crate::auth::remote_addr;
use crate::identity::Permission;
use crate::payments::{check_resolve_text, poll_now_as, resolve_as, ResolveAsk};
use crate::{ApiError, AppState};
use askama::Template;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use finality_core::{Kind, Timestamp};
use finality_store::manual::Resolved;
use finality_store::review::{AuditFilter, AuditRecord, ReviewFilter};
use finality_store::{InboxEvent, InboxState, PollNow};
use std::collections::HashMap;

/// The statuses a person may settle a payment as, by name.
fn final_names() -> Vec<&'static str> {
    finality_core::Status::FINAL
        .map(finality_core::Status::as_str)
        .to_vec()
}
/// Rows per page of the queue and of the audit trail.
const PAGE: u32 = 50;
/// Most payments one bulk resolve takes.
const BULK_MAX: usize = 200;

fn render(t: &impl Template) -> Response {
    match t.render() {
        Ok(html) => ([(CACHE_CONTROL, "no-store")], Html(html)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "console template failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be drawn; see the log",
            )
                .into_response()
        }
    }
}

fn error_page(status: StatusCode, message: impl Into<String>, back: &str) -> Response {
    let page = ErrorPage {
        status: format!(
            "{} {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        ),
        message: message.into(),
        back: back.into(),
    };
    let mut r = render(&page);
    *r.status_mut() = status;
    r
}

/// What a person may read of an error: the API's message, except for an
/// internal error, which is logged in full and shown as a pointer to the log.
fn public_message(e: &ApiError) -> String {
    match e {
        ApiError::Internal(detail) => {
            tracing::error!(error = %detail, "internal error in the console");
            "internal error; see the server log".to_string()
        }
        ApiError::Unavailable { detail, .. } => {
            tracing::warn!(error = %detail, "database unavailable");
            e.to_string()
        }
        other => other.to_string(),
    }
}

/// An API error as a page: the same status and message the API would give.
fn api_error(e: ApiError, back: &str) -> Response {
    error_page(e.status_code(), public_message(&e), back)
}

fn redirect(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(LOCATION, to.to_string())]).into_response()
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A submitted form: repeated fields (`ids`) kept, in order.
struct Form(Vec<(String, String)>);

impl Form {
    fn parse(body: &[u8]) -> Form {
        Form(form_urlencoded::parse(body).into_owned().collect())
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    fn text(&self, name: &str) -> String {
        self.get(name).unwrap_or_default().trim().to_string()
    }
    fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// The caller's address, for the sign-in's audit record.
pub struct Remote(Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for Remote {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Remote(remote_addr(parts)))
    }
}

fn chrome(s: &Session, nav: &'static str, flash: Option<&str>) -> Chrome {
    Chrome {
        user: s.identity.name.to_string(),
        role: s.identity.role.to_string(),
        csrf: s.csrf.clone(),
        nav,
        flash: flash.and_then(|f| match f {
            "resolved" => Some("Resolved, under your name.".to_string()),
            "polled" => Some("Poll scheduled: a worker will ask the provider now.".to_string()),
            "in_flight" => Some("A worker is asking the provider right now.".to_string()),
            _ => None,
        }),
    }
}

pub async fn home() -> Response {
    redirect("/console/review")
}

pub async fn stylesheet() -> Response {
    (
        [
            (CONTENT_TYPE, "text/css; charset=utf-8"),
            (CACHE_CONTROL, "max-age=300"),
        ],
        include_str!("console.css"),
    )
        .into_response()
}

/// A request a browser says came from another site (`Sec-Fetch-Site`), or
/// whose `Origin` is not this host.
fn cross_site(headers: &HeaderMap) -> bool {
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
fn safe_next(next: Option<&str>) -> String {
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
    State(app): State<AppState>,
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
        session::over_tls(&headers),
        session::SESSION_MS / 1000,
    );
    (StatusCode::SEE_OTHER, [(SET_COOKIE, set), (LOCATION, next)]).into_response()
}

pub async fn logout(s: Session, headers: HeaderMap, body: Bytes) -> Response {
    let form = Form::parse(&body);
    if let Err(r) = s.check_csrf(form.get("_csrf")) {
        return *r;
    }
    let clear = session::set_cookie("", session::over_tls(&headers), 0);
    (
        StatusCode::SEE_OTHER,
        [
            (SET_COOKIE, clear),
            (LOCATION, "/console/login".to_string()),
        ],
    )
        .into_response()
}

/// `since_ms~id`: the queue's keyset position.
fn review_cursor(since: Timestamp, id: &str) -> String {
    format!("{}~{id}", since.0)
}

fn parse_review_cursor(c: &str) -> Option<(Timestamp, String)> {
    let (t, id) = c.split_once('~')?;
    Some((Timestamp(t.parse().ok()?), id.to_string()))
}

pub async fn review(
    State(app): State<AppState>,
    s: Session,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let back = "/console/review";
    let field = |k: &str| {
        q.get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let kind = match field("kind").map(|k| k.parse::<Kind>()) {
        None => None,
        Some(Ok(k)) => Some(k),
        Some(Err(e)) => {
            return error_page(StatusCode::UNPROCESSABLE_ENTITY, format!("kind: {e}"), back)
        }
    };
    let now = app.clock.now();
    let entered_before = match field("min_age") {
        None => None,
        Some(a) => match humantime::parse_duration(&a) {
            Ok(d) => Some(Timestamp(now.0 - d.as_millis() as i64)),
            Err(_) => {
                return error_page(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("min_age: `{a}` is not a duration (e.g. 30m, 2h, 3days)"),
                    back,
                )
            }
        },
    };
    let after = match field("cursor") {
        None => None,
        Some(c) => match parse_review_cursor(&c) {
            Some(a) => Some(a),
            None => {
                return error_page(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("cursor: `{c}` is not a position this page gave"),
                    back,
                )
            }
        },
    };
    let filter = ReviewFilter {
        provider: field("provider"),
        kind,
        reason: field("reason"),
        entered_before,
        after,
        limit: PAGE,
    };
    let (items, counts) =
        match tokio::try_join!(app.store.review_queue(&filter), app.store.review_counts()) {
            Ok(v) => v,
            Err(e) => return api_error(e.into(), back),
        };
    let keep =
        |k: &str, v: Option<&String>| v.map(|v| format!("&{k}={}", enc(v))).unwrap_or_default();
    let base_query = format!(
        "{}{}{}{}",
        keep("provider", filter.provider.as_ref()),
        keep("kind", q.get("kind")),
        keep("reason", filter.reason.as_ref()),
        keep("min_age", q.get("min_age")),
    );
    let next = (items.len() as u32 == PAGE)
        .then(|| items.last())
        .flatten()
        .map(|last| {
            format!(
                "/console/review?cursor={}{base_query}",
                enc(&review_cursor(last.since, &last.payment.id))
            )
        });
    let total = counts.iter().map(|(_, n)| n).sum();
    let counts = counts
        .into_iter()
        .map(|(reason, n)| {
            let r = reason.unwrap_or_default();
            CountRow {
                // A missing reason cannot be filtered on: no link.
                href: if r.is_empty() {
                    String::new()
                } else {
                    format!("/console/review?reason={}", enc(&r))
                },
                reason: if r.is_empty() {
                    "(no reason recorded)".into()
                } else {
                    r
                },
                n,
            }
        })
        .collect();
    let rows = items
        .into_iter()
        .map(|i| ReviewRow {
            href: format!("/console/payments/{}", enc(&i.payment.id)),
            provider: i.payment.provider.clone(),
            kind: i.payment.kind.as_str().into(),
            amount: amount(i.payment.amount, &i.payment.currency),
            reason: or_dash(i.reason),
            since: time(i.since),
            age: age(now.0 - i.since.0),
            id: i.payment.id,
        })
        .collect();
    let mut providers: Vec<String> = app.providers.keys().cloned().collect();
    providers.sort();
    render(&Review {
        chrome: chrome(&s, "review", q.get("flash").map(String::as_str)),
        total,
        counts,
        providers,
        kinds: vec!["payment", "refund", "payout"],
        filter: FilterView {
            provider: filter.provider.unwrap_or_default(),
            kind: q.get("kind").cloned().unwrap_or_default(),
            reason: filter.reason.unwrap_or_default(),
            min_age: q.get("min_age").cloned().unwrap_or_default(),
        },
        rows,
        next,
        can_resolve: s.identity.role.allows(Permission::Resolve),
        statuses: final_names(),
    })
}

fn hook_row(e: InboxEvent) -> HookRow {
    HookRow {
        received: time(e.received_at),
        provider: e.provider,
        event_id: e.event_id,
        reference: or_dash(e.provider_ref.or(e.merchant_ref)),
        provider_status: or_dash(e.provider_status),
        state: e.state.as_str().into(),
        reason: or_dash(e.reason),
        attempts: e.attempts,
    }
}

fn audit_row(r: AuditRecord) -> AuditRow {
    let e = r.entry;
    AuditRow {
        at: time(e.at),
        actor: e.actor,
        role: e.role,
        action: e.action,
        href: e
            .payment_id
            .as_deref()
            .map(|p| format!("/console/payments/{}", enc(p)))
            .unwrap_or_default(),
        payment_id: e.payment_id.unwrap_or_default(),
        detail: e.detail.to_string(),
        outcome: e.outcome,
        remote: or_dash(e.remote_addr),
    }
}

pub async fn payment(
    State(app): State<AppState>,
    s: Session,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let back = "/console/review";
    let view = match app.store.get(&id).await {
        Ok(Some(v)) => v,
        Ok(None) => {
            return error_page(
                StatusCode::NOT_FOUND,
                format!("no payment with id `{id}`"),
                back,
            )
        }
        Err(e) => return api_error(e.into(), back),
    };
    let audit_filter = AuditFilter {
        payment_id: Some(id.clone()),
        limit: 100,
        ..Default::default()
    };
    let show_audit = s.identity.role.allows(Permission::Audit);
    let (calls, hooks, audit) = match tokio::try_join!(
        app.store.attempts(&id),
        app.store.inbox_for_payment(&view.payment, 200),
        async {
            if show_audit {
                app.store.audit_list(&audit_filter).await
            } else {
                Ok(Vec::new())
            }
        },
    ) {
        Ok(v) => v,
        Err(e) => return api_error(e.into(), back),
    };
    let now = app.clock.now();
    let p = &view.payment;
    let next_poll = match &view.poll {
        None => "none: the payment is final".to_string(),
        Some(j) if j.locked_by.is_some() => format!(
            "being asked now by {} (attempt {})",
            j.locked_by.as_deref().unwrap_or_default(),
            j.attempts + 1
        ),
        Some(j) => match j.next_poll_at {
            Some(t) if t.0 > now.0 => format!(
                "{} (in {}), after {} queries so far",
                time(t),
                age(t.0 - now.0),
                j.attempts
            ),
            Some(t) => format!("due since {} — waiting for a free worker", time(t)),
            None => format!(
                "parked after {} queries: polled again only on “Poll now”",
                j.attempts
            ),
        },
    };
    let page = PaymentPage {
        chrome: chrome(&s, "review", q.get("flash").map(String::as_str)),
        p: PaymentFacts {
            id: p.id.clone(),
            path: enc(&p.id),
            status: p.status.as_str().into(),
            provider: p.provider.clone(),
            provider_ref: or_dash(p.provider_ref.clone()),
            merchant_ref: or_dash(p.merchant_ref.clone()),
            kind: p.kind.as_str().into(),
            amount: amount(p.amount, &p.currency),
            created: time(p.created_at),
            updated: time(p.updated_at),
            source: p
                .status_source
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|| "registration".into()),
            finalized: opt_time(p.finalized_at),
        },
        next_poll,
        is_final: p.status.is_final(),
        can_resolve: s.identity.role.allows(Permission::Resolve),
        statuses: final_names(),
        history: view
            .history
            .iter()
            .map(|h| HistRow {
                at: time(h.at),
                from: h.from.map(|s| s.as_str().to_string()).unwrap_or_default(),
                to: h.to.as_str().into(),
                source: h.source.as_str().into(),
                event_id: h.event_id.clone().unwrap_or_default(),
                reason: h.reason.clone().unwrap_or_default(),
                actor: h.actor.clone().unwrap_or_default(),
            })
            .collect(),
        calls: calls
            .into_iter()
            .map(|c| {
                let a = c.attempt;
                CallRow {
                    at: time(a.started_at),
                    outcome: a.outcome,
                    provider_status: or_dash(a.provider_status),
                    error_class: or_dash(a.error_class),
                    latency: format!("{} ms", a.latency_ms),
                    error: a.error.unwrap_or_default(),
                }
            })
            .collect(),
        hooks: hooks.into_iter().map(hook_row).collect(),
        show_audit,
        audit: audit.into_iter().map(audit_row).collect(),
    };
    render(&page)
}

/// The first submit of a resolve shows what will happen; the second, with
/// `confirm=yes`, does it.
fn confirm_page(s: &Session, ids: Vec<String>, form: &Form, action: &str, back: &str) -> Response {
    render(&Confirm {
        chrome: chrome(s, "review", None),
        title: if ids.len() == 1 {
            format!("Resolve {}?", ids[0])
        } else {
            format!("Resolve {} payments?", ids.len())
        },
        ids,
        status: form.text("status"),
        reason: form.text("reason"),
        note: form.text("note"),
        action: action.into(),
        back: back.into(),
    })
}

/// Checks common to both resolve forms, before anything is confirmed.
fn check_resolve_form(s: &Session, form: &Form, back: &str) -> Result<(), Box<Response>> {
    s.check_csrf(form.get("_csrf"))?;
    if let Err(e) = s.identity.require(Permission::Resolve) {
        return Err(Box::new(api_error(e, back)));
    }
    let status = form.text("status");
    if !final_names().contains(&status.as_str()) {
        return Err(Box::new(error_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "status: `{status}` is not one of {}",
                final_names().join(", ")
            ),
            back,
        )));
    }
    if form.text("reason").is_empty() {
        return Err(Box::new(error_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            "reason: say why (what you checked); it is kept on the payment's history",
            back,
        )));
    }
    let (reason, note) = (form.text("reason"), form.text("note"));
    let ask = ResolveAsk {
        status: &status,
        reason: &reason,
        note: Some(note.as_str()),
        actor: None,
    };
    if let Err(e) = check_resolve_text(&ask) {
        return Err(Box::new(api_error(e, back)));
    }
    Ok(())
}

pub async fn resolve(
    State(app): State<AppState>,
    s: Session,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let form = Form::parse(&body);
    let back = format!("/console/payments/{}", enc(&id));
    if let Err(r) = check_resolve_form(&s, &form, &back) {
        return *r;
    }
    if form.get("confirm") != Some("yes") {
        let action = format!("/console/payments/{}/resolve", enc(&id));
        return confirm_page(&s, vec![id], &form, &action, &back);
    }
    let (status, reason, note) = (form.text("status"), form.text("reason"), form.text("note"));
    let ask = ResolveAsk {
        status: &status,
        reason: &reason,
        note: Some(note.as_str()).filter(|n| !n.is_empty()),
        actor: None,
    };
    match resolve_as(&app, &s.caller(), &id, ask).await {
        Ok(_) => redirect(&format!("{back}?flash=resolved")),
        Err(e) => api_error(e, &back),
    }
}

pub async fn bulk_resolve(State(app): State<AppState>, s: Session, body: Bytes) -> Response {
    let form = Form::parse(&body);
    let back = "/console/review";
    if let Err(r) = check_resolve_form(&s, &form, back) {
        return *r;
    }
    let ids = form.all("ids");
    if ids.is_empty() {
        return error_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            "ids: select at least one payment",
            back,
        );
    }
    if ids.len() > BULK_MAX {
        return error_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("ids: {} selected; at most {BULK_MAX} at once", ids.len()),
            back,
        );
    }
    if form.get("confirm") != Some("yes") {
        return confirm_page(&s, ids, &form, "/console/review/bulk", back);
    }
    let (status, reason, note) = (form.text("status"), form.text("reason"), form.text("note"));
    let caller = s.caller();
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        let ask = ResolveAsk {
            status: &status,
            reason: &reason,
            note: Some(note.as_str()).filter(|n| !n.is_empty()),
            actor: None,
        };
        let (outcome, ok) = match resolve_as(&app, &caller, &id, ask).await {
            Ok(Resolved::Changed { from, to }) => (format!("changed from {from} to {to}"), true),
            Ok(Resolved::Already) => (format!("already {status}"), true),
            Err(e) => (format!("refused: {}", public_message(&e)), false),
        };
        rows.push(BulkRow {
            href: format!("/console/payments/{}", enc(&id)),
            id,
            outcome,
            ok,
        });
    }
    render(&BulkResult {
        chrome: chrome(&s, "review", None),
        changed: rows
            .iter()
            .filter(|r| r.ok && r.outcome.starts_with("changed"))
            .count(),
        rows,
    })
}

pub async fn poll_now(
    State(app): State<AppState>,
    s: Session,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let form = Form::parse(&body);
    if let Err(r) = s.check_csrf(form.get("_csrf")) {
        return *r;
    }
    let back = format!("/console/payments/{}", enc(&id));
    match poll_now_as(&app, &s.caller(), &id).await {
        Ok(PollNow::Scheduled) => redirect(&format!("{back}?flash=polled")),
        Ok(PollNow::InFlight) => redirect(&format!("{back}?flash=in_flight")),
        Ok(PollNow::AlreadyFinal) => error_page(
            StatusCode::CONFLICT,
            format!("payment `{id}` is already final; there is nothing to poll"),
            &back,
        ),
        Ok(PollNow::NotFound) => error_page(
            StatusCode::NOT_FOUND,
            format!("no payment with id `{id}`"),
            &back,
        ),
        Err(e) => api_error(e, &back),
    }
}

fn quantile_bars(q: &finality_store::stats::Quantiles, fmt: impl Fn(f64) -> String) -> Vec<Bar> {
    [
        ("p50", q.p50),
        ("p90", q.p90),
        ("p99", q.p99),
        ("max", q.max),
    ]
    .into_iter()
    .filter_map(|(label, v)| {
        v.map(|v| Bar {
            label: label.into(),
            value: v,
            text: fmt(v),
        })
    })
    .collect()
}

pub async fn providers(
    State(app): State<AppState>,
    s: Session,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let back = "/console/providers";
    let window = q
        .get("window")
        .map(|w| w.trim().to_string())
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| "24h".into());
    let stats = match crate::stats::compute(&app, Some(&window)).await {
        Ok(s) => s,
        Err(e) => return api_error(e, "/console/review"),
    };
    let (failed, orphaned, review, sweeps, reports) = match tokio::try_join!(
        app.store.inbox_in_state(InboxState::Failed, None, 50),
        app.store.inbox_in_state(InboxState::Orphaned, None, 50),
        app.store.inbox_in_state(InboxState::Review, None, 50),
        app.store.sweep_runs(10),
        app.store.recon_runs(10),
    ) {
        Ok(v) => v,
        Err(e) => return api_error(e.into(), back),
    };
    let now = app.clock.now();
    let pauses: HashMap<String, String> = app
        .health
        .pauses(now)
        .into_iter()
        .map(|(name, p)| {
            let text = format!(
                "until {} ({}: {})",
                time(p.until),
                p.class.as_str(),
                p.reason
            );
            (name, text)
        })
        .collect();
    let breakers: HashMap<String, String> = app
        .health
        .breakers()
        .tripped()
        .into_iter()
        .map(|t| {
            (
                t.provider,
                format!("{}, next probe {}", t.state, time(t.until)),
            )
        })
        .collect();
    let outages: HashMap<String, Timestamp> = app.health.webhook_outages().into_iter().collect();
    let mut names: Vec<String> = app.providers.keys().cloned().collect();
    for p in &stats.providers {
        if !names.contains(&p.provider) {
            names.push(p.provider.clone());
        }
    }
    names.sort();
    let views = names
        .into_iter()
        .map(|name| {
            let st = stats.providers.iter().find(|p| p.provider == name);
            let entry = app.providers.get(&name);
            let finals: usize = st.map(|s| s.final_by.values().sum()).unwrap_or(0);
            let final_by = st
                .map(|s| {
                    s.final_by
                        .iter()
                        .map(|(src, n)| Bar {
                            label: src.clone(),
                            value: *n as f64,
                            text: format!("{n} ({:.0}%)", 100.0 * *n as f64 / finals.max(1) as f64),
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            let queries = st
                .map(|s| quantile_bars(&s.queries_until_final, |v| format!("{v:.0}")))
                .unwrap_or_default();
            let ttf = st
                .map(|s| quantile_bars(&s.time_to_final_s, |v| age((v * 1000.0) as i64)))
                .unwrap_or_default();
            let errors = st
                .map(|s| {
                    s.errors
                        .iter()
                        .map(|(class, n)| Bar {
                            label: class.clone(),
                            value: *n as f64,
                            text: n.to_string(),
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            ProviderView {
                payments: st.map_or(0, |s| s.payments),
                open: st.map_or(0, |s| s.open),
                in_review: st.map_or(0, |s| s.in_review),
                pause: pauses.get(&name).cloned().unwrap_or_else(|| "no".into()),
                breaker: breakers
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| "closed".into()),
                webhooks: match (outages.get(&name), entry.map(|e| e.outage_policy.is_some())) {
                    (Some(since), _) => format!(
                        "not arriving since {}: polling on the outage schedule",
                        time(*since)
                    ),
                    (None, Some(true)) => "arriving".into(),
                    _ => "not configured (polls only)".into(),
                },
                rate_limit: entry
                    .and_then(|e| e.rate_limit.as_ref())
                    .map(|b| format!("{} calls/s across nodes, burst {}", b.per_second, b.burst))
                    .unwrap_or_else(|| "none".into()),
                final_by: bars(&format!("{name}: how final statuses arrived"), &final_by),
                queries: bars(&format!("{name}: status queries until final"), &queries),
                time_to_final: bars(&format!("{name}: time to final"), &ttf),
                errors: bars(&format!("{name}: failed calls by error class"), &errors),
                name,
            }
        })
        .collect();
    render(&Providers {
        chrome: chrome(&s, "providers", None),
        window,
        providers: views,
        failed: failed.into_iter().map(hook_row).collect(),
        orphaned: orphaned.into_iter().map(hook_row).collect(),
        review: review.into_iter().map(hook_row).collect(),
        sweeps: sweeps
            .into_iter()
            .map(|r| SweepView {
                finished: time(r.finished_at),
                holder: r.holder,
                scanned: r.scanned,
                pass: if r.pass_complete { "yes" } else { "continues" },
                findings: if r.findings.is_empty() {
                    "none".into()
                } else {
                    r.findings
                        .iter()
                        .map(|(k, n)| format!("{k} {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                repaired: r.repaired,
            })
            .collect(),
        reports: reports
            .into_iter()
            .map(|r| ReconView {
                id: r.id,
                provider: r.provider,
                file_name: r.file_name,
                finished: r
                    .finished_at
                    .map_or_else(|| "unfinished (redone on the next import)".into(), time),
                lines: r.lines,
                counts: r
                    .counts
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
            .collect(),
    })
}

pub async fn audit(
    State(app): State<AppState>,
    s: Session,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let back = "/console/review";
    if let Err(e) = s.identity.require(Permission::Audit) {
        return api_error(e, back);
    }
    let actor = q
        .get("actor")
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty());
    let before_id = match q.get("cursor").map(|c| c.parse::<i64>()) {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(_)) => {
            return error_page(
                StatusCode::UNPROCESSABLE_ENTITY,
                "cursor: not a position this page gave",
                back,
            )
        }
    };
    let records = match app
        .store
        .audit_list(&AuditFilter {
            actor: actor.clone(),
            payment_id: None,
            before_id,
            limit: PAGE,
        })
        .await
    {
        Ok(r) => r,
        Err(e) => return api_error(e.into(), back),
    };
    let next = (records.len() as u32 == PAGE)
        .then(|| records.last())
        .flatten()
        .map(|r| {
            let a = actor
                .as_deref()
                .map(|a| format!("&actor={}", enc(a)))
                .unwrap_or_default();
            format!("/console/audit?cursor={}{a}", r.id)
        });
    render(&Audit {
        chrome: chrome(&s, "audit", None),
        actor: actor.unwrap_or_default(),
        rows: records.into_iter().map(audit_row).collect(),
        next,
    })
}

fn schema_name(v: &serde_json::Value) -> String {
    if let Some(r) = v["$ref"].as_str() {
        return r.rsplit('/').next().unwrap_or(r).to_string();
    }
    if let Some(items) = v.get("items") {
        return format!("array of {}", schema_name(items));
    }
    if let Some(one) = v["oneOf"].as_array() {
        return one.iter().map(schema_name).collect::<Vec<_>>().join(" or ");
    }
    match &v["type"] {
        serde_json::Value::String(t) => t.clone(),
        serde_json::Value::Array(ts) => ts
            .iter()
            .filter_map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".into(),
    }
}

/// The cluster's state as the alerts read it, computed for this page.
pub async fn health(State(app): State<AppState>, s: Session) -> Response {
    let back = "/console/review";
    let now = app.clock.now();
    let cfg = crate::metrics::MetricsConfig::default();
    let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let g = match app
        .store
        .cluster_gauges(
            now,
            finality_core::Timestamp(now.0 - ms(cfg.overdue_after)),
            finality_core::Timestamp(now.0 - ms(cfg.node_silent_after)),
        )
        .await
    {
        Ok(g) => g,
        Err(e) => return api_error(e.into(), back),
    };
    let human = |d: std::time::Duration| {
        humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string()
    };
    let mut review: std::collections::BTreeMap<&'static str, i64> = Default::default();
    for (reason, n) in &g.review {
        *review
            .entry(crate::metrics::reason_class(reason.as_deref()))
            .or_default() += n;
    }
    let inbox = ["received", "failed", "orphaned"]
        .iter()
        .map(|st| {
            let n = g.inbox.iter().find(|(s, _)| s == st).map_or(0, |(_, n)| *n);
            (st.to_string(), n)
        })
        .collect();
    render(&Health {
        chrome: chrome(&s, "health", None),
        overdue_after: human(cfg.overdue_after),
        polls_due: g.polls_due,
        polls_overdue: g.polls_overdue,
        oldest_due: g
            .oldest_due_at
            .map_or_else(|| "nothing is due".into(), |t| human(now.since(t))),
        nodes: g.nodes,
        review: review
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        open: {
            let mut open: std::collections::BTreeMap<(String, String), i64> = app
                .providers
                .keys()
                .flat_map(|p| {
                    ["pending", "processing", "needs_review"]
                        .map(|st| ((p.clone(), st.to_string()), 0))
                })
                .collect();
            for (p, st, n) in g.open {
                open.insert((p, st), n);
            }
            open.into_iter().map(|((p, st), n)| (p, st, n)).collect()
        },
        inbox,
        unsequenced: g.unsequenced,
        destinations: g
            .destinations
            .into_iter()
            .map(|(name, behind, oldest)| {
                let age = match oldest {
                    Some(t) if behind > 0 => human(now.since(t)),
                    _ => String::new(),
                };
                (name, behind, age)
            })
            .collect(),
    })
}

pub async fn api(s: Session) -> Response {
    let doc: serde_json::Value = match serde_json::from_str(crate::openapi::document_json()) {
        Ok(d) => d,
        Err(e) => return api_error(ApiError::Internal(e.to_string()), "/console/review"),
    };
    let mut ops = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            let Some(item) = item.as_object() else {
                continue;
            };
            for (method, op) in item {
                let params = op["parameters"]
                    .as_array()
                    .map(|ps| {
                        ps.iter()
                            .map(|p| {
                                format!(
                                    "{} ({}, {}): {}",
                                    p["name"].as_str().unwrap_or_default(),
                                    p["in"].as_str().unwrap_or_default(),
                                    schema_name(&p["schema"]),
                                    p["description"].as_str().unwrap_or_default()
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let body = op["requestBody"]["content"]["application/json"]["schema"]
                    .as_object()
                    .map(|_| {
                        schema_name(&op["requestBody"]["content"]["application/json"]["schema"])
                    })
                    .unwrap_or_default();
                let responses = op["responses"]
                    .as_object()
                    .map(|rs| {
                        rs.iter()
                            .map(|(code, r)| {
                                let schema = &r["content"]["application/json"]["schema"];
                                let body = if schema.is_null() {
                                    String::new()
                                } else {
                                    format!(" → {}", schema_name(schema))
                                };
                                format!(
                                    "{code} {}{body}",
                                    r["description"].as_str().unwrap_or_default()
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                ops.push(OpView {
                    anchor: format!("{method}-{}", path.replace(['/', '{', '}', '.'], "-")),
                    method: method.clone(),
                    path: path.clone(),
                    summary: op["summary"]
                        .as_str()
                        .or(op["description"].as_str())
                        .unwrap_or_default()
                        .to_string(),
                    params,
                    body,
                    responses,
                });
            }
        }
    }
    let schemas = doc["components"]["schemas"]
        .as_object()
        .map(|all| {
            all.iter()
                .map(|(name, sch)| SchemaView {
                    name: name.clone(),
                    description: sch["description"].as_str().unwrap_or_default().to_string(),
                    fields: sch["properties"]
                        .as_object()
                        .map(|props| {
                            let required: Vec<&str> = sch["required"]
                                .as_array()
                                .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
                                .unwrap_or_default();
                            props
                                .iter()
                                .map(|(f, p)| {
                                    format!(
                                        "{f}{}: {} {}",
                                        if required.contains(&f.as_str()) {
                                            ""
                                        } else {
                                            " (optional)"
                                        },
                                        schema_name(p),
                                        p["description"].as_str().unwrap_or_default()
                                    )
                                })
                                .collect()
                        })
                        .or_else(|| {
                            sch["enum"].as_array().map(|vs| {
                                vec![format!(
                                    "one of: {}",
                                    vs.iter()
                                        .filter_map(|v| v.as_str())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                )]
                            })
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    render(&Api {
        chrome: chrome(&s, "api", None),
        version: doc["openapi"].as_str().unwrap_or_default().to_string(),
        description: doc["info"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        ops,
        schemas,
    })
}
