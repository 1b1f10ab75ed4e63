//! A batch of completions on PostgreSQL in a fixed handful of array
//! statements (`UNNEST`), whatever the batch size: record every attempt, lock
//! every payment and job in id order, decide in Rust ([`crate::plan`]), then
//! one statement each for statuses, history, outbox, dropped jobs and
//! rescheduled or parked jobs. Row at a time, a batch of 64 cost about 300
//! sequential round trips; this costs at most eight.

use crate::error::{DbContext, Result};
use crate::model::{CompleteOutcome, Completion};
use crate::plan::{plan_completion, JobAction};
use finality_core::{Kind, Source, Status};
use std::collections::HashMap;

const INSERT_ATTEMPTS: &str =
    "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, \
     latency_ms, outcome, provider_status, error_class, error) \
     SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], $6::text[], \
     $7::text[], $8::text[], $9::text[])";

/// Locks payment then job of each row, in id order (the order every other
/// writer locks a payment and its job in).
const LOCK: &str = "SELECT p.id, p.status, p.kind, j.lock_token FROM payments p \
     JOIN poll_jobs j ON j.payment_id = p.id WHERE p.id = ANY($1) ORDER BY p.id FOR UPDATE";

const UPDATE_PAYMENTS: &str = "UPDATE payments p SET status = u.status, status_source = $5, \
     updated_at = u.at, finalized_at = COALESCE(p.finalized_at, u.fin) \
     FROM UNNEST($1::text[], $2::text[], $3::int8[], $4::int8[]) AS u(id, status, at, fin) \
     WHERE p.id = u.id";

const INSERT_HISTORY: &str =
    "INSERT INTO status_history (payment_id, from_status, to_status, source, \
     reason, observed_at, at) \
     SELECT u.id, u.f, u.t, $6, u.r, u.a, u.a \
     FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[]) \
     WITH ORDINALITY AS u(id, f, t, r, a, n) ORDER BY u.n";

const INSERT_OUTBOX: &str =
    "INSERT INTO outbox (event_id, payment_id, type, status, previous_status, \
     source, occurred_at) \
     SELECT u.e, u.id, u.ty, u.t, u.f, $7, u.a \
     FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[]) \
     WITH ORDINALITY AS u(e, id, ty, t, f, a, n) ORDER BY u.n";

const DELETE_JOBS: &str = "DELETE FROM poll_jobs WHERE payment_id = ANY($1)";

/// Reschedule (`park` false: the error is replaced) or park (`next` NULL,
/// `park` true: a reason replaces the last error, none keeps it).
const UPDATE_JOBS: &str =
    "UPDATE poll_jobs j SET next_poll_at = u.next, attempts = j.attempts + u.inc, \
     errors = CASE WHEN u.reset THEN u.einc ELSE j.errors + u.einc END, \
     due_at = NULL, locked_by = NULL, locked_until = NULL, lock_token = NULL, \
     last_error = CASE WHEN u.park THEN COALESCE(u.err, j.last_error) ELSE u.err END \
     FROM UNNEST($1::text[], $2::int8[], $3::int4[], $4::text[], $5::bool[], $6::int4[], \
     $7::bool[]) AS u(id, next, inc, err, park, einc, reset) WHERE j.payment_id = u.id";

#[derive(Default)]
struct Attempts {
    payment_id: Vec<String>,
    provider: Vec<String>,
    worker: Vec<String>,
    started_at: Vec<i64>,
    latency_ms: Vec<i64>,
    outcome: Vec<String>,
    provider_status: Vec<Option<String>>,
    error_class: Vec<Option<String>>,
    error: Vec<Option<String>>,
}

#[derive(Default)]
struct Writes {
    pay_id: Vec<String>,
    pay_status: Vec<String>,
    pay_at: Vec<i64>,
    pay_fin: Vec<Option<i64>>,
    hist_id: Vec<String>,
    hist_from: Vec<String>,
    hist_to: Vec<String>,
    hist_reason: Vec<Option<String>>,
    hist_at: Vec<i64>,
    out_event: Vec<String>,
    out_type: Vec<String>,
    delete: Vec<String>,
    job_id: Vec<String>,
    job_next: Vec<Option<i64>>,
    job_inc: Vec<i32>,
    job_err: Vec<Option<String>>,
    job_park: Vec<bool>,
    job_err_inc: Vec<i32>,
    job_err_reset: Vec<bool>,
}

