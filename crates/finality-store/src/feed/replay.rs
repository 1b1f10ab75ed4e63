//! The feed's destinations as an admin handles them (rewind, pause,
//! redeliver) and what an event says beyond its transition, on SQL. The
//! trait's methods in `sql.rs` call these.

use crate::driver::Backend;
use crate::driver::{placeholders, stmt, Conn, Fields};
use crate::error::Result;
use crate::feed::event_from_row;
use crate::model::*;
use crate::payments::sql::{payment_from_row, PAYMENT_COLUMNS};
use finality_core::{Status, Timestamp};
use std::collections::{BTreeSet, HashMap};

/// A destination's cursor moved from `$2` to `$3`, compare-and-set.
///
/// Never past the feed's head: after a failover or restore took the feed
/// back, a pusher still holding events of the old history (read before,
/// or from this node's memory) cannot move its cursor over positions the
/// new history will give to other events; it reads its cursor again.
pub(crate) const ADVANCE: &str = "UPDATE event_destinations SET delivered_seq = $3, attempts = 0, \
     failing_since = NULL, next_attempt_at = NULL, last_error = NULL \
     WHERE name = $1 AND delivered_seq = $2 \
     AND $3 <= (SELECT last_seq FROM feed_state WHERE id = 1)";

/// The columns [`destination_from_row`] reads.
pub(crate) const DESTINATION_COLUMNS: &str = "name, delivered_seq, attempts, failing_since, \
     next_attempt_at, last_error, paused_at, paused_by";

pub(crate) fn destination_from_row(r: &impl Fields) -> Result<DestinationState> {
    let t = "event_destinations";
    Ok(DestinationState {
        name: r.text("name", t)?,
        delivered_seq: r.int("delivered_seq", t)?,
        attempts: r.count("attempts", t)?,
        failing_since: r.opt_int("failing_since", t)?.map(Timestamp),
        next_attempt_at: r.opt_int("next_attempt_at", t)?.map(Timestamp),
        last_error: r.opt_text("last_error", t)?,
        paused_at: r.opt_int("paused_at", t)?.map(Timestamp),
        paused_by: r.opt_text("paused_by", t)?,
    })
}

fn redelivery_from_row(r: &impl Fields) -> Result<Redelivery> {
    let t = "event_redeliveries";
    Ok(Redelivery {
        id: r.int("id", t)?,
        destination: r.text("destination", t)?,
        event_id: r.text("event_id", t)?,
        requested_at: Timestamp(r.int("requested_at", t)?),
        requested_by: r.text("requested_by", t)?,
        done_at: r.opt_int("done_at", t)?.map(Timestamp),
        outcome: r.opt_text("outcome", t)?,
    })
}

/// A transition: its payment, the status it reached, when.
type TransitionKey = (String, Status, i64);
/// Its reason and actor.
type Note = (Option<String>, Option<String>);
/// What an event kept: the counted pieces, the flag.
type Kept = (Vec<finality_core::amounts::Piece>, Option<Flag>);

/// Payment ids per `IN (…)` list: far under SQLite's bound-parameter
/// limit, and a page of the feed is at most 1000 events.
const IDS_PER_READ: usize = 500;

