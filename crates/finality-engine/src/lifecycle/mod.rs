//! Retention with archives: what `[retention]` says is old enough leaves the
//! database only after it is in an archive file on disk, fsynced, with its
//! checksum in the manifest. One run at a time in a cluster (a lease), from
//! `finality serve` every `every` or from `finality archive`.
//!
//! Files: `DIR/KIND/TABLE/DAY.STAMP.jsonl.gz`, gzip-compressed JSON lines,
//! one row per line, one file per table and UTC day per run (`STAMP` tells
//! runs apart); `DIR/manifest.jsonl` lists each with its rows, size and
//! SHA-256. A crash after a file is written and before its rows are
//! deleted leaves them in the database: the next run writes them again, and
//! a restore inserts each row once.
//!
//! Written here rather than with an archiving crate: which rows may go,
//! and the order (file durable, then delete, re-checked), are finality's
//! own; the crates do the compression (`flate2`) and the hashing (`sha2`).

use crate::lifecycle::files::Chunk;
use chrono::{TimeZone, Utc};
pub use error::LifecycleError;
pub use files::{manifest_path, read_manifest, ArchiveFile};
use finality_core::{Clock, Timestamp};
use finality_store::prelude::*;
use finality_store::retention::partitions::{self, Conversion};
use finality_store::retention::{RowKind, AUDIT_LOG, PAYMENTS, POLL_ATTEMPTS, STATUS_HISTORY};
use finality_store::Store;
pub use restore::{restore, RestoreReport};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

mod error;
mod files;

mod restore;

/// The lease one run holds (the node holding it runs retention).
pub const LEASE_NAME: &str = "finality:lifecycle";

pub(crate) const DAY: Duration = Duration::from_secs(86_400);

/// `[retention]` in `finality.toml`: how long each kind of data stays in
/// the database. `0s` keeps it forever.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// Whether `finality serve` runs retention (on one node at a time).
    pub enabled: bool,
    /// How often a run starts.
    #[serde(with = "humantime_serde")]
    pub every: Duration,
    /// Most time one scheduled run works; the rest waits for the next.
    #[serde(with = "humantime_serde")]
    pub budget: Duration,
    /// Where archive files go. Several nodes: shared storage, since the
    /// run happens on whichever node holds the lease.
    pub archive_dir: PathBuf,
    /// Provider-call records (`poll_attempts`): what each poll asked and
    /// got; the payment's history keeps the outcome.
    #[serde(with = "humantime_serde")]
    pub provider_calls: Duration,
    /// Webhook raw bodies and headers (customer data): dropped after this,
    /// the row stays for deduplication.
    #[serde(with = "humantime_serde")]
    pub webhook_bodies: Duration,
    /// Webhook rows themselves, with their dedup keys: longer than any
    /// provider redelivers (Stripe up to 3 days, Adyen and PayPal days
    /// more), since a redelivery after this is stored as new.
    #[serde(with = "humantime_serde")]
    pub webhooks: Duration,
    /// Event delivery attempts (`delivery_attempts`).
    #[serde(with = "humantime_serde")]
    pub deliveries: Duration,
    /// Final payments with their history, provider calls and audit rows,
    /// counted from when they became final; longer than refunds and
    /// chargebacks come (a card chargeback can come 540 days later).
    #[serde(with = "humantime_serde")]
    pub payments: Duration,
    /// PostgreSQL: convert a populated `poll_attempts` and
    /// `delivery_attempts` to daily partitions, online, step by step in
    /// retention's runs (a new database is partitioned from the start).
    /// False: convert when you choose, with `finality archive partitions
    /// --convert`.
    pub partition: bool,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            enabled: true,
            every: Duration::from_secs(3600),
            budget: Duration::from_secs(300),
            archive_dir: PathBuf::from("finality-archive"),
            provider_calls: 30 * DAY,
            webhook_bodies: 30 * DAY,
            webhooks: 90 * DAY,
            deliveries: 14 * DAY,
            payments: 600 * DAY,
            partition: true,
        }
    }
}

impl RetentionConfig {
    /// Every kind kept forever, archiving to `archive_dir`: the start for
    /// a run that retains only the kinds it names.
    pub fn keep_everything(archive_dir: PathBuf) -> Self {
        RetentionConfig {
            archive_dir,
            provider_calls: Duration::ZERO,
            webhook_bodies: Duration::ZERO,
            webhooks: Duration::ZERO,
            deliveries: Duration::ZERO,
            payments: Duration::ZERO,
            ..RetentionConfig::default()
        }
    }

