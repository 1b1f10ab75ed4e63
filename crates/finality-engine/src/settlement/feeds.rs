//! Whose reports a provider's round fetches: the provider's own and, for a
//! provider whose accounts have reports of their own, each enabled
//! account's, each with its own lease cursor, folder, import name and
//! gauges. A connected account's, ISV merchant's or sub-merchant's day is
//! then imported as that account's report: its lines reach its payments
//! only, and "missing from report" is looked for among them.

use super::{import_name, BackfillError, DayOutcome, Fetcher, Source};
use crate::reconcile::{Period, ReconcileStore};
use chrono::NaiveDate;
use finality_providers::Provider;
use finality_store::prelude::*;
use std::sync::Arc;

/// One stream of daily reports: the provider's own (`account: None`) or
/// one account's, fetched with that account's adapter.
pub(super) struct Feed {
    pub(super) provider: String,
    pub(super) account: Option<String>,
    pub(super) adapter: Arc<dyn Provider>,
}

impl Feed {
    /// The provider's own, and every enabled account whose adapter says
    /// its account's reports are its own. A provider that announces its
    /// files (Adyen) is fetched as they are announced, for every account
    /// at once: only its own feed.
    pub(super) fn all(s: &Source) -> Vec<Feed> {
        let mut feeds = vec![Feed::of(s, None)];
        if s.schedule.announced {
            return feeds;
        }
        for a in s.accounts.all() {
            match &a.adapter {
                Ok(adapter) if !a.disabled && adapter.account_reports() => feeds.push(Feed {
                    provider: s.name.clone(),
                    account: Some(a.id.clone()),
                    adapter: adapter.clone(),
                }),
                _ => {}
            }
        }
        feeds
    }

    /// `account`'s feed with the provider's adapter (for its gauges).
    pub(super) fn of(s: &Source, account: Option<String>) -> Feed {
        Feed {
            provider: s.name.clone(),
            account,
            adapter: s.adapter.clone(),
        }
    }

    /// `provider`, or `provider/account`: what its days and state are
    /// reported under.
    pub(super) fn label(&self) -> String {
        finality_core::Scope::new(&self.provider, self.account.as_deref()).to_string()
    }

    /// The lease and cursor key: `settlement/NAME`, an account's
    /// `settlement/NAME@ACCOUNT`.
    pub(super) fn lease_key(&self) -> String {
        match &self.account {
            None => format!("settlement/{}", self.provider),
            Some(a) => format!("settlement/{}@{a}", self.provider),
        }
    }

    /// The name a day's import is recorded under: an account's with its id,
    /// so two accounts' days are two imports.
    pub(super) fn import_name(&self, report: &str, date: NaiveDate) -> String {
        match &self.account {
            None => import_name(&self.provider, report, date),
            Some(a) => import_name(&self.provider, &format!("{a}-{report}"), date),
        }
    }

    /// A gauge of this feed: by provider, and by account for an account's.
    pub(super) fn gauge(&self, name: &'static str) -> metrics::Gauge {
        match &self.account {
            None => metrics::gauge!(name, "provider" => self.provider.clone()),
            Some(a) => {
                metrics::gauge!(name, "provider" => self.provider.clone(), "account" => a.clone())
            }
        }
    }
}

impl<S: ?Sized + Cursors + ReconcileStore + 'static> Fetcher<S> {
    /// Fetch days `from..=until` of `provider` that were not imported yet,
    /// in order (`finality reconcile fetch`), whatever the schedule says:
    /// the provider's own reports, then each account's (`Some(account)`).
    #[allow(clippy::type_complexity)] // whose, which day, what became of it
    pub async fn backfill(
        &self,
        provider: &str,
        from: NaiveDate,
        until: NaiveDate,
    ) -> Result<Vec<(Option<String>, NaiveDate, DayOutcome)>, BackfillError> {
        let s = self
            .sources
            .iter()
            .find(|s| s.name == provider)
            .ok_or_else(|| BackfillError::NoSchedule(provider.to_string()))?;
        if s.schedule.announced {
            return Err(BackfillError::Announced(provider.to_string()));
        }
        let runs = self.store.recon_runs(10_000).await?;
        let mut out = Vec::new();
        for feed in Feed::all(s) {
            let mut day = from;
            while day <= until {
                let name = feed.import_name(&s.schedule.report, day);
                let outcome = if runs.iter().any(|r| {
                    r.provider == provider && r.file_name == name && r.finished_at.is_some()
                }) {
                    DayOutcome::Skipped
                } else {
                    self.fetch_day(s, &feed, day).await
                };
                metrics::counter!("finality_settlement_reports_total", "provider" => provider.to_string(), "outcome" => outcome.label()).increment(1);
                out.push((feed.account.clone(), day, outcome));
                day = match day.succ_opt() {
                    Some(d) => d,
                    None => break,
                };
            }
        }
        Ok(out)
    }

    /// One day of one feed: fetch into a part file with the feed's adapter,
    /// keep it in the feed's folder once it checks out, import it as the
    /// feed's account's with the day as its period.
    pub(super) async fn fetch_day(&self, s: &Source, feed: &Feed, date: NaiveDate) -> DayOutcome {
        let day = s.schedule.day(date);
        let name = feed.import_name(&s.schedule.report, date);
        let dir = self.dir_of(s, feed.account.as_deref());
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return DayOutcome::Failed(format!("{}: {e}", dir.display()));
        }
        let part = dir.join(format!("{name}.part"));
        let fetched = feed.adapter.fetch_report(&day, &part).await;
        let period = Period {
            from: day.from,
            until: day.until,
        };
        self.keep_and_import(
            s,
            feed.account.as_deref(),
            &date.to_string(),
            &name,
            fetched,
            Some(period),
        )
        .await
    }
}
