//! Settlement reports fetched on their schedule and reconciled, so a daily
//! reconciliation cannot quietly stop happening.
//!
//! For each provider with `[providers.NAME.settlement]`, once a day's
//! report is documented as ready (its `ready_at` on the day after, in the
//! provider's zone), one node (the holder of the provider's
//! `settlement/NAME` lease) fetches it through the adapter, which checks it
//! by what the provider gives to check it by (WeChat Pay's SHA1, Stripe's
//! size, Alipay's zip CRC), writes it under the archive directory, and
//! imports it through [`crate::reconcile`] with the day as its period (the
//! same idempotency by content hash: a file imported before changes
//! nothing). The lease's cursor is the last day imported: days are taken
//! in order, and a day not there yet is asked again every `every`.
//!
//! Each account with reports of its own (a Stripe connected account, an
//! Alipay merchant an integrator acts for, a WeChat Pay sub-merchant) is
//! fetched the same way beside the provider's own, with its own lease
//! cursor (`settlement/NAME@ACCOUNT`), folder and import (see `feeds`).
//!
//! A report not there `grace` after its ready time is overdue
//! (`finality_settlement_report_overdue_seconds`, alerted); one that does
//! not check out is refused, counted and alerted, and nothing of it is
//! applied.
//!
//! A day the provider says had nothing to report (WeChat Pay's
//! `NO_STATEMENT_EXIST`: no trade or refund; Alipay's `isp.bill_not_exist`
//! once the day's grace has passed) is imported as an empty report, so the
//! days after it are not held behind it.
//!
//! Layout: `feeds` (the provider's own reports and each account's),
//! `announced` (reports the provider announces, Adyen's).

use crate::reconcile::{Import, Period, ReconcileStore};
use chrono::NaiveDate;
use finality_core::{Clock, Timestamp};
use finality_providers::settlement::fetch::FetchError;
use finality_store::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

mod announced;
mod feeds;
pub use feeds::import_name;
use feeds::{Feed, Source};

/// What became of one day's report.
#[derive(Debug, Clone, PartialEq)]
pub enum DayOutcome {
    /// Fetched, checked and imported (or found imported before).
    Imported {
        run_id: i64,
        already: bool,
        counts: BTreeMap<String, i64>,
        checked: String,
    },
    /// Imported before, by its recorded name: not fetched again.
    Skipped,
    /// The provider has not made it yet.
    NotReady(String),
    /// It did not check out (hash, size, CRC): nothing imported.
    Refused(String),
    /// The provider, the file or the import failed; tried again later.
    Failed(String),
}

impl DayOutcome {
    /// An import's outcome, checked by `checked`.
    fn imported(r: crate::reconcile::Reconciled, checked: String) -> Self {
        DayOutcome::Imported {
            run_id: r.run_id,
            already: r.already_imported,
            counts: r.counts,
            checked,
        }
    }

    /// The `outcome` label of `finality_settlement_reports_total`.
    pub fn label(&self) -> &'static str {
        match self {
            DayOutcome::Imported { already: false, .. } => "imported",
            DayOutcome::Imported { already: true, .. } | DayOutcome::Skipped => "already_imported",
            DayOutcome::NotReady(_) => "not_ready",
            DayOutcome::Refused(_) => "refused",
            DayOutcome::Failed(_) => "failed",
        }
    }
}

/// Announced files are looked for at least this often.
const ANNOUNCED_EVERY: Duration = Duration::from_secs(60);

/// The least time between two rounds of announced files brought forward
/// by stored webhooks.
pub const ANNOUNCED_GAP: Duration = Duration::from_secs(2);

pub use crate::batches::{announce, batch_gaps};

/// Outcomes that are discrepancies, not agreement.
const AGREEING: &[&str] = &["matched", "ignored", "applied"];

/// One provider's report state, for the console and the gauges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportState {
    /// The last day imported.
    pub last_day: Option<NaiveDate>,
    /// The oldest day not imported whose report is past ready and grace,
    /// and since when it is overdue.
    pub overdue: Option<(NaiveDate, Timestamp)>,
    /// What the last attempt said, for the day it was about.
    pub last: Option<(NaiveDate, DayOutcome)>,
    /// Announced reports (Adyen): batch numbers never announced between
    /// the lowest and highest announced (batches are numbered one by one,
    /// so a gap is a `REPORT_AVAILABLE` that never arrived); `None` until
    /// first looked at. The provider's own account's batches.
    pub missing_batches: Option<Vec<u64>>,
    /// The same for each account whose batches have gaps: each merchant
    /// account numbers its batches on its own.
    pub account_gaps: std::collections::BTreeMap<String, Vec<u64>>,
}

