//! PostgreSQL writes whole batches as arrays (`UNNEST`): a fixed handful of
//! statements whatever the batch size. Row at a time, a batch of 64
//! completions cost about 300 sequential round trips; this costs four
//! (attempts, locks, the writes as one statement, the commit). A single
//! change (a webhook, a person) goes the same way, with arrays of one.
//!
//! Every statement names its parameters (`{pay_id}`); each one's list of
//! names and values is built in one function below ([`super::arrays`]).

use super::arrays::{ArrayStmt, Param, Params};
use super::{corrupt, parse, InboxRows, Leased, NumberedWrite, Writes};
use crate::error::{DbContext, Result};
use crate::model::{InboxState, NewAttempt, NewInboxEvent};
use finality_core::Timestamp;
use sqlx::postgres::PgRow;
use sqlx::PgConnection;
use std::borrow::Cow;

static INSERT_ATTEMPTS: ArrayStmt = ArrayStmt::new(
    &["INSERT INTO poll_attempts (payment_id, provider, worker, \
     started_at, latency_ms, outcome, provider_status, error_class, error) \
     SELECT * FROM UNNEST({payment_id}, {provider}, {worker}, {started_at}, {latency_ms}, \
     {outcome}, {provider_status}, {error_class}, {error})"],
    "recording provider calls",
);

/// Locks payment then job of each row, in id order (the order every other
/// writer locks a payment and its job in).
static LOCK: ArrayStmt = ArrayStmt::new(
    &[
        "SELECT p.id, p.status, p.kind, j.lock_token FROM payments p \
     JOIN poll_jobs j ON j.payment_id = p.id WHERE p.id = ANY({ids}) ORDER BY p.id FOR UPDATE",
    ],
    "locking payments and leases",
);

/// The parts of [`WRITE`] before the outbox: payments, then history.
const WRITE_HEAD: &str = "WITH pay AS ( \
       UPDATE payments p SET status = u.status, status_source = u.source, \
       updated_at = u.at, finalized_at = COALESCE(p.finalized_at, u.fin) \
       FROM UNNEST({pay_id}, {pay_status}, {pay_source}, {pay_at}, {pay_fin}) \
       AS u(id, status, source, at, fin) WHERE p.id = u.id RETURNING p.id, p.pieces), \
     hist AS ( \
       INSERT INTO status_history (payment_id, from_status, to_status, \
       source, event_id, reason, actor, observed_at, at) \
       SELECT u.id, u.f, u.t, u.s, u.e, u.r, u.actor, u.o, u.a \
       FROM UNNEST({step_id}, {step_from}, {step_to}, {step_source}, {step_event}, \
       {step_reason}, {step_actor}, {step_observed}, {step_at}) \
       WITH ORDINALITY AS u(id, f, t, s, e, r, actor, o, a, n) ORDER BY u.n), ";

/// The parts of [`WRITE`] after the outbox: jobs dropped, jobs moved.
const WRITE_JOBS: &str = "del AS (DELETE FROM poll_jobs WHERE payment_id = ANY({delete})), \
     jobs AS ( \
       UPDATE poll_jobs j SET next_poll_at = u.next, \
       attempts = j.attempts + u.inc, \
       errors = CASE WHEN u.reset THEN u.einc ELSE j.errors + u.einc END, \
       due_at = NULL, resume_at = NULL, locked_by = NULL, locked_until = NULL, \
       lock_token = NULL, last_error = CASE WHEN u.park THEN COALESCE(u.err, j.last_error) ELSE u.err END \
       FROM UNNEST({job_id}, {job_next}, {job_inc}, {job_err}, {job_park}, \
       {job_einc}, {job_reset}) AS u(id, next, inc, err, park, einc, reset) \
       WHERE j.payment_id = u.id AND NOT (j.payment_id = ANY({delete}))) ";

