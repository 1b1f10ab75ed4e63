//! MySQL's batch writes: a statement per table and batch, not per row.
//!
//! MySQL has no arrays to send a column as (PostgreSQL's `UNNEST`), and a
//! statement per row costs a round trip each: at 64 completions a batch,
//! some 300 round trips where PostgreSQL sends one. Here each table's rows
//! go in one statement: multi-row `INSERT … VALUES (…), (…)`, `IN (…)`
//! lists, and `UPDATE … JOIN` a derived table of the rows' values
//! (`SELECT $1 AS id, … UNION ALL SELECT …`). Every id appears once per
//! batch (the transition writer merges a payment's changes), as
//! PostgreSQL's array statements also require.

use super::{stmt, Conn, Fields, Leased, Stmt, Writes};
use crate::error::Result;
use crate::model::NewAttempt;

/// Rows per statement: far below MySQL's 65,535 placeholders at 9 a row.
const CHUNK: usize = 500;

/// `($a, $a+1, …), (…)` for `rows` rows of `cols` placeholders from `$1`.
fn values(rows: usize, cols: usize) -> String {
    (0..rows)
        .map(|r| {
            let row = (0..cols)
                .map(|c| format!("${}", r * cols + c + 1))
                .collect::<Vec<_>>()
                .join(", ");
            format!("({row})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `SELECT $1 AS a, $2 AS b UNION ALL SELECT $3, $4 …`: `rows` rows named
/// by `names`, for an `UPDATE … JOIN`.
fn derived(rows: usize, names: &[&str]) -> String {
    (0..rows)
        .map(|r| {
            let cols = names
                .iter()
                .enumerate()
                .map(|(c, name)| {
                    let p = r * names.len() + c + 1;
                    if r == 0 {
                        format!("${p} AS {name}")
                    } else {
                        format!("${p}")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!("SELECT {cols}")
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

pub async fn insert_attempts<C: Conn>(conn: &mut C, attempts: &[&NewAttempt]) -> Result<()> {
    for chunk in attempts.chunks(CHUNK) {
        let sql = format!(
            "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, \
             outcome, provider_status, error_class, error) VALUES {}",
            values(chunk.len(), 9)
        );
        let mut s = stmt(&sql, "recording provider calls");
        for a in chunk {
            s = s
                .text(&a.payment_id)
                .text(&a.provider)
                .text(&a.worker)
                .int(a.started_at.0)
                .int(a.latency_ms)
                .text(&a.outcome)
                .opt_text(a.provider_status.as_deref())
                .opt_text(a.error_class.as_deref())
                .opt_text(a.error.as_deref());
        }
        conn.run(s).await?;
    }
    Ok(())
}

/// Payments and their jobs locked in id order (the order every writer
/// locks them in), in one statement per chunk.
pub async fn lock_leases<C: Conn>(conn: &mut C, ids: &[&str]) -> Result<Vec<Leased>> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(CHUNK) {
        let list = (1..=chunk.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT p.id, p.status, p.kind, j.lock_token FROM payments p \
             JOIN poll_jobs j ON j.payment_id = p.id WHERE p.id IN ({list}) \
             ORDER BY p.id FOR UPDATE"
        );
        let mut s = stmt(&sql, "locking payments and leases");
        for id in chunk {
            s = s.text(id);
        }
        for r in conn.all(s).await? {
            out.push(Leased {
                payment_id: r.text("id", "payments")?,
                status: r.parsed("status", "payments")?,
                kind: r.parsed("kind", "payments")?,
                lock_token: r.opt_int("lock_token", "poll_jobs")?,
            });
        }
    }
    Ok(out)
}

pub async fn write<C: Conn>(conn: &mut C, w: &Writes) -> Result<()> {
    for (k, ids) in w.pay_id.chunks(CHUNK).enumerate() {
        let at = k * CHUNK;
        let sql = format!(
            "UPDATE payments p JOIN ({}) u ON p.id = u.id SET p.status = u.status, \
             p.status_source = u.source, p.updated_at = u.at, \
             p.finalized_at = COALESCE(p.finalized_at, u.fin)",
            derived(ids.len(), &["id", "status", "source", "at", "fin"])
        );
        let mut s = stmt(&sql, "writing statuses");
        for i in at..at + ids.len() {
            s = s
                .text(&w.pay_id[i])
                .text(&w.pay_status[i])
                .text(&w.pay_source[i])
                .int(w.pay_at[i])
                .opt_int(w.pay_fin[i]);
        }
        conn.run(s).await?;
    }
    for (k, ids) in w.step_id.chunks(CHUNK).enumerate() {
        let at = k * CHUNK;
        let sql = format!(
            "INSERT INTO status_history (payment_id, from_status, to_status, source, event_id, \
             reason, actor, observed_at, at) VALUES {}",
            values(ids.len(), 9)
        );
        let mut s = stmt(&sql, "appending status history");
        for i in at..at + ids.len() {
            s = s
                .text(&w.step_id[i])
                .text(&w.step_from[i])
                .text(&w.step_to[i])
                .text(&w.step_source[i])
                .opt_text(w.step_event[i].as_deref())
                .opt_text(w.step_reason[i].as_deref())
                .opt_text(w.step_actor[i].as_deref())
                .int(w.step_observed[i])
                .int(w.step_at[i]);
        }
        conn.run(s).await?;
        // The outbox in the history's order: ids (and so feed order among
        // a payment's events) follow the steps.
        // With each payment's counted pieces as they are now: the counters
        // after the transition, kept with its event.
        let sql = format!(
            "INSERT INTO outbox (event_id, payment_id, type, status, previous_status, source, \
             occurred_at, pieces) VALUES {}",
            (0..ids.len())
                .map(|r| {
                    let n = r * 7;
                    format!(
                        "(${}, ${}, ${}, ${}, ${}, ${}, ${}, \
                         (SELECT pieces FROM payments WHERE id = ${}))",
                        n + 1,
                        n + 2,
                        n + 3,
                        n + 4,
                        n + 5,
                        n + 6,
                        n + 7,
                        n + 2
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut s = stmt(&sql, "writing outbox events");
        for i in at..at + ids.len() {
            s = s
                .text(&w.out_event[i])
                .text(&w.step_id[i])
                .text(&w.out_type[i])
                .text(&w.step_to[i])
                .text(&w.step_from[i])
                .text(&w.step_source[i])
                .int(w.step_at[i]);
        }
        conn.run(s).await?;
    }
    for ids in w.delete.chunks(CHUNK) {
        let list = (1..=ids.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!("DELETE FROM poll_jobs WHERE payment_id IN ({list})");
        let mut s: Stmt<'_> = stmt(&sql, "dropping the poll jobs of final payments");
        for id in ids {
            s = s.text(id);
        }
        conn.run(s).await?;
    }
    for (k, ids) in w.job_id.chunks(CHUNK).enumerate() {
        let at = k * CHUNK;
        // MySQL assigns left to right, each seeing those before: every
        // right-hand side reads only `u` or the column it assigns.
        let sql = format!(
            "UPDATE poll_jobs j JOIN ({}) u ON j.payment_id = u.id SET \
             j.next_poll_at = u.next, j.attempts = j.attempts + u.inc, \
             j.errors = CASE WHEN u.reset THEN u.einc ELSE j.errors + u.einc END, \
             j.due_at = NULL, j.resume_at = NULL, j.locked_by = NULL, j.locked_until = NULL, \
             j.lock_token = NULL, \
             j.last_error = CASE WHEN u.park THEN COALESCE(u.err, j.last_error) ELSE u.err END",
            derived(
                ids.len(),
                &["id", "next", "inc", "err", "park", "einc", "reset"]
            )
        );
        let mut s = stmt(&sql, "rescheduling polls");
        for i in at..at + ids.len() {
            s = s
                .text(&w.job_id[i])
                .opt_int(w.job_next[i])
                .int4(w.job_inc[i])
                .opt_text(w.job_err[i].as_deref())
                .flag(w.job_park[i])
                .int4(w.job_einc[i])
                .flag(w.job_reset[i]);
        }
        conn.run(s).await?;
    }
    Ok(())
}
