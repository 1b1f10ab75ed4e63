//! One payment's whole story (status, history, calls, webhooks, audit) and the actions that settle it: resolve, resolve in bulk, poll now, each confirmed first.

use crate::console::pages::respond::{
    api_error, chrome, enc, error_page, final_names, public_message, redirect, render, Form,
    BULK_MAX,
};
use crate::console::pages::review::{audit_row, flag_row, hook_row};
use crate::console::session::Session;
use crate::console::views::*;
use crate::identity::Permission;
use crate::payments::{check_resolve_text, poll_now_as, resolve_as, ResolveAsk};
use crate::replica::Reads;
use crate::App;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use finality_store::manual::Resolved;
use finality_store::review::AuditFilter;
use finality_store::PollNow;
use std::collections::HashMap;

pub async fn payment(
    State(app): State<App>,
    reads: Reads,
    s: Session,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let back = "/console/review";
    let view = match reads.store.get(&id).await {
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
        reads.store.attempts(&id),
        reads.store.inbox_for_payment(&view.payment, 200),
        async {
            if show_audit {
                reads.store.audit_list(&audit_filter).await
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
    let ledger = finality_core::amounts::Ledger::of(&p.currency, view.pieces.clone());
    let c = ledger.counters();
    let counters = CountersView {
        authorised: amount(c.authorised, &p.currency),
        captured: amount(c.captured, &p.currency),
        refunded: amount(c.refunded, &p.currency),
        disputed: amount(c.disputed, &p.currency),
        dispute_reversed: amount(c.dispute_reversed, &p.currency),
    };
    let pieces = ledger
        .pieces()
        .map(|x| PieceRow {
            kind: x.kind.as_str(),
            id: x.id.clone(),
            state: x.state.as_str(),
            amount: amount(x.amount, &x.currency),
        })
        .collect();
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
        counters,
        pieces,
        flags: view.flags.iter().cloned().map(flag_row).collect(),
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
pub(crate) fn confirm_page(
    s: &Session,
    ids: Vec<String>,
    form: &Form,
    action: &str,
    back: &str,
) -> Response {
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
pub(crate) fn check_resolve_form(
    s: &Session,
    form: &Form,
    back: &str,
) -> Result<(), Box<Response>> {
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
    State(app): State<App>,
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

pub async fn bulk_resolve(State(app): State<App>, s: Session, body: Bytes) -> Response {
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
    State(app): State<App>,
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