/// Every write of a batch of status changes in one statement (data-modifying
/// `WITH` parts run once each, to completion, whether read or not): one
/// round trip instead of five, which on a loaded machine is most of what a
/// change waits for before it commits. Parts whose arrays are empty do
/// nothing. The parts touch different rows: `jobs` skips the jobs `del`
/// drops (as the separate statements did, run in that order), since one
/// statement must not change a row twice.
static WRITE: ArrayStmt = ArrayStmt::new(
    &[
        WRITE_HEAD,
        "outb AS ( \
           INSERT INTO outbox (event_id, payment_id, type, status, \
           previous_status, source, occurred_at, pieces) \
           SELECT u.e, u.id, u.ty, u.t, u.f, u.s, u.a, pay.pieces \
           FROM UNNEST({out_event}, {step_id}, {out_type}, {step_to}, {step_from}, \
           {step_source}, {step_at}) WITH ORDINALITY AS u(e, id, ty, t, f, s, a, n) \
           LEFT JOIN pay ON pay.id = u.id ORDER BY u.n), ",
        WRITE_JOBS,
        "SELECT 1",
    ],
    "writing status changes",
);

/// [`WRITE`] for the inbox processor, which also gives the new outbox rows
/// their feed positions and records the webhook rows' outcomes (`{now}` the
/// time; `{mark_id}`, `{mark_state}`, `{mark_reason}`; `{origin}` the
/// announcing process), returning the events as the sequencer's function
/// does (migration 0017) with their payments' registered fields (`pay_…`,
/// read before this statement's update: the fields an event carries are
/// set at registration), so a webhook's whole effect is this statement and
/// the commit. The positions are the next ones, taken by advancing the
/// `feed_state` row (`adv`), whose lock holds to the commit: the
/// function's rule, so they follow commit order. Not when an earlier
/// change of one of these payments waits unnumbered (committed by another
/// writer just before this transaction locked the payment; `prior`, read
/// after the lock, sees it): its event must come first, so the rows are
/// inserted without positions and the caller numbers them all in id
/// order. Rows of other payments committed unnumbered are left to the
/// sequencer, which their own writers wake.
///
/// The rows' outcomes (`mark`) name their ids on the table's side too
/// (`w.id = ANY(…)`): a generic plan made while `webhook_inbox` was new
/// otherwise scans the whole table on every apply (all 612 plans sampled
/// by `auto_explain` in a bench run did).
static WRITE_NUMBERED: ArrayStmt = ArrayStmt::new(
    &[
        WRITE_HEAD,
        "prior AS MATERIALIZED ( \
           SELECT count(*) AS n FROM outbox \
           WHERE feed_seq IS NULL AND payment_id = ANY({step_id})), \
         adv AS ( \
           UPDATE feed_state SET last_seq = last_seq + \
             CASE WHEN (SELECT n FROM prior) = 0 THEN cardinality({out_event}) ELSE 0 END \
           WHERE id = 1 \
           RETURNING last_seq, (SELECT n FROM prior) = 0 AS ours), \
         outb AS ( \
           INSERT INTO outbox (event_id, payment_id, type, status, \
           previous_status, source, occurred_at, feed_seq, pieces) \
           SELECT u.e, u.id, u.ty, u.t, u.f, u.s, u.a, \
             CASE WHEN adv.ours THEN adv.last_seq - cardinality({out_event}) + u.n END, \
             pay.pieces \
           FROM UNNEST({out_event}, {step_id}, {out_type}, {step_to}, {step_from}, \
           {step_source}, {step_at}) WITH ORDINALITY AS u(e, id, ty, t, f, s, a, n) \
           CROSS JOIN adv LEFT JOIN pay ON pay.id = u.id ORDER BY u.n \
           RETURNING feed_seq, event_id, payment_id, type, status, previous_status, source, \
           occurred_at, pieces), ",
        WRITE_JOBS,
        ", mark AS ( \
           UPDATE webhook_inbox w SET state = m.st, reason = m.r, processed_at = {now}, \
           next_attempt_at = NULL \
           FROM UNNEST({mark_id}, {mark_state}, {mark_reason}) AS m(id, st, r) \
           WHERE w.id = m.id AND w.id = ANY({mark_id})), \
         note AS MATERIALIZED ( \
           SELECT pg_notify('finality_feed', adv.last_seq::text || ' ' || {origin}) \
           FROM adv WHERE adv.ours) \
         SELECT o.feed_seq AS id, o.event_id, o.payment_id, o.type, o.status, \
           o.previous_status, o.source, o.occurred_at, p.provider, p.created_at, \
           p.provider_ref AS pay_provider_ref, p.merchant_ref AS pay_merchant_ref, \
           p.account AS pay_account, p.kind AS pay_kind, p.amount AS pay_amount, \
           p.currency AS pay_currency, p.metadata AS pay_metadata, \
           p.finalized_at AS pay_finalized_at, o.pieces AS out_pieces, \
           (SELECT count(*) FROM note) AS announced \
         FROM outb o LEFT JOIN payments p ON p.id = o.payment_id \
         ORDER BY o.feed_seq",
    ],
    "writing status changes and numbering their events",
);

