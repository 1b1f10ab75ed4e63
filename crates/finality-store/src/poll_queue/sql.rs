//! The poll queue on SQL: claims under a lease, fenced completions,
//! early looks and "poll now".

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields, Leased, Writer};
use crate::error::{DbContext, Result};
use crate::model::*;
use crate::payments::by_ref;
use crate::payments::sql::{lock_payment, write_provider_ref};
use crate::poll_queue::lanes;
use crate::poll_queue::plan::plan_completion;
use crate::transition::{write_changes, Change};
use crate::PollQueue;
use finality_core::{Scope, Source, Timestamp};
use std::collections::HashMap;

pub(crate) fn job_from_row(r: &impl Fields) -> Result<ClaimedJob> {
    let t = "poll_jobs";
    Ok(ClaimedJob {
        payment_id: r.text("payment_id", t)?,
        provider: r.text("provider", t)?,
        provider_ref: r.opt_text("provider_ref", t)?,
        merchant_ref: r.opt_text("merchant_ref", t)?,
        account: r.account("account", t)?,
        kind: r.parsed("kind", t)?,
        registered_at: Timestamp(r.int("registered_at", t)?),
        attempts: r.count("attempts", t)?,
        errors: r.count("errors", t)?,
        due_at: Timestamp(r.int("due_at", t)?),
        resume_at: r.opt_int("resume_at", t)?.map(Timestamp),
        lock_token: r.int("lock_token", t)?,
    })
}

/// Make `worker`'s leased polls due at `now`, unfenced from it (the lock
/// token cleared: its late completions are refused), and wake the workers.
pub(crate) async fn release<C: Conn>(conn: &mut C, worker: &str, now: Timestamp) -> Result<u64> {
    let n = conn
        .run(
            stmt(
                // Back at the time it was due when claimed (never later
                // than now), so a released poll runs before the backlog
                // that fell due while its node was dying.
                "UPDATE poll_jobs SET next_poll_at = CASE WHEN due_at IS NOT NULL AND due_at < $2 \
                 THEN due_at ELSE $2 END, locked_by = NULL, locked_until = NULL, \
                 lock_token = NULL WHERE locked_by = $1",
                "releasing a node's leases",
            )
            .text(worker)
            .int(now.0),
        )
        .await?;
    if n > 0 {
        if let Some(sql) = C::SQL.notify {
            conn.run(stmt(sql, "notifying workers")).await?;
        }
    }
    Ok(n)
}

