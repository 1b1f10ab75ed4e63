//! Whose reports a provider's round fetches: the provider's own and, for a
//! provider whose accounts have reports of their own, each enabled
//! account's, each with its own lease cursor, folder, import name and
//! gauges. A connected account's, ISV merchant's or sub-merchant's day is
//! then imported as that account's report: its lines reach its payments
//! only, and "missing from report" is looked for among them.

use chrono::NaiveDate;
use finality_providers::settlement::fetch::ReportSchedule;
use finality_providers::Provider;
use std::sync::Arc;

/// A provider whose reports are fetched on a schedule.
pub(super) struct Source {
    pub(super) name: String,
    pub(super) adapter: Arc<dyn Provider>,
    /// The provider's accounts: whose payments a report's lines may reach.
    pub(super) accounts: Arc<crate::accounts::ProviderAccounts>,
    pub(super) schedule: ReportSchedule,
}

/// The name a day's import is recorded under (and its archived file's).
pub fn import_name(provider: &str, report: &str, date: NaiveDate) -> String {
    format!("{provider}-{report}-{}.csv", date.format("%Y-%m-%d"))
}

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
