//! Reports the provider announces (Adyen's `REPORT_AVAILABLE`): each
//! announced file is downloaded and imported as it is due, a failure tried
//! again with backoff, one not imported `grace` after its announcement
//! overdue, and gaps in each account's batch numbers alerted.

use super::{
    discrepancies, lock, DayOutcome, Feed, Fetcher, ReconcileStore, Source, ANNOUNCED_EVERY,
};
use chrono::NaiveDate;
use finality_core::Timestamp;
use finality_store::prelude::*;
use finality_store::reconciliations::{AnnouncedFile, FileTry};
use std::time::Duration;

impl<S: ?Sized + Cursors + ReconcileStore + 'static> Fetcher<S> {
    /// One round of a provider whose files are announced (Adyen): each
    /// announced file due is downloaded and imported, a failure tried again
    /// later; one announced longer than `grace` ago and still not imported
    /// is overdue.
    #[allow(clippy::type_complexity)] // as `round`
    pub(super) async fn round_announced(
        &self,
        s: &Source,
    ) -> Result<(Vec<(NaiveDate, DayOutcome)>, Option<Timestamp>), finality_store::StoreError> {
        let every = s.schedule.every.min(ANNOUNCED_EVERY);
        let mut done = Vec::new();
        for f in self.store.files_due(&s.name, self.clock.now(), 20).await? {
            let date = s.schedule.today(f.announced_at);
            let outcome = self.fetch_file(s, &f).await;
            metrics::counter!("finality_settlement_reports_total", "provider" => s.name.clone(), "outcome" => outcome.label()).increment(1);
            discrepancies(&Feed::of(s, f.account.clone()), &outcome);
            let now = self.clock.now();
            let how = match &outcome {
                DayOutcome::Imported {
                    run_id, checked, ..
                } => FileTry::Done {
                    outcome: "imported".into(),
                    detail: checked.clone(),
                    run_id: Some(*run_id),
                },
                DayOutcome::Refused(why) => FileTry::Done {
                    outcome: "refused".into(),
                    detail: why.clone(),
                    run_id: None,
                },
                DayOutcome::Skipped => FileTry::Done {
                    outcome: "imported".into(),
                    detail: "imported before".into(),
                    run_id: None,
                },
                DayOutcome::NotReady(why) | DayOutcome::Failed(why) => {
                    // every, 2×, 4×, … up to an hour apart.
                    let backoff = every
                        .saturating_mul(1 << f.attempts.clamp(0, 6) as u32)
                        .min(Duration::from_secs(3600));
                    FileTry::Retry {
                        detail: why.clone(),
                        retry_at: now.plus(backoff),
                    }
                }
            };
            let scope = finality_core::Scope::new(s.name.as_str(), f.account.as_deref());
            self.store.file_tried(&scope, &f.name, &how, now).await?;
            {
                let mut state = lock(&self.state);
                let st = state.entry(s.name.clone()).or_default();
                if matches!(outcome, DayOutcome::Imported { .. }) {
                    st.last_day = Some(st.last_day.map_or(date, |d| d.max(date)));
                }
                st.last = Some((date, outcome.clone()));
            }
            done.push((date, outcome));
        }
        // The oldest announcement not imported yet: overdue after grace.
        let now = self.clock.now();
        let oldest = self
            .store
            .files_due(&s.name, Timestamp(i64::MAX), 1)
            .await?
            .into_iter()
            .next();
        let overdue_at = oldest
            .as_ref()
            .map(|f| f.announced_at.plus(s.schedule.grace));
        let secs = match overdue_at {
            Some(at) if at <= now => now.since(at).as_secs_f64().max(1.0),
            _ => 0.0,
        };
        metrics::gauge!("finality_settlement_report_overdue_seconds", "provider" => s.name.clone())
            .set(secs);
        // Gaps in the batch numbers of the last thousand announcements:
        // read again only when this round took files (or never yet), not on
        // every round a burst of webhooks brings forward.
        let known = lock(&self.state)
            .get(&s.name)
            .and_then(|st| st.missing_batches.clone());
        let (gaps, account_gaps) = match known {
            Some(gaps) if done.is_empty() => {
                let by = lock(&self.state)
                    .get(&s.name)
                    .map(|st| st.account_gaps.clone())
                    .unwrap_or_default();
                (gaps, by)
            }
            _ => {
                let recent = self.store.files_recent(&s.name, 1000).await?;
                crate::batches::gaps_by_account(&recent)
            }
        };
        let gap_count = gaps.len() + account_gaps.values().map(Vec::len).sum::<usize>();
        metrics::gauge!("finality_settlement_report_gaps", "provider" => s.name.clone())
            .set(gap_count as f64);
        let mut state = lock(&self.state);
        let st = state.entry(s.name.clone()).or_default();
        st.overdue = match (oldest, overdue_at) {
            (Some(f), Some(at)) if at <= now => {
                tracing::error!(provider = %s.name, file = %f.name, overdue_s = secs, attempts = f.attempts, detail = ?f.detail, "ALERT settlement report overdue: announced but not imported {:?} later", s.schedule.grace);
                Some((s.schedule.today(f.announced_at), at))
            }
            _ => None,
        };
        if let Some(last) = st.last_day {
            let age = now.since(s.schedule.day(last).until).as_secs_f64();
            metrics::gauge!("finality_settlement_report_age_seconds", "provider" => s.name.clone())
                .set(age);
        }
        if !gaps.is_empty() && st.missing_batches.as_ref() != Some(&gaps) {
            tracing::error!(provider = %s.name, missing = ?gaps, "ALERT settlement batches never announced: no REPORT_AVAILABLE arrived for them (download them from the provider and import them with `finality reconcile`)");
        }
        for (account, g) in &account_gaps {
            if st.account_gaps.get(account) != Some(g) {
                tracing::error!(provider = %s.name, %account, missing = ?g, "ALERT settlement batches of an account never announced: no REPORT_AVAILABLE arrived for them");
            }
        }
        st.missing_batches = Some(gaps);
        st.account_gaps = account_gaps;
        Ok((done, Some(now.plus(every))))
    }

    /// One announced file: download into a part file, keep it under the
    /// provider's name for it once it checks out, import it (no period: a
    /// batch covers what the provider put in it).
    async fn fetch_file(&self, s: &Source, f: &AnnouncedFile) -> DayOutcome {
        // Each account's files apart: two merchant accounts' batch N share
        // a name.
        let dir = self.dir_of(s, f.account.as_deref());
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return DayOutcome::Failed(format!("{}: {e}", dir.display()));
        }
        let part = dir.join(format!("{}.part", f.name));
        let fetched = s.adapter.fetch_announced(&f.name, &f.url, &part).await;
        self.keep_and_import(s, f.account.as_deref(), &f.name, &f.name, fetched, None)
            .await
    }
}
