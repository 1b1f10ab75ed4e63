//! The event destinations: where each stands (cursor, backlog, failing,
//! paused), with an admin's actions (rewind to a position or a time,
//! redeliver one event, pause, resume), each through the API's own
//! functions, so each is refused and audited as the API would.

use crate::console::pages::respond::{api_error, chrome, enc, redirect, render, Form};
use crate::console::session::Session;
use crate::console::views::*;
use crate::destinations::{pause_as, redeliver_as, rewind_as, rewind_target};
use crate::identity::Permission;
use crate::replica::Reads;
use crate::{ApiError, App};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use std::collections::HashMap;

const BACK: &str = "/console/events";

pub async fn events(
    reads: Reads,
    s: Session,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let o = match finality_relay::replay::overview(&*reads.store).await {
        Ok(o) => o,
        Err(e) => return api_error(e.into(), "/console/review"),
    };
    // Fixed messages by code: a link cannot make the console say anything else.
    let flash = q.get("flash").and_then(|f| match f.as_str() {
        "rewound" => Some("Rewound: every event after the new position will be sent again, in feed order (the audit trail has the numbers)."),
        "redelivery" => Some("Redelivery queued: see Redeliveries below."),
        "paused" => Some("Paused: no attempts and no alert; its backlog waits."),
        "resumed" => Some("Resumed: its backlog is being sent."),
        _ => None,
    });
    let mut c = chrome(&s, "events", None);
    c.flash = flash.map(str::to_string);
    render(&Events {
        chrome: c,
        admin: s.identity.role.allows(Permission::ManageEvents),
        head: o.bounds.head,
        oldest: o
            .bounds
            .oldest
            .map(|(seq, at)| format!("{seq} ({})", time(at)))
            .unwrap_or_else(|| "none kept".into()),
        rows: o
            .destinations
            .into_iter()
            .map(|(d, backlog)| DestinationRow {
                id: d.name.replace(|c: char| !c.is_ascii_alphanumeric(), "-"),
                action: format!("/console/events/{}", enc(&d.name)),
                state: d.condition().into(),
                paused: d.paused_at.is_some(),
                paused_by: match (&d.paused_by, d.paused_at) {
                    (Some(by), Some(at)) => format!("by {by} at {}", time(at)),
                    _ => String::new(),
                },
                name: d.name,
                delivered_seq: d.delivered_seq,
                backlog,
                attempts: d.attempts,
                last_error: d.last_error.unwrap_or_default(),
                next_attempt: opt_time(d.next_attempt_at),
            })
            .collect(),
        redeliveries: o
            .redeliveries
            .into_iter()
            .map(|r| RedeliveryRow {
                id: r.id,
                destination: r.destination,
                event_id: r.event_id,
                requested: format!("{} by {}", time(r.requested_at), r.requested_by),
                outcome: r.outcome.unwrap_or_else(|| "waiting".into()),
            })
            .collect(),
    })
}

/// `POST /console/events/{name}/{action}`: rewind, redeliver, pause, resume.
pub async fn act(
    State(app): State<App>,
    s: Session,
    Path((name, action)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let form = Form::parse(&body);
    if let Err(r) = s.check_csrf(form.get("_csrf")) {
        return *r;
    }
    let caller = s.caller();
    let done: Result<&str, ApiError> = match action.as_str() {
        "rewind" => {
            let seq = form.text("to_seq");
            let seq = match seq.as_str() {
                "" => Ok(None),
                t => t.parse::<i64>().map(Some).map_err(|_| {
                    ApiError::invalid("to_seq", format!("`{t}` is not a feed position"))
                }),
            };
            let time = form.text("to_time");
            let time = Some(time.as_str()).filter(|t| !t.is_empty());
            match seq.and_then(|seq| rewind_target(seq, time)) {
                Ok(to) => rewind_as(&app, &caller, &name, to).await.map(|_| "rewound"),
                Err(e) => Err(e),
            }
        }
        "redeliver" => {
            let id = form.text("event_id");
            redeliver_as(&app, &caller, &name, &id)
                .await
                .map(|_| "redelivery")
        }
        "pause" => pause_as(&app, &caller, &name, true).await.map(|_| "paused"),
        "resume" => pause_as(&app, &caller, &name, false)
            .await
            .map(|_| "resumed"),
        other => Err(ApiError::NotFound(format!("no action `{other}`"))),
    };
    match done {
        Ok(code) => redirect(&format!("{BACK}?flash={code}")),
        Err(e) => api_error(e, BACK),
    }
}
