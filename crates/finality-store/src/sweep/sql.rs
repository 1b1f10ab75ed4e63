//! The reconciliation sweep's reads and repairs on SQL.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::sweep::{SweepRow, SweepRun};
use crate::Sweep;
use finality_core::Timestamp;

pub(crate) const OPEN: &str = "('pending', 'processing', 'needs_review')";

pub(crate) const FINAL: &str = finality_core::Status::FINAL_SQL;

pub(crate) fn run_from_row(r: &impl Fields) -> Result<SweepRun> {
    let t = "sweep_runs";
    let findings = r.json("findings", t)?;
    Ok(SweepRun {
        id: r.int("id", t)?,
        holder: r.text("holder", t)?,
        started_at: Timestamp(r.int("started_at", t)?),
        finished_at: Timestamp(r.int("finished_at", t)?),
        scanned: r.int("scanned", t)?,
        pass_complete: r.int("pass_complete", t)? != 0,
        findings: serde_json::from_value(findings).unwrap_or_default(),
        repaired: r.int("repaired", t)?,
    })
}

#[async_trait::async_trait]
impl<B: Backend> Sweep for B {
    async fn sweep_page(&self, after: &str, limit: u32) -> Result<Vec<SweepRow>> {
        let mut conn = self.read().await?;
        let t = "payments";
        // Provider calls from a day before the payment on (clocks differ
        // between nodes): PostgreSQL skips the day partitions before it.
        conn.all(
            stmt(
                "SELECT p.id, p.provider, p.kind, p.status, p.created_at, \
                 (SELECT COUNT(*) FROM poll_jobs j WHERE j.payment_id = p.id) AS jobs, \
                 (SELECT a.outcome FROM poll_attempts a WHERE a.payment_id = p.id \
                  AND a.started_at >= p.created_at - 86400000 \
                  ORDER BY a.id DESC LIMIT 1) AS last_outcome \
                 FROM payments p WHERE p.id > $1 ORDER BY p.id LIMIT $2",
                "reading a page of payments for the sweep",
            )
            .text(after)
            .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(|r| {
            Ok(SweepRow {
                id: r.text("id", t)?,
                provider: r.text("provider", t)?,
                kind: r.parsed("kind", t)?,
                status: r.parsed("status", t)?,
                created_at: Timestamp(r.int("created_at", t)?),
                has_job: r.int("jobs", t)? > 0,
                last_outcome: r.opt_text("last_outcome", t)?,
            })
        })
        .collect()
    }

    async fn sweep_add_job(&self, id: &str, next_poll_at: Option<Timestamp>) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "INSERT INTO poll_jobs (payment_id, provider, provider_ref, merchant_ref, kind, \
             registered_at, next_poll_at, account) \
             SELECT id, provider, provider_ref, merchant_ref, kind, created_at, CAST($2 AS BIGINT), \
             COALESCE(account, '') FROM payments \
             WHERE id = $1 AND status IN {OPEN} \
             AND NOT EXISTS (SELECT 1 FROM poll_jobs WHERE payment_id = $1)"
        );
        let n = (*tx)
            .run(
                stmt(&sql, "giving a payment its missing poll job")
                    .text(id)
                    .opt_int(next_poll_at.map(|t| t.0)),
            )
            .await?;
        tx.commit().await.op("committing a missing poll job")?;
        if n > 0 {
            self.wakeups().bump();
        }
        Ok(n > 0)
    }

    async fn sweep_drop_job(&self, id: &str) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "DELETE FROM poll_jobs WHERE payment_id = $1 AND EXISTS \
             (SELECT 1 FROM payments WHERE id = $1 AND status IN {FINAL})"
        );
        let n = (*tx)
            .run(stmt(&sql, "deleting the poll job of a final payment").text(id))
            .await?;
        tx.commit().await.op("committing a poll job's removal")?;
        Ok(n > 0)
    }

    async fn sweep_kick_inbox(&self, due_before: Timestamp, now: Timestamp) -> Result<u64> {
        let mut tx = self.begin_write().await?;
        let n = (*tx)
            .run(
                stmt(
                    "UPDATE webhook_inbox SET next_attempt_at = $2 \
                     WHERE state IN ('received', 'failed') AND next_attempt_at < $1",
                    "making stuck webhooks due again",
                )
                .int(due_before.0)
                .int(now.0),
            )
            .await?;
        tx.commit().await.op("committing stuck webhooks")?;
        if n > 0 {
            self.wakeups().bump();
        }
        Ok(n)
    }

    async fn sweep_count_orphans(&self, from: Timestamp, to: Timestamp) -> Result<i64> {
        let mut conn = self.read().await?;
        let r = conn
            .opt(
                stmt(
                    "SELECT COUNT(*) AS n FROM webhook_inbox WHERE state = 'orphaned' \
                     AND received_at >= $1 AND received_at < $2",
                    "counting orphaned webhooks",
                )
                .int(from.0)
                .int(to.0),
            )
            .await?;
        match r {
            Some(r) => r.int("n", "webhook_inbox"),
            None => Ok(0),
        }
    }

    async fn sweep_record(&self, run: &SweepRun) -> Result<()> {
        let mut tx = self.begin_write().await?;
        let findings = serde_json::to_value(&run.findings).unwrap_or_default();
        (*tx)
            .run(
                stmt(
                    "INSERT INTO sweep_runs (holder, started_at, finished_at, scanned, \
                     pass_complete, findings, repaired) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    "recording a sweep run",
                )
                .text(&run.holder)
                .int(run.started_at.0)
                .int(run.finished_at.0)
                .int(run.scanned)
                .int(i64::from(run.pass_complete))
                .json(&findings)
                .int(run.repaired),
            )
            .await?;
        tx.commit().await.op("committing a sweep run")?;
        Ok(())
    }

    async fn sweep_runs(&self, limit: u32) -> Result<Vec<SweepRun>> {
        let mut conn = self.read().await?;
        conn.all(
            stmt(
                "SELECT id, holder, started_at, finished_at, scanned, pass_complete, findings, \
                 repaired FROM sweep_runs ORDER BY id DESC LIMIT $1",
                "reading sweep runs",
            )
            .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(run_from_row)
        .collect()
    }
}
