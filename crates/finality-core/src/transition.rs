//! The transition tables, one per operation kind, and the one pure function
//! every status change goes through.
//!
//! The tables are data: adding a transition is adding a row, and
//! `docs/state_machine.md` draws exactly these rows.

use crate::status::{Kind, Source, Status};
use Status::*;

/// Allowed `(from, to)` pairs for payments.
const PAYMENT: &[(Status, Status)] = &[
    (Pending, Processing),
    (Pending, Succeeded),
    (Pending, Failed),
    (Pending, Cancelled),
    (Pending, NeedsReview),
    (Processing, Succeeded),
    (Processing, Failed),
    (Processing, Cancelled),
    (Processing, NeedsReview),
    (NeedsReview, Succeeded),
    (NeedsReview, Failed),
    (NeedsReview, Cancelled),
    // A payment in review whose money turns out to have come and gone.
    (NeedsReview, Reversed),
    // Refund, chargeback or reversal of a captured payment.
    (Succeeded, Reversed),
];

/// Refunds move like payments; `reversed` is a refund that failed or was
/// returned after the provider had reported it succeeded.
const REFUND: &[(Status, Status)] = PAYMENT;

/// Payouts can only be cancelled before the provider starts processing them;
/// a paid-out payout that is returned becomes `reversed`.
const PAYOUT: &[(Status, Status)] = &[
    (Pending, Processing),
    (Pending, Succeeded),
    (Pending, Failed),
    (Pending, Cancelled),
    (Pending, NeedsReview),
    (Processing, Succeeded),
    (Processing, Failed),
    (Processing, NeedsReview),
    (NeedsReview, Succeeded),
    (NeedsReview, Failed),
    (NeedsReview, Cancelled),
    (NeedsReview, Reversed),
    (Succeeded, Reversed),
];

/// The transition table of one operation kind.
pub fn table(kind: Kind) -> &'static [(Status, Status)] {
    match kind {
        Kind::Payment => PAYMENT,
        Kind::Refund => REFUND,
        Kind::Payout => PAYOUT,
    }
}

/// What to do with an observed status, given the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A real transition to the given status: write it, its history row and
    /// its event. The status is the observed one, except where the provider
    /// reports money leaving after a success (see [`decide`]).
    Apply(Status),
    /// Already in that status (a duplicate report): change nothing.
    Unchanged,
    /// Not applied, for the given reason; the report is kept as evidence only.
    Ignore(IgnoreReason),
}

/// Why an observed status was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgnoreReason {
    /// The current status is final and the report says something else.
    AlreadyFinal,
    /// The report is behind the current status (an older, reordered report).
    Stale,
    /// The table has no such transition for this kind.
    NotAllowed,
}

impl IgnoreReason {
    pub fn as_str(self) -> &'static str {
        match self {
            IgnoreReason::AlreadyFinal => "already_final",
            IgnoreReason::Stale => "stale",
            IgnoreReason::NotAllowed => "not_allowed",
        }
    }
}

/// Decide whether `observed` may replace `current` for an operation of `kind`.
///
/// Idempotent (a second identical report is `Unchanged`) and monotone (a final
/// status is never replaced by a non-final one), which is what makes
/// duplicated and reordered webhooks and polls harmless.
pub fn decide(kind: Kind, current: Status, observed: Status) -> Decision {
    if current == observed {
        return Decision::Unchanged;
    }
    if table(kind).contains(&(current, observed)) {
        return Decision::Apply(observed);
    }
    if current.is_final() {
        Decision::Ignore(IgnoreReason::AlreadyFinal)
    } else if observed.progress() < current.progress() {
        Decision::Ignore(IgnoreReason::Stale)
    } else {
        Decision::Ignore(IgnoreReason::NotAllowed)
    }
}

