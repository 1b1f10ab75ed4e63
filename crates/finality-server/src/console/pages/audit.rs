//! The audit trail: every manual action, filtered by actor, action and payment.

use crate::console::pages::respond::{api_error, chrome, enc, error_page, render, PAGE};
use crate::console::pages::review::audit_row;
use crate::console::session::Session;
use crate::console::views::*;
use crate::identity::Permission;
use crate::replica::Reads;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Response;
use finality_store::review::AuditFilter;
use std::collections::HashMap;

pub async fn audit(reads: Reads, s: Session, Query(q): Query<HashMap<String, String>>) -> Response {
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
    let records = match reads
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
