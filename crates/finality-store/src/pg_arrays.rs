//! PostgreSQL writes whole batches as arrays (`UNNEST`): a fixed handful of
//! statements whatever the batch size. Row at a time, a batch of 64
//! completions cost about 300 sequential round trips; this costs four
//! (attempts, locks, the writes as one statement, the commit). A single change (a webhook, a person) goes the same way, with
//! arrays of one.

use crate::error::{DbContext, Result};
use crate::model::NewAttempt;
use crate::query::{parse, Leased};
use crate::transition::Writes;
use sqlx::PgConnection;

const INSERT_ATTEMPTS: &str = "INSERT INTO poll_attempts (payment_id, provider, worker, \
     started_at, latency_ms, outcome, provider_status, error_class, error) \
     SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], $6::text[], \
     $7::text[], $8::text[], $9::text[])";

/// Locks payment then job of each row, in id order (the order every other
/// writer locks a payment and its job in).
const LOCK: &str = "SELECT p.id, p.status, p.kind, j.lock_token FROM payments p \
     JOIN poll_jobs j ON j.payment_id = p.id WHERE p.id = ANY($1) ORDER BY p.id FOR UPDATE";

/// The parts of [`WRITE`] before the outbox: payments, then history.
macro_rules! write_head {
    () => {
        "WITH pay AS ( \
           UPDATE payments p SET status = u.status, status_source = u.source, \
           updated_at = u.at, finalized_at = COALESCE(p.finalized_at, u.fin) \
           FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[]) \
           AS u(id, status, source, at, fin) WHERE p.id = u.id), \
         hist AS ( \
           INSERT INTO status_history (payment_id, from_status, to_status, \
           source, event_id, reason, actor, observed_at, at) \
           SELECT u.id, u.f, u.t, u.s, u.e, u.r, u.actor, u.o, u.a \
           FROM UNNEST($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], \
           $12::text[], $13::int8[], $14::int8[]) \
           WITH ORDINALITY AS u(id, f, t, s, e, r, actor, o, a, n) ORDER BY u.n), "
    };
}

/// The parts of [`WRITE`] after the outbox: jobs dropped, jobs moved.
macro_rules! write_jobs {
    () => {
        "del AS (DELETE FROM poll_jobs WHERE payment_id = ANY($17::text[])), \
         jobs AS ( \
           UPDATE poll_jobs j SET next_poll_at = u.next, \
           attempts = j.attempts + u.inc, \
           errors = CASE WHEN u.reset THEN u.einc ELSE j.errors + u.einc END, \
           due_at = NULL, resume_at = NULL, locked_by = NULL, locked_until = NULL, \
           lock_token = NULL, last_error = CASE WHEN u.park THEN COALESCE(u.err, j.last_error) ELSE u.err END \
           FROM UNNEST($18::text[], $19::int8[], $20::int4[], $21::text[], $22::bool[], \
           $23::int4[], $24::bool[]) AS u(id, next, inc, err, park, einc, reset) \
           WHERE j.payment_id = u.id AND NOT (j.payment_id = ANY($17::text[]))) "
    };
}

/// Every write of a batch of status changes in one statement (data-modifying
/// `WITH` parts run once each, to completion, whether read or not): one
/// round trip instead of five, which on a loaded machine is most of what a
/// change waits for before it commits. Parts whose arrays are empty do
/// nothing. The parts touch different rows: `jobs` skips the jobs `del`
/// drops (as the separate statements did, run in that order), since one
/// statement must not change a row twice.
const WRITE: &str = concat!(
    write_head!(),
    "outb AS ( \
       INSERT INTO outbox (event_id, payment_id, type, status, \
       previous_status, source, occurred_at) \
       SELECT u.e, u.id, u.ty, u.t, u.f, u.s, u.a \
       FROM UNNEST($15::text[], $6::text[], $16::text[], $8::text[], $7::text[], $9::text[], \
       $14::int8[]) WITH ORDINALITY AS u(e, id, ty, t, f, s, a, n) ORDER BY u.n), ",
    write_jobs!(),
    "SELECT 1"
);

