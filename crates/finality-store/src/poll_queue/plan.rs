//! What a fenced completion writes, decided in plain Rust from the payment's
//! current status, so the row-at-a-time path (SQLite, single completions)
//! and the array path (a PostgreSQL batch in a handful of statements) cannot
//! disagree about the outcome of a poll.

use crate::model::{AfterPoll, Completion, Count};
use crate::transition::{JobAction, Step};
use finality_core::{decide, Decision, Kind, Status};

/// The whole effect of one completion whose fence held.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
    pub job: JobAction,
}

/// Decide a completion's writes given the locked payment's `current` status.
pub(crate) fn plan_completion(c: &Completion, kind: Kind, current: Status) -> Plan {
    let mut steps = Vec::new();
    let mut now_status = current;
    if let Some(observed) = c.observed {
        if let Decision::Apply(to) = decide(kind, now_status, observed) {
            // A reversal says what the provider answered.
            let words = c
                .attempt
                .as_ref()
                .and_then(|a| a.provider_status.as_deref());
            steps.push(Step {
                from: now_status,
                to,
                reason: (to == Status::Reversed)
                    .then(|| words.map(|w| format!("provider: {w}")))
                    .flatten(),
            });
            now_status = to;
        }
    }
    let job = if now_status.is_final() {
        JobAction::Delete
    } else {
        match &c.then {
            AfterPoll::Reschedule {
                next_poll_at,
                count,
                last_error,
            } => JobAction::Reschedule {
                next_poll_at: *next_poll_at,
                attempts: i32::from(*count == Count::Attempt),
                errors: i32::from(*count == Count::Error),
                reset_errors: *count == Count::Attempt,
                last_error: last_error.clone(),
            },
            AfterPoll::GiveUp { reason, count } => {
                if decide(kind, now_status, Status::NeedsReview)
                    == Decision::Apply(Status::NeedsReview)
                {
                    steps.push(Step {
                        from: now_status,
                        to: Status::NeedsReview,
                        reason: Some(reason.clone()),
                    });
                }
                JobAction::Park {
                    attempts: i32::from(*count == Count::Attempt),
                    errors: i32::from(*count == Count::Error),
                    reason: Some(reason.clone()),
                }
            }
        }
    };
    // A provider that reports `needs_review` itself parks the job, unless
    // the poll's own outcome already decided what happens next.
    let job = match job {
        JobAction::Reschedule { .. }
            if now_status == Status::NeedsReview && c.observed == Some(Status::NeedsReview) =>
        {
            JobAction::Park {
                attempts: 0,
                errors: 0,
                reason: None,
            }
        }
        other => other,
    };
    Plan { steps, job }
}

#[cfg(test)]
mod tests {
    use super::*;
    use finality_core::Timestamp;

    fn completion(observed: Option<Status>, then: AfterPoll) -> Completion {
        Completion {
            payment_id: "p1".into(),
            lock_token: 1,
            now: Timestamp(10),
            attempt: None,
            observed,
            then,
        }
    }

    fn resched() -> AfterPoll {
        AfterPoll::Reschedule {
            next_poll_at: Timestamp(99),
            count: Count::Attempt,
            last_error: None,
        }
    }

    #[test]
    fn final_answer_deletes_the_job() {
        let p = plan_completion(
            &completion(Some(Status::Succeeded), resched()),
            Kind::Payment,
            Status::Pending,
        );
        assert_eq!(p.job, JobAction::Delete);
        assert_eq!(p.steps.len(), 1);
        assert_eq!(p.steps.last().map(|s| s.to), Some(Status::Succeeded));
    }

    #[test]
    fn same_status_reschedules_without_a_step() {
        let p = plan_completion(
            &completion(Some(Status::Pending), resched()),
            Kind::Payment,
            Status::Pending,
        );
        assert!(p.steps.is_empty());
        assert!(matches!(
            p.job,
            JobAction::Reschedule {
                attempts: 1,
                errors: 0,
                reset_errors: true,
                ..
            }
        ));
    }

    #[test]
    fn give_up_moves_to_review_and_parks() {
        let p = plan_completion(
            &completion(
                Some(Status::Processing),
                AfterPoll::GiveUp {
                    reason: "out of attempts".into(),
                    count: Count::Attempt,
                },
            ),
            Kind::Payment,
            Status::Pending,
        );
        assert_eq!(p.steps.len(), 2);
        assert_eq!(p.steps[1].to, Status::NeedsReview);
        assert_eq!(
            p.job,
            JobAction::Park {
                attempts: 1,
                errors: 0,
                reason: Some("out of attempts".into())
            }
        );
    }

    #[test]
    fn stale_final_report_on_a_final_payment_still_deletes() {
        let p = plan_completion(
            &completion(Some(Status::Succeeded), resched()),
            Kind::Payment,
            Status::Failed,
        );
        assert!(p.steps.is_empty());
        assert_eq!(p.job, JobAction::Delete);
    }

    /// A reversal reported by a poll before the success was seen ends it.
    #[test]
    fn reversal_from_an_open_status_is_final() {
        let p = plan_completion(
            &completion(Some(Status::Reversed), resched()),
            Kind::Payment,
            Status::Processing,
        );
        assert_eq!(p.steps.len(), 1);
        assert_eq!(p.steps[0].to, Status::Reversed);
        assert_eq!(p.job, JobAction::Delete);
    }
}