static INSERT_INBOX: ArrayStmt = ArrayStmt::new(
    &[
        "INSERT INTO webhook_inbox (provider, event_id, provider_ref, \
     merchant_ref, observed_status, provider_status, occurred_at, raw_body, headers, \
     received_at, state, reason, next_attempt_at, source, reported_amount, reported_currency, \
     account, reported_pieces) \
     SELECT u.p, u.e, u.pr, u.mr, u.os, u.ps, u.oa, u.rb, u.h, {now}, u.st, u.r, u.d, u.src, \
     u.ra, u.rc, u.acc, u.rp \
     FROM UNNEST({provider}, {event_id}, {provider_ref}, {merchant_ref}, {observed_status}, \
     {provider_status}, {occurred_at}, {raw_body}, {headers}, {state}, {reason}, \
     {next_attempt_at}, {source}, {reported_amount}, {reported_currency}, {account}, \
     {reported_pieces}) \
     WITH ORDINALITY AS u(p, e, pr, mr, os, ps, oa, rb, h, st, r, d, src, ra, rc, acc, rp, n) \
     ORDER BY u.n \
     ON CONFLICT DO NOTHING RETURNING provider, account, event_id",
    ],
    "storing webhooks",
);

fn attempt_params<'a>(all: &[&'a NewAttempt]) -> Params<'a> {
    let text = |f: fn(&'a NewAttempt) -> &'a str| Param::Texts(all.iter().map(|a| f(a)).collect());
    let opt = |f: fn(&'a NewAttempt) -> Option<&'a str>| {
        Param::OptTexts(all.iter().map(|a| f(a)).collect())
    };
    let int = |f: fn(&NewAttempt) -> i64| Param::Int8s(all.iter().map(|a| f(a)).collect());
    Params::new()
        .with("payment_id", text(|a| &a.payment_id))
        .with("provider", text(|a| &a.provider))
        .with("worker", text(|a| &a.worker))
        .with("started_at", int(|a| a.started_at.0))
        .with("latency_ms", int(|a| a.latency_ms))
        .with("outcome", text(|a| &a.outcome))
        .with("provider_status", opt(|a| a.provider_status.as_deref()))
        .with("error_class", opt(|a| a.error_class.as_deref()))
        .with("error", opt(|a| a.error.as_deref()))
}

/// The columns of [`WRITE`] and [`WRITE_NUMBERED`].
fn write_params(w: &Writes) -> Params<'_> {
    Params::new()
        .with("pay_id", Param::Strings(&w.pay_id))
        .with("pay_status", Param::Strings(&w.pay_status))
        .with("pay_source", Param::Strings(&w.pay_source))
        .with("pay_at", Param::Int8s(Cow::Borrowed(&w.pay_at)))
        .with("pay_fin", Param::OptInt8s(Cow::Borrowed(&w.pay_fin)))
        .with("step_id", Param::Strings(&w.step_id))
        .with("step_from", Param::Strings(&w.step_from))
        .with("step_to", Param::Strings(&w.step_to))
        .with("step_source", Param::Strings(&w.step_source))
        .with("step_event", Param::OptStrings(&w.step_event))
        .with("step_reason", Param::OptStrings(&w.step_reason))
        .with("step_actor", Param::OptStrings(&w.step_actor))
        .with(
            "step_observed",
            Param::Int8s(Cow::Borrowed(&w.step_observed)),
        )
        .with("step_at", Param::Int8s(Cow::Borrowed(&w.step_at)))
        .with("out_event", Param::Strings(&w.out_event))
        .with("out_type", Param::Strings(&w.out_type))
        .with("delete", Param::Strings(&w.delete))
        .with("job_id", Param::Strings(&w.job_id))
        .with("job_next", Param::OptInt8s(Cow::Borrowed(&w.job_next)))
        .with("job_inc", Param::Int4s(&w.job_inc))
        .with("job_err", Param::OptStrings(&w.job_err))
        .with("job_park", Param::Bools(&w.job_park))
        .with("job_einc", Param::Int4s(&w.job_einc))
        .with("job_reset", Param::Bools(&w.job_reset))
}