    /// What is wrong with these settings, naming the field.
    pub fn check(&self) -> Result<(), finality_core::ConfigError> {
        use finality_core::ConfigError;
        let short = |d: Duration, min: Duration| !d.is_zero() && d < min;
        if short(self.webhooks, 7 * DAY) {
            return Err(ConfigError::new(
                "retention.webhooks",
                format!(
                    "{} is shorter than providers redeliver (at least 7d, or 0s to keep forever)",
                    humantime::format_duration(self.webhooks)
                ),
            ));
        }
        if !self.webhooks.is_zero()
            && (self.webhook_bodies.is_zero() || self.webhook_bodies > self.webhooks)
        {
            return Err(ConfigError::new(
                "retention.webhook_bodies",
                "must not be longer than retention.webhooks (a row's body goes with it)",
            ));
        }
        if self.every.is_zero() {
            return Err(ConfigError::new("retention.every", "must be more than 0s"));
        }
        Ok(())
    }
}

/// The UTC day of a time, `YYYY-MM-DD`.
pub fn day_of(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .map_or_else(|| "0000-00-00".into(), |t| t.format("%Y-%m-%d").to_string())
}

/// What one run did, per kind of data.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunReport {
    /// Rows (payments, for `payments`) written to archive files.
    pub archived: BTreeMap<&'static str, u64>,
    /// Rows deleted (bodies dropped, for `webhook_bodies`).
    pub removed: BTreeMap<&'static str, u64>,
    pub files: Vec<ArchiveFile>,
    /// Whole days dropped (PostgreSQL partitions), with what each took.
    pub partitions: Vec<DroppedPartition>,
    /// Steps taken converting a table to partitions, and their errors.
    pub conversion: Vec<String>,
    /// False when the budget ran out first (the next run goes on).
    pub complete: bool,
}

/// One partition archived and dropped whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DroppedPartition {
    pub table: &'static str,
    pub partition: String,
    pub rows: u64,
    /// Taking it out of its table (the only step that locks the table).
    pub detach_ms: f64,
    /// Writing its archive files.
    pub export_ms: f64,
    /// Dropping it (after its files are on disk).
    pub drop_ms: f64,
}

/// How long a run holds the lease between renewals (once per chunk).
pub(crate) const LEASE_TERM: Duration = Duration::from_secs(600);

/// What is older than this is past a retention of `keep` at `now`.
pub(crate) fn cutoff(now: Timestamp, keep: Duration) -> Timestamp {
    Timestamp(
        now.0
            .saturating_sub(i64::try_from(keep.as_millis()).unwrap_or(i64::MAX)),
    )
}

/// The deadline has passed.
pub(crate) fn past(deadline: Option<std::time::Instant>) -> bool {
    deadline.is_some_and(|d| std::time::Instant::now() >= d)
}

/// Rows read per page, and most rows per chunk of files.
pub(crate) const PAGE: u32 = 1000;

/// Rows read per page from a detached partition (no one else reads it).
pub(crate) const PARTITION_PAGE: u32 = 5000;

pub(crate) const DAY_MS: i64 = partitions::DAY_MS;

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) const CHUNK_ROWS: usize = 20_000;

pub(crate) const PAYMENT_PAGE: u32 = 500;

/// Retention on one node.
pub struct Archiver<S: ?Sized = dyn Store> {
    /// The roles retention uses: its rows, the partitions, its lease.
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    cfg: RetentionConfig,
    holder: String,
}

