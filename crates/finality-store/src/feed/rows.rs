//! Events as rows: an outbox row read back, and the rows a transaction
//! numbered, with the payments they made final.

use crate::driver::Fields;
use crate::error::Result;
use crate::model::*;
use finality_core::Timestamp;

/// A payment that became final: for the time-to-final histogram.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FinalFact {
    pub provider: String,
    pub source: finality_core::Source,
    /// From registration to the transition, in milliseconds.
    pub after_ms: i64,
}

/// Rows a transaction numbered (a sequencer round, or the inbox
/// processor's), in position order.
#[derive(Default)]
pub struct Numbered {
    pub(crate) events: Vec<OutboxEvent>,
    pub(crate) finals: Vec<FinalFact>,
}

impl Numbered {
    /// From rows of the event's columns plus its payment's `provider` and
    /// `created_at` (`NULL` if the payment is gone).
    pub(crate) fn of(rows: &[impl Fields]) -> Result<Numbered> {
        let mut events = Vec::with_capacity(rows.len());
        let mut finals = Vec::new();
        for r in rows {
            let e = event_from_row(r)?;
            // A transition into a final status (not a reversal: that
            // payment was final already), for the time-to-final histogram.
            let became_final =
                e.status.is_final() && !e.previous_status.is_some_and(|p| p.is_final());
            if let (true, Some(provider), Some(created_at)) = (
                became_final,
                r.opt_text("provider", "payments")?,
                r.opt_int("created_at", "payments")?,
            ) {
                finals.push(FinalFact {
                    provider,
                    source: e.source,
                    after_ms: e.occurred_at.0 - created_at,
                });
            }
            events.push(e);
        }
        events.sort_by_key(|e| e.seq);
        Ok(Numbered { events, finals })
    }
}

pub(crate) fn event_from_row(r: &impl Fields) -> Result<OutboxEvent> {
    let t = "outbox";
    Ok(OutboxEvent {
        seq: r.int("id", t)?,
        event_id: r.text("event_id", t)?,
        payment_id: r.text("payment_id", t)?,
        event_type: r.text("type", t)?,
        status: r.parsed("status", t)?,
        previous_status: r.opt_parsed("previous_status", t)?,
        source: r.parsed("source", t)?,
        occurred_at: Timestamp(r.int("occurred_at", t)?),
    })
}
