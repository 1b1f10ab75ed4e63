//! `POST /webhooks/{provider}`: size limit → signature and timestamp →
//! parse → insert into the durable inbox (deduplicated by the unique
//! constraint) → 2xx. Applying happens after the ack, in the inbox processor.

use crate::{ApiError, App, AppState};
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use finality_core::{Scope, Timestamp};
use finality_providers::webhook::{WebhookError, WebhookEvent};
use finality_store::{InboxState, NewInboxEvent};
use serde_json::{json, Value};
use sha2::Digest;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/webhooks/{provider}", post(receive))
        .route("/webhooks/{provider}/{account}", post(receive_for_account))
}

/// Per-provider budget of "poll sooner" nudges from unverified webhooks.
#[derive(Debug, Default)]
pub struct Nudges {
    /// provider → (minute window start, nudges used in it)
    windows: Mutex<HashMap<String, (i64, u32)>>,
}

impl Nudges {
    fn allow(&self, provider: &str, now: Timestamp, per_minute: u32) -> bool {
        let minute = now.millis() / 60_000;
        let mut w = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let slot = w.entry(provider.to_string()).or_insert((minute, 0));
        if slot.0 != minute {
            *slot = (minute, 0);
        }
        if slot.1 >= per_minute {
            return false;
        }
        slot.1 += 1;
        true
    }
}

/// The series every stored webhook updates, per provider, looked up once:
/// `metrics::counter!` with a label builds and hashes its key and searches
/// the recorder's registry on every call, a cost every webhook paid three
/// times. (A handle made before a recorder is installed records nothing:
/// these are made at a provider's first webhook, after start-up.)
#[derive(Default)]
pub(crate) struct Series(std::sync::RwLock<HashMap<String, Arc<ProviderSeries>>>);

pub(crate) struct ProviderSeries {
    received: metrics::Counter,
    duplicates: metrics::Counter,
    ack: metrics::Histogram,
}

impl Series {
    fn of(&self, provider: &str) -> Arc<ProviderSeries> {
        if let Some(s) = self
            .0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(provider)
        {
            return s.clone();
        }
        let label = provider.to_string();
        let made = Arc::new(ProviderSeries {
            received: metrics::counter!("finality_webhooks_received_total", "provider" => label.clone()),
            duplicates: metrics::counter!("finality_webhooks_duplicates_total", "provider" => label.clone()),
            ack: metrics::histogram!("finality_webhook_ack_seconds", "provider" => label.clone()),
        });
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(label)
            .or_insert(made)
            .clone()
    }
}

fn audit_headers(headers: &HeaderMap, names: &[&str]) -> Value {
    let mut m = serde_json::Map::new();
    for n in names {
        if let Some(v) = headers.get(*n).and_then(|v| v.to_str().ok()) {
            m.insert((*n).to_string(), json!(v));
        }
    }
    Value::Object(m)
}

fn inbox_event(scope: &Scope, ev: WebhookEvent, body: &Bytes, headers: Value) -> NewInboxEvent {
    finality_engine::inbox::inbox_row(
        scope,
        ev,
        body.to_vec(),
        headers,
        finality_core::Source::Webhook,
    )
}

// No span of its own: the request's span (its path names the provider)
// is on every line logged here, and a second span per webhook cost the
// server CPU on every request (`docs/PERFORMANCE.md`, session 22).
async fn receive(
    State(app): State<App>,
    Path(provider): Path<String>,
    req: Request,
) -> Result<Response, ApiError> {
    take(app, provider, None, req).await
}

