//! The reconciliation sweep: every few minutes, one node reads the payments
//! a page at a time and finds what fell through the per-payment machinery:
//!
//! | kind | what | repair |
//! |---|---|---|
//! | `job_missing` | an open payment with no poll job (deleted by hand, a restore from backup, a bug) | a job, due now (parked for one in review) |
//! | `job_of_final_payment` | a poll job whose payment is final | the job deleted |
//! | `status_behind_provider` | an open payment whose newest provider answer on record is final | `apply` that answer, source `sweep` |
//! | `open_past_give_up` | a payment open longer than its provider's give-up window plus a margin (the schedule changed after it was registered) | `apply` → `needs_review`, source `sweep`, with the reason |
//! | `webhook_stuck` | an inbox row waiting (received or failed) long past its due time | made due now |
//! | `webhook_orphaned` | a webhook for no registered payment, older than `orphan_age` (counted once, when it crosses the age): a sign of a missing registration | none: an alert |
//!
//! Each finding is counted (`finality_sweep_findings_total{kind}`), logged,
//! and the run recorded (`sweep_runs`: `GET /v1/sweep/runs`, the console).
//! A run reads at most `budget` worth of pages and saves its place, so a
//! backlog of millions is a pass over several runs, never one long run. The
//! lease row `finality:sweep` (in `provider_cursors`) keeps it to one node at
//! a time and holds the place in the pass; a node killed mid-run leaves a
//! lease that expires and a place no further than its last saved page, and
//! every repair is its own transaction, checked again inside it.

use crate::Providers;
use finality_core::{Clock, Source, Status, Timestamp};
use finality_store::prelude::*;
use finality_store::sweep::{SweepRow, SweepRun};
use finality_store::{ApplyOutcome, Report, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The lease and place of the sweep, a row of `provider_cursors`.
pub const LEASE_NAME: &str = "finality:sweep";

/// `[sweep]` in `finality.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SweepConfig {
    /// Whether `finality serve` runs it (on nodes that poll).
    pub enabled: bool,
    /// How often a run starts (on one node of the cluster).
    #[serde(with = "humantime_serde")]
    pub every: Duration,
    /// Payments read per page.
    pub page: u32,
    /// Most time one run spends reading pages; the pass continues next run.
    #[serde(with = "humantime_serde")]
    pub budget: Duration,
    /// An inbox row still waiting this long after its due time is stuck.
    #[serde(with = "humantime_serde")]
    pub stuck_after: Duration,
    /// An orphaned webhook this old is reported.
    #[serde(with = "humantime_serde")]
    pub orphan_age: Duration,
    /// A payment open this long past its provider's give-up window goes to
    /// review (the engine gives up on its own schedule first).
    #[serde(with = "humantime_serde")]
    pub give_up_margin: Duration,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            enabled: true,
            every: Duration::from_secs(300),
            page: 1000,
            budget: Duration::from_secs(2),
            stuck_after: Duration::from_secs(600),
            orphan_age: Duration::from_secs(3600),
            give_up_margin: Duration::from_secs(3600),
        }
    }
}

/// What the sweep makes of one payment: a finding with its repair, or none.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    JobMissing {
        parked: bool,
    },
    JobOfFinalPayment,
    StatusBehindProvider {
        answer: Status,
    },
    OpenPastGiveUp {
        open_for: Duration,
        window: Duration,
    },
}

impl Finding {
    pub fn kind(&self) -> &'static str {
        match self {
            Finding::JobMissing { .. } => "job_missing",
            Finding::JobOfFinalPayment => "job_of_final_payment",
            Finding::StatusBehindProvider { .. } => "status_behind_provider",
            Finding::OpenPastGiveUp { .. } => "open_past_give_up",
        }
    }
}

/// Decide one payment (plain Rust; the same for every store). `window` is
/// its provider's give-up age, when the provider is configured.
pub fn examine(
    row: &SweepRow,
    window: Option<Duration>,
    margin: Duration,
    now: Timestamp,
) -> Option<Finding> {
    let open = !row.status.is_final();
    if !open {
        return row.has_job.then_some(Finding::JobOfFinalPayment);
    }
    if !row.has_job {
        return Some(Finding::JobMissing {
            parked: row.status == Status::NeedsReview,
        });
    }
    if row.status == Status::NeedsReview {
        return None;
    }
    if let Some(answer) = row
        .last_outcome
        .as_deref()
        .and_then(|o| o.parse::<Status>().ok())
        .filter(|s| s.is_final())
    {
        return Some(Finding::StatusBehindProvider { answer });
    }
    let open_for = now.since(row.created_at);
    match window {
        Some(w) if open_for > w + margin => Some(Finding::OpenPastGiveUp {
            open_for,
            window: w,
        }),
        _ => None,
    }
}

