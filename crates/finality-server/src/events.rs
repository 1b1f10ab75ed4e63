//! `GET /v1/events?after=<cursor>&limit=…&wait=30s`: the pull feed. The
//! cursor is a feed position; a position becomes visible only at the
//! commit of the transaction that gave it, above every one visible before
//! (`docs/EVENTS.md`), so paging by them never skips an event. With `wait`,
//! a reader at the head is answered as soon as the feed grows (a long
//! poll), or with no events when the wait is over.

use crate::error::ApiQuery;
use crate::openapi::ErrorBody;
use crate::replica::Reads;
use crate::{ApiError, App};
use axum::Json;
use finality_core::{Source, Status};
use finality_relay::Event;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) fn router() -> OpenApiRouter<App> {
    OpenApiRouter::new().routes(routes!(feed))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct FeedParams {
    /// A feed position: the `next_cursor` of the previous answer
    /// (`<epoch>.<position>`; a bare position from before epochs is read
    /// too); omit or `0` to start from the oldest event kept.
    after: Option<String>,
    /// 1 to 1000; default 100.
    #[param(value_type = Option<u32>)]
    limit: Option<String>,
    /// At the head of the feed, wait up to this long (`30s`, at most `60s`)
    /// for the next event before answering with none.
    wait: Option<String>,
}

/// One event, as pushed and as read from the feed (schema 3,
/// `docs/event.schema.json`): a status change, or (`payment.amounts`,
/// `payment.flagged`, `payment.flag_resolved`) a fact beside one. Schema
/// 1's and 2's fields are all here, so a reader built on them keeps
/// working; it ignores the types it does not know.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventOut {
    /// Always 3.
    schema: u8,
    /// The event's id (also the `webhook-id` it is pushed with): deduplicate on it.
    id: String,
    /// `payment.succeeded`, `refund.failed`, …
    #[serde(rename = "type")]
    event_type: String,
    /// `payment`, `refund` or `payout`.
    kind: String,
    payment_id: String,
    status: Status,
    previous_status: Option<Status>,
    source: Source,
    occurred_at: String,
    /// Its position in the feed.
    seq: i64,
    /// Minor units of `currency`; this and the payment's fields below are
    /// `null` only when retention archived the payment before the event was read.
    amount: Option<i64>,
    currency: Option<String>,
    provider: Option<String>,
    provider_ref: Option<String>,
    merchant_ref: Option<String>,
    /// The provider's account the payment belongs to (`null`: the provider's own).
    account: Option<String>,
    /// The JSON object registered with the payment.
    #[schema(value_type = Option<Object>)]
    metadata: Option<serde_json::Value>,
    /// Why (a review, a manual resolve, …).
    reason: Option<String>,
    /// Who, for a manual transition.
    actor: Option<String>,
    /// The payment's counters after this event, from the provider's
    /// sub-objects finality counted; `null` when none was counted (a
    /// provider whose messages name none).
    amounts: Option<EventAmounts>,
    /// The flag a `payment.flagged` or `payment.flag_resolved` event is
    /// about, as it was then; `null` on other events.
    flag: Option<crate::flags::FlagOut>,
}

/// The counters an event carries: each the sum of the provider's
/// sub-objects of that kind counted so far, in minor units of `currency`.
#[derive(Debug, Serialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventAmounts {
    currency: String,
    authorised: i64,
    captured: i64,
    refunded: i64,
    /// Taken back by chargebacks.
    disputed: i64,
    /// Chargebacks won back.
    dispute_reversed: i64,
}