pub(crate) async fn event_details<B: Backend>(
    b: &B,
    events: &[OutboxEvent],
) -> Result<Vec<EventDetails>> {
    // Held with the events in the feed's tail (the inbox processor's, at
    // the head): nothing to read for those.
    let held = b.wakeups().feed_tail().details(events);
    if held.iter().all(Option::is_some) {
        return Ok(held.into_iter().flatten().collect());
    }
    let ids: Vec<&str> = events
        .iter()
        .zip(&held)
        .filter(|(_, h)| h.is_none())
        .map(|(e, _)| e.payment_id.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut payments: HashMap<String, Payment> = HashMap::new();
    // Payments with counted pieces: their events kept some.
    let mut counted: BTreeSet<String> = BTreeSet::new();
    // (payment, to status, when) → (reason, actor): the history row written
    // with the event, in the same transaction and with the same time.
    let mut notes: HashMap<TransitionKey, Note> = HashMap::new();
    // The payments and their notes in one statement (one round trip on a
    // pusher's or a feed reader's way from the status change to the
    // merchant): a payment's columns come once per note, and a payment
    // has a few notes at most. The id list is said on both sides of the
    // join so each is read by its index whatever the statistics: a plan
    // made while `status_history` was new (PostgreSQL keeps a prepared
    // statement's generic plan) otherwise hash-joined a scan of all of it.
    // (Qualified here, not by `review::sql::prefixed`: review's files
    // already read the feed's, and the crate's files import no circle.)
    let columns = PAYMENT_COLUMNS
        .split(", ")
        .map(|c| format!("p.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut conn = b.read().await?;
    for chunk in ids.chunks(IDS_PER_READ) {
        let list = placeholders(1, chunk.len());
        let sql = format!(
            "SELECT {columns}, p.pieces AS pay_pieces, \
               h.to_status AS note_status, h.at AS note_at, \
               h.reason AS note_reason, h.actor AS note_actor \
             FROM payments p LEFT JOIN status_history h ON h.payment_id = p.id \
               AND h.payment_id IN ({list}) \
               AND (h.reason IS NOT NULL OR h.actor IS NOT NULL) \
             WHERE p.id IN ({list})"
        );
        let q = chunk
            .iter()
            .fold(stmt(&sql, "reading the payments of events"), |q, id| {
                q.text(id)
            });
        let t = "status_history";
        for r in conn.all(q).await? {
            let p = payment_from_row(&r)?;
            if let Some(at) = r.opt_int("note_at", t)? {
                notes.insert(
                    (p.id.clone(), r.parsed("note_status", t)?, at),
                    (r.opt_text("note_reason", t)?, r.opt_text("note_actor", t)?),
                );
            }
            if r.opt_text("pay_pieces", "payments")?.is_some() {
                counted.insert(p.id.clone());
            }
            payments.entry(p.id.clone()).or_insert(p);
        }
    }
    // What each event kept of the money and its flag: read only for the
    // events that can have kept any (their payment has counted pieces, or
    // the event is a notice), so a page of ordinary events costs nothing
    // more.
    let asked: Vec<&str> = events
        .iter()
        .zip(&held)
        .filter(|(e, h)| {
            h.is_none() && (counted.contains(&e.payment_id) || super::is_notice(&e.event_type))
        })
        .map(|(e, _)| e.event_id.as_str())
        .collect();
    let mut kept: HashMap<String, Kept> = HashMap::new();
    for chunk in asked.chunks(IDS_PER_READ) {
        let sql = format!(
            "SELECT event_id, pieces, flag FROM outbox WHERE event_id IN ({})",
            placeholders(1, chunk.len())
        );
        let q = chunk
            .iter()
            .fold(stmt(&sql, "reading what events kept"), |q, id| q.text(id));
        let t = "outbox";
        for r in conn.all(q).await? {
            kept.insert(
                r.text("event_id", t)?,
                (
                    crate::amounts::from_text(r.opt_text("pieces", t)?.as_deref(), t)?,
                    super::notice::flag_from_text(r.opt_text("flag", t)?.as_deref())?,
                ),
            );
        }
    }
    Ok(events
        .iter()
        .zip(held)
        .map(|(e, held)| {
            if let Some(d) = held {
                return d;
            }
            let (reason, actor) = notes
                .get(&(e.payment_id.clone(), e.status, e.occurred_at.0))
                .cloned()
                .unwrap_or_default();
            let (pieces, flag) = kept.remove(&e.event_id).unwrap_or_default();
            EventDetails {
                payment: payments.get(&e.payment_id).cloned(),
                reason,
                actor,
                pieces,
                flag,
            }
        })
        .collect())
}

pub(crate) async fn destinations<B: Backend>(b: &B) -> Result<Vec<DestinationState>> {
    let sql = format!("SELECT {DESTINATION_COLUMNS} FROM event_destinations ORDER BY name");
    let mut conn = b.read().await?;
    conn.all(stmt(&sql, "listing destinations"))
        .await?
        .iter()
        .map(destination_from_row)
        .collect()
}

pub(crate) async fn feed_bounds<B: Backend>(b: &B) -> Result<FeedBounds> {
    let mut conn = b.read().await?;
    let head = conn
        .opt(stmt(
            "SELECT last_seq FROM feed_state WHERE id = 1",
            "reading the feed head",
        ))
        .await?
        .map(|r| r.int("last_seq", "feed_state"))
        .transpose()?
        .unwrap_or(0);
    let oldest = conn
        .opt(stmt(
            "SELECT feed_seq, occurred_at FROM outbox WHERE feed_seq IS NOT NULL \
             ORDER BY feed_seq LIMIT 1",
            "reading the oldest event kept",
        ))
        .await?
        .map(|r| {
            Ok::<_, crate::StoreError>((
                r.int("feed_seq", "outbox")?,
                Timestamp(r.int("occurred_at", "outbox")?),
            ))
        })
        .transpose()?;
    Ok(FeedBounds { head, oldest })
}

pub(crate) async fn first_seq_since<B: Backend>(b: &B, at: Timestamp) -> Result<Option<i64>> {
    let mut conn = b.read().await?;
    conn.opt(
        stmt(
            "SELECT min(feed_seq) AS s FROM outbox WHERE feed_seq IS NOT NULL AND occurred_at >= $1",
            "finding the first event since a time",
        )
        .int(at.0),
    )
    .await?
    .map(|r| r.opt_int("s", "outbox"))
    .transpose()
    .map(Option::flatten)
}

pub(crate) async fn event_by_id<B: Backend>(b: &B, event_id: &str) -> Result<Option<OutboxEvent>> {
    let mut conn = b.read().await?;
    conn.opt(
        stmt(
            "SELECT feed_seq AS id, event_id, payment_id, type, status, previous_status, \
             source, occurred_at FROM outbox WHERE event_id = $1 AND feed_seq IS NOT NULL",
            "reading an event",
        )
        .text(event_id),
    )
    .await?
    .map(|r| event_from_row(&r))
    .transpose()
}

pub(crate) async fn destination_rewind<B: Backend>(
    b: &B,
    name: &str,
    to: i64,
) -> Result<Option<i64>> {
    let mut conn = b.read().await?;
    // Compare-and-set against what was read, again if a pusher moved the
    // cursor in between: the answer is the cursor the rewind replaced.
    loop {
        let Some(was) = conn
            .opt(
                stmt(
                    "SELECT delivered_seq FROM event_destinations WHERE name = $1",
                    "reading a destination cursor",
                )
                .text(name),
            )
            .await?
            .map(|r| r.int("delivered_seq", "event_destinations"))
            .transpose()?
        else {
            return Ok(None);
        };
        let n = conn
            .run(
                stmt(ADVANCE, "rewinding a destination cursor")
                    .text(name)
                    .int(was)
                    .int(to),
            )
            .await?;
        if n == 1 {
            return Ok(Some(was));
        }
    }
}

pub(crate) async fn destination_pause<B: Backend>(
    b: &B,
    name: &str,
    paused: Option<(Timestamp, &str)>,
) -> Result<bool> {
    let mut conn = b.read().await?;
    let n = match paused {
        Some((at, by)) => {
            conn.run(
                stmt(
                    "UPDATE event_destinations SET paused_at = $2, paused_by = $3 WHERE name = $1",
                    "pausing a destination",
                )
                .text(name)
                .int(at.0)
                .text(by),
            )
            .await?
        }
        None => {
            conn.run(
                stmt(
                    "UPDATE event_destinations SET paused_at = NULL, paused_by = NULL, \
                     next_attempt_at = NULL WHERE name = $1",
                    "resuming a destination",
                )
                .text(name),
            )
            .await?
        }
    };
    Ok(n == 1)
}

pub(crate) async fn request_redelivery<B: Backend>(
    b: &B,
    destination: &str,
    event_id: &str,
    at: Timestamp,
    by: &str,
) -> Result<i64> {
    let mut conn = b.read().await?;
    let r = conn
        .opt(
            stmt(
                "INSERT INTO event_redeliveries (destination, event_id, requested_at, requested_by) \
                 VALUES ($1, $2, $3, $4) RETURNING id",
                "asking for a redelivery",
            )
            .text(destination)
            .text(event_id)
            .int(at.0)
            .text(by),
        )
        .await?;
    match r {
        Some(r) => r.int("id", "event_redeliveries"),
        None => Err(crate::driver::corrupt(
            "event_redeliveries",
            "the insert returned no id",
        )),
    }
}

const REDELIVERY_COLUMNS: &str =
    "id, destination, event_id, requested_at, requested_by, done_at, outcome";

pub(crate) async fn pending_redeliveries<B: Backend>(
    b: &B,
    destination: &str,
    limit: u32,
) -> Result<Vec<Redelivery>> {
    let sql = format!(
        "SELECT {REDELIVERY_COLUMNS} FROM event_redeliveries \
         WHERE destination = $1 AND done_at IS NULL ORDER BY id LIMIT $2"
    );
    let mut conn = b.read().await?;
    conn.all(
        stmt(&sql, "reading pending redeliveries")
            .text(destination)
            .int(i64::from(limit)),
    )
    .await?
    .iter()
    .map(redelivery_from_row)
    .collect()
}

pub(crate) async fn redeliveries<B: Backend>(b: &B, limit: u32) -> Result<Vec<Redelivery>> {
    let sql =
        format!("SELECT {REDELIVERY_COLUMNS} FROM event_redeliveries ORDER BY id DESC LIMIT $1");
    let mut conn = b.read().await?;
    conn.all(stmt(&sql, "reading redeliveries").int(i64::from(limit)))
        .await?
        .iter()
        .map(redelivery_from_row)
        .collect()
}

pub(crate) async fn redelivery_done<B: Backend>(
    b: &B,
    id: i64,
    at: Timestamp,
    outcome: &str,
) -> Result<()> {
    let mut conn = b.read().await?;
    conn.run(
        stmt(
            "UPDATE event_redeliveries SET done_at = $2, outcome = $3 WHERE id = $1",
            "recording a redelivery",
        )
        .int(id)
        .int(at.0)
        .text(outcome),
    )
    .await?;
    Ok(())
}