fn human(d: Duration) -> String {
    humantime_serde::re::humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// The sweep of one node.
pub struct Sweeper<S: ?Sized = dyn Store> {
    /// The roles the sweep uses: its reads and repairs, its lease, `apply`.
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    providers: Arc<Providers>,
    cfg: SweepConfig,
    holder: String,
    /// Orphans received before this were reported by an earlier run.
    orphans_reported_to: Option<Timestamp>,
}

impl<S: ?Sized + Sweep + Cursors + PaymentStore + 'static> Sweeper<S> {
    pub fn new(
        store: Arc<S>,
        clock: Arc<dyn Clock>,
        providers: Arc<Providers>,
        cfg: SweepConfig,
        holder: &str,
    ) -> Self {
        Sweeper {
            store,
            clock,
            providers,
            cfg,
            holder: holder.to_string(),
            orphans_reported_to: None,
        }
    }

    /// One run, if this node gets the lease (`None`: another node holds it).
    pub async fn run_once(&mut self) -> finality_store::Result<Option<SweepRun>> {
        let started = self.clock.now();
        let lease = started.plus(self.cfg.budget + Duration::from_secs(60));
        let Some(held) = self
            .store
            .cursor_take(LEASE_NAME, &self.holder, started, lease)
            .await?
        else {
            return Ok(None);
        };
        let mut after = held.cursor.unwrap_or_default();
        let mut findings: BTreeMap<String, i64> = BTreeMap::new();
        let mut repaired = 0i64;
        let mut scanned = 0i64;
        let mut pass_complete = false;
        let deadline = std::time::Instant::now() + self.cfg.budget;
        loop {
            let page = self.store.sweep_page(&after, self.cfg.page).await?;
            scanned += page.len() as i64;
            for row in &page {
                let now = self.clock.now();
                let window = self
                    .providers
                    .get(&row.provider)
                    .map(|p| p.policy.give_up_after);
                let Some(f) = examine(row, window, self.cfg.give_up_margin, now) else {
                    continue;
                };
                *findings.entry(f.kind().to_string()).or_default() += 1;
                ::metrics::counter!("finality_sweep_findings_total", "kind" => f.kind())
                    .increment(1);
                let fixed = self.repair(row, &f, now).await?;
                tracing::warn!(payment_id = %row.id, provider = %row.provider, kind = f.kind(),
                    repaired = fixed, "sweep finding");
                repaired += i64::from(fixed);
            }
            if let Some(last) = page.last() {
                after = last.id.clone();
            }
            if (page.len() as u32) < self.cfg.page {
                pass_complete = true;
                after.clear();
            }
            // Saved after each page: a run killed here resumes from it.
            let saved = self
                .store
                .cursor_save(LEASE_NAME, &self.holder, &after, self.clock.now())
                .await?;
            if !saved || pass_complete || std::time::Instant::now() >= deadline {
                break;
            }
        }

        // The inbox: rows that stopped being processed, and new old orphans.
        let now = self.clock.now();
        let stuck = self
            .store
            .sweep_kick_inbox(
                Timestamp(now.0 - self.cfg.stuck_after.as_millis() as i64),
                now,
            )
            .await?;
        if stuck > 0 {
            *findings.entry("webhook_stuck".into()).or_default() += stuck as i64;
            ::metrics::counter!("finality_sweep_findings_total", "kind" => "webhook_stuck")
                .increment(stuck);
            repaired += stuck as i64;
            tracing::warn!(
                count = stuck,
                "sweep: webhooks stuck past their due time, made due now"
            );
        }
        let cutoff = Timestamp(now.0 - self.cfg.orphan_age.as_millis() as i64);
        let from = self.orphans_reported_to.unwrap_or(Timestamp(0));
        if cutoff > from {
            let n = self.store.sweep_count_orphans(from, cutoff).await?;
            if n > 0 {
                *findings.entry("webhook_orphaned".into()).or_default() += n;
                ::metrics::counter!("finality_sweep_findings_total", "kind" => "webhook_orphaned")
                    .increment(n as u64);
                tracing::warn!(count = n, older_than = %human(self.cfg.orphan_age),
                    "sweep: webhooks for payments nobody registered");
            }
            self.orphans_reported_to = Some(cutoff);
        }

        let run = SweepRun {
            id: 0,
            holder: self.holder.clone(),
            started_at: started,
            finished_at: self.clock.now(),
            scanned,
            pass_complete,
            findings,
            repaired,
        };
        self.store.sweep_record(&run).await?;
        tracing::info!(scanned, pass_complete, findings = ?run.findings, repaired, "sweep run");
        Ok(Some(run))
    }

    /// Repair one finding; whether anything changed (a repair re-checks
    /// inside its own transaction, so a payment settled meanwhile is left
    /// alone).
    async fn repair(
        &self,
        row: &SweepRow,
        f: &Finding,
        now: Timestamp,
    ) -> finality_store::Result<bool> {
        match f {
            Finding::JobMissing { parked } => {
                let at = (!parked).then_some(now);
                self.store.sweep_add_job(&row.id, at).await
            }
            Finding::JobOfFinalPayment => self.store.sweep_drop_job(&row.id).await,
            Finding::StatusBehindProvider { answer } => {
                let report = Report {
                    payment_id: row.id.clone(),
                    status: *answer,
                    source: Source::Sweep,
                    event_id: None,
                    observed_at: now,
                    reason: Some(format!(
                        "the provider's newest answer on record is {answer}; the status had not \
                         followed"
                    )),
                    actor: None,
                };
                Ok(matches!(
                    self.store.apply(&report, now).await?,
                    ApplyOutcome::Applied { .. }
                ))
            }
            Finding::OpenPastGiveUp { open_for, window } => {
                let report = Report {
                    payment_id: row.id.clone(),
                    status: Status::NeedsReview,
                    source: Source::Sweep,
                    event_id: None,
                    observed_at: now,
                    reason: Some(format!(
                        "still open {} after registration, past {}'s give-up window of {} (the \
                         schedule changed after it was registered?)",
                        human(*open_for),
                        row.provider,
                        human(*window)
                    )),
                    actor: None,
                };
                Ok(matches!(
                    self.store.apply(&report, now).await?,
                    ApplyOutcome::Applied { .. }
                ))
            }
        }
    }

    /// Run every `every` until `shutdown`.
    pub async fn run(mut self, shutdown: CancellationToken) {
        loop {
            if let Err(e) = self.run_once().await {
                tracing::warn!(error = %e, "sweep run failed; next run as scheduled");
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
    use finality_core::Kind;

    fn row(status: Status, has_job: bool, last: Option<&str>, age_h: i64) -> SweepRow {
        SweepRow {
            id: "p".into(),
            provider: "sim".into(),
            kind: Kind::Payment,
            status,
            created_at: Timestamp(1_000_000_000 - age_h * 3_600_000),
            has_job,
            last_outcome: last.map(str::to_string),
        }
    }

    #[test]
    fn each_kind_and_the_healthy_cases() {
        let now = Timestamp(1_000_000_000);
        let w = Some(Duration::from_secs(24 * 3600));
        let m = Duration::from_secs(3600);
        let e = |r: &SweepRow| examine(r, w, m, now);
        assert_eq!(e(&row(Status::Pending, true, Some("pending"), 1)), None);
        assert_eq!(
            e(&row(Status::Succeeded, false, Some("succeeded"), 1)),
            None
        );
        assert_eq!(e(&row(Status::NeedsReview, true, None, 100)), None);
        assert_eq!(
            e(&row(Status::Pending, false, None, 1)),
            Some(Finding::JobMissing { parked: false })
        );
        assert_eq!(
            e(&row(Status::NeedsReview, false, None, 1)),
            Some(Finding::JobMissing { parked: true })
        );
        assert_eq!(
            e(&row(Status::Failed, true, None, 1)),
            Some(Finding::JobOfFinalPayment)
        );
        assert_eq!(
            e(&row(Status::Processing, true, Some("succeeded"), 1)),
            Some(Finding::StatusBehindProvider {
                answer: Status::Succeeded
            })
        );
        assert_eq!(e(&row(Status::Pending, true, Some("error"), 1)), None);
        assert_eq!(
            e(&row(Status::Pending, true, None, 24)),
            None,
            "within the margin"
        );
        assert!(matches!(
            e(&row(Status::Pending, true, None, 26)),
            Some(Finding::OpenPastGiveUp { .. })
        ));
        assert_eq!(
            examine(&row(Status::Pending, true, None, 26), None, m, now),
            None,
            "no window for an unconfigured provider"
        );
    }
}