impl From<&Event> for EventOut {
    fn from(ev: &Event) -> Self {
        let e = &ev.outbox;
        let p = ev.details.payment.as_ref();
        EventOut {
            schema: 3,
            id: e.event_id.clone(),
            event_type: e.event_type.clone(),
            kind: ev.kind().to_string(),
            payment_id: e.payment_id.clone(),
            status: e.status,
            previous_status: e.previous_status,
            source: e.source,
            occurred_at: e.occurred_at.to_rfc3339(),
            seq: e.seq,
            amount: p.map(|p| p.amount),
            currency: p.map(|p| p.currency.clone()),
            provider: p.map(|p| p.provider.clone()),
            provider_ref: p.and_then(|p| p.provider_ref.clone()),
            merchant_ref: p.and_then(|p| p.merchant_ref.clone()),
            account: p.and_then(|p| p.account.clone()),
            metadata: p.map(|p| p.metadata.clone()),
            reason: ev.details.reason.clone(),
            actor: ev.details.actor.clone(),
            // One rule for the counters, the pushes' (schema 3).
            amounts: finality_relay::event::counters_of(
                p.map(|p| p.currency.as_str()),
                &ev.details.pieces,
            )
            .map(|(currency, c)| EventAmounts {
                currency,
                authorised: c.authorised,
                captured: c.captured,
                refunded: c.refunded,
                disputed: c.disputed,
                dispute_reversed: c.dispute_reversed,
            }),
            flag: ev.details.flag.clone().map(Into::into),
        }
    }
}

/// A page of the feed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FeedPage {
    events: Vec<EventOut>,
    /// Pass as `after` to read on; the same value when nothing was new.
    next_cursor: String,
}

/// The longest a feed reader may wait for the next event in one request.
pub const MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// How soon a long-polling reader on a replica looks again while the
/// primary has announced events the replica has not shown yet.
pub const REPLICA_LOOK: std::time::Duration = std::time::Duration::from_millis(20);

/// How soon it looks again without any announcement (one lost, or from a
/// node whose NOTIFY did not reach this one).
pub const REPLICA_IDLE_LOOK: std::time::Duration = std::time::Duration::from_secs(1);

/// Status changes in commit order, from a cursor, optionally waiting at the head.
#[utoipa::path(get, path = "/events", operation_id = "read_feed", tag = "events", params(FeedParams),
    responses(
        (status = 200, description = "Events after the cursor (none when the wait ran out)", body = FeedPage),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 409, description = "`feed_rewound`: `after` is from a history of the feed that no longer exists (a database failover lost commits, a restore), or past its head; `lost` names the positions, `resume_after` where to read on", body = ErrorBody),
        (status = 422, description = "A parameter is invalid", body = ErrorBody),
        (status = 429, description = "This token has as many reads waiting (`wait`) as it may; retry after `Retry-After`", body = ErrorBody),
    ))]
