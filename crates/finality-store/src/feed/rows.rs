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
    /// What each event says beyond its transition, when the numbering
    /// statement returned it (the inbox processor's on PostgreSQL): one
    /// per event, in the same order, `None` where not known.
    pub(crate) details: Vec<Option<EventDetails>>,
}

/// A transition's reason and actor, by its event id.
pub(crate) type Notes<'a> = std::collections::HashMap<&'a str, (Option<&'a str>, Option<&'a str>)>;

impl Numbered {
    /// From rows of the event's columns plus its payment's `provider` and
    /// `created_at` (`NULL` if the payment is gone).
    pub(crate) fn of(rows: &[impl Fields]) -> Result<Numbered> {
        Numbered::parse(rows, None)
    }

    /// As [`Numbered::of`], from rows that also carry each payment's
    /// registered fields (`pay_…`) and the event's counted pieces
    /// (`out_pieces`), with the transitions' `notes`: each
    /// event's details as a reader would read them, so the feed's
    /// in-memory tail can serve them without a read.
    pub(crate) fn with_details(rows: &[impl Fields], notes: &Notes<'_>) -> Result<Numbered> {
        Numbered::parse(rows, Some(notes))
    }

    /// Each row read once: its event, its final fact, and (with `notes`)
    /// its details.
    fn parse(rows: &[impl Fields], notes: Option<&Notes<'_>>) -> Result<Numbered> {
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
            let details = match notes {
                None => None,
                Some(notes) => {
                    let (reason, actor) =
                        notes.get(e.event_id.as_str()).copied().unwrap_or_default();
                    Some(EventDetails {
                        payment: payment_at(r, &e)?,
                        reason: reason.map(str::to_string),
                        actor: actor.map(str::to_string),
                        pieces: crate::amounts::from_text(
                            r.opt_text("out_pieces", "outbox")?.as_deref(),
                            "outbox",
                        )?,
                        flag: None,
                    })
                }
            };
            events.push((e, details));
        }
        events.sort_by_key(|(e, _)| e.seq);
        let (events, details): (Vec<_>, Vec<_>) = events.into_iter().unzip();
        Ok(Numbered {
            events,
            finals,
            details,
        })
    }
}

/// The payment as `e` left it: its registered fields from the row, its
/// status from the event; `None` if the payment is gone.
fn payment_at(r: &impl Fields, e: &OutboxEvent) -> Result<Option<Payment>> {
    let t = "payments";
    let (Some(provider), Some(created_at), Some(amount)) = (
        r.opt_text("provider", t)?,
        r.opt_int("created_at", t)?,
        r.opt_int("pay_amount", t)?,
    ) else {
        return Ok(None);
    };
    let finalized_at = r
        .opt_int("pay_finalized_at", t)?
        .map(Timestamp)
        .or(e.status.is_final().then_some(e.occurred_at));
    Ok(Some(Payment {
        id: e.payment_id.clone(),
        provider,
        provider_ref: r.opt_text("pay_provider_ref", t)?,
        merchant_ref: r.opt_text("pay_merchant_ref", t)?,
        account: r.account("pay_account", t)?,
        kind: r.parsed("pay_kind", t)?,
        amount,
        currency: r.text("pay_currency", t)?,
        metadata: r.json("pay_metadata", t)?,
        status: e.status,
        status_source: Some(e.source),
        created_at: Timestamp(created_at),
        updated_at: e.occurred_at,
        finalized_at,
    }))
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
