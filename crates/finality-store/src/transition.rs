//! The one transition writer. Every path that changes a status (a webhook,
//! a poll, a batch of polls, the sweep, a person) decides with
//! `finality_core::decide` and ends here, in [`Writes`]: the status, one
//! history row and one outbox row per step, and what becomes of the poll
//! job, with event ids and types built in this one place, then sent by
//! [`write_changes`] (or, for a batch of webhooks, by the inbox processor
//! with the same statement plus their feed positions). A batch is just
//! many changes; the backend sends the columns built here as arrays
//! (PostgreSQL) or row by row (SQLite).

use crate::driver::{Writer, Writes};
use crate::event_id::{event_id, EventFact};
use crate::Result;
use finality_core::{Kind, Source, Status, Timestamp};

/// One status change a completion makes (source `status_query`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    pub from: Status,
    pub to: Status,
    pub reason: Option<String>,
}

/// What becomes of the poll job.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JobAction {
    /// The payment is final: the job row goes.
    Delete,
    /// Poll again at `next_poll_at`; the lease is released. `attempts`
    /// is added; `errors` is added, or when `reset_errors` set to it.
    Reschedule {
        next_poll_at: Timestamp,
        attempts: i32,
        errors: i32,
        reset_errors: bool,
        last_error: Option<String>,
    },
    /// Stop polling until someone asks, adding `attempts` and `errors`;
    /// `reason` replaces the last error when there is one.
    Park {
        attempts: i32,
        errors: i32,
        reason: Option<String>,
    },
}

/// Everything one payment's status change writes. The caller holds the
/// payment's lock and has decided `steps` with the transition table.
#[derive(Debug, Clone)]
pub struct Change<'a> {
    pub payment_id: &'a str,
    pub kind: Kind,
    pub source: Source,
    pub event_id: Option<&'a str>,
    pub actor: Option<&'a str>,
    pub observed_at: Timestamp,
    pub now: Timestamp,
    /// In order; empty when only the job changes.
    pub steps: Vec<Step>,
    /// `None` leaves the job as it is.
    pub job: Option<JobAction>,
}

impl Change<'_> {
    /// What becomes of the poll job after a change that a poll did not
    /// make: a final payment's job goes, a payment in review stops polling.
    pub fn job_after(to: Status) -> Option<JobAction> {
        if to.is_final() {
            Some(JobAction::Delete)
        } else if to == Status::NeedsReview {
            Some(JobAction::Park {
                attempts: 0,
                errors: 0,
                reason: None,
            })
        } else {
            None
        }
    }
}

/// An outbox event's type: `payment.succeeded`, `refund.failed`, …
pub fn event_type(kind: Kind, to: Status) -> String {
    format!("{}.{}", kind.as_str(), to.as_str())
}

impl Writes {
    pub(crate) fn add(&mut self, c: &Change<'_>) {
        let id = c.payment_id;
        if let Some(last) = c.steps.last() {
            self.pay_id.push(id.to_string());
            self.pay_status.push(last.to.as_str().to_string());
            self.pay_source.push(c.source.as_str().to_string());
            self.pay_at.push(c.now.0);
            self.pay_fin.push(last.to.is_final().then_some(c.now.0));
        }
        for s in &c.steps {
            self.step_id.push(id.to_string());
            self.step_from.push(s.from.as_str().to_string());
            self.step_to.push(s.to.as_str().to_string());
            self.step_source.push(c.source.as_str().to_string());
            self.step_event.push(c.event_id.map(str::to_string));
            self.step_reason.push(s.reason.clone());
            self.step_actor.push(c.actor.map(str::to_string));
            self.step_observed.push(c.observed_at.0);
            self.step_at.push(c.now.0);
            self.out_event
                .push(event_id(id, c.kind, EventFact::Transition { to: s.to }));
            self.out_type.push(event_type(c.kind, s.to));
        }
        match &c.job {
            None => {}
            Some(JobAction::Delete) => self.delete.push(id.to_string()),
            Some(JobAction::Reschedule {
                next_poll_at,
                attempts,
                errors,
                reset_errors,
                last_error,
            }) => self.job(
                id,
                Some(next_poll_at.0),
                *attempts,
                *errors,
                *reset_errors,
                last_error.clone(),
                false,
            ),
            Some(JobAction::Park {
                attempts,
                errors,
                reason,
            }) => self.job(id, None, *attempts, *errors, false, reason.clone(), true),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn job(
        &mut self,
        id: &str,
        next: Option<i64>,
        inc: i32,
        einc: i32,
        reset: bool,
        err: Option<String>,
        park: bool,
    ) {
        self.job_id.push(id.to_string());
        self.job_next.push(next);
        self.job_inc.push(inc);
        self.job_einc.push(einc);
        self.job_reset.push(reset);
        self.job_err.push(err);
        self.job_park.push(park);
    }
}

/// Write `changes` inside the caller's transaction, which holds every
/// payment's lock. One call per transaction, whatever the number of changes.
pub async fn write_changes<W: Writer>(conn: &mut W, changes: &[Change<'_>]) -> Result<()> {
    let mut w = Writes::default();
    for c in changes {
        w.add(c);
    }
    conn.write(&w).await
}
