//! The review queue: payments in review or overdue, filtered and paged by a cursor, with their latest reason.

use crate::console::pages::respond::{
    api_error, chrome, enc, error_page, final_names, render, PAGE,
};
use crate::console::session::Session;
use crate::console::views::*;
use crate::identity::Permission;
use crate::replica::Reads;
use crate::App;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use finality_core::{Kind, Timestamp};
use finality_store::review::{AuditRecord, ReviewFilter};
use finality_store::InboxEvent;
use std::collections::HashMap;

/// `since_ms~id`: the queue's keyset position.
pub(crate) fn review_cursor(since: Timestamp, id: &str) -> String {
    format!("{}~{id}", since.0)
}

pub(crate) fn parse_review_cursor(c: &str) -> Option<(Timestamp, String)> {
    let (t, id) = c.split_once('~')?;
    Some((Timestamp(t.parse().ok()?), id.to_string()))
}

pub async fn review(
    State(app): State<App>,
    reads: Reads,
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
    let (items, counts) = match tokio::try_join!(
        reads.store.review_queue(&filter),
        reads.store.review_counts()
    ) {
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
    let flags = match reads.store.flags_open(0, 200).await {
        Ok(f) => f.into_iter().map(flag_row).collect(),
        Err(e) => return api_error(e.into(), "/console"),
    };
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
        flags,
    })
}

pub(crate) fn hook_row(e: InboxEvent) -> HookRow {
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

pub(crate) fn audit_row(r: AuditRecord) -> AuditRow {
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

/// One flag as the console lists it.
pub(crate) fn flag_row(f: finality_store::flags::Flag) -> FlagRow {
    let state = match (&f.closed_by, &f.resolution) {
        (None, _) => "open".to_string(),
        (Some(by), Some(r)) => format!("closed by {by}: {r}"),
        (Some(by), None) => format!("closed by {by}"),
    };
    FlagRow {
        id: f.id,
        href: format!("/console/payments/{}", enc(&f.payment_id)),
        payment_id: f.payment_id,
        reason: f.reason,
        opened: time(f.opened_at),
        state,
    }
}
