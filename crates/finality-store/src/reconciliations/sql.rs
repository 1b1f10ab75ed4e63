//! Settlement reports and their lines on SQL.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::reconciliations::{AnnouncedFile, FileTry, Ledger, ReconLine, ReconRun, ReconStart};
use crate::Reconciliations;
use finality_core::{Scope, Timestamp};
use std::collections::BTreeMap;

pub(crate) const RUN_COLUMNS: &str =
    "id, provider, file_name, sha256, started_at, finished_at, lines, counts";

pub(crate) const LEDGER_COLUMNS: &str =
    "id, provider_ref, merchant_ref, status, amount, currency, finalized_at";

pub(crate) fn ledger_from_row(r: &impl Fields) -> Result<Ledger> {
    let t = "payments";
    Ok(Ledger {
        id: r.text("id", t)?,
        provider_ref: r.opt_text("provider_ref", t)?,
        merchant_ref: r.opt_text("merchant_ref", t)?,
        status: r.parsed("status", t)?,
        amount: r.int("amount", t)?,
        currency: r.text("currency", t)?,
        finalized_at: r.opt_int("finalized_at", t)?.map(Timestamp),
    })
}

/// A line number as stored: lines absent from the report are stored as
/// `-k` (the k-th absent payment) so the key `(run_id, line)` stays unique.
pub(crate) fn line_from_db(n: i64) -> Option<i64> {
    (n > 0).then_some(n)
}

pub(crate) fn run_from_row(r: &impl Fields) -> Result<ReconRun> {
    let t = "reconciliation_runs";
    Ok(ReconRun {
        id: r.int("id", t)?,
        provider: r.text("provider", t)?,
        file_name: r.text("file_name", t)?,
        sha256: r.text("sha256", t)?,
        started_at: Timestamp(r.int("started_at", t)?),
        finished_at: r.opt_int("finished_at", t)?.map(Timestamp),
        lines: r.int("lines", t)?,
        counts: serde_json::from_value(r.json("counts", t)?).unwrap_or_default(),
    })
}

const FILE_COLUMNS: &str =
    "provider, account, name, url, announced_at, attempts, next_at, outcome, detail, run_id, done_at";

fn file_from_row(r: &impl Fields) -> Result<AnnouncedFile> {
    let t = "settlement_files";
    Ok(AnnouncedFile {
        provider: r.text("provider", t)?,
        account: r.account("account", t)?,
        name: r.text("name", t)?,
        url: r.text("url", t)?,
        announced_at: Timestamp(r.int("announced_at", t)?),
        attempts: r.int("attempts", t)?,
        next_at: Timestamp(r.int("next_at", t)?),
        outcome: r.opt_text("outcome", t)?,
        detail: r.opt_text("detail", t)?,
        run_id: r.opt_int("run_id", t)?,
        done_at: r.opt_int("done_at", t)?.map(Timestamp),
    })
}

#[async_trait::async_trait]
impl<B: Backend> Reconciliations for B {
    async fn file_announce(
        &self,
        scope: &Scope,
        name: &str,
        url: &str,
        now: Timestamp,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let n = (*tx)
            .run(
                stmt(
                    "INSERT INTO settlement_files (provider, name, url, announced_at, next_at, \
                     account) VALUES ($1, $2, $3, $4, $4, $5) \
                     ON CONFLICT (provider, account, name) DO NOTHING",
                    "keeping an announced settlement report",
                )
                .text(scope.provider())
                .text(name)
                .text(url)
                .int(now.0)
                .text(scope.account_key()),
            )
            .await?;
        tx.commit()
            .await
            .op("committing an announced settlement report")?;
        Ok(n == 1)
    }