/// [`WRITE`] for the inbox processor, which also gives the new outbox rows
/// their feed positions and records the webhook rows' outcomes (`$25` the
/// time; ids, states and reasons in `$26`–`$28`; `$29` the announcing
/// process), returning the events as the sequencer's function does
/// (migration 0017), so a webhook's whole effect is this statement and
/// the commit. The positions are the next ones, taken by advancing the
/// `feed_state` row (`adv`), whose lock holds to the commit: the
/// function's rule, so they follow commit order. Not when an earlier
/// change of one of these payments waits unnumbered (committed by another
/// writer just before this transaction locked the payment; `prior`, read
/// after the lock, sees it): its event must come first, so the rows are
/// inserted without positions and the caller numbers them all in id
/// order. Rows of other payments committed unnumbered are left to the
/// sequencer, which their own writers wake.
const WRITE_NUMBERED: &str = concat!(
    write_head!(),
    "prior AS MATERIALIZED ( \
       SELECT count(*) AS n FROM outbox \
       WHERE feed_seq IS NULL AND payment_id = ANY($6::text[])), \
     adv AS ( \
       UPDATE feed_state SET last_seq = last_seq + \
         CASE WHEN (SELECT n FROM prior) = 0 THEN cardinality($15::text[]) ELSE 0 END \
       WHERE id = 1 \
       RETURNING last_seq, (SELECT n FROM prior) = 0 AS ours), \
     outb AS ( \
       INSERT INTO outbox (event_id, payment_id, type, status, \
       previous_status, source, occurred_at, feed_seq) \
       SELECT u.e, u.id, u.ty, u.t, u.f, u.s, u.a, \
         CASE WHEN adv.ours THEN adv.last_seq - cardinality($15::text[]) + u.n END \
       FROM UNNEST($15::text[], $6::text[], $16::text[], $8::text[], $7::text[], $9::text[], \
       $14::int8[]) WITH ORDINALITY AS u(e, id, ty, t, f, s, a, n) CROSS JOIN adv \
       ORDER BY u.n \
       RETURNING feed_seq, event_id, payment_id, type, status, previous_status, source, \
       occurred_at), ",
    write_jobs!(),
    ", mark AS ( \
       UPDATE webhook_inbox w SET state = m.st, reason = m.r, processed_at = $25, \
       next_attempt_at = NULL \
       FROM UNNEST($26::int8[], $27::text[], $28::text[]) AS m(id, st, r) WHERE w.id = m.id), \
     note AS MATERIALIZED ( \
       SELECT pg_notify('finality_feed', adv.last_seq::text || ' ' || $29) \
       FROM adv WHERE adv.ours) \
     SELECT o.feed_seq AS id, o.event_id, o.payment_id, o.type, o.status, \
       o.previous_status, o.source, o.occurred_at, p.provider, p.created_at, \
       (SELECT count(*) FROM note) AS announced \
     FROM outb o LEFT JOIN payments p ON p.id = o.payment_id \
     ORDER BY o.feed_seq"
);

pub(crate) async fn insert_attempts(conn: &mut PgConnection, all: &[&NewAttempt]) -> Result<()> {
    let col = |f: fn(&NewAttempt) -> String| all.iter().map(|a| f(a)).collect::<Vec<_>>();
    let opt = |f: fn(&NewAttempt) -> Option<String>| all.iter().map(|a| f(a)).collect::<Vec<_>>();
    let int = |f: fn(&NewAttempt) -> i64| all.iter().map(|a| f(a)).collect::<Vec<_>>();
    sqlx::query(INSERT_ATTEMPTS)
        .bind(col(|a| a.payment_id.clone()))
        .bind(col(|a| a.provider.clone()))
        .bind(col(|a| a.worker.clone()))
        .bind(int(|a| a.started_at.0))
        .bind(int(|a| a.latency_ms))
        .bind(col(|a| a.outcome.clone()))
        .bind(opt(|a| a.provider_status.clone()))
        .bind(opt(|a| a.error_class.clone()))
        .bind(opt(|a| a.error.clone()))
        .execute(&mut *conn)
        .await
        .op("recording provider calls")?;
    Ok(())
}

pub(crate) async fn lock_leases(conn: &mut PgConnection, ids: &[&str]) -> Result<Vec<Leased>> {
    let rows: Vec<(String, String, String, Option<i64>)> = sqlx::query_as(LOCK)
        .bind(ids)
        .fetch_all(&mut *conn)
        .await
        .op("locking payments and leases")?;
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
    bind_writes(sqlx::query(WRITE), w)
        .execute(&mut *conn)
        .await
        .op("writing status changes")?;
    Ok(())
}

/// `$1`–`$24` of [`WRITE`] and [`WRITE_NUMBERED`].
fn bind_writes<'q>(
    q: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    w: &'q Writes,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    q.bind(&w.pay_id)
        .bind(&w.pay_status)
        .bind(&w.pay_source)
        .bind(&w.pay_at)
        .bind(&w.pay_fin)
        .bind(&w.step_id)
        .bind(&w.step_from)
        .bind(&w.step_to)
        .bind(&w.step_source)
        .bind(&w.step_event)
        .bind(&w.step_reason)
        .bind(&w.step_actor)
        .bind(&w.step_observed)
        .bind(&w.step_at)
        .bind(&w.out_event)
        .bind(&w.out_type)
        .bind(&w.delete)
        .bind(&w.job_id)
        .bind(&w.job_next)
        .bind(&w.job_inc)
        .bind(&w.job_err)
        .bind(&w.job_park)
        .bind(&w.job_einc)
        .bind(&w.job_reset)
}

