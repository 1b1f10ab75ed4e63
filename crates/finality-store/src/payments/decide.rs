//! What a report does to a payment, decided in plain Rust: the transition
//! table says whether it moves, and the change to write is built here, the
//! same for every backend and the in-memory store.

use crate::model::{ApplyOutcome, Report};
use crate::transition::{Change, Step};
use finality_core::{decide, Decision, Kind, Status, Timestamp};

/// What a report does to a payment that is `current`: the outcome, and the
/// change to write when there is one. The same for every backend.
pub(crate) fn decide_report<'a>(
    r: &'a Report,
    kind: Kind,
    current: Status,
    now: Timestamp,
) -> (ApplyOutcome, Option<Change<'a>>) {
    match decide(kind, current, r.status) {
        Decision::Unchanged => (ApplyOutcome::Unchanged, None),
        Decision::Ignore(why) => (
            ApplyOutcome::Ignored {
                current,
                reason: why.as_str(),
            },
            None,
        ),
        Decision::Apply(to) => (
            ApplyOutcome::Applied { from: current, to },
            Some(Change {
                payment_id: &r.payment_id,
                kind,
                source: r.source,
                event_id: r.event_id.as_deref(),
                actor: r.actor.as_deref(),
                observed_at: r.observed_at,
                now,
                steps: vec![Step {
                    from: current,
                    to,
                    reason: r.reason.clone(),
                }],
                job: Change::job_after(to),
            }),
        ),
    }
}