/// [`decide`] for a report from `source`. A human's word is taken as given;
/// two provider reports are not taken literally, because providers send them
/// and dropping them would hide money that moved:
/// - a failure or cancellation of something that already `succeeded` (an
///   Adyen `CAPTURE_FAILED` after `CAPTURE`, a Stripe refund that fails after
///   it succeeded, an Alipay `TRADE_CLOSED` after `TRADE_SUCCESS`, which is a
///   full refund) means the money is not where the success said: it becomes
///   `reversed`, never "ignored: already final";
/// - a reversal (refund, chargeback) of something finality never saw succeed
///   is neither a success nor a failure: it goes to `needs_review` (and
///   stays there for a human, who may resolve it as `reversed`).
pub fn decide_report(kind: Kind, current: Status, observed: Status, source: Source) -> Decision {
    if source == Source::Manual {
        return decide(kind, current, observed);
    }
    let observed = match (current, observed) {
        (Succeeded, Failed | Cancelled) if table(kind).contains(&(Succeeded, Reversed)) => Reversed,
        (Pending | Processing | NeedsReview, Reversed) => NeedsReview,
        _ => observed,
    };
    decide(kind, current, observed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_status() -> impl Strategy<Value = Status> {
        prop::sample::select(Status::ALL.to_vec())
    }
    fn any_kind() -> impl Strategy<Value = Kind> {
        prop::sample::select(Kind::ALL.to_vec())
    }

    /// Fold a sequence of reports through `decide`, as the store does.
    fn run(kind: Kind, reports: &[Status]) -> (Status, usize) {
        let mut current = Pending;
        let mut applied = 0;
        for &r in reports {
            if let Decision::Apply(to) = decide(kind, current, r) {
                current = to;
                applied += 1;
            }
        }
        (current, applied)
    }

    #[test]
    fn reversed_only_after_succeeded_or_from_review() {
        for kind in Kind::ALL {
            for from in Status::ALL {
                let ok = decide(kind, from, Reversed) == Decision::Apply(Reversed);
                assert_eq!(
                    ok,
                    from == Succeeded || from == NeedsReview,
                    "{kind:?} {from:?} -> reversed"
                );
            }
        }
    }

    /// A failure after success is never "ignored: already final".
    #[test]
    fn failure_after_success_reverses() {
        for kind in Kind::ALL {
            for late in [Failed, Cancelled] {
                for source in [Source::Webhook, Source::StatusQuery, Source::Sweep] {
                    assert_eq!(
                        decide_report(kind, Succeeded, late, source),
                        Decision::Apply(Reversed)
                    );
                }
                // A human is taken at their word (and the table says no).
                assert_eq!(
                    decide_report(kind, Succeeded, late, Source::Manual),
                    Decision::Ignore(IgnoreReason::AlreadyFinal)
                );
            }
        }
    }

    /// A refund or chargeback of a payment never seen to succeed is a
    /// question for a human, not a status to guess.
    #[test]
    fn reversal_before_success_goes_to_review() {
        for kind in Kind::ALL {
            for from in [Pending, Processing] {
                assert_eq!(
                    decide_report(kind, from, Reversed, Source::Webhook),
                    Decision::Apply(NeedsReview)
                );
            }
            assert_eq!(
                decide_report(kind, NeedsReview, Reversed, Source::Webhook),
                Decision::Unchanged
            );
            assert_eq!(
                decide_report(kind, NeedsReview, Reversed, Source::Manual),
                Decision::Apply(Reversed)
            );
        }
    }

    #[test]
    fn needs_review_can_still_be_settled() {
        for kind in Kind::ALL {
            for to in [Succeeded, Failed, Cancelled] {
                assert_eq!(decide(kind, NeedsReview, to), Decision::Apply(to));
            }
        }
    }

    #[test]
    fn stale_and_contradicting_reports_are_named() {
        assert_eq!(
            decide(Kind::Payment, Processing, Pending),
            Decision::Ignore(IgnoreReason::Stale)
        );
        assert_eq!(
            decide(Kind::Payment, Failed, Succeeded),
            Decision::Ignore(IgnoreReason::AlreadyFinal)
        );
        assert_eq!(
            decide(Kind::Payout, Processing, Cancelled),
            Decision::Ignore(IgnoreReason::NotAllowed)
        );
    }

    fn any_source() -> impl Strategy<Value = Source> {
        prop::sample::select(vec![
            Source::Webhook,
            Source::StatusQuery,
            Source::Sweep,
            Source::Manual,
        ])
    }

    proptest! {
        #[test]
        fn provider_reports_are_idempotent_and_monotone(
            kind in any_kind(),
            reports in prop::collection::vec((any_status(), any_source()), 0..12),
        ) {
            let fold = |reports: &[(Status, Source)]| {
                let mut current = Pending;
                let mut was_final = false;
                for &(r, src) in reports {
                    if let Decision::Apply(to) = decide_report(kind, current, r, src) {
                        assert!(table(kind).contains(&(current, to)));
                        current = to;
                    }
                    assert!(!was_final || current.is_final(), "left a final status");
                    was_final |= current.is_final();
                }
                current
            };
            let doubled: Vec<_> = reports.iter().flat_map(|&s| [s, s]).collect();
            prop_assert_eq!(fold(&reports), fold(&doubled));
        }

        #[test]
        fn final_is_never_replaced_by_non_final(kind in any_kind(), from in any_status(), to in any_status()) {
            if from.is_final() && !to.is_final() {
                prop_assert!(!matches!(decide(kind, from, to), Decision::Apply(s) if !s.is_final()));
            }
        }

        #[test]
        fn applying_a_report_twice_equals_once(kind in any_kind(), reports in prop::collection::vec(any_status(), 0..12)) {
            let doubled: Vec<Status> = reports.iter().flat_map(|&s| [s, s]).collect();
            prop_assert_eq!(run(kind, &reports), run(kind, &doubled));
        }

        #[test]
        fn once_final_stays_final(kind in any_kind(), reports in prop::collection::vec(any_status(), 0..16)) {
            let mut current = Pending;
            let mut was_final = false;
            for r in reports {
                if let Decision::Apply(to) = decide(kind, current, r) {
                    current = to;
                }
                if was_final {
                    prop_assert!(current.is_final(), "left a final status: {current:?}");
                }
                was_final |= current.is_final();
            }
        }

        #[test]
        fn every_applied_transition_is_in_the_table(kind in any_kind(), from in any_status(), to in any_status()) {
            if let Decision::Apply(to) = decide(kind, from, to) {
                prop_assert!(table(kind).contains(&(from, to)));
            }
        }
    }
}