async fn feed(
    axum::extract::State(app): axum::extract::State<App>,
    reads: Reads,
    caller: crate::auth::Caller,
    ApiQuery(q): ApiQuery<FeedParams>,
) -> Result<Json<FeedPage>, ApiError> {
    let cursor = Cursor::parse(q.after.as_deref())?;
    let after = cursor.seq;
    let limit = crate::payments::parse_limit(q.limit, 100, 1000)?;
    let wait = match q.wait.as_deref() {
        None | Some("") => std::time::Duration::ZERO,
        Some(w) => humantime::parse_duration(w)
            .ok()
            .or_else(|| w.parse::<u64>().ok().map(std::time::Duration::from_secs))
            .filter(|d| *d <= MAX_WAIT)
            .ok_or_else(|| {
                ApiError::invalid(
                    "wait",
                    format!("`{w}` is not a wait of at most 60s (e.g. `30s`)"),
                )
            })?,
    };
    // Waiting reads are bounded per token (held until this returns).
    let _waiting = if wait > std::time::Duration::ZERO {
        let held = app.throttle.long_poll(&caller.identity.name);
        if held.is_none() {
            return Err(ApiError::TooMany {
                message: format!(
                    "token `{}` has {} feed reads waiting already, as many as one token may: \
                     wait for one to return (`wait`), or read without waiting",
                    caller.identity.name,
                    app.throttle.long_polls_per_token()
                ),
                retry_after: 1,
            });
        }
        held
    } else {
        None
    };
    // The cursor's history is checked before waiting (a reader of a
    // rewound one is told at once) and again after reading (a failover in
    // between gives positions again: their events are not answered under
    // the old epoch). Both from the primary, which gives the positions.
    let epoch = reads.primary().feed_epoch().await?;
    cursor.check(reads.primary().as_ref(), &epoch).await?;
    let deadline = tokio::time::Instant::now() + wait;
    // Subscribed before the first read, so growth between the read and
    // the wait is not missed. Announcements are the primary's, also when
    // the events are read from a replica (which relays no NOTIFY).
    let primary = reads.primary();
    let mut grew = primary.subscribe_feed();
    // A reader already at the head this process knows waits without a
    // read: the feed growing past it wakes `grew`.
    let at_head =
        wait > std::time::Duration::ZERO && primary.feed_head().is_some_and(|head| after >= head);
    let mut events = if at_head {
        Vec::new()
    } else {
        reads.store.feed_after(after, limit).await?
    };
    while events.is_empty() && tokio::time::Instant::now() < deadline {
        // A replica may not have replayed what the primary announced: it
        // is looked at again every REPLICA_LOOK while the primary's head
        // is past the reader, and every REPLICA_IDLE_LOOK regardless.
        let look = reads.on_replica().then(|| {
            if primary.feed_head().is_some_and(|head| head > after) {
                REPLICA_LOOK
            } else {
                REPLICA_IDLE_LOOK
            }
        });
        let until = look.map_or(deadline, |l| {
            (tokio::time::Instant::now() + l).min(deadline)
        });
        match tokio::time::timeout_at(until, grew.changed()).await {
            Ok(Ok(())) => events = reads.store.feed_after(after, limit).await?,
            Err(_) if look.is_some() && tokio::time::Instant::now() < deadline => {
                events = reads.store.feed_after(after, limit).await?
            }
            // The wait is over, or the store is gone: answer what there is.
            _ => break,
        }
    }
    // Skipped on a head this node knew: asked once before answering
    // nothing, in case an announcement from another node was lost.
    if events.is_empty() && at_head {
        events = reads.store.feed_after(after, limit).await?;
    }
    if !events.is_empty() {
        let again = primary.feed_epoch().await?;
        if again.epoch != epoch.epoch {
            let c = Cursor {
                epoch: Some(epoch.epoch.clone()),
                seq: after,
            };
            c.check(primary.as_ref(), &again).await?;
        }
    }
    let next = events.last().map_or(after, |e| e.seq);
    let events = finality_relay::event::complete(&*reads.store, events).await?;
    Ok(Json(FeedPage {
        events: events.iter().map(EventOut::from).collect(),
        next_cursor: Cursor::format(&epoch.epoch, next),
    }))
}

/// A reader's position: a feed position and the epoch (the feed's
/// history) it was given in; `None` for a bare position, from a reader of
/// before epochs, which is taken to be of the current one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cursor {
    epoch: Option<String>,
    seq: i64,
}