impl<S: ?Sized + Lifecycle + Partitions + Cursors + 'static> Archiver<S> {
    pub fn new(
        store: Arc<S>,
        clock: Arc<dyn Clock>,
        cfg: RetentionConfig,
        holder: impl Into<String>,
    ) -> Self {
        Archiver {
            store,
            clock,
            cfg,
            holder: holder.into(),
        }
    }

    /// One run: every kind with a retention, until done or `budget` is
    /// spent. `None` when another node holds the lease.
    pub async fn run_once(
        &self,
        budget: Option<Duration>,
    ) -> Result<Option<RunReport>, LifecycleError> {
        if !self.hold_lease().await? {
            return Ok(None);
        }
        let result = self.run_held(budget).await;
        // Given back at once, so the next run (here, on another node, or
        // `finality archive`) need not wait for it to expire.
        if let Err(e) = self.store.cursor_release(LEASE_NAME, &self.holder).await {
            tracing::warn!(error = %e, "releasing the retention lease failed; it expires on its own");
        }
        result.map(Some)
    }

    /// Take the lease, or extend it while this node holds it; false when
    /// another holds it.
    async fn hold_lease(&self) -> Result<bool, LifecycleError> {
        let now = self.clock.now();
        Ok(self
            .store
            .cursor_take(LEASE_NAME, &self.holder, now, now.plus(LEASE_TERM))
            .await?
            .is_some())
    }

    async fn run_held(&self, budget: Option<Duration>) -> Result<RunReport, LifecycleError> {
        let deadline = budget.map(|b| std::time::Instant::now() + b);
        let mut report = RunReport {
            complete: true,
            ..RunReport::default()
        };
        self.keep_partitions(deadline, &mut report).await?;
        let kinds = [
            (RowKind::ProviderCalls, self.cfg.provider_calls),
            (RowKind::Deliveries, self.cfg.deliveries),
            (RowKind::WebhookBodies, self.cfg.webhook_bodies),
            (RowKind::Webhooks, self.cfg.webhooks),
        ];
        for (kind, keep) in kinds {
            if keep.is_zero() {
                continue;
            }
            if past(deadline) {
                report.complete = false;
                break;
            }
            // Deleted rows are gone, so those scans start from the first
            // row; rows whose body went stay, so that scan goes on from
            // where it stopped.
            let start = if kind == RowKind::WebhookBodies {
                self.store.life_cursor(kind).await?
            } else {
                0
            };
            let mut cut = cutoff(self.clock.now(), keep);
            if self.store.partitioned(kind).await? {
                if !self.drop_days(kind, cut, deadline, &mut report).await? {
                    report.complete = false;
                    break;
                }
                // Rows left before the cut-off's day are in the default
                // partition (or a held day): row by row. The rest of that
                // day goes whole with its partition.
                cut = Timestamp(partitions::day_start(cut.0));
            }
            let (done, last) = self.rows(kind, cut, start, deadline, &mut report).await?;
            if kind == RowKind::WebhookBodies && last != start {
                self.store.life_cursor_move(kind, start, last).await?;
            }
            report.complete &= done;
            if !done {
                break;
            }
        }
        // The rest waits for the next run when this one ran out of time
        // or lease; what it removed is counted and given back either way.
        if report.complete && !self.cfg.payments.is_zero() {
            report.complete &= self.payments(deadline, &mut report).await?;
        }
        self.store.reclaim_space().await?;
        for (k, n) in &report.removed {
            ::metrics::counter!("finality_retention_removed_total", "kind" => *k).increment(*n);
        }
        Ok(report)
    }

    /// Archive and remove the rows of `kind` older than `keep`, from id
    /// `start`. Returns whether it reached rows inside retention, and the
    /// last id it passed (only rows before it were all handled).
    async fn rows(
        &self,
        kind: RowKind,
        cutoff: Timestamp,
        start: i64,
        deadline: Option<std::time::Instant>,
        report: &mut RunReport,
    ) -> Result<(bool, i64), LifecycleError> {
        let now = self.clock.now();
        let held: HashSet<String> = self
            .store
            .held_days(kind.as_str(), now)
            .await?
            .into_iter()
            .collect();
        let table = kind.spec();
        let mut after = start;
        let mut resume: Option<i64> = None;
        let mut chunk_no = 0;
        loop {
            // Each chunk under a lease renewed for it: a run that lost its
            // lease (stalled past it) stops before writing more.
            if past(deadline) || !self.hold_lease().await? {
                return Ok((false, resume.unwrap_or(after)));
            }
            let mut chunk = Chunk::new(&self.cfg.archive_dir, kind.as_str(), now, chunk_no);
            chunk_no += 1;
            let mut ids: Vec<(i64, Option<String>)> = Vec::new();
            let mut reached = false;
            while ids.len() < CHUNK_ROWS && !reached {
                let page = self.store.life_page(kind, after, PAGE).await?;
                if page.is_empty() {
                    reached = true;
                }
                for row in &page {
                    if row.at >= cutoff.0 {
                        reached = true;
                        break;
                    }
                    after = row.id;
                    let state = row
                        .json
                        .get("state")
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_string);
                    let day = day_of(row.at);
                    // Held rows, and webhooks still being processed, are
                    // seen again: the body scan resumes before them.
                    let busy =
                        kind == RowKind::WebhookBodies && state.as_deref() == Some("received");
                    if held.contains(&day) || busy {
                        resume.get_or_insert(row.id - 1);
                        continue;
                    }
                    chunk.write(table.name, &day, &row.json)?;
                    ids.push((row.id, state));
                }
            }
            let files = chunk.finish(now)?;
            let removed = self.store.life_remove(kind, &ids, cutoff, now).await?;
            // A body not dropped (its webhook went back to processing
            // since it was read) must be seen again: resume before the
            // chunk.
            if kind == RowKind::WebhookBodies && (removed as usize) < ids.len() {
                if let Some((first, _)) = ids.first() {
                    resume = Some(resume.map_or(first - 1, |r| r.min(first - 1)));
                }
            }
            *report.archived.entry(kind.as_str()).or_default() += ids.len() as u64;
            *report.removed.entry(kind.as_str()).or_default() += removed;
            report.files.extend(files.into_values());
            if reached {
                return Ok((true, resume.unwrap_or(after)));
            }
        }
    }

    /// PostgreSQL: the days ahead for the partitioned tables, and the next
    /// steps converting a populated one (until done or out of time). A
    /// step that fails is reported and tried again next run; retention
    /// goes on row by row meanwhile.
    async fn keep_partitions(
        &self,
        deadline: Option<std::time::Instant>,
        report: &mut RunReport,
    ) -> Result<(), LifecycleError> {
        if self.cfg.partition {
            for t in &partitions::DAILY {
                while !past(deadline) {
                    match self.store.convert_step(t.kind, self.clock.now()).await {
                        Ok(Conversion::Pending(step)) => {
                            tracing::info!(table = t.table, step = %step, "converting to partitions");
                            report.conversion.push(format!("{}: {step}", t.table));
                        }
                        Ok(Conversion::Busy(why)) => {
                            report
                                .conversion
                                .push(format!("{}: waiting: {why}", t.table));
                            break;
                        }
                        Ok(_) => break,
                        Err(e) => {
                            tracing::warn!(table = t.table, error = %e,
                                "converting to partitions failed; retried next run");
                            report.conversion.push(format!("{}: failed: {e}", t.table));
                            break;
                        }
                    }
                }
            }
        }
        self.store
            .partitions_ahead(self.clock.now(), partitions::DAYS_AHEAD)
            .await?;
        Ok(())
    }

    /// Archive and drop every partition of `kind` wholly before `cutoff`
    /// (and any left detached by a run that stopped), day by day: taken
    /// out of its table first, so no row can join it while its file is
    /// written; dropped only once the file is on disk and holds exactly
    /// its rows. False when out of time or lease.
    async fn drop_days(
        &self,
        kind: RowKind,
        cutoff: Timestamp,
        deadline: Option<std::time::Instant>,
        report: &mut RunReport,
    ) -> Result<bool, LifecycleError> {
        let now = self.clock.now();
        let held: Vec<i64> = self
            .store
            .held_days(kind.as_str(), now)
            .await?
            .iter()
            .filter_map(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
            .filter_map(|d| d.and_hms_opt(0, 0, 0))
            .map(|d| d.and_utc().timestamp_millis())
            .collect();
        let table = kind.spec();
        for (n, p) in self.store.partitions(kind).await?.into_iter().enumerate() {
            let past_retention = p.to.is_some_and(|to| to <= cutoff.0);
            let holds = |from: Option<i64>, to: i64| {
                held.iter()
                    .any(|&d| d + DAY_MS > from.unwrap_or(i64::MIN) && d < to)
            };
            let go = !p.default
                && (!p.attached || (past_retention && !p.to.is_some_and(|to| holds(p.from, to))));
            if !go {
                continue;
            }
            if past(deadline) || !self.hold_lease().await? {
                return Ok(false);
            }
            let t = std::time::Instant::now();
            self.store.partition_detach(&p).await?;
            let detach_ms = ms(t.elapsed());
            let t = std::time::Instant::now();
            let mut chunk = Chunk::new(
                &self.cfg.archive_dir,
                kind.as_str(),
                now,
                1000 + u32::try_from(n).unwrap_or(0),
            );
            let (mut after, mut rows) = (0, 0u64);
            for n in 0u64.. {
                // A large day (or a converted table) takes minutes: the
                // lease is renewed as it goes, and a run that lost it stops
                // (the partition stays detached; the next run takes it).
                if n % 50 == 49 && !self.hold_lease().await? {
                    return Ok(false);
                }
                let page = self
                    .store
                    .partition_page(kind, &p, after, PARTITION_PAGE)
                    .await?;
                let Some(last) = page.last() else { break };
                after = last.id;
                for row in &page {
                    chunk.write(table.name, &day_of(row.at), &row.json)?;
                }
                rows += page.len() as u64;
            }
            let files = chunk.finish(now)?;
            let export_ms = ms(t.elapsed());
            let t = std::time::Instant::now();
            let dropped = self.store.partition_drop(&p, rows).await?;
            let drop_ms = ms(t.elapsed());
            *report.archived.entry(kind.as_str()).or_default() += rows;
            report.files.extend(files.into_values());
            if dropped {
                *report.removed.entry(kind.as_str()).or_default() += rows;
                report.partitions.push(DroppedPartition {
                    table: p.table,
                    partition: p.name.clone(),
                    rows,
                    detach_ms,
                    export_ms,
                    drop_ms,
                });
            }
        }
        Ok(true)
    }

    /// Archive and delete final payments older than the retention.
    async fn payments(
        &self,
        deadline: Option<std::time::Instant>,
        report: &mut RunReport,
    ) -> Result<bool, LifecycleError> {
        let now = self.clock.now();
        let cutoff = cutoff(now, self.cfg.payments);
        let held: HashSet<String> = self
            .store
            .held_days("payments", now)
            .await?
            .into_iter()
            .collect();
        let mut after: Option<(i64, String)> = None;
        let mut chunk_no = 0;
        loop {
            if past(deadline) || !self.hold_lease().await? {
                return Ok(false);
            }
            let page = self
                .store
                .archivable_payments(cutoff, after.clone(), PAYMENT_PAGE)
                .await?;
            let Some(last) = page.last() else {
                return Ok(true);
            };
            after = Some((last.finalized_at, last.id.clone()));
            let mut chunk = Chunk::new(&self.cfg.archive_dir, "payments", now, chunk_no);
            chunk_no += 1;
            let mut wanted = Vec::new();
            for b in &page {
                let day = day_of(b.finalized_at);
                if held.contains(&day) {
                    continue;
                }
                chunk.write(PAYMENTS.name, &day, &b.payment)?;
                for (spec, rows) in [
                    (&STATUS_HISTORY, &b.history),
                    (&POLL_ATTEMPTS, &b.attempts),
                    (&AUDIT_LOG, &b.audit),
                ] {
                    for r in rows {
                        chunk.write(spec.name, &day, r)?;
                    }
                }
                wanted.push((b, chunk.rel(PAYMENTS.name, &day)));
            }
            let files = chunk.finish(now)?;
            let gone = self.store.archive_payments(&wanted, cutoff, now).await?;
            *report.archived.entry("payments").or_default() += wanted.len() as u64;
            *report.removed.entry("payments").or_default() += gone.len() as u64;
            report.files.extend(files.into_values());
        }
    }

    /// Run every `every` until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) {
        loop {
            // Retention off: the days ahead are still made (PostgreSQL),
            // so rows keep going to their day rather than the default.
            if !self.cfg.enabled {
                if let Err(e) = self
                    .store
                    .partitions_ahead(self.clock.now(), partitions::DAYS_AHEAD)
                    .await
                {
                    tracing::warn!(error = %e, "creating day partitions failed; retried next hour");
                }
                tokio::select! {
                    _ = tokio::time::sleep(self.cfg.every) => {}
                    _ = shutdown.cancelled() => return,
                }
                continue;
            }
            match self.run_once(Some(self.cfg.budget)).await {
                Ok(Some(r)) => {
                    let removed: u64 = r.removed.values().sum();
                    if removed > 0 || !r.complete {
                        tracing::info!(removed = ?r.removed, files = r.files.len(),
                            complete = r.complete, "retention run archived and removed old data");
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(error = %e, "retention run failed; nothing unarchived was deleted, next run as scheduled")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.cfg.every) => {}
                _ = shutdown.cancelled() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc() {
        assert_eq!(day_of(0), "1970-01-01");
        assert_eq!(day_of(1_700_000_000_000), "2023-11-14");
        assert_eq!(day_of(86_400_000 - 1), "1970-01-01");
    }

    #[test]
    fn settings_are_checked() {
        assert!(RetentionConfig::default().check().is_ok());
        let c = RetentionConfig {
            webhooks: DAY,
            ..RetentionConfig::default()
        };
        assert!(c
            .check()
            .unwrap_err()
            .to_string()
            .contains("retention.webhooks"));
        let c = RetentionConfig {
            webhook_bodies: 100 * DAY,
            ..RetentionConfig::default()
        };
        assert!(c
            .check()
            .unwrap_err()
            .to_string()
            .contains("webhook_bodies"));
    }
}
