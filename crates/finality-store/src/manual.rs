//! A person settling a payment by hand: the one place its rules live, so
//! the HTTP API and the CLI cannot drift apart.

use crate::review::NewAudit;
use crate::{ApplyOutcome, Report, Store, StoreError};
use finality_core::{Status, Timestamp};

/// Why a manual resolution was refused; each names what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "a manual resolution must be final: succeeded, failed, cancelled or reversed (not `{0}`)"
    )]
    NotFinal(Status),
    #[error("a manual resolution needs a {0}")]
    Missing(&'static str),
    #[error("no payment with id `{0}`")]
    NotFound(String),
    #[error("payment `{id}` is `{current}`; it cannot become `{status}` ({reason})")]
    NotAllowed {
        id: String,
        current: Status,
        status: Status,
        reason: &'static str,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a manual resolution did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    Changed {
        from: Status,
        to: Status,
    },
    /// The payment already had that status.
    Already,
}

/// Settle payment `id` as `status`, by `audit.actor`, for `reason`, through
/// the one `apply` path (history row with reason and actor, outbox event),
/// with `audit` recorded in the same transaction, whatever the outcome.
/// Nothing is written when the request itself is malformed.
pub async fn resolve(
    store: &dyn Store,
    id: &str,
    status: Status,
    reason: &str,
    audit: &NewAudit,
    now: Timestamp,
) -> Result<Resolved, ResolveError> {
    let actor = audit.actor.as_str();
    if !status.is_final() {
        return Err(ResolveError::NotFinal(status));
    }
    if reason.trim().is_empty() {
        return Err(ResolveError::Missing("reason"));
    }
    if actor.trim().is_empty() {
        return Err(ResolveError::Missing("actor"));
    }
    let report = Report::manual(id, status, reason.to_string(), actor.to_string(), now);
    match store.apply_manual(&report, audit, now).await? {
        ApplyOutcome::Applied { from, to } => Ok(Resolved::Changed { from, to }),
        ApplyOutcome::Unchanged => Ok(Resolved::Already),
        ApplyOutcome::Ignored { current, reason } => Err(ResolveError::NotAllowed {
            id: id.to_string(),
            current,
            status,
            reason,
        }),
        ApplyOutcome::NotFound => Err(ResolveError::NotFound(id.to_string())),
    }
}