/// `POST /webhooks/{provider}/{account}`: an account's own endpoint, for
/// providers whose bodies do not name the account (sim, generic, PayPal,
/// Bakong: each merchant's endpoint is configured with its own URL and
/// secret). The account the URL names is the one whose secret verifies
/// the body, and the only one whose payments it can reach.
async fn receive_for_account(
    State(app): State<App>,
    Path((provider, account)): Path<(String, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    take(app, provider, Some(account), req).await
}

async fn take(
    app: App,
    provider: String,
    url_account: Option<String>,
    req: Request,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let inbox = app.inbox();
    let Some(entry) = app.providers.get(&provider) else {
        return Err(ApiError::NotFound(format!(
            "no provider named `{provider}`"
        )));
    };
    // The headers borrowed, not copied (as the `HeaderMap` extractor
    // would); the body was read whole, within its limit and deadline,
    // before the handler (`front`).
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let body = match axum::body::to_bytes(body, crate::BODY_LIMIT).await {
        Ok(b) => b,
        Err(_) => {
            metrics::counter!("finality_webhooks_rejected_total", "provider" => provider.clone(), "reason" => "too_large").increment(1);
            return Err(ApiError::TooLarge(crate::BODY_LIMIT));
        }
    };
    let now = app.clock.now();
    // A provider with accounts: verified with the secret of the account the
    // URL, else the body, names, and stored as that account's fact. One
    // naming an account it does not have (or disabled) is verified with
    // the credentials that can verify it and parked, never refused for
    // it. (The body is read for an account only when the provider has
    // some: no second parse on the common path.)
    let named = match (url_account, entry.accounts.is_empty()) {
        (Some(a), _) => Some(a),
        (None, true) => None,
        (None, false) => entry.adapter.webhook_account(&body),
    };
    let finality_engine::accounts::Routed {
        adapter,
        account,
        parked,
    } = entry.accounts.route(&entry.adapter, named);
    let fact_scope = Scope::new(provider.as_str(), account.as_deref());
    // Health is the provider's while the account is not one it acts as.
    let scope = match &parked {
        None => fact_scope.to_string(),
        Some(_) => provider.clone(),
    };
    let audit = audit_headers(headers, adapter.audit_headers());
    let source = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    let events = match adapter
        .verify_webhook_from(source, headers, &body, now)
        .await
    {
        Ok(events) => events,
        Err(WebhookError::NotConfigured) => {
            return Err(ApiError::NotFound(format!(
                "webhooks are not configured for provider `{provider}` (set webhook_secret_envs)"
            )))
        }
        Err(WebhookError::Busy { detail }) => {
            metrics::counter!("finality_webhooks_rejected_total", "provider" => provider.clone(), "reason" => "busy").increment(1);
            tracing::warn!(%detail, "webhook not verified now; answered 429");
            return Err(ApiError::TooMany {
                message: format!("{detail}; nothing was stored"),
                retry_after: 1,
            });
        }
        Err(WebhookError::Rejected { reason, detail }) => {
            metrics::counter!("finality_webhooks_rejected_total", "provider" => provider.clone(), "reason" => reason.as_str()).increment(1);
            tracing::warn!(reason = reason.as_str(), %detail, "webhook rejected; body not stored");
            nudge(&app, &fact_scope, entry, entry.adapter.peek_ref(&body), now).await;
            return Err(ApiError::BadSignature(reason.as_str()));
        }
        Err(WebhookError::Unparseable { event_id, detail }) => {
            // Authentic evidence: keep it (as failed), tell the sender.
            let event_id = if event_id.is_empty() {
                format!("unparseable_{}", hex::encode(sha2::Sha256::digest(&body)))
            } else {
                event_id
            };
            let row = NewInboxEvent {
                state: InboxState::Failed,
                reason: Some(format!("unparseable: {detail}")),
                ..inbox_event(
                    &fact_scope,
                    WebhookEvent {
                        event_id,
                        provider_ref: None,
                        merchant_ref: None,
                        status: None,
                        provider_status: None,
                        occurred_at: None,
                        reported: Default::default(),
                        disposition: Default::default(),
                    },
                    &body,
                    audit,
                )
            };
            inbox.insert(vec![row]).await?;
            metrics::counter!("finality_webhooks_rejected_total", "provider" => provider.clone(), "reason" => "unparseable").increment(1);
            tracing::warn!(%detail, "signed webhook could not be parsed; kept as failed");
            return Err(ApiError::Malformed(format!(
                "signed body could not be parsed ({detail}); it was kept for review"
            )));
        }
    };
    // A settlement report announced (Adyen's REPORT_AVAILABLE) is kept for
    // the fetcher before the provider hears 2xx.
    finality_engine::settlement::announce(&*app.store, &fact_scope, &events, now).await?;
    let mut rows: Vec<NewInboxEvent> = events
        .into_iter()
        .map(|ev| inbox_event(&fact_scope, ev, &body, audit.clone()))
        .collect();
    if let (Some(why), Some(account)) = (&parked, &account) {
        park(&mut rows, account, why);
        metrics::counter!("finality_webhooks_parked_total", "provider" => provider.clone())
            .increment(rows.len() as u64);
        tracing::warn!(detail = %why, "verified webhook of an account this provider cannot act as now; acknowledged and parked until the account is added or enabled");
    }
    // Live and test never meet: a body of the other environment (a Connect
    // endpoint gets both) is acknowledged and kept, never applied.
    if let Some(want) = entry.live {
        if let Some(got) = adapter.body_live(&body).filter(|got| *got != want) {
            other_mode(&mut rows, want, got);
            metrics::counter!("finality_webhooks_other_mode_total", "provider" => provider.clone())
                .increment(rows.len() as u64);
            tracing::info!(live = got, "verified webhook of the provider's other environment; acknowledged and kept as ignored, never applied");
        }
    }
    // Committed (with whatever other requests arrived meanwhile) before
    // the provider hears 2xx.
    // What is logged once stored: only the rows not applied (rare), with
    // their place in the batch; the common row is not copied for it.
    let notes: Vec<(usize, InboxState, String, Option<String>)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.state, InboxState::Ignored | InboxState::Review))
        .map(|(i, r)| (i, r.state, r.event_id.clone(), r.reason.clone()))
        .collect();
    let fresh = inbox.insert(rows).await?;
    finality_core::fault::point("after_inbox_insert");
    // A verified webhook, stored: this provider's webhooks are arriving.
    if app.health.webhook_seen(&scope) {
        tracing::warn!("webhooks resumed; polling by the provider's own schedule again");
    }
    // Counted once per stored row: a redelivered duplicate is not news.
    for (_, state, event_id, reason) in notes.iter().filter(|n| fresh.get(n.0) == Some(&true)) {
        match state {
            InboxState::Ignored => {
                metrics::counter!("finality_webhooks_ignored_total", "provider" => provider.clone()).increment(1);
                tracing::info!(%event_id, ?reason, "verified webhook about nothing finality tracks; acknowledged and kept as ignored");
            }
            InboxState::Review => {
                metrics::counter!("finality_webhooks_review_total", "provider" => provider.clone())
                    .increment(1);
                tracing::warn!(%event_id, ?reason, "webhook item kept for review, not applied");
            }
            _ => {}
        }
    }
    let new = fresh.iter().filter(|f| **f).count();
    let dup = fresh.len() - new;
    let series = app.webhook_series().of(&provider);
    series.received.increment(new as u64);
    series.duplicates.increment(dup as u64);
    series.ack.record(started.elapsed().as_secs_f64());
    // Some providers retry unless the answer is exactly what they expect.
    if let Some(ack) = adapter.ack() {
        return Ok((StatusCode::OK, ack).into_response());
    }
    Ok((
        StatusCode::OK,
        Json(Stored {
            received: new,
            duplicates: dup,
        }),
    )
        .into_response())
}