const INSERT_INBOX: &str = "INSERT INTO webhook_inbox (provider, event_id, provider_ref, \
     merchant_ref, observed_status, provider_status, occurred_at, raw_body, headers, \
     received_at, state, reason, next_attempt_at, source, reported_amount, reported_currency) \
     SELECT u.p, u.e, u.pr, u.mr, u.os, u.ps, u.oa, u.rb, u.h, $10, u.st, u.r, u.d, u.src, \
     u.ra, u.rc \
     FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], \
     $7::int8[], $8::bytea[], $9::jsonb[], $11::text[], $12::text[], $13::int8[], $14::text[], \
     $15::int8[], $16::text[]) \
     WITH ORDINALITY AS u(p, e, pr, mr, os, ps, oa, rb, h, st, r, d, src, ra, rc, n) ORDER BY u.n \
     ON CONFLICT DO NOTHING RETURNING provider, event_id";

#[async_trait::async_trait]
impl crate::inbox::InboxRows for PgConnection {
    const ONE_STATEMENT: bool = true;

    /// One statement for the whole batch; a row is new when the insert
    /// returned its key, and only its first copy in the batch is.
    async fn insert_inbox(
        &mut self,
        events: &[crate::model::NewInboxEvent],
        now: finality_core::Timestamp,
    ) -> Result<Vec<bool>> {
        use crate::model::{InboxState, NewInboxEvent};
        use sqlx::Row;
        let text = |f: fn(&NewInboxEvent) -> String| events.iter().map(f).collect::<Vec<_>>();
        let opt =
            |f: fn(&NewInboxEvent) -> Option<String>| events.iter().map(f).collect::<Vec<_>>();
        let rows = sqlx::query(INSERT_INBOX)
            .bind(text(|e| e.provider.clone()))
            .bind(text(|e| e.event_id.clone()))
            .bind(opt(|e| e.provider_ref.clone()))
            .bind(opt(|e| e.merchant_ref.clone()))
            .bind(opt(|e| e.observed.map(|s| s.as_str().to_string())))
            .bind(opt(|e| e.provider_status.clone()))
            .bind(
                events
                    .iter()
                    .map(|e| e.occurred_at.map(|t| t.0))
                    .collect::<Vec<_>>(),
            )
            .bind(
                events
                    .iter()
                    .map(|e| e.raw_body.as_slice())
                    .collect::<Vec<_>>(),
            )
            .bind(events.iter().map(|e| e.headers.clone()).collect::<Vec<_>>())
            .bind(now.0)
            .bind(text(|e| e.state.as_str().to_string()))
            .bind(opt(|e| e.reason.clone()))
            .bind(
                events
                    .iter()
                    .map(|e| (e.state == InboxState::Received).then_some(now.0))
                    .collect::<Vec<_>>(),
            )
            .bind(text(|e| e.source.as_str().to_string()))
            .bind(events.iter().map(|e| e.reported.amount).collect::<Vec<_>>())
            .bind(opt(|e| e.reported.currency.clone()))
            .fetch_all(&mut *self)
            .await
            .op("storing webhooks")?;
        let mut inserted = std::collections::HashSet::with_capacity(rows.len());
        for r in &rows {
            let key: (String, String) = (
                r.try_get("provider").op("reading stored webhooks")?,
                r.try_get("event_id").op("reading stored webhooks")?,
            );
            inserted.insert(key);
        }
        Ok(events
            .iter()
            .map(|e| inserted.remove(&(e.provider.clone(), e.event_id.clone())))
            .collect())
    }

    async fn write_numbered(
        &mut self,
        writes: &Writes,
        marks: &[(i64, &str, Option<&str>)],
        now: finality_core::Timestamp,
        (limit, origin): (u32, &str),
    ) -> Result<Option<crate::feed::Numbered>> {
        use sqlx::Row;
        let rows = bind_writes(sqlx::query(WRITE_NUMBERED), writes)
            .bind(now.0)
            .bind(marks.iter().map(|m| m.0).collect::<Vec<_>>())
            .bind(marks.iter().map(|m| m.1).collect::<Vec<_>>())
            .bind(marks.iter().map(|m| m.2).collect::<Vec<_>>())
            .bind(origin)
            .fetch_all(&mut *self)
            .await
            .op("writing status changes and numbering their events")?;
        if rows.len() != writes.out_event.len() {
            // No `feed_state` row to advance: nothing was inserted.
            return Err(crate::query::corrupt(
                "feed_state",
                "the sequencer row is missing",
            ));
        }
        let numbered = match rows.first() {
            Some(r) => r
                .try_get::<Option<i64>, _>("id")
                .op("reading the events just numbered")?
                .is_some(),
            None => true,
        };
        if numbered {
            return crate::feed::Numbered::of(&rows).map(Some);
        }
        // An earlier change of one of these payments waits unnumbered:
        // everything unnumbered, in id order, in this transaction.
        crate::feed::number_in(self, limit, origin).await.map(Some)
    }
}