/// [`write_params`] and the inbox processor's: the rows' outcomes, the time
/// and the announcing process.
fn numbered_params<'a>(
    w: &'a Writes,
    marks: &[(i64, &'a str, Option<&'a str>)],
    now: Timestamp,
    origin: &'a str,
) -> Params<'a> {
    write_params(w)
        .with("now", Param::Int8(now.0))
        .with("mark_id", Param::Int8s(marks.iter().map(|m| m.0).collect()))
        .with(
            "mark_state",
            Param::Texts(marks.iter().map(|m| m.1).collect()),
        )
        .with(
            "mark_reason",
            Param::OptTexts(marks.iter().map(|m| m.2).collect()),
        )
        .with("origin", Param::Text(origin))
}

fn inbox_params(events: &[NewInboxEvent], now: Timestamp) -> Params<'_> {
    let text = |f: fn(&NewInboxEvent) -> &str| Param::Texts(events.iter().map(f).collect());
    let opt =
        |f: fn(&NewInboxEvent) -> Option<&str>| Param::OptTexts(events.iter().map(f).collect());
    let opt_int =
        |f: fn(&NewInboxEvent) -> Option<i64>| Param::OptInt8s(events.iter().map(f).collect());
    Params::new()
        .with("provider", text(|e| &e.provider))
        .with("event_id", text(|e| &e.event_id))
        .with("provider_ref", opt(|e| e.provider_ref.as_deref()))
        .with("merchant_ref", opt(|e| e.merchant_ref.as_deref()))
        .with("observed_status", opt(|e| e.observed.map(|s| s.as_str())))
        .with("provider_status", opt(|e| e.provider_status.as_deref()))
        .with("occurred_at", opt_int(|e| e.occurred_at.map(|t| t.0)))
        .with(
            "raw_body",
            Param::Bytes(events.iter().map(|e| e.raw_body.as_slice()).collect()),
        )
        .with(
            "headers",
            Param::Jsons(events.iter().map(|e| e.headers.clone()).collect()),
        )
        .with("now", Param::Int8(now.0))
        .with("state", text(|e| e.state.as_str()))
        .with("reason", opt(|e| e.reason.as_deref()))
        .with(
            "next_attempt_at",
            Param::OptInt8s(
                events
                    .iter()
                    .map(|e| (e.state == InboxState::Received).then_some(now.0))
                    .collect(),
            ),
        )
        .with("source", text(|e| e.source.as_str()))
        .with("reported_amount", opt_int(|e| e.reported.amount))
        .with("reported_currency", opt(|e| e.reported.currency.as_deref()))
        .with(
            "reported_pieces",
            Param::OwnedOptTexts(
                events
                    .iter()
                    .map(|e| crate::amounts::to_text(&e.reported.pieces))
                    .collect(),
            ),
        )
        .with(
            "account",
            text(|e| e.account.as_deref().unwrap_or_default()),
        )
}

pub(crate) async fn insert_attempts(conn: &mut PgConnection, all: &[&NewAttempt]) -> Result<()> {
    INSERT_ATTEMPTS
        .query(attempt_params(all))?
        .execute(&mut *conn)
        .await
        .op(INSERT_ATTEMPTS.op())?;
    Ok(())
}

pub(crate) async fn lock_leases(conn: &mut PgConnection, ids: &[&str]) -> Result<Vec<Leased>> {
    let rows: Vec<(String, String, String, Option<i64>)> = LOCK
        .query_as(Params::new().with("ids", Param::Strs(ids)))?
        .fetch_all(&mut *conn)
        .await
        .op(LOCK.op())?;
    rows.into_iter()
        .map(|(payment_id, status, kind, lock_token)| {
            Ok(Leased {
                payment_id,
                status: parse(&status, "payments")?,
                kind: parse(&kind, "payments")?,
                lock_token,
            })
        })
        .collect()
}

