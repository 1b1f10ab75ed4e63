//! What a caller reads back: a payment with its poll and history, its
//! provider calls, a page of payments.

use crate::openapi::Cursor;
use crate::replica::Reads;
use crate::{ApiError, AppState};
use finality_core::{Kind, Source, Status};
use finality_store::{HistoryEntry, Payment, PaymentView, PollState, Store};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

/// The poll job of an open payment.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PollOut {
    pub(crate) attempts: u32,
    /// Status queries that failed in a row without an answer.
    pub(crate) errors: u32,
    pub(crate) next_poll_at: Option<String>,
    pub(crate) in_flight: bool,
    pub(crate) last_error: Option<String>,
}

/// One status change.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryOut {
    pub(crate) from: Option<Status>,
    pub(crate) to: Status,
    pub(crate) source: Source,
    pub(crate) event_id: Option<String>,
    pub(crate) reason: Option<String>,
    pub(crate) actor: Option<String>,
    pub(crate) at: String,
}

/// A payment's money as the provider moved it: each counter the sum of
/// the provider's sub-objects of that kind that succeeded, every one
/// listed (a capture, a refund, an authorisation attempt, a dispute, by
/// the provider's own id), so a duplicate never counts twice. In the
/// payment's currency, in minor units. All zero where the provider's
/// events name no sub-objects (see docs/AMOUNTS.md).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AmountsOut {
    pub(crate) currency: String,
    pub(crate) authorised: i64,
    pub(crate) captured: i64,
    pub(crate) refunded: i64,
    /// Taken back by chargebacks.
    pub(crate) disputed: i64,
    /// Chargebacks won back.
    pub(crate) dispute_reversed: i64,
    pub(crate) pieces: Vec<finality_core::amounts::Piece>,
}

impl AmountsOut {
    fn of(currency: &str, pieces: Vec<finality_core::amounts::Piece>) -> Self {
        let ledger = finality_core::amounts::Ledger::of(currency, pieces);
        let c = ledger.counters();
        AmountsOut {
            currency: ledger.currency().to_string(),
            authorised: c.authorised,
            captured: c.captured,
            refunded: c.refunded,
            disputed: c.disputed,
            dispute_reversed: c.dispute_reversed,
            pieces: ledger.pieces().cloned().collect(),
        }
    }
}

/// The payment resource, as `GET /v1/payments/{id}` returns it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PaymentOut {
    pub(crate) id: String,
    pub(crate) provider: String,
    /// `null` until found when registered by `merchant_ref` alone.
    pub(crate) provider_ref: Option<String>,
    pub(crate) merchant_ref: Option<String>,
    /// The provider's account it belongs to; `null`: the provider's own.
    pub(crate) account: Option<String>,
    pub(crate) kind: Kind,
    pub(crate) amount: i64,
    pub(crate) currency: String,
    #[schema(value_type = Object)]
    pub(crate) metadata: Value,
    pub(crate) status: Status,
    pub(crate) status_source: Option<Source>,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
    pub(crate) finalized_at: Option<String>,
    /// On the single resource: the poll job, `null` once final. Absent in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<PollOut>, required = false)]
    pub(crate) poll: Option<Option<PollOut>>,
    /// On the single resource: every status change, oldest first. Absent in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub(crate) history: Option<Vec<HistoryOut>>,
    /// On the single resource: the money counted. Absent in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub(crate) amounts: Option<AmountsOut>,
    /// On the single resource: facts after final that needed a person,
    /// open (`closed_at` null) and closed, oldest first. Absent in lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub(crate) flags: Option<Vec<crate::flags::FlagOut>>,
}

impl PaymentOut {
    pub(crate) fn summary(p: Payment) -> Self {
        PaymentOut {
            id: p.id,
            provider: p.provider,
            provider_ref: p.provider_ref,
            merchant_ref: p.merchant_ref,
            account: p.account,
            kind: p.kind,
            amount: p.amount,
            currency: p.currency,
            metadata: p.metadata,
            status: p.status,
            status_source: p.status_source,
            created_at: p.created_at.to_rfc3339(),
            updated_at: p.updated_at.to_rfc3339(),
            finalized_at: p.finalized_at.map(|t| t.to_rfc3339()),
            poll: None,
            history: None,
            amounts: None,
            flags: None,
        }
    }