impl Cursor {
    /// `<epoch>.<position>` as [`Cursor::format`] writes it, or a bare
    /// position; none or empty: the start.
    pub(crate) fn parse(text: Option<&str>) -> Result<Cursor, ApiError> {
        let bad =
            |c: &str| ApiError::invalid("after", format!("`{c}` is not a cursor from this feed"));
        let Some(c) = text.filter(|c| !c.is_empty()) else {
            return Ok(Cursor {
                epoch: None,
                seq: 0,
            });
        };
        let (epoch, seq) = match c.split_once('.') {
            Some((e, s))
                if !e.is_empty()
                    && e.len() <= 32
                    && e.bytes().all(|b| b.is_ascii_alphanumeric()) =>
            {
                (Some(e.to_string()), s)
            }
            Some(_) => return Err(bad(c)),
            None => (None, c),
        };
        let seq = seq
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| bad(c))?;
        Ok(Cursor { epoch, seq })
    }

    pub(crate) fn format(epoch: &str, seq: i64) -> String {
        format!("{epoch}.{seq}")
    }

    /// Whether this cursor reads on in `now`'s history: `Ok` when it does,
    /// else `409 feed_rewound` naming the positions it may have read that
    /// this history gave again (or never gave), and where to resume.
    async fn check(
        &self,
        feed: &dyn finality_store::Store,
        now: &finality_store::FeedEpoch,
    ) -> Result<(), ApiError> {
        let seq = self.seq;
        let same = self.epoch.as_deref().is_none_or(|e| e == now.epoch);
        if same && seq <= now.head {
            return Ok(());
        }
        // Where the reader's history and this one part: for another epoch,
        // as the feed recorded it (0 when it never had that epoch: start
        // over, deduplicating by id); for a position past the head, the
        // current epoch's start, the last position certainly shared.
        let parted = match self.epoch.as_deref().filter(|_| !same) {
            Some(e) => feed.feed_epoch_parted(e).await?.unwrap_or(0),
            None => now.since,
        }
        .min(seq)
        .min(now.head);
        let why = if same {
            format!("position {seq} is past the feed's head ({})", now.head)
        } else {
            format!(
                "cursor `{}.{seq}` is from another history of this feed (epoch `{}`; it is `{}` now, \
                 after a database failover that lost commits, or a restore)",
                self.epoch.as_deref().unwrap_or_default(),
                self.epoch.as_deref().unwrap_or_default(),
                now.epoch
            )
        };
        Err(ApiError::FeedRewound {
            message: format!(
                "{why}: the events after position {parted} you may have read are not this \
                 feed's; read on from `{}` (events may repeat: deduplicate by id)",
                Cursor::format(&now.epoch, parted)
            ),
            lost_after: parted,
            lost_through: seq,
            resume_after: Cursor::format(&now.epoch, parted),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The feed's events are the pushed events: one shape, two ways out.
    #[test]
    fn feed_events_are_the_pushed_json() {
        let e = finality_store::OutboxEvent {
            seq: 7,
            event_id: "evt_1".into(),
            payment_id: "pay_1".into(),
            event_type: "payment.succeeded".into(),
            status: Status::Succeeded,
            previous_status: Some(Status::Pending),
            source: Source::Webhook,
            occurred_at: finality_core::Timestamp(1_700_000_000_000),
        };
        let payment = finality_store::Payment {
            id: "pay_1".into(),
            provider: "sim".into(),
            provider_ref: Some("sim_1".into()),
            merchant_ref: None,
            account: Some("acct_1".into()),
            kind: finality_core::Kind::Payment,
            amount: 1250,
            currency: "EUR".into(),
            metadata: serde_json::json!({"order": 7}),
            status: Status::Succeeded,
            status_source: Some(Source::Webhook),
            created_at: finality_core::Timestamp(1_699_999_000_000),
            updated_at: finality_core::Timestamp(1_700_000_000_000),
            finalized_at: Some(finality_core::Timestamp(1_700_000_000_000)),
        };
        for details in [
            finality_store::EventDetails {
                payment: Some(payment),
                reason: Some("r".into()),
                actor: Some("alice".into()),
                pieces: vec![finality_core::amounts::Piece {
                    kind: finality_core::amounts::PieceKind::Refund,
                    id: "re_1".into(),
                    state: finality_core::amounts::PieceState::Succeeded,
                    amount: 300,
                    currency: "EUR".into(),
                }],
                flag: Some(finality_store::flags::Flag {
                    id: 3,
                    payment_id: "pay_1".into(),
                    reason: "a dispute was opened".into(),
                    event_id: None,
                    provider_status: None,
                    piece_key: None,
                    opened_at: finality_core::Timestamp(1_700_000_000_000),
                    closed_at: Some(finality_core::Timestamp(1_700_000_100_000)),
                    closed_by: Some("alice".into()),
                    resolution: Some("won".into()),
                }),
            },
            finality_store::EventDetails::default(),
        ] {
            let ev = Event {
                outbox: e.clone(),
                details,
            };
            assert_eq!(
                serde_json::to_value(EventOut::from(&ev)).unwrap(),
                finality_relay::event::Encoding::default().encode(&ev)
            );
        }
    }
}