/// The scheduled fetchers of every provider with a settlement schedule.
pub struct Fetcher<S: ?Sized = dyn Store> {
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    holder: String,
    dir: PathBuf,
    sources: Vec<Source>,
    next: Mutex<HashMap<String, Timestamp>>,
    state: Mutex<HashMap<String, ReportState>>,
}

impl<S: ?Sized + Cursors + ReconcileStore + 'static> Fetcher<S> {
    /// `None` when no provider has a settlement schedule. Files go under
    /// `dir/PROVIDER/`; `holder` names this node on the leases.
    pub fn new(
        store: Arc<S>,
        clock: Arc<dyn Clock>,
        providers: &crate::Providers,
        holder: &str,
        dir: &Path,
    ) -> Option<Arc<Self>> {
        let mut sources: Vec<Source> = providers
            .iter()
            .filter_map(|(name, p)| {
                p.settlement.clone().map(|schedule| Source {
                    name: name.clone(),
                    adapter: p.adapter.clone(),
                    accounts: p.accounts.clone(),
                    schedule,
                })
            })
            .collect();
        if sources.is_empty() {
            return None;
        }
        sources.sort_by(|a, b| a.name.cmp(&b.name));
        let now = clock.now();
        let next = sources.iter().map(|s| (s.name.clone(), now)).collect();
        Some(Arc::new(Fetcher {
            store,
            clock,
            holder: holder.to_string(),
            dir: dir.to_path_buf(),
            sources,
            next: Mutex::new(next),
            state: Mutex::new(HashMap::new()),
        }))
    }

    /// When the next round is due (a virtual-time driver jumps to it).
    pub fn next_at(&self) -> Option<Timestamp> {
        lock(&self.next).values().min().copied()
    }

    /// Each provider's report state as this node last saw it, and each
    /// account's with reports of its own under `provider/account`.
    pub fn states(&self) -> HashMap<String, ReportState> {
        lock(&self.state).clone()
    }

    /// Run every provider whose round is due: each day ready and not yet
    /// imported, in order, until one is not there.
    pub async fn run_due(&self) -> Vec<(String, NaiveDate, DayOutcome)> {
        let mut done = Vec::new();
        for s in &self.sources {
            let now = self.clock.now();
            if lock(&self.next).get(&s.name).is_some_and(|at| *at > now) {
                continue;
            }
            let retry = self.clock.now().plus(s.schedule.every);
            // The provider's own reports and each account's: the soonest
            // of their next rounds is the provider's.
            let mut next: Option<Timestamp> = None;
            for feed in Feed::all(s) {
                let at = match self.round(s, &feed).await {
                    Ok((days, at)) => {
                        done.extend(days.into_iter().map(|(d, o)| (feed.label(), d, o)));
                        at.unwrap_or(retry)
                    }
                    Err(e) => {
                        tracing::warn!(provider = %s.name, account = ?feed.account, error = %e, "settlement report round failed; tried again later");
                        retry
                    }
                };
                next = Some(next.map_or(at, |n| n.min(at)));
            }
            lock(&self.next).insert(s.name.clone(), next.unwrap_or(retry));
        }
        done
    }

    /// One provider's round: its days, and when it is next due (`None`:
    /// after `every`; when caught up, the next day's ready time).
    #[allow(clippy::type_complexity)] // the days and the time, said once
    async fn round(
        &self,
        s: &Source,
        feed: &Feed,
    ) -> Result<(Vec<(NaiveDate, DayOutcome)>, Option<Timestamp>), finality_store::StoreError> {
        let now = self.clock.now();
        // Longer than the longest download (10 min), so a round is not
        // taken over while it writes.
        let hold = (s.schedule.every * 4).max(Duration::from_secs(1800));
        let Some(lease) = self
            .store
            .cursor_take(&feed.lease_key(), &self.holder, now, now.plus(hold))
            .await?
        else {
            // Another node fetches this provider's reports: it reports on
            // them (a gauge of 0 here, as for every leased gauge).
            feed.gauge("finality_settlement_report_overdue_seconds")
                .set(0.0);
            return Ok((Vec::new(), None));
        };
        if s.schedule.announced {
            return self.round_announced(s).await;
        }
        let newest = s.schedule.newest_ready(now);
        let last = lease
            .cursor
            .as_deref()
            .and_then(|c| NaiveDate::parse_from_str(c, "%Y-%m-%d").ok());
        if let Some(l) = last {
            // Known after a restart too: the age gauge reads it.
            lock(&self.state).entry(feed.label()).or_default().last_day = Some(l);
        }
        // After the last day imported, never before `first_day` (moved
        // forward by an operator: the days in between are not wanted).
        let mut day = match (last, s.schedule.first_day) {
            (Some(l), first) => l.succ_opt().unwrap_or(l).max(first.unwrap_or(l)),
            (None, Some(first)) => first,
            (None, None) => newest,
        };
        let mut done = Vec::new();
        while day <= newest {
            let outcome = self.fetch_day(s, feed, day).await;
            metrics::counter!("finality_settlement_reports_total", "provider" => s.name.clone(), "outcome" => outcome.label()).increment(1);
            let imported = matches!(outcome, DayOutcome::Imported { .. });
            discrepancies(feed, &outcome);
            if imported {
                let saved = self
                    .store
                    .cursor_save(
                        &feed.lease_key(),
                        &self.holder,
                        &day.format("%Y-%m-%d").to_string(),
                        self.clock.now(),
                    )
                    .await?;
                lock(&self.state).entry(feed.label()).or_default().last_day = Some(day);
                if !saved {
                    done.push((day, outcome));
                    break;
                }
            }
            lock(&self.state).entry(feed.label()).or_default().last = Some((day, outcome.clone()));
            done.push((day, outcome));
            if !imported {
                break;
            }
            day = match day.succ_opt() {
                Some(d) => d,
                None => break,
            };
        }
        let first_missing = day.min(newest.succ_opt().unwrap_or(newest));
        self.publish(s, feed, first_missing, newest);
        let caught_up = first_missing > newest;
        Ok((done, caught_up.then(|| s.schedule.ready(first_missing))))
    }

    /// The gauges: how old the newest imported report is, and how long the
    /// oldest missing one has been overdue.
    fn publish(&self, s: &Source, feed: &Feed, first_missing: NaiveDate, newest: NaiveDate) {
        let now = self.clock.now();
        let mut state = lock(&self.state);
        let st = state.entry(feed.label()).or_default();
        if let Some(last) = st.last_day {
            let age = now.since(s.schedule.day(last).until).as_secs_f64();
            feed.gauge("finality_settlement_report_age_seconds")
                .set(age);
        }
        let overdue_at = s.schedule.ready(first_missing).plus(s.schedule.grace);
        let overdue = first_missing <= newest && overdue_at <= now;
        st.overdue = overdue.then_some((first_missing, overdue_at));
        let secs = if overdue {
            now.since(overdue_at).as_secs_f64().max(1.0)
        } else {
            0.0
        };
        feed.gauge("finality_settlement_report_overdue_seconds")
            .set(secs);
        if overdue {
            tracing::error!(provider = %s.name, account = ?feed.account, day = %first_missing, overdue_s = secs, "ALERT settlement report overdue: not fetched {:?} after its documented ready time", s.schedule.grace);
        }
    }

    /// Where `s`'s files of `account` are kept.
    fn dir_of(&self, s: &Source, account: Option<&str>) -> PathBuf {
        crate::batches::account_dir(&self.dir.join(&s.name), account)
    }

    /// Keep a fetched part file under `name` once it checked out, and import
    /// it (`what` names the day or file in logs).
    async fn keep_and_import(
        &self,
        s: &Source,
        account: Option<&str>,
        what: &str,
        name: &str,
        fetched: finality_providers::settlement::fetch::FetchResult,
        period: Option<Period>,
    ) -> DayOutcome {
        let dir = self.dir_of(s, account);
        let path = dir.join(name);
        let part = dir.join(format!("{name}.part"));
        let fetched = match fetched {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_file(&part);
                return match e {
                    FetchError::NotReady(why) => DayOutcome::NotReady(why),
                    FetchError::NoActivity { said, format, .. } => {
                        self.import_nothing(s, account, name, &said, &format, period)
                            .await
                    }
                    FetchError::Refused(why) => {
                        tracing::error!(provider = %s.name, report = %what, reason = %why, "ALERT settlement report refused: it does not check out; nothing of it was imported");
                        DayOutcome::Refused(why)
                    }
                    other => DayOutcome::Failed(other.to_string()),
                };
            }
        };
        if let Err(e) = std::fs::rename(&part, &path) {
            return DayOutcome::Failed(format!("{}: {e}", path.display()));
        }
        let import = import_of(s, account, name, &fetched.format, period);
        match crate::reconcile::reconcile(&*self.store, &import, &path, self.clock.now()).await {
            Ok(r) => {
                tracing::info!(provider = %s.name, report = %what, run_id = r.run_id, lines = r.lines, already = r.already_imported, checked = %fetched.checked, "settlement report fetched and reconciled");
                DayOutcome::imported(r, fetched.checked)
            }
            // A file that does not read is the provider's, as refused as
            // one whose hash is wrong: nothing of it was applied.
            Err(crate::reconcile::ReconcileError::Report { file, error }) => {
                let why = format!("{file}: {error}");
                tracing::error!(provider = %s.name, report = %what, reason = %why, "ALERT settlement report refused: it does not read; nothing of it was imported");
                DayOutcome::Refused(why)
            }
            Err(e) => DayOutcome::Failed(e.to_string()),
        }
    }

    /// A day the provider says had nothing to report, imported as an
    /// empty report of `format` (see [`crate::reconcile::reconcile_nothing`]).
    async fn import_nothing(
        &self,
        s: &Source,
        account: Option<&str>,
        name: &str,
        said: &str,
        format: &finality_providers::settlement::Format,
        period: Option<Period>,
    ) -> DayOutcome {
        let import = import_of(s, account, name, format, period);
        match crate::reconcile::reconcile_nothing(&*self.store, &import, said, self.clock.now())
            .await
        {
            Ok(r) => DayOutcome::imported(r, format!("no report: {said}")),
            Err(e) => DayOutcome::Failed(e.to_string()),
        }
    }

    /// Run until `shutdown`, sleeping until the next round is due. `wake`
    /// (the inbox's signal: a webhook was stored) brings the rounds of
    /// providers that announce their files forward, no sooner than
    /// [`ANNOUNCED_GAP`] after their last: an announced report is fetched
    /// within seconds, and a burst of webhooks costs a query every few
    /// seconds, not one per webhook.
    pub async fn run(
        self: Arc<Self>,
        shutdown: CancellationToken,
        mut wake: Option<tokio::sync::watch::Receiver<u64>>,
    ) {
        while !shutdown.is_cancelled() {
            self.run_due().await;
            let now = self.clock.now();
            let sleep = self
                .next_at()
                .map_or(Duration::from_secs(900), |t| t.since(now))
                .max(Duration::from_millis(10));
            let woken = async {
                match wake.as_mut() {
                    Some(w) => w.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(sleep) => {}
                ok = woken => {
                    if ok {
                        self.bring_forward();
                    } else {
                        wake = None;
                    }
                }
                _ = shutdown.cancelled() => {}
            }
        }
    }

    /// Announced sources' next round: now, or [`ANNOUNCED_GAP`] after
    /// their last one.
    fn bring_forward(&self) {
        let now = self.clock.now();
        let mut next = lock(&self.next);
        for s in self.sources.iter().filter(|s| s.schedule.announced) {
            let every = s.schedule.every.min(ANNOUNCED_EVERY);
            if let Some(at) = next.get_mut(&s.name) {
                let soonest =
                    Timestamp(at.millis() - every.saturating_sub(ANNOUNCED_GAP).as_millis() as i64);
                *at = (*at).min(soonest.max(now));
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
    async fn fetch_day(&self, s: &Source, feed: &Feed, date: NaiveDate) -> DayOutcome {
        let day = s.schedule.day(date);
        let name = feed.import_name(&s.schedule.report, date);
        let dir = self.dir_of(s, feed.account.as_deref());
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return DayOutcome::Failed(format!("{}: {e}", dir.display()));
        }
        let part = dir.join(format!("{name}.part"));
        let fetched = match feed.adapter.fetch_report(&day, &part).await {
            // "No bill yet, or no trade that day" in one answer: a day
            // without trades once the day's grace has passed.
            Err(FetchError::NoActivity {
                said,
                certain: false,
                ..
            }) if self.clock.now() < s.schedule.ready(date).plus(s.schedule.grace) => {
                Err(FetchError::NotReady(format!(
                    "{said}: taken as a day without trades once its grace ({:?}) has passed",
                    s.schedule.grace
                )))
            }
            other => other,
        };
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

/// The import of `s`'s report `name` of `account` (whose payments its
/// lines reach), read as `format`, covering `period`.
fn import_of<'a>(
    s: &'a Source,
    account: Option<&'a str>,
    name: &'a str,
    format: &'a finality_providers::settlement::Format,
    period: Option<Period>,
) -> Import<'a> {
    Import {
        provider: &s.name,
        owner: s.accounts.report_owner(account),
        name,
        format,
        period,
    }
}

/// Why a backfill could not start.
#[derive(Debug, thiserror::Error)]
pub enum BackfillError {
    #[error(
        "provider `{0}` has no [providers.{0}.settlement] table: nothing says how to fetch its \
         reports"
    )]
    NoSchedule(String),
    #[error(
        "provider `{0}` announces each report (Adyen's REPORT_AVAILABLE): there is no day to \
         ask for; each announced file is fetched as it arrives, and one Adyen announced before \
         can be imported with `finality reconcile`"
    )]
    Announced(String),
    #[error(transparent)]
    Store(#[from] finality_store::StoreError),
}

/// `finality_settlement_report_discrepancies`: the lines of the report
/// just imported that did not agree.
fn discrepancies(feed: &Feed, outcome: &DayOutcome) {
    if let DayOutcome::Imported { counts, .. } = outcome {
        let off: i64 = counts
            .iter()
            .filter(|(k, _)| !AGREEING.contains(&k.as_str()))
            .map(|(_, n)| *n)
            .sum();
        feed.gauge("finality_settlement_report_discrepancies")
            .set(off as f64);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