    pub(crate) fn full(v: PaymentView) -> Self {
        let poll = v.poll.map(|p: PollState| PollOut {
            attempts: p.attempts,
            errors: p.errors,
            next_poll_at: p.next_poll_at.map(|t| t.to_rfc3339()),
            in_flight: p.locked_by.is_some(),
            last_error: p.last_error,
        });
        let history = v
            .history
            .into_iter()
            .map(|h: HistoryEntry| HistoryOut {
                from: h.from,
                to: h.to,
                source: h.source,
                event_id: h.event_id,
                reason: h.reason,
                actor: h.actor,
                at: h.at.to_rfc3339(),
            })
            .collect();
        let amounts = AmountsOut::of(&v.payment.currency, v.pieces);
        let flags = v.flags.into_iter().map(Into::into).collect();
        PaymentOut {
            poll: Some(poll),
            history: Some(history),
            amounts: Some(amounts),
            flags: Some(flags),
            ..PaymentOut::summary(v.payment)
        }
    }
}

/// A payment as the primary has it (after a write).
pub(crate) async fn load(app: &AppState, id: &str) -> Result<PaymentOut, ApiError> {
    match app.store.get(id).await? {
        Some(v) => Ok(PaymentOut::full(v)),
        None => Err(missing(&*app.store, id).await),
    }
}

/// A payment as `reads` has it; one the replica does not know yet (just
/// registered by another caller) is looked up on the primary before a 404.
pub(crate) async fn view(reads: &Reads, id: &str) -> Result<PaymentView, ApiError> {
    if let Some(v) = reads.store.get(id).await? {
        return Ok(v);
    }
    if reads.on_replica() {
        if let Some(v) = reads.primary().get(id).await? {
            return Ok(v);
        }
    }
    Err(missing(&**reads.primary(), id).await)
}

/// A payment not in the database: archived by retention (410, with where
/// it went), or never registered (404).
pub(crate) async fn missing(store: &dyn Store, id: &str) -> ApiError {
    match store.archived_payment(id).await {
        Ok(Some(t)) => ApiError::Gone {
            message: format!(
                "payment `{id}` was {} and archived on {} by retention; `finality archive restore {}` brings its day back",
                t.status,
                t.archived_at.to_rfc3339(),
                t.archive
            ),
            archive: t.archive,
            archived_at: t.archived_at.to_rfc3339(),
        },
        Ok(None) => ApiError::NotFound(format!("no payment with id `{id}`")),
        Err(e) => e.into(),
    }
}

/// One status query to the provider.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AttemptOut {
    pub(crate) id: i64,
    pub(crate) started_at: String,
    pub(crate) latency_ms: i64,
    pub(crate) worker: String,
    pub(crate) outcome: String,
    pub(crate) provider_status: Option<String>,
    pub(crate) error_class: Option<String>,
    pub(crate) error: Option<String>,
}

/// A payment's provider calls.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AttemptsOut {
    pub(crate) payment_id: String,
    pub(crate) attempts: Vec<AttemptOut>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListParams {
    /// Only payments with this status.
    #[param(value_type = Option<Status>)]
    pub(crate) status: Option<String>,
    /// Only payments of this provider.
    pub(crate) provider: Option<String>,
    /// 1 to 500; default 50.
    #[param(value_type = Option<u32>)]
    pub(crate) limit: Option<String>,
    #[param(value_type = Option<Cursor>)]
    pub(crate) cursor: Option<String>,
}

/// A page of payments, in id order.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PaymentPage {
    pub(crate) payments: Vec<PaymentOut>,
    /// Pass as `cursor` for the next page; `null` on the last.
    pub(crate) next_cursor: Option<String>,
}