pub(crate) async fn write(conn: &mut PgConnection, w: &Writes) -> Result<()> {
    if w.pay_id.is_empty() && w.step_id.is_empty() && w.delete.is_empty() && w.job_id.is_empty() {
        return Ok(());
    }
    WRITE
        .query(write_params(w))?
        .execute(&mut *conn)
        .await
        .op(WRITE.op())?;
    Ok(())
}

#[async_trait::async_trait]
impl InboxRows for PgConnection {
    const ONE_STATEMENT: bool = true;

    /// One statement for the whole batch; a row is new when the insert
    /// returned its key, and only its first copy in the batch is.
    async fn insert_inbox(
        &mut self,
        events: &[NewInboxEvent],
        now: Timestamp,
    ) -> Result<Vec<bool>> {
        use sqlx::Row;
        let rows = INSERT_INBOX
            .query(inbox_params(events, now))?
            .fetch_all(&mut *self)
            .await
            .op(INSERT_INBOX.op())?;
        let mut inserted = std::collections::HashSet::with_capacity(rows.len());
        for r in &rows {
            let key: (String, String, String) = (
                r.try_get("provider").op("reading stored webhooks")?,
                r.try_get("account").op("reading stored webhooks")?,
                r.try_get("event_id").op("reading stored webhooks")?,
            );
            inserted.insert(key);
        }
        Ok(events
            .iter()
            .map(|e| {
                inserted.remove(&(
                    e.provider.clone(),
                    e.account.clone().unwrap_or_default(),
                    e.event_id.clone(),
                ))
            })
            .collect())
    }

    async fn write_numbered(
        &mut self,
        writes: &Writes,
        marks: &[(i64, &str, Option<&str>)],
        now: Timestamp,
        origin: &str,
    ) -> Result<NumberedWrite<PgRow>> {
        use sqlx::Row;
        let rows = WRITE_NUMBERED
            .query(numbered_params(writes, marks, now, origin))?
            .fetch_all(&mut *self)
            .await
            .op(WRITE_NUMBERED.op())?;
        if rows.len() != writes.out_event.len() {
            // No `feed_state` row to advance: nothing was inserted.
            return Err(corrupt("feed_state", "the sequencer row is missing"));
        }
        let numbered = match rows.first() {
            Some(r) => r
                .try_get::<Option<i64>, _>("id")
                .op("reading the events just numbered")?
                .is_some(),
            None => true,
        };
        Ok(if numbered {
            NumberedWrite::Numbered(rows)
        } else {
            NumberedWrite::Unnumbered
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::arrays::placeholders_in;
    use super::*;

    /// Each statement with the parameters its function builds: every name
    /// resolves, every parameter is used, and the placeholders are exactly
    /// `$1`..`$n` for `n` binds.
    #[test]
    fn every_array_statement_binds_what_its_sql_names() {
        let w = Writes::default();
        let marks: Vec<(i64, &str, Option<&str>)> = Vec::new();
        let cases: Vec<(&'static ArrayStmt, Params<'_>)> = vec![
            (&INSERT_ATTEMPTS, attempt_params(&[])),
            (&LOCK, Params::new().with("ids", Param::Texts(Vec::new()))),
            (&WRITE, write_params(&w)),
            (
                &WRITE_NUMBERED,
                numbered_params(&w, &marks, Timestamp(0), "origin"),
            ),
            (&INSERT_INBOX, inbox_params(&[], Timestamp(0))),
        ];
        for (stmt, params) in cases {
            let n = params.signature().len();
            let sql = stmt
                .sql(&params)
                .unwrap_or_else(|e| panic!("{}: {e}", stmt.op()));
            assert!(!sql.contains('{'), "{}: {sql}", stmt.op());
            let found = placeholders_in(sql);
            assert_eq!(
                found.into_iter().collect::<Vec<_>>(),
                (1..=n).collect::<Vec<_>>(),
                "{}: placeholders against {n} binds",
                stmt.op()
            );
        }
        assert_eq!(write_params(&w).signature().len(), 24);
        assert_eq!(
            numbered_params(&w, &marks, Timestamp(0), "o")
                .signature()
                .len(),
            29
        );
    }
}