    async fn files_due(
        &self,
        provider: &str,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<AnnouncedFile>> {
        let sql = format!(
            "SELECT {FILE_COLUMNS} FROM settlement_files \
             WHERE provider = $1 AND outcome IS NULL AND next_at <= $2 \
             ORDER BY announced_at, name LIMIT $3"
        );
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "reading announced settlement reports due")
                .text(provider)
                .int(now.0)
                .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(file_from_row)
        .collect()
    }

    async fn file_tried(
        &self,
        scope: &Scope,
        name: &str,
        how: &FileTry,
        now: Timestamp,
    ) -> Result<()> {
        let mut tx = self.begin_write().await?;
        let s = match how {
            FileTry::Done {
                outcome,
                detail,
                run_id,
            } => stmt(
                "UPDATE settlement_files SET outcome = $3, detail = $4, run_id = $5, \
                 done_at = $6 WHERE provider = $1 AND name = $2 AND account = $7",
                "recording an announced settlement report done",
            )
            .text(scope.provider())
            .text(name)
            .text(outcome)
            .text(detail)
            .opt_int(*run_id)
            .int(now.0)
            .text(scope.account_key()),
            FileTry::Retry { detail, retry_at } => stmt(
                "UPDATE settlement_files SET attempts = attempts + 1, detail = $3, \
                 next_at = $4 WHERE provider = $1 AND name = $2 AND outcome IS NULL \
                 AND account = $5",
                "recording a failed try at an announced settlement report",
            )
            .text(scope.provider())
            .text(name)
            .text(detail)
            .int(retry_at.0)
            .text(scope.account_key()),
        };
        (*tx).run(s).await?;
        tx.commit()
            .await
            .op("committing a try at an announced settlement report")?;
        Ok(())
    }