/// Rows of an account that cannot take them now are kept `parked`, with
/// why, instead of applied: applied when the account is added or enabled
/// (`finality_engine::accounts::unpark`). Rows kept as ignored or for
/// review stay so.
///
/// An item the provider's own adapter kept for review as naming this very
/// account rather than the provider's (WeChat Pay's `sub_mchid`, Adyen's
/// `merchantAccountCode` against `merchant_account`) is parked too: it is
/// that account's fact, and stored as that account's. One naming yet
/// another account stays for review.
fn park(rows: &mut [NewInboxEvent], account: &str, why: &finality_engine::accounts::AccountError) {
    let named = format!("`{account}`");
    for r in rows.iter_mut() {
        let mismatch = r.state == InboxState::Review
            && r.reason
                .as_deref()
                .is_some_and(|w| w.starts_with("account_mismatch") && w.contains(&named));
        if r.state == InboxState::Received || mismatch {
            let was = r.reason.take().map(|w| format!(" (on arrival: {w})"));
            r.state = InboxState::Parked;
            r.reason = Some(format!(
                "parked: {why}; applied when the account is added or enabled{}",
                was.unwrap_or_default()
            ));
        }
    }
}

/// Every row of a body from the other environment (`got`: live or test)
/// than the provider's (`want`) is kept as ignored with why, whatever it
/// would have been: no such fact is ever applied, parked or reviewed.
fn other_mode(rows: &mut [NewInboxEvent], want: bool, got: bool) {
    let name = |live: bool| if live { "live" } else { "test" };
    for r in rows.iter_mut() {
        r.state = InboxState::Ignored;
        r.reason = Some(format!(
            "other_mode: a {} event at a {} provider or account: acknowledged, never applied",
            name(got),
            name(want)
        ));
    }
}

/// The answer to a stored webhook (a struct, not a `json!` map: no map is
/// built for every webhook).
#[derive(serde::Serialize)]
struct Stored {
    received: usize,
    duplicates: usize,
}

/// An unverified webhook may still be a true signal (a rotated secret, a
/// provider bug): if it names a payment finality tracks, take an early
/// look at it. Anyone can send one, so the look spends no attempt (the
/// payment's fate stays the schedule's) and is bounded per provider a
/// minute and per payment in its life.
async fn nudge(
    app: &AppState,
    scope: &Scope,
    entry: &finality_engine::ProviderEntry,
    provider_ref: Option<String>,
    now: Timestamp,
) {
    let Some(r) = provider_ref else { return };
    let provider = scope.provider();
    if !app.nudges.allow(provider, now, entry.nudges_per_minute) {
        return;
    }
    match app
        .store
        .look_early(scope, &r, now, entry.nudges_per_payment)
        .await
    {
        Ok(Some(id)) => {
            metrics::counter!("finality_webhooks_nudges_total", "provider" => provider.to_string())
                .increment(1);
            tracing::info!(payment_id = %id, "unverified webhook: an early look at this payment (not counted as an attempt)");
        }
        // Not tracked, final, parked, leased, already due, or its early
        // looks spent.
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "an unverified webhook's early look failed"),
    }
}
