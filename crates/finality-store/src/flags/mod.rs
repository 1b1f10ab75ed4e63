//! Facts after final: a fact that cannot change a payment's final status
//! but needs a person (a capture failure the provider may retry, a failure
//! reported after success, money that does not match) is a flag on the
//! payment, raised in the same transaction that keeps its webhook for
//! review, open until a person resolves it (audited, in one transaction
//! with the audit record) or the provider settles it: a later report of
//! the same piece succeeding (Adyen's "Transaction Recaptured" names the
//! capture that failed) closes it with that report's words.

mod memory;
pub(crate) mod sql;

use crate::error::Result;
pub use crate::model::Flag;
use crate::model::{ApplyOutcome, InboxEvent, InboxState};
use crate::review::NewAudit;
use finality_core::amounts::PieceState;
use finality_core::Timestamp;

/// What resolving a flag did.
#[derive(Debug, Clone, PartialEq)]
pub enum FlagResolve {
    Resolved(Flag),
    /// Closed before (by a person or the provider): nothing changed.
    AlreadyClosed(Flag),
    NotFound,
}

impl FlagResolve {
    /// The audit record's outcome.
    pub fn outcome(&self) -> &'static str {
        match self {
            FlagResolve::Resolved(_) => "resolved",
            FlagResolve::AlreadyClosed(_) => "already closed",
            FlagResolve::NotFound => "no such flag",
        }
    }
}

#[async_trait::async_trait]
pub trait Flags: Send + Sync {
    /// A payment's flags, oldest first.
    async fn flags_of(&self, payment_id: &str) -> Result<Vec<Flag>>;

    /// Open flags of every payment, oldest first, after flag id `after`.
    async fn flags_open(&self, after: i64, limit: u32) -> Result<Vec<Flag>>;

    /// Close flag `id` of `payment_id` by hand, with `resolution`; the
    /// audit record commits with it.
    async fn flag_resolve(
        &self,
        payment_id: &str,
        id: i64,
        resolution: &str,
        audit: &NewAudit,
        now: Timestamp,
    ) -> Result<FlagResolve>;
}

/// A flag to raise.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewFlag {
    pub payment_id: String,
    pub reason: String,
    pub event_id: String,
    pub provider_status: Option<String>,
    pub piece_key: Option<String>,
}

/// Whether the event kept for review (`state`, `reason`) about a payment
/// `applied` found final is a flag: a fact beside a final payment. An
/// open payment in review carries the fact itself (its status).
pub(crate) fn raised(
    ev: &InboxEvent,
    payment_id: &str,
    applied: &ApplyOutcome,
    state: InboxState,
    reason: Option<&str>,
) -> Option<NewFlag> {
    let on_final = matches!(applied, ApplyOutcome::Ignored { current, .. } if current.is_final());
    if state != InboxState::Review || !on_final {
        return None;
    }
    Some(NewFlag {
        payment_id: payment_id.to_string(),
        reason: reason.unwrap_or("kept for review").to_string(),
        event_id: ev.event_id.clone(),
        provider_status: ev.provider_status.clone(),
        piece_key: ev
            .reported
            .pieces
            .iter()
            .find(|p| p.state == PieceState::Failed)
            .map(piece_key),
    })
}

pub(crate) fn piece_key(p: &finality_core::amounts::Piece) -> String {
    format!("{}:{}", p.kind.as_str(), p.id)
}

/// The keys of the pieces `ev` reports succeeded: each closes the open
/// flags about it.
pub(crate) fn settled_keys(ev: &InboxEvent) -> Vec<String> {
    ev.reported
        .pieces
        .iter()
        .filter(|p| p.state == PieceState::Succeeded)
        .map(piece_key)
        .collect()
}

/// The resolution a provider's settling report writes.
pub(crate) fn settled_by(ev: &InboxEvent) -> String {
    format!(
        "settled by the provider: {} (`{}`)",
        ev.provider_status.as_deref().unwrap_or("a later report"),
        ev.event_id
    )
}