    async fn files_recent(&self, provider: &str, limit: u32) -> Result<Vec<AnnouncedFile>> {
        let sql = format!(
            "SELECT {FILE_COLUMNS} FROM settlement_files WHERE provider = $1 \
             ORDER BY announced_at DESC, name DESC LIMIT $2"
        );
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "reading announced settlement reports")
                .text(provider)
                .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(file_from_row)
        .collect()
    }

    async fn recon_start(
        &self,
        provider: &str,
        file_name: &str,
        sha256: &str,
        now: Timestamp,
        alive_since: Timestamp,
    ) -> Result<ReconStart> {
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "SELECT {RUN_COLUMNS}, COALESCE(alive_at, started_at) AS alive_at \
             FROM reconciliation_runs WHERE provider = $1 AND sha256 = $2"
        );
        let row = (*tx)
            .opt(
                stmt(&sql, "finding an imported report")
                    .text(provider)
                    .text(sha256),
            )
            .await?;
        let alive_at = row
            .as_ref()
            .map(|r| r.int("alive_at", "reconciliation_runs"))
            .transpose()?;
        let existing = row.as_ref().map(run_from_row).transpose()?;
        let id = match existing {
            Some(run) if run.finished_at.is_some() => {
                tx.commit().await.op("committing a report lookup")?;
                return Ok(ReconStart::AlreadyDone(run));
            }
            Some(run) if alive_at.is_some_and(|a| a >= alive_since.0) => {
                tx.commit().await.op("committing a report lookup")?;
                return Ok(ReconStart::Busy(run));
            }
            Some(run) => {
                (*tx)
                    .run(
                        stmt(
                            "UPDATE reconciliation_runs SET started_at = $2, alive_at = $2 \
                             WHERE id = $1",
                            "restarting an unfinished report",
                        )
                        .int(run.id)
                        .int(now.0),
                    )
                    .await?;
                // Died before the end: start it again, its lines anew.
                (*tx)
                    .run(
                        stmt(
                            "DELETE FROM reconciliation_lines WHERE run_id = $1",
                            "clearing an unfinished report's lines",
                        )
                        .int(run.id),
                    )
                    .await?;
                (*tx)
                    .run(
                        stmt(
                            "DELETE FROM reconciliation_seen WHERE run_id = $1",
                            "clearing an unfinished report's payments",
                        )
                        .int(run.id),
                    )
                    .await?;
                run.id
            }
            None => {
                let empty = serde_json::json!({});
                let row = (*tx)
                    .opt(
                        stmt(
                            "INSERT INTO reconciliation_runs (provider, file_name, sha256, \
                             started_at, counts) VALUES ($1, $2, $3, $4, $5) RETURNING id",
                            "recording an imported report",
                        )
                        .text(provider)
                        .text(file_name)
                        .text(sha256)
                        .int(now.0)
                        .json(&empty),
                    )
                    .await?;
                match row {
                    Some(r) => r.int("id", "reconciliation_runs")?,
                    None => 0,
                }
            }
        };
        tx.commit().await.op("committing an imported report")?;
        Ok(ReconStart::Started(id))
    }

    async fn recon_alive(&self, run_id: i64, now: Timestamp) -> Result<()> {
        let mut tx = self.begin_write().await?;
        (*tx)
            .run(
                stmt(
                    "UPDATE reconciliation_runs SET alive_at = $2 WHERE id = $1",
                    "noting an import alive",
                )
                .int(run_id)
                .int(now.0),
            )
            .await?;
        tx.commit().await.op("committing an import's heartbeat")?;
        Ok(())
    }

    async fn recon_add_lines(&self, run_id: i64, lines: &[ReconLine]) -> Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin_write().await?;
        let mut absent = 0i64;
        if lines.iter().any(|l| l.line.is_none()) {
            absent = (*tx)
                .opt(
                    stmt(
                        "SELECT COALESCE(MIN(line), 0) AS n FROM reconciliation_lines \
                         WHERE run_id = $1 AND line < 0",
                        "numbering absent payments",
                    )
                    .int(run_id),
                )
                .await?
                .map_or(Ok(0), |r| r.int("n", "reconciliation_lines"))?;
        }
        for l in lines {
            let line = match l.line {
                Some(n) => n,
                None => {
                    absent -= 1;
                    absent
                }
            };
            (*tx)
                .run(
                    stmt(
                        "INSERT INTO reconciliation_lines (run_id, line, kind, provider_ref, \
                         amount, currency, outcome, reason, payment_id) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                        "recording a report line",
                    )
                    .int(run_id)
                    .int(line)
                    .text(&l.kind)
                    .opt_text(l.provider_ref.as_deref())
                    .int(l.amount)
                    .text(&l.currency)
                    .text(&l.outcome)
                    .text(&l.reason)
                    .opt_text(l.payment_id.as_deref()),
                )
                .await?;
        }
        tx.commit().await.op("committing report lines")?;
        Ok(())
    }

    async fn recon_finish(
        &self,
        run_id: i64,
        lines: i64,
        counts: &BTreeMap<String, i64>,
        now: Timestamp,
    ) -> Result<()> {
        let mut tx = self.begin_write().await?;
        let counts = serde_json::to_value(counts).unwrap_or_default();
        (*tx)
            .run(
                stmt(
                    "UPDATE reconciliation_runs SET finished_at = $2, lines = $3, counts = $4 \
                     WHERE id = $1",
                    "finishing an imported report",
                )
                .int(run_id)
                .int(now.0)
                .int(lines)
                .json(&counts),
            )
            .await?;
        tx.commit().await.op("committing a finished report")?;
        Ok(())
    }

    async fn recon_lookup(&self, scope: &Scope, refs: &[&str]) -> Result<Vec<Ledger>> {
        if refs.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.read().await?;
        crate::payments::by_ref::payment_rows(&mut *conn, scope, LEDGER_COLUMNS, refs)
            .await?
            .iter()
            .map(ledger_from_row)
            .collect()
    }

    async fn recon_seen(&self, run_id: i64, payment_ids: &[&str]) -> Result<()> {
        if payment_ids.is_empty() {
            return Ok(());
        }
        let values = (0..payment_ids.len())
            .map(|i| format!("($1, ${})", i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "INSERT INTO reconciliation_seen (run_id, payment_id) VALUES {values} \
             ON CONFLICT DO NOTHING"
        );
        let mut q = stmt(&sql, "noting a report page's payments").int(run_id);
        for id in payment_ids {
            q = q.text(id);
        }
        let mut tx = self.begin_write().await?;
        (*tx).run(q).await?;
        tx.commit()
            .await
            .op("committing a report page's payments")?;
        Ok(())
    }

    async fn recon_absent(
        &self,
        run_id: i64,
        scope: &Scope,
        period: (Timestamp, Timestamp),
        after: &str,
        limit: u32,
    ) -> Result<Vec<Ledger>> {
        let sql = format!(
            "SELECT {LEDGER_COLUMNS} FROM payments p WHERE provider = $1 AND id > $2 \
             AND account = $7 \
             AND kind = 'payment' AND status IN ('succeeded', 'reversed') \
             AND finalized_at >= $3 AND finalized_at < $4 \
             AND NOT EXISTS (SELECT 1 FROM reconciliation_seen s \
                             WHERE s.run_id = $5 AND s.payment_id = p.id) \
             AND NOT EXISTS (SELECT 1 FROM reconciliation_lines l \
                             WHERE l.payment_id = p.id AND l.outcome = 'applied' \
                             AND l.run_id <> $5) \
             ORDER BY id LIMIT $6"
        );
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "finding payments absent from a report")
                .text(scope.provider())
                .text(after)
                .int(period.0 .0)
                .int(period.1 .0)
                .int(run_id)
                .int(i64::from(limit))
                .text(scope.account_key()),
        )
        .await?
        .iter()
        .map(ledger_from_row)
        .collect()
    }

    async fn recon_forget_seen(&self, run_id: i64) -> Result<()> {
        let mut tx = self.begin_write().await?;
        (*tx)
            .run(
                stmt(
                    "DELETE FROM reconciliation_seen WHERE run_id = $1",
                    "forgetting a report's payments",
                )
                .int(run_id),
            )
            .await?;
        tx.commit().await.op("committing a report's end")?;
        Ok(())
    }

    async fn recon_runs(&self, limit: u32) -> Result<Vec<ReconRun>> {
        let sql =
            format!("SELECT {RUN_COLUMNS} FROM reconciliation_runs ORDER BY id DESC LIMIT $1");
        let mut conn = self.read().await?;
        conn.all(stmt(&sql, "reading imported reports").int(i64::from(limit)))
            .await?
            .iter()
            .map(run_from_row)
            .collect()
    }

    async fn recon_run(&self, id: i64) -> Result<Option<ReconRun>> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM reconciliation_runs WHERE id = $1");
        let mut conn = self.read().await?;
        conn.opt(stmt(&sql, "reading an imported report").int(id))
            .await?
            .as_ref()
            .map(run_from_row)
            .transpose()
    }

    async fn recon_lines(&self, run_id: i64, limit: u32) -> Result<Vec<ReconLine>> {
        let mut conn = self.read().await?;
        let t = "reconciliation_lines";
        conn.all(
            stmt(
                "SELECT line, kind, provider_ref, amount, currency, outcome, reason, payment_id \
                 FROM reconciliation_lines WHERE run_id = $1 ORDER BY line < 0, abs(line) LIMIT $2",
                "reading a report's lines",
            )
            .int(run_id)
            .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(|r| {
            Ok(ReconLine {
                line: line_from_db(r.int("line", t)?),
                kind: r.text("kind", t)?,
                provider_ref: r.opt_text("provider_ref", t)?,
                amount: r.int("amount", t)?,
                currency: r.text("currency", t)?,
                outcome: r.text("outcome", t)?,
                reason: r.text("reason", t)?,
                payment_id: r.opt_text("payment_id", t)?,
            })
        })
        .collect()
    }
}
