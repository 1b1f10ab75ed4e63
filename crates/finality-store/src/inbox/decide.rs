//! What a verified webhook does to a payment, decided in plain Rust: the
//! report it makes, whether its money matches the registration, and the
//! verdict (applied, ignored with its reason, or review).

use crate::model::*;
use finality_core::{contradicts_success, Status};

/// The report a webhook event makes about `payment_id`. The provider's own
/// words go into the history (a reversal says `CAPTURE_FAILED`,
/// `charge.refunded`, …).
pub(crate) fn webhook_report(ev: &InboxEvent, payment_id: &str, status: Status) -> Report {
    Report {
        payment_id: payment_id.to_string(),
        status,
        source: ev.source,
        event_id: Some(ev.event_id.clone()),
        observed_at: ev.occurred_at.unwrap_or(ev.received_at),
        reason: ev
            .provider_status
            .as_ref()
            .map(|w| format!("provider: {w}")),
        actor: None,
    }
}

/// The report a webhook event makes about a payment registered for
/// `amount` minor units of `currency`, and the mismatch, if the event's
/// money is not that (see [`finality_core::money_mismatch`]): the report
/// then moves the payment to `needs_review` with both values, instead of
/// the status the event names.
pub(crate) fn checked_report(
    ev: &InboxEvent,
    payment_id: &str,
    status: Status,
    amount: i64,
    currency: &str,
    counted: bool,
) -> (Report, Option<String>) {
    let mut report = webhook_report(ev, payment_id, status);
    let r = &ev.reported;
    let more_or_other = r.amount.is_some_and(|a| a > amount)
        || r.currency
            .as_deref()
            .is_some_and(|c| !c.eq_ignore_ascii_case(currency));
    let mismatch = if counted && !more_or_other {
        // Its pieces were counted by the ledger (each piece's currency and
        // amount, over-refund): a part of the registered amount is money,
        // not a mismatch. More, or another currency, still is.
        finality_core::found_by_adapter(Some(status), r).map(String::from)
    } else {
        finality_core::money_mismatch(status, &ev.reported, amount, currency)
    };
    if let Some(why) = &mismatch {
        to_review(&mut report, why);
    }
    (report, mismatch)
}

/// `report` sent to a person for `why`, the provider's words kept.
pub(crate) fn to_review(report: &mut Report, why: &str) {
    report.status = Status::NeedsReview;
    report.reason = Some(match &report.reason {
        Some(words) => format!("{why} ({words})"),
        None => why.to_string(),
    });
}

/// What the inbox row records after its report was applied: the same for
/// every backend. An event whose money did not match (`mismatch`) is a
/// `review` row with that reason, whatever its report did to the payment.
pub(crate) fn verdict(
    ev: &InboxEvent,
    status: Status,
    payment_id: String,
    applied: ApplyOutcome,
    mismatch: Option<String>,
) -> (InboxState, Option<String>, InboxOutcome) {
    if let Some(why) = mismatch {
        let out = match applied {
            ApplyOutcome::Applied { from, to } => InboxOutcome::Applied {
                payment_id,
                from,
                to,
            },
            _ => InboxOutcome::Review {
                reason: why.clone(),
            },
        };
        return (InboxState::Review, Some(why), out);
    }
    match applied {
        ApplyOutcome::Applied { from, to } => (
            InboxState::Applied,
            None,
            InboxOutcome::Applied {
                payment_id,
                from,
                to,
            },
        ),
        ApplyOutcome::Unchanged => {
            let why = format!("duplicate: payment is already {status}");
            (
                InboxState::Ignored,
                Some(why.clone()),
                InboxOutcome::Ignored { reason: why },
            )
        }
        // Never "ignored: already final" for a failure after success: it may
        // be money leaving, or a stale report; a human decides.
        ApplyOutcome::Ignored { current, .. } if contradicts_success(current, status) => {
            let why = format!(
                "the provider reports {status} (`{}`) after the payment succeeded: not \
                 applied, kept for review",
                ev.provider_status.as_deref().unwrap_or("")
            );
            (
                InboxState::Review,
                Some(why.clone()),
                InboxOutcome::Review { reason: why },
            )
        }
        // Money after "no money moved": a success reported for a payment
        // already failed or cancelled (an Adyen EXPIRE delivered before
        // the partial CAPTURE, a late authorisation) may mean money was
        // taken. Never "ignored: already final": kept beside it, a flag.
        ApplyOutcome::Ignored { current, .. }
            if status == Status::Succeeded
                && matches!(current, Status::Failed | Status::Cancelled) =>
        {
            let why = format!(
                "the provider reports succeeded (`{}`) for a payment that is {current}: money may \
                 have moved; not applied, kept for review",
                ev.provider_status.as_deref().unwrap_or("")
            );
            (
                InboxState::Review,
                Some(why.clone()),
                InboxOutcome::Review { reason: why },
            )
        }
        // A fact for a human about a payment that is already final (an
        // Adyen CAPTURE_FAILED after the payment succeeded): kept beside it.
        ApplyOutcome::Ignored { current, .. } if status == Status::NeedsReview => {
            let why = format!(
                "the provider reports `{}` for a payment that is {current}: kept for review",
                ev.provider_status.as_deref().unwrap_or("")
            );
            (
                InboxState::Review,
                Some(why.clone()),
                InboxOutcome::Review { reason: why },
            )
        }
        ApplyOutcome::Ignored { current, reason } => {
            let why = format!("{reason}: payment is {current}, event says {status}");
            (
                InboxState::Ignored,
                Some(why.clone()),
                InboxOutcome::Ignored { reason: why },
            )
        }
        ApplyOutcome::NotFound => {
            let why = ORPHANED.to_string();
            (InboxState::Orphaned, Some(why), InboxOutcome::Orphaned)
        }
    }
}

/// Why an event waits: the payment it names is not registered (yet).
pub(crate) const ORPHANED: &str = "no payment tracks this provider reference yet";

/// [`ORPHANED`], naming the account when the event is an account's: only
/// that account's payments were looked at (another account's payment with
/// the same reference is not this event's).
pub(crate) fn orphaned(ev: &InboxEvent) -> String {
    match &ev.account {
        Some(a) => format!("{ORPHANED} in account `{a}`"),
        None => ORPHANED.to_string(),
    }
}

/// The reason recorded for an event whose provider status has no mapping:
/// every status a provider publishes has a row in its adapter's map, so
/// this is a word the provider added since, kept for a human (a review row)
/// rather than dropped.
pub(crate) fn unknown_status(ev: &InboxEvent) -> String {
    format!(
        "unknown provider status `{}`: not in the adapter's map, kept for review, not applied",
        ev.provider_status.as_deref().unwrap_or("")
    )
}

/// The reason recorded when the payment with the event's merchant
/// reference tracks another provider object.
pub(crate) fn other_object(named: &str, id: &str, merchant_ref: &str, known: &str) -> String {
    format!(
        "event is about `{named}` but payment {id} (merchant reference `{merchant_ref}`) \
         tracks `{known}`: not applied"
    )
}

/// The payment a webhook's merchant reference names, as the inbox finds it
/// (in SQL and in memory alike).
#[derive(Debug)]
pub(crate) enum ByMerchantRef {
    Found(String),
    None,
    /// A payment has the merchant reference but tracks another provider
    /// object: the event is not about it.
    Other(String),
    /// A payment with the merchant reference and no provider object yet;
    /// the event is a refused attempt under it (see
    /// [`crate::amounts::refused_attempt`]), so it is not adopted.
    Attempt(String),
}