/// Completions inside an open transaction: record every call, lock every
/// payment and job (in id order), decide each in plain Rust, and write all
/// changes through the one writer.
pub(crate) async fn complete_in<W: Writer>(
    conn: &mut W,
    cs: &[Completion],
) -> Result<Vec<CompleteOutcome>> {
    // The calls happened whatever the fence says: always record them.
    let attempts: Vec<&NewAttempt> = cs.iter().filter_map(|c| c.attempt.as_ref()).collect();
    if !attempts.is_empty() {
        conn.insert_attempts(&attempts).await?;
    }
    let mut ids: Vec<&str> = cs.iter().map(|c| c.payment_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut locked: HashMap<String, Leased> = conn
        .lock_leases(&ids)
        .await?
        .into_iter()
        .map(|l| (l.payment_id.clone(), l))
        .collect();
    let mut changes = Vec::with_capacity(cs.len());
    let mut out = Vec::with_capacity(cs.len());
    for c in cs {
        // The fence: the job must still carry this claim's token. Taking
        // the entry out fences a second completion of the same payment.
        let fenced =
            matches!(locked.get(&c.payment_id), Some(l) if l.lock_token == Some(c.lock_token));
        let Some(lease) = fenced.then(|| locked.remove(&c.payment_id)).flatten() else {
            out.push(CompleteOutcome::LeaseLost);
            continue;
        };
        let plan = plan_completion(c, lease.kind, lease.status);
        out.push(CompleteOutcome::Done {
            applied: plan.steps.iter().map(|s| (s.from, s.to)).collect(),
        });
        changes.push(Change {
            payment_id: &c.payment_id,
            kind: lease.kind,
            source: Source::StatusQuery,
            event_id: None,
            actor: None,
            observed_at: c.now,
            now: c.now,
            steps: plan.steps,
            job: Some(plan.job),
        });
    }
    write_changes(conn, &changes).await?;
    Ok(out)
}

/// `record_provider_ref` inside an open transaction.
pub(crate) async fn record_provider_ref_in<C: Conn>(
    conn: &mut C,
    id: &str,
    lock_token: i64,
    provider_ref: &str,
) -> Result<RefRecorded> {
    if lock_payment(conn, id).await?.is_none() {
        return Ok(RefRecorded::LeaseLost);
    }
    let fenced = conn
        .opt(
            stmt(C::SQL.lock_job, "checking a lease")
                .text(id)
                .int(lock_token),
        )
        .await?;
    if fenced.is_none() {
        return Ok(RefRecorded::LeaseLost);
    }
    let row = conn
        .opt(
            stmt(
                "SELECT provider, account, provider_ref FROM payments WHERE id = $1",
                "reading a payment's references",
            )
            .text(id),
        )
        .await?;
    let Some(row) = row else {
        return Ok(RefRecorded::LeaseLost);
    };
    let scope = Scope::new(
        row.text("provider", "payments")?,
        row.account("account", "payments")?.as_deref(),
    );
    match row.opt_text("provider_ref", "payments")? {
        Some(k) if k == provider_ref => return Ok(RefRecorded::Same),
        Some(existing) => return Ok(RefRecorded::Different { existing }),
        None => {}
    }
    if let Some(other_id) = by_ref::by_provider_ref(conn, &scope, provider_ref).await? {
        return Ok(RefRecorded::Taken { other_id });
    }
    write_provider_ref(conn, id, provider_ref).await?;
    Ok(RefRecorded::Recorded)
}

pub(crate) fn any_applied(out: &[CompleteOutcome]) -> bool {
    out.iter()
        .any(|o| matches!(o, CompleteOutcome::Done { applied } if !applied.is_empty()))
}

/// "Poll now" inside an open transaction (with its audit record, for a
/// person's request: [`crate::Review::poll_now_manual`]).
pub(crate) async fn poll_now_in<C: Conn>(
    conn: &mut C,
    id: &str,
    now: Timestamp,
) -> Result<PollNow> {
    let Some((status, _)) = lock_payment(conn, id).await? else {
        return Ok(PollNow::NotFound);
    };
    if status.is_final() {
        return Ok(PollNow::AlreadyFinal);
    }
    // A leased job stays with its worker: making it due would let a
    // second worker poll the same payment at the same time.
    let moved = conn
        .run(
            stmt(
                // An operator's poll counts as any poll: a pending early
                // look becomes this one.
                "UPDATE poll_jobs SET next_poll_at = $2, due_at = NULL, resume_at = NULL \
                 WHERE payment_id = $1 AND (locked_until IS NULL OR locked_until <= $2)",
                "making a poll due now",
            )
            .text(id)
            .int(now.0),
        )
        .await?;
    let out = if moved == 1 {
        PollNow::Scheduled
    } else {
        PollNow::InFlight
    };
    if out == PollNow::Scheduled {
        if let Some(sql) = C::SQL.notify {
            conn.run(stmt(sql, "notifying workers")).await?;
        }
    }
    Ok(out)
}

#[async_trait::async_trait]
impl<B: Backend> PollQueue for B {
    fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.start_listener();
        self.wakeups().subscribe()
    }

    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<ClaimedJob>> {
        let token: i64 = rand::random::<i64>() & i64::MAX;
        let mut conn = self.read().await?;
        let claim = |sql, limit: u32| {
            stmt(sql, "claiming due polls")
                .int(req.now.0)
                .int(i64::from(limit))
                .int(req.lease_until.0)
                .text(&req.worker)
                .int(token)
        };
        let t = "poll_jobs";
        if !req.fair {
            return conn
                .all(claim(<B::Conn as Conn>::SQL.claim, req.limit))
                .await?
                .iter()
                .map(job_from_row)
                .collect();
        }
        let lanes = conn
            .all(
                stmt(
                    <B::Conn as Conn>::SQL.due_lanes,
                    "finding the lanes with due polls",
                )
                .int(req.now.0),
            )
            .await?
            .iter()
            .map(|r| {
                Ok((
                    (r.text("provider", t)?, r.text("account", t)?),
                    Timestamp(r.int("first_due", t)?),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        if lanes.len() <= 1 {
            return conn
                .all(claim(<B::Conn as Conn>::SQL.claim, req.limit))
                .await?
                .iter()
                .map(job_from_row)
                .collect();
        }
        let mut out = Vec::new();
        let mut more = false;
        for ((provider, account), share) in lanes::shares(&lanes, &req.weights, req.limit) {
            let rows = conn
                .all(
                    claim(<B::Conn as Conn>::SQL.claim_lane, share)
                        .text(&provider)
                        .text(&account),
                )
                .await?;
            more |= rows.len() as u32 == share;
            for r in &rows {
                out.push(job_from_row(r)?);
            }
        }
        // The round's rest, first due first, when a lane had more than
        // its share and another had less.
        let rest = req.limit.saturating_sub(out.len() as u32);
        if more && rest > 0 {
            for r in &conn.all(claim(<B::Conn as Conn>::SQL.claim, rest)).await? {
                out.push(job_from_row(r)?);
            }
        }
        Ok(out)
    }

    async fn complete(&self, c: &Completion) -> Result<CompleteOutcome> {
        let mut tx = self.begin_write().await?;
        let mut out = complete_in(&mut *tx, std::slice::from_ref(c)).await?;
        tx.commit().await.op("committing a poll result")?;
        if any_applied(&out) {
            self.wakeups().bump_transitions();
        }
        Ok(out.pop().unwrap_or(CompleteOutcome::LeaseLost))
    }

    async fn complete_batch(&self, cs: &[Completion]) -> Result<Vec<CompleteOutcome>> {
        let mut tx = self.begin_write().await?;
        let out = complete_in(&mut *tx, cs).await?;
        tx.commit().await.op("committing a batch of poll results")?;
        if any_applied(&out) {
            self.wakeups().bump_transitions();
        }
        Ok(out)
    }

    async fn poll_now(&self, id: &str, now: Timestamp) -> Result<PollNow> {
        let mut tx = self.begin_write().await?;
        let out = poll_now_in::<B::Conn>(&mut tx, id, now).await?;
        tx.commit().await.op("committing poll now")?;
        self.wakeups().bump();
        Ok(out)
    }

    async fn look_early(
        &self,
        scope: &Scope,
        provider_ref: &str,
        now: Timestamp,
        per_payment: u32,
    ) -> Result<Option<String>> {
        let mut tx = self.begin_write().await?;
        let Some(payment_id) = by_ref::by_either_ref(&mut *tx, scope, provider_ref).await? else {
            return Ok(None);
        };
        let row = tx
            .opt(
                stmt(
                    "UPDATE poll_jobs SET resume_at = next_poll_at, next_poll_at = $2, \
                     due_at = NULL, early_looks = early_looks + 1 \
                     WHERE payment_id = $1 \
                     AND resume_at IS NULL AND next_poll_at > $2 AND early_looks < $3 \
                     AND (locked_until IS NULL OR locked_until <= $2) \
                     RETURNING payment_id",
                    "scheduling an early look",
                )
                .text(&payment_id)
                .int(now.0)
                .int(i64::from(per_payment)),
            )
            .await?;
        let id = row.map(|r| r.text("payment_id", "poll_jobs")).transpose()?;
        if id.is_some() {
            if let Some(sql) = <B::Conn as Conn>::SQL.notify {
                tx.run(stmt(sql, "notifying workers")).await?;
            }
        }
        tx.commit().await.op("committing an early look")?;
        if id.is_some() {
            self.wakeups().bump();
        }
        Ok(id)
    }

    async fn hurry(&self, provider: &str, by: Timestamp, now: Timestamp) -> Result<u64> {
        hurry_in(self, provider, None, by, now).await
    }

    async fn hurry_account(&self, scope: &Scope, by: Timestamp, now: Timestamp) -> Result<u64> {
        hurry_in(self, scope.provider(), Some(scope.account_key()), by, now).await
    }

    async fn heartbeat(&self, worker: &str, now: Timestamp) -> Result<()> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "INSERT INTO nodes (worker_id, started_at, heartbeat_at) VALUES ($1, $2, $2) \
                 ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                "recording a heartbeat",
            )
            .text(worker)
            .int(now.0),
        )
        .await?;
        Ok(())
    }

    async fn release_dead(&self, cutoff: Timestamp, now: Timestamp) -> Result<Vec<(String, u64)>> {
        let dead: Vec<String> = {
            let mut conn = self.read().await?;
            conn.all(
                stmt(
                    "SELECT worker_id FROM nodes WHERE heartbeat_at < $1 ORDER BY worker_id",
                    "finding nodes that stopped",
                )
                .int(cutoff.0),
            )
            .await?
            .iter()
            .map(|r| r.text("worker_id", "nodes"))
            .collect::<Result<_>>()?
        };
        let mut out = Vec::with_capacity(dead.len());
        for worker in dead {
            let mut tx = self.begin_write().await?;
            let conn: &mut B::Conn = &mut tx;
            // Only if it is still silent: it may have come back meanwhile.
            let gone = conn
                .run(
                    stmt(
                        "DELETE FROM nodes WHERE worker_id = $1 AND heartbeat_at < $2",
                        "forgetting a node that stopped",
                    )
                    .text(&worker)
                    .int(cutoff.0),
                )
                .await?;
            let n = if gone == 1 {
                release(conn, &worker, now).await?
            } else {
                0
            };
            tx.commit().await.op("committing released leases")?;
            if gone == 1 {
                out.push((worker, n));
            }
        }
        if out.iter().any(|(_, n)| *n > 0) {
            self.wakeups().bump();
        }
        Ok(out)
    }

    async fn release_worker(&self, worker: &str, now: Timestamp) -> Result<u64> {
        let mut tx = self.begin_write().await?;
        let conn: &mut B::Conn = &mut tx;
        let n = release(conn, worker, now).await?;
        conn.run(
            stmt(
                "DELETE FROM nodes WHERE worker_id = $1",
                "forgetting a node",
            )
            .text(worker),
        )
        .await?;
        tx.commit().await.op("committing handed-back leases")?;
        if n > 0 {
            self.wakeups().bump();
        }
        Ok(n)
    }

    async fn next_due_at(&self) -> Result<Option<Timestamp>> {
        let mut conn = self.read().await?;
        let r = conn
            .opt(stmt(
                "SELECT MIN(next_poll_at) AS due FROM poll_jobs WHERE next_poll_at IS NOT NULL",
                "finding the next due poll",
            ))
            .await?;
        Ok(r.map(|r| r.opt_int("due", "poll_jobs"))
            .transpose()?
            .flatten()
            .map(Timestamp))
    }

    async fn record_provider_ref(
        &self,
        payment_id: &str,
        lock_token: i64,
        provider_ref: &str,
    ) -> Result<RefRecorded> {
        let mut tx = self.begin_write().await?;
        let out = record_provider_ref_in(&mut *tx, payment_id, lock_token, provider_ref).await?;
        tx.commit().await.op("committing a provider reference")?;
        Ok(out)
    }
}

/// Bring `provider`'s (or, with `account`, that account's) unleased jobs
/// due after `by` forward to `by`.
async fn hurry_in<B: Backend>(
    store: &B,
    provider: &str,
    account: Option<&str>,
    by: Timestamp,
    now: Timestamp,
) -> Result<u64> {
    let mut conn = store.read().await?;
    // A pending early look keeps its place; the time it goes back to is
    // brought forward instead.
    let sql = format!(
        "UPDATE poll_jobs SET \
         next_poll_at = CASE WHEN next_poll_at > $2 THEN $2 ELSE next_poll_at END, \
         resume_at = CASE WHEN resume_at > $2 THEN $2 ELSE resume_at END, due_at = NULL \
         WHERE provider = $1 AND (next_poll_at > $2 OR resume_at > $2) \
         AND (locked_until IS NULL OR locked_until <= $3){}",
        if account.is_some() {
            " AND account = $4"
        } else {
            ""
        }
    );
    let mut q = stmt(&sql, "bringing polls forward")
        .text(provider)
        .int(by.0)
        .int(now.0);
    if let Some(a) = account {
        q = q.text(a);
    }
    let n = conn.run(q).await?;
    if n > 0 {
        if let Some(sql) = <B::Conn as Conn>::SQL.notify {
            conn.run(stmt(sql, "notifying workers")).await?;
        }
        store.wakeups().bump();
    }
    Ok(n)
}
