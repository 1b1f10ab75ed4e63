//! The batch of writes a row at a time, for SQLite: in process, a
//! statement per row costs no round trip.

use super::{stmt, Conn, Fields, Leased, Writes};
use crate::error::Result;
use crate::model::NewAttempt;

const UPDATE_PAYMENT: &str = "UPDATE payments SET status = $2, status_source = $3, \
     updated_at = $4, finalized_at = COALESCE(finalized_at, $5) WHERE id = $1";
const INSERT_HISTORY: &str = "INSERT INTO status_history (payment_id, from_status, to_status, \
     source, event_id, reason, actor, observed_at, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
/// With the payment's counted pieces as they are now (its status was just
/// written): the counters after this transition, kept with its event.
const INSERT_OUTBOX: &str = "INSERT INTO outbox (event_id, payment_id, type, status, \
     previous_status, source, occurred_at, pieces) VALUES ($1, $2, $3, $4, $5, $6, $7, \
     (SELECT pieces FROM payments WHERE id = $2))";
const UPDATE_JOB: &str = "UPDATE poll_jobs SET next_poll_at = $2, attempts = attempts + $3, \
     errors = CASE WHEN $7 THEN $6 ELSE errors + $6 END, \
     due_at = NULL, resume_at = NULL, locked_by = NULL, locked_until = NULL, lock_token = NULL, \
     last_error = CASE WHEN $5 THEN COALESCE($4, last_error) ELSE $4 END WHERE payment_id = $1";

pub async fn insert_attempts<C: Conn>(conn: &mut C, attempts: &[&NewAttempt]) -> Result<()> {
    for a in attempts {
        conn.run(
            stmt(
                "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, \
                 latency_ms, outcome, provider_status, error_class, error) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                "recording a provider call",
            )
            .text(&a.payment_id)
            .text(&a.provider)
            .text(&a.worker)
            .int(a.started_at.0)
            .int(a.latency_ms)
            .text(&a.outcome)
            .opt_text(a.provider_status.as_deref())
            .opt_text(a.error_class.as_deref())
            .opt_text(a.error.as_deref()),
        )
        .await?;
    }
    Ok(())
}

/// Each payment and its job read (and, where the backend locks rows,
/// locked) in the order given, which callers sort by id.
pub async fn lock_leases<C: Conn>(conn: &mut C, ids: &[&str]) -> Result<Vec<Leased>> {
    const READ: &str = "SELECT p.status, p.kind, j.lock_token FROM payments p \
        JOIN poll_jobs j ON j.payment_id = p.id WHERE p.id = $1";
    const LOCK: &str = "SELECT p.status, p.kind, j.lock_token FROM payments p \
        JOIN poll_jobs j ON j.payment_id = p.id WHERE p.id = $1 FOR UPDATE";
    let sql = if C::SQL.row_lock.is_empty() {
        READ
    } else {
        LOCK
    };
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let row = conn.opt(stmt(sql, "checking a lease").text(id)).await?;
        if let Some(r) = row {
            out.push(Leased {
                payment_id: (*id).to_string(),
                status: r.parsed("status", "payments")?,
                kind: r.parsed("kind", "payments")?,
                lock_token: r.opt_int("lock_token", "poll_jobs")?,
            });
        }
    }
    Ok(out)
}

pub async fn write<C: Conn>(conn: &mut C, w: &Writes) -> Result<()> {
    for i in 0..w.pay_id.len() {
        conn.run(
            stmt(UPDATE_PAYMENT, "writing a status")
                .text(&w.pay_id[i])
                .text(&w.pay_status[i])
                .text(&w.pay_source[i])
                .int(w.pay_at[i])
                .opt_int(w.pay_fin[i]),
        )
        .await?;
    }
    for i in 0..w.step_id.len() {
        conn.run(
            stmt(INSERT_HISTORY, "appending status history")
                .text(&w.step_id[i])
                .text(&w.step_from[i])
                .text(&w.step_to[i])
                .text(&w.step_source[i])
                .opt_text(w.step_event[i].as_deref())
                .opt_text(w.step_reason[i].as_deref())
                .opt_text(w.step_actor[i].as_deref())
                .int(w.step_observed[i])
                .int(w.step_at[i]),
        )
        .await?;
        conn.run(
            stmt(INSERT_OUTBOX, "writing the outbox event")
                .text(&w.out_event[i])
                .text(&w.step_id[i])
                .text(&w.out_type[i])
                .text(&w.step_to[i])
                .text(&w.step_from[i])
                .text(&w.step_source[i])
                .int(w.step_at[i]),
        )
        .await?;
    }
    for id in &w.delete {
        conn.run(
            stmt(
                "DELETE FROM poll_jobs WHERE payment_id = $1",
                "dropping the poll job of a final payment",
            )
            .text(id),
        )
        .await?;
    }
    for i in 0..w.job_id.len() {
        conn.run(
            stmt(UPDATE_JOB, "rescheduling a poll")
                .text(&w.job_id[i])
                .opt_int(w.job_next[i])
                .int4(w.job_inc[i])
                .opt_text(w.job_err[i].as_deref())
                .flag(w.job_park[i])
                .int4(w.job_einc[i])
                .flag(w.job_reset[i]),
        )
        .await?;
    }
    Ok(())
}
