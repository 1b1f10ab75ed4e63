//! Events that are not a status change: the money moved while the status
//! stayed (`payment.amounts`, a partial refund), and a flag raised or
//! closed beside a final payment (`payment.flagged`,
//! `payment.flag_resolved`). They are outbox rows like every transition's,
//! written in the transaction that made the fact, so they reach the feed,
//! every push channel and a replay in the payment's order, with the same
//! at-least-once promise. Their `status` and `previous_status` are both the
//! payment's status at the time (nothing moved). Destinations of schema 1
//! and 2 never get them (`docs/EVENTS.md`): those consumers were written
//! for one event per transition.

use crate::driver::{stmt, Conn, Fields};
use crate::error::{Result, StoreError};
use crate::event_id::{event_id, EventFact};
use crate::flags::Flag;
use finality_core::amounts::Piece;
use finality_core::{Kind, Source, Timestamp};
use serde::{Deserialize, Serialize};

/// The last part of the notice events' types (`payment.amounts`, …).
pub const NOTICE_TYPES: [&str; 3] = ["amounts", "flagged", "flag_resolved"];

/// Whether an event of `event_type` is a notice, not a status change.
pub fn is_notice(event_type: &str) -> bool {
    event_type
        .split_once('.')
        .is_some_and(|(_, what)| NOTICE_TYPES.contains(&what))
}

/// What a notice says.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Notice<'a> {
    /// The counters changed and the status did not.
    Amounts,
    /// A fact after final needs a person.
    Flagged(&'a Flag),
    /// A person or the provider closed a flag.
    FlagResolved(&'a Flag),
}

impl Notice<'_> {
    fn event_type(&self, kind: Kind) -> String {
        let what = match self {
            Notice::Amounts => NOTICE_TYPES[0],
            Notice::Flagged(_) => NOTICE_TYPES[1],
            Notice::FlagResolved(_) => NOTICE_TYPES[2],
        };
        format!("{}.{what}", kind.as_str())
    }

    /// The event's id: derived from the payment and what it says
    /// ([`crate::event_id`]), `pieces` being the payment's counters now.
    fn id(&self, payment_id: &str, kind: Kind, pieces: &[Piece]) -> String {
        let by = self.flag().map(raised_by).unwrap_or_default();
        let fact = match self {
            Notice::Amounts => EventFact::Amounts { pieces },
            Notice::Flagged(f) => EventFact::Flagged {
                raised_by: &by,
                reason: &f.reason,
            },
            Notice::FlagResolved(f) => EventFact::FlagResolved {
                raised_by: &by,
                reason: &f.reason,
            },
        };
        event_id(payment_id, kind, fact)
    }

    fn flag(&self) -> Option<&Flag> {
        match self {
            Notice::Amounts => None,
            Notice::Flagged(f) | Notice::FlagResolved(f) => Some(f),
        }
    }
}

/// What raised a flag: the provider's event (every flag raised since flags
/// exist names one); a flag without one is known by its row id.
fn raised_by(f: &Flag) -> String {
    f.event_id
        .clone()
        .unwrap_or_else(|| format!("flag {}", f.id))
}

/// A flag as an outbox row keeps it: the flag as it was when the event was
/// written (a replay says what was raised, not what became of it).
#[derive(Serialize, Deserialize)]
struct StoredFlag {
    id: i64,
    payment_id: String,
    reason: String,
    event_id: Option<String>,
    provider_status: Option<String>,
    piece_key: Option<String>,
    opened_at: i64,
    closed_at: Option<i64>,
    closed_by: Option<String>,
    resolution: Option<String>,
}

pub(crate) fn flag_to_text(f: &Flag) -> String {
    let s = StoredFlag {
        id: f.id,
        payment_id: f.payment_id.clone(),
        reason: f.reason.clone(),
        event_id: f.event_id.clone(),
        provider_status: f.provider_status.clone(),
        piece_key: f.piece_key.clone(),
        opened_at: f.opened_at.0,
        closed_at: f.closed_at.map(|t| t.0),
        closed_by: f.closed_by.clone(),
        resolution: f.resolution.clone(),
    };
    serde_json::to_string(&s).unwrap_or_default()
}

pub(crate) fn flag_from_text(text: Option<&str>) -> Result<Option<Flag>> {
    let Some(t) = text.filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let s: StoredFlag = serde_json::from_str(t).map_err(|e| StoreError::Corrupt {
        table: "outbox",
        detail: format!("flag `{t}` does not read: {e}"),
    })?;
    Ok(Some(Flag {
        id: s.id,
        payment_id: s.payment_id,
        reason: s.reason,
        event_id: s.event_id,
        provider_status: s.provider_status,
        piece_key: s.piece_key,
        opened_at: Timestamp(s.opened_at),
        closed_at: s.closed_at.map(Timestamp),
        closed_by: s.closed_by,
        resolution: s.resolution,
    }))
}

/// Write `notice` about `payment_id` into the outbox, inside the caller's
/// transaction (which holds the payment's lock), with the payment's status
/// and counted pieces as they are now. Nothing when the payment is gone,
/// or when the outbox already holds this fact (its id is derived from it):
/// the same fact is reported once.
pub(crate) async fn notice_in<C: Conn>(
    conn: &mut C,
    payment_id: &str,
    notice: Notice<'_>,
    source: Source,
    now: Timestamp,
) -> Result<()> {
    let t = "payments";
    let Some(r) = conn
        .opt(
            stmt(
                "SELECT kind, status, pieces FROM payments WHERE id = $1",
                "reading a payment for its event",
            )
            .text(payment_id),
        )
        .await?
    else {
        return Ok(());
    };
    let kind: Kind = r.parsed("kind", t)?;
    let status = r.text("status", t)?;
    let pieces_text = r.opt_text("pieces", t)?;
    let pieces = crate::amounts::from_text(pieces_text.as_deref(), t)?;
    conn.run(
        stmt(
            "INSERT INTO outbox (event_id, payment_id, type, status, previous_status, source, \
             occurred_at, pieces, flag) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT (event_id) DO NOTHING",
            "writing an event",
        )
        .text(&notice.id(payment_id, kind, &pieces))
        .text(payment_id)
        .text(&notice.event_type(kind))
        .text(&status)
        .text(&status)
        .text(source.as_str())
        .int(now.0)
        .opt_text(pieces_text.as_deref())
        .opt_text(notice.flag().map(flag_to_text).as_deref()),
    )
    .await?;
    Ok(())
}

impl crate::memory::MemState {
    /// [`notice_in`] in memory.
    pub(crate) fn notice(
        &mut self,
        payment_id: &str,
        notice: Notice<'_>,
        source: Source,
        now: Timestamp,
    ) {
        let Some(p) = self.payments.get(payment_id) else {
            return;
        };
        let (kind, status) = (p.kind, p.status);
        let pieces = self.pieces.get(payment_id).cloned().unwrap_or_default();
        let id = notice.id(payment_id, kind, &pieces);
        if self.outbox.values().any(|r| r.ev.event_id == id) {
            return;
        }
        self.push_outbox(
            crate::model::OutboxEvent {
                seq: 0,
                event_id: id,
                payment_id: payment_id.to_string(),
                event_type: notice.event_type(kind),
                status,
                previous_status: Some(status),
                source,
                occurred_at: now,
            },
            pieces,
            notice.flag().cloned(),
        );
    }
}