/// Complete `cs` inside the open transaction `conn`.
pub(crate) async fn complete_batch_in(
    conn: &mut sqlx::PgConnection,
    cs: &[Completion],
) -> Result<Vec<CompleteOutcome>> {
    let mut a = Attempts::default();
    for at in cs.iter().filter_map(|c| c.attempt.as_ref()) {
        a.payment_id.push(at.payment_id.clone());
        a.provider.push(at.provider.clone());
        a.worker.push(at.worker.clone());
        a.started_at.push(at.started_at.0);
        a.latency_ms.push(at.latency_ms);
        a.outcome.push(at.outcome.clone());
        a.provider_status.push(at.provider_status.clone());
        a.error_class.push(at.error_class.clone());
        a.error.push(at.error.clone());
    }
    if !a.payment_id.is_empty() {
        sqlx::query(INSERT_ATTEMPTS)
            .bind(&a.payment_id)
            .bind(&a.provider)
            .bind(&a.worker)
            .bind(&a.started_at)
            .bind(&a.latency_ms)
            .bind(&a.outcome)
            .bind(&a.provider_status)
            .bind(&a.error_class)
            .bind(&a.error)
            .execute(&mut *conn)
            .await
            .op("recording provider calls")?;
    }

    let ids: Vec<&str> = cs.iter().map(|c| c.payment_id.as_str()).collect();
    let rows: Vec<(String, String, String, Option<i64>)> = sqlx::query_as(LOCK)
        .bind(&ids)
        .fetch_all(&mut *conn)
        .await
        .op("locking payments and leases")?;
    let mut locked: HashMap<String, (Status, Kind, Option<i64>)> = HashMap::new();
    for (id, status, kind, token) in rows {
        let status = status.parse().map_err(|e| corrupt(&e))?;
        let kind = kind.parse().map_err(|e| corrupt(&e))?;
        locked.insert(id, (status, kind, token));
    }

    let mut w = Writes::default();
    let mut out = Vec::with_capacity(cs.len());
    for c in cs {
        // The fence: the job must still carry this claim's token. Taking
        // the entry out means a second completion of the same payment in
        // the batch is fenced too.
        let fenced =
            matches!(locked.get(&c.payment_id), Some((_, _, t)) if *t == Some(c.lock_token));
        let entry = if fenced {
            locked.remove(&c.payment_id)
        } else {
            None
        };
        let Some((current, kind, _)) = entry else {
            out.push(CompleteOutcome::LeaseLost);
            continue;
        };
        let plan = plan_completion(c, kind, current);
        let id = &c.payment_id;
        let at = c.now.0;
        if !plan.steps.is_empty() {
            let to = plan.final_status(current);
            w.pay_id.push(id.clone());
            w.pay_status.push(to.as_str().to_string());
            w.pay_at.push(at);
            w.pay_fin.push(to.is_final().then_some(at));
        }
        for s in &plan.steps {
            w.hist_id.push(id.clone());
            w.hist_from.push(s.from.as_str().to_string());
            w.hist_to.push(s.to.as_str().to_string());
            w.hist_reason.push(s.reason.clone());
            w.hist_at.push(at);
            w.out_event
                .push(format!("evt_{}", uuid::Uuid::new_v4().simple()));
            w.out_type
                .push(format!("{}.{}", kind.as_str(), s.to.as_str()));
        }
        match plan.job {
            JobAction::Delete => w.delete.push(id.clone()),
            JobAction::Reschedule {
                next_poll_at,
                attempts,
                errors,
                reset_errors,
                last_error,
            } => {
                w.job_id.push(id.clone());
                w.job_next.push(Some(next_poll_at.0));
                w.job_inc.push(attempts);
                w.job_err.push(last_error);
                w.job_park.push(false);
                w.job_err_inc.push(errors);
                w.job_err_reset.push(reset_errors);
            }
            JobAction::Park {
                attempts,
                errors,
                reason,
            } => {
                w.job_id.push(id.clone());
                w.job_next.push(None);
                w.job_inc.push(attempts);
                w.job_err.push(reason);
                w.job_park.push(true);
                w.job_err_inc.push(errors);
                w.job_err_reset.push(false);
            }
        }
        out.push(CompleteOutcome::Done {
            applied: plan.steps.iter().map(|s| (s.from, s.to)).collect(),
        });
    }
    write(conn, &w).await?;
    Ok(out)
}

async fn write(conn: &mut sqlx::PgConnection, w: &Writes) -> Result<()> {
    let source = Source::StatusQuery.as_str();
    if !w.pay_id.is_empty() {
        sqlx::query(UPDATE_PAYMENTS)
            .bind(&w.pay_id)
            .bind(&w.pay_status)
            .bind(&w.pay_at)
            .bind(&w.pay_fin)
            .bind(source)
            .execute(&mut *conn)
            .await
            .op("writing statuses")?;
    }
    if !w.hist_id.is_empty() {
        sqlx::query(INSERT_HISTORY)
            .bind(&w.hist_id)
            .bind(&w.hist_from)
            .bind(&w.hist_to)
            .bind(&w.hist_reason)
            .bind(&w.hist_at)
            .bind(source)
            .execute(&mut *conn)
            .await
            .op("appending status history")?;
        sqlx::query(INSERT_OUTBOX)
            .bind(&w.out_event)
            .bind(&w.hist_id)
            .bind(&w.out_type)
            .bind(&w.hist_to)
            .bind(&w.hist_from)
            .bind(&w.hist_at)
            .bind(source)
            .execute(&mut *conn)
            .await
            .op("writing outbox events")?;
    }
    if !w.delete.is_empty() {
        sqlx::query(DELETE_JOBS)
            .bind(&w.delete)
            .execute(&mut *conn)
            .await
            .op("dropping the poll jobs of final payments")?;
    }
    if !w.job_id.is_empty() {
        sqlx::query(UPDATE_JOBS)
            .bind(&w.job_id)
            .bind(&w.job_next)
            .bind(&w.job_inc)
            .bind(&w.job_err)
            .bind(&w.job_park)
            .bind(&w.job_err_inc)
            .bind(&w.job_err_reset)
            .execute(&mut *conn)
            .await
            .op("rescheduling poll jobs")?;
    }
    Ok(())
}

fn corrupt(detail: &impl ToString) -> crate::StoreError {
    crate::StoreError::Corrupt {
        table: "payments",
        detail: detail.to_string(),
    }
}
