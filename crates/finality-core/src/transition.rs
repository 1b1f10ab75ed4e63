//! The transition tables, one per operation kind, and the one pure function
//! every status change goes through.
//!
//! The tables are data: adding a transition is adding a row, and
//! `docs/state_machine.md` draws exactly these rows.

use crate::status::{Kind, Status};
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
    // Refund, chargeback or reversal of a captured payment.
    (Succeeded, Reversed),
    // The same, reported before the success was seen (webhooks reorder,
    // a notification is lost): the money came and went. Final, so a late
    // success report cannot undo it.
    (Pending, Reversed),
    (Processing, Reversed),
    (NeedsReview, Reversed),
];

/// Refunds move like payments; `reversed` is a refund that failed or was
/// returned after the provider had reported it succeeded.
const REFUND: &[(Status, Status)] = PAYMENT;

/// Payouts can be cancelled until they are paid; a paid-out payout that is
/// returned (or fails after `paid`) becomes `reversed`.
const PAYOUT: &[(Status, Status)] = &[
    (Pending, Processing),
    (Pending, Succeeded),
    (Pending, Failed),
    (Pending, Cancelled),
    (Pending, NeedsReview),
    (Processing, Succeeded),
    (Processing, Failed),
    // Stripe: "The status changes to `paid` if the transaction succeeds,
    // or to `failed` or `canceled` (within 5 business days)."
    (Processing, Cancelled),
    (Processing, NeedsReview),
    (NeedsReview, Succeeded),
    (NeedsReview, Failed),
    (NeedsReview, Cancelled),
    (Succeeded, Reversed),
    (Pending, Reversed),
    (Processing, Reversed),
    (NeedsReview, Reversed),
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
    if let Some(to) = follow_up(kind, current, observed) {
        return Decision::Apply(to);
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

/// What a documented failure after success means: a refund or a payout
/// that fails once it had succeeded came back, so the money is with the
/// merchant again, which is `reversed` (Stripe: "Some payouts that fail
/// might initially show as `paid`, then change to `failed`."; a failed
/// refund's balance transaction "reverses the initial balance
/// transaction"). For a payment the same report contradicts the success
/// and goes to review ([`contradicts_success`]).
pub fn follow_up(kind: Kind, current: Status, observed: Status) -> Option<Status> {
    (kind != Kind::Payment && current == Succeeded && observed == Failed).then_some(Reversed)
}

/// A provider report the table cannot take that may still mean money
/// moved: a failure or cancellation of something that already `succeeded`
/// (a Stripe refund that fails after it succeeded, a generic provider's late
/// `failed`). It is not applied (it may be a stale report of an earlier
/// attempt), and it is not dropped either: the store keeps it for review
/// with the provider's words. Adapters map the reports that by themselves
/// mean a success was undone (Adyen `CAPTURE_FAILED`, a full refund, a lost
/// chargeback) to `reversed`, which the table takes.
pub fn contradicts_success(current: Status, observed: Status) -> bool {
    current == Succeeded && matches!(observed, Failed | Cancelled)
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

    /// `reversed` ends any open or succeeded operation: a refund or
    /// chargeback reported before the success was seen is still money that
    /// came and went, and a success reported after it is stale.
    #[test]
    fn reversed_from_succeeded_or_any_open_status_and_absorbs() {
        for kind in Kind::ALL {
            for from in Status::ALL {
                let ok = decide(kind, from, Reversed) == Decision::Apply(Reversed);
                assert_eq!(
                    ok,
                    !from.is_final() || from == Succeeded,
                    "{kind:?} {from:?} -> reversed"
                );
            }
            assert_eq!(
                decide(kind, Reversed, Succeeded),
                Decision::Ignore(IgnoreReason::AlreadyFinal)
            );
        }
    }

    #[test]
    fn only_a_failure_after_success_contradicts_it() {
        assert!(contradicts_success(Succeeded, Failed));
        assert!(contradicts_success(Succeeded, Cancelled));
        assert!(!contradicts_success(Succeeded, Processing));
        assert!(!contradicts_success(Failed, Succeeded));
        assert!(!contradicts_success(Reversed, Failed));
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
            decide(Kind::Payout, Processing, Pending),
            Decision::Ignore(IgnoreReason::Stale)
        );
    }

    #[test]
    fn a_refund_or_payout_failing_after_success_is_reversed() {
        for kind in [Kind::Refund, Kind::Payout] {
            assert_eq!(decide(kind, Succeeded, Failed), Decision::Apply(Reversed));
        }
        assert_eq!(
            decide(Kind::Payment, Succeeded, Failed),
            Decision::Ignore(IgnoreReason::AlreadyFinal)
        );
        assert_eq!(
            decide(Kind::Payout, Processing, Cancelled),
            Decision::Apply(Cancelled)
        );
    }

    proptest! {
        #[test]
        fn final_is_never_replaced_by_non_final(kind in any_kind(), from in any_status(), to in any_status()) {
            if from.is_final() && !to.is_final() {
                prop_assert!(!matches!(decide(kind, from, to), Decision::Apply(_)));
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

    /// Why an event id may be a function of the payment and the status it
    /// entered (`finality-store`'s `event_id`): every row of every table
    /// moves strictly forward, so no status is entered twice.
    #[test]
    fn every_transition_moves_forward() {
        for kind in Kind::ALL {
            for &(from, to) in table(kind) {
                assert!(
                    to.progress() > from.progress(),
                    "{kind:?} {from:?} -> {to:?}"
                );
            }
            for from in Status::ALL {
                for observed in Status::ALL {
                    if let Some(to) = follow_up(kind, from, observed) {
                        assert!(
                            to.progress() > from.progress(),
                            "{kind:?} {from:?} -> {to:?}"
                        );
                    }
                }
            }
        }
    }

    proptest! {
        /// Whatever reports arrive, in whatever order and however often,
        /// a payment enters each status at most once.
        #[test]
        fn no_status_is_entered_twice(
            kind in any_kind(),
            reports in prop::collection::vec(any_status(), 0..40),
        ) {
            let mut current = Pending;
            let mut entered = vec![Pending];
            for r in reports {
                if let Decision::Apply(to) = decide(kind, current, r) {
                    prop_assert!(!entered.contains(&to), "{:?} entered twice: {:?}", to, entered);
                    entered.push(to);
                    current = to;
                }
            }
        }
    }
}
