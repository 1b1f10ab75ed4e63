//! The simulator's settlement reports, as the providers' fetch APIs serve
//! them (server/reports.rs): a day's report is made from the simulator's
//! own truth (every payment it settled that day, in the provider's zone),
//! with discrepancies drawn in on purpose and remembered, so a test knows
//! exactly what reconciliation should find. A day can be withheld (the
//! provider has not made it) and files can be altered in transit (a byte
//! changed after the provider hashed or sized them).

use crate::model::{SimReports, Simulator};
use crate::settlement::bills::{gbk_zip, AlipayBill, StripeItemized, WechatBill};
use crate::settlement::{write_report, Inject, Injected, Layout};
use chrono::NaiveDate;
use finality_core::Timestamp;

/// Which provider's layout a report is written in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportKind {
    /// With the columns the report run asked for.
    Stripe(Vec<String>),
    WeChat,
    Alipay,
    /// A settlement details report of this batch number.
    Adyen(u32),
    /// PayPal's Settlement Report (STL).
    PayPal,
}

impl ReportKind {
    pub fn name(&self) -> &'static str {
        match self {
            ReportKind::Stripe(_) => "stripe",
            ReportKind::WeChat => "wechat",
            ReportKind::Alipay => "alipay",
            ReportKind::Adyen(_) => "adyen",
            ReportKind::PayPal => "paypal",
        }
    }
}

/// US Pacific standard time, the day PayPal's settlement report covers.
pub const PACIFIC_STANDARD_MS: i64 = 8 * 3600 * 1000;

/// Beijing time, the day WeChat Pay's and Alipay's bills cover.
pub const BEIJING_MS: i64 = 8 * 3600 * 1000;

/// The instants of `date` at UTC offset `offset_ms`: `[from, until)`.
pub fn day_bounds(date: NaiveDate, offset_ms: i64) -> (Timestamp, Timestamp) {
    let midnight = date
        .and_hms_opt(0, 0, 0)
        .map_or(0, |t| t.and_utc().timestamp_millis());
    (
        Timestamp(midnight - offset_ms),
        Timestamp(midnight - offset_ms + 86_400_000),
    )
}

/// Whose payments a report covers: a merchant's own report holds its own
/// payments only, never those it made for (or that were made by) its
/// accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose<'a> {
    /// The provider's own (the platform's, the integrator's, the service
    /// provider's): payments assigned to no account.
    Own,
    /// One account's: a Stripe `connected_account`, an Alipay merchant by
    /// its `app_auth_token`, a WeChat Pay `sub_mchid`.
    Account(&'a str),
    /// Every account's, none of the provider's own (a Stripe Connect report
    /// type run without `connected_account`).
    Accounts,
}

impl Whose<'_> {
    /// The key what a report injected is remembered under.
    fn key(&self, provider: &str, date: NaiveDate) -> String {
        match self {
            Whose::Own => format!("{provider}/{date}"),
            Whose::Account(a) => format!("{provider}@{a}/{date}"),
            Whose::Accounts => format!("{provider}@*/{date}"),
        }
    }

    fn covers(&self, account: Option<&str>) -> bool {
        match (self, account) {
            (Whose::Own, None) | (Whose::Accounts, Some(_)) => true,
            (Whose::Account(a), Some(b)) => *a == b,
            _ => false,
        }
    }
}

impl Simulator {
    fn lock_reports(&self) -> std::sync::MutexGuard<'_, SimReports> {
        self.reports.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Draw `inject`'s discrepancies into every report made from now on.
    pub fn set_report_inject(&self, inject: &Inject) {
        let mut r = self.lock_reports();
        r.inject = [
            inject.missing,
            inject.wrong_amount,
            inject.refunded,
            inject.unknown,
        ];
        r.seed = inject.seed;
    }

    /// `provider`'s report of `date` is not made (its fetch API says so).
    pub fn withhold_report(&self, provider: &str, date: NaiveDate) {
        self.lock_reports()
            .withheld
            .insert(format!("{provider}/{date}"));
    }

    /// `provider`'s report of `date` is made after all (a day withheld
    /// before).
    pub fn release_report(&self, provider: &str, date: NaiveDate) {
        self.lock_reports()
            .withheld
            .remove(&format!("{provider}/{date}"));
    }

    /// Stripe's account settles in `currency`, at `rate_per_10000` units of
    /// it per 10,000 units of a payment's own currency: its reports' `gross`
    /// is in it, the payment's money in `customer_facing_amount`.
    pub fn stripe_settles_in(&self, currency: &str, rate_per_10000: i64) {
        self.lock_reports().stripe_settles_in = Some((currency.to_string(), rate_per_10000));
    }

    /// Serve files altered after they were hashed and sized (`true`).
    pub fn tamper_reports(&self, on: bool) {
        self.lock_reports().tamper = on;
    }

    /// What `provider`'s report of `date` got wrong on purpose, once made.
    pub fn report_injected(&self, provider: &str, date: NaiveDate) -> Option<Injected> {
        self.report_injected_for(provider, Whose::Own, date)
    }

    /// The same for the report of `whose` payments.
    pub fn report_injected_for(
        &self,
        provider: &str,
        whose: Whose<'_>,
        date: NaiveDate,
    ) -> Option<Injected> {
        let r = self.lock_reports();
        let [missing, wrong_amount, refunded, unknown] =
            r.injected.get(&whose.key(provider, date))?.clone();
        Some(Injected {
            missing,
            wrong_amount,
            refunded,
            unknown,
            ..Injected::default()
        })
    }

    pub(crate) fn report_withheld(&self, provider: &str, date: NaiveDate) -> bool {
        self.lock_reports()
            .withheld
            .contains(&format!("{provider}/{date}"))
    }

    /// Whether none of `whose` payments settled in `[from, until)`: a day
    /// WeChat Pay has no bill for ("no trade or refund that day").
    pub(crate) fn nothing_settled(
        &self,
        whose: Whose<'_>,
        from: Timestamp,
        until: Timestamp,
    ) -> bool {
        self.settled_in(whose, from, until).is_empty()
    }

    /// `whose` payments settled in `[from, until)`: what a report lists.
    fn settled_in(
        &self,
        whose: Whose<'_>,
        from: Timestamp,
        until: Timestamp,
    ) -> Vec<crate::settlement::Settled> {
        self.settled_until(Timestamp(until.millis() - 1))
            .into_iter()
            .filter(|s| s.at >= from)
            .filter(|s| whose.covers(self.account_of(&s.psp_reference).as_deref()))
            .collect()
    }

    /// Make the report of `whose` payments settled in `[from, until)` in
    /// `kind`'s layout, remembering what was injected under `provider/date`
    /// (`provider@account/date`).
    pub(crate) fn make_report(
        &self,
        kind: &ReportKind,
        whose: Whose<'_>,
        date: NaiveDate,
        from: Timestamp,
        until: Timestamp,
    ) -> std::io::Result<Vec<u8>> {
        let inject = {
            let r = self.lock_reports();
            Inject {
                missing: r.inject[0],
                wrong_amount: r.inject[1],
                refunded: r.inject[2],
                unknown: r.inject[3],
                seed: r.seed,
            }
        };
        let settled = self.settled_in(whose, from, until);
        let settles_in = self.lock_reports().stripe_settles_in.clone();
        let mut body = Vec::new();
        let done = {
            let mut layout: Box<dyn Layout + '_> = match kind {
                ReportKind::Stripe(columns) => {
                    Box::new(StripeItemized::new(&mut body, columns, settles_in)?)
                }
                ReportKind::WeChat => Box::new(WechatBill::new(
                    &mut body,
                    crate::wire::wechat_keys::MCHID,
                    match whose {
                        Whose::Account(sub) => sub,
                        _ => "0",
                    },
                )?),
                ReportKind::PayPal => Box::new(crate::settlement::stl::StlLayout::new(
                    &mut body,
                    crate::wire::PAYPAL_REPORT_ACCOUNT,
                    &date.format("%Y/%m/%d").to_string(),
                )?),
                ReportKind::Adyen(batch) => Box::new(crate::settlement::adyen::AdyenLayout::new(
                    &mut body, *batch,
                )?),
                ReportKind::Alipay => Box::new(AlipayBill::new(
                    &mut body,
                    "2088000000000001",
                    &date.to_string(),
                )?),
            };
            write_report(settled, &inject, layout.as_mut())?
        };
        if *kind == ReportKind::Alipay {
            let text = String::from_utf8_lossy(&body).into_owned();
            body = gbk_zip(
                &text,
                "2088000000000001",
                &date.format("%Y%m%d").to_string(),
            )?;
        }
        self.lock_reports().injected.insert(
            whose.key(kind.name(), date),
            [done.missing, done.wrong_amount, done.refunded, done.unknown],
        );
        Ok(body)
    }

    /// Keep `body` to be downloaded as `file_id`.
    pub(crate) fn keep_file(&self, file_id: &str, body: Vec<u8>) {
        self.lock_reports().files.insert(file_id.to_string(), body);
    }

    /// A kept file as served: altered in transit while tampering is on.
    pub(crate) fn serve_file(&self, file_id: &str) -> Option<Vec<u8>> {
        let r = self.lock_reports();
        let mut body = r.files.get(file_id)?.clone();
        if r.tamper {
            // A byte changed in the middle and one more at the end: the
            // hash, the size and a zip entry's CRC-32 all disagree.
            let mid = body.len() / 2;
            if let Some(b) = body.get_mut(mid) {
                *b ^= 0x01;
            }
            body.push(b'\n');
        }
        Some(body)
    }

    /// Adyen closes batch `batch` with the payments settled on `date`
    /// (UTC): its settlement details report is made and kept, and the
    /// signed `REPORT_AVAILABLE` notification announcing it returned, its
    /// download URL under `base_url` (the simulator's `http://HOST`).
    pub fn adyen_report_available(
        &self,
        key: &[u8],
        batch: u32,
        date: NaiveDate,
        base_url: &str,
    ) -> std::io::Result<serde_json::Value> {
        let (from, until) = day_bounds(date, 0);
        let body = self.make_report(&ReportKind::Adyen(batch), Whose::Own, date, from, until)?;
        let name = format!("settlement_detail_report_batch_{batch}.csv");
        self.keep_file(&format!("adyen/{name}"), body);
        let url = format!(
            "{base_url}/adyen/reports/download/MerchantAccount/{}/{name}",
            crate::wire::ADYEN_REPORT_MERCHANT
        );
        Ok(crate::wire::adyen_report_available(
            key,
            crate::wire::ADYEN_REPORT_MERCHANT,
            &name,
            &url,
        ))
    }

    /// Adyen makes the report `name` with exactly `body` (one made by hand
    /// in the Customer Area: by date or id, for several merchant
    /// accounts), downloadable under SimMerchant; its URL under `base_url`.
    pub fn keep_adyen_report(&self, name: &str, body: Vec<u8>, base_url: &str) -> String {
        self.keep_file(&format!("adyen/{name}"), body);
        format!(
            "{base_url}/adyen/reports/download/MerchantAccount/{}/{name}",
            crate::wire::ADYEN_REPORT_MERCHANT
        )
    }

    /// PayPal writes the Settlement Report of `date` (its day, at -0800)
    /// into `dir`, as its SFTP server holds them: `STL-yyyymmdd.01.009.CSV`.
    /// A withheld day is not written; while tampering is on, the file is
    /// altered after it was written (its footer's gross credits changed).
    pub fn paypal_stl_drop(
        &self,
        date: NaiveDate,
        dir: &std::path::Path,
    ) -> std::io::Result<Option<std::path::PathBuf>> {
        if self.report_withheld("paypal", date) {
            return Ok(None);
        }
        let (from, until) = day_bounds(date, -PACIFIC_STANDARD_MS);
        let mut body = self.make_report(&ReportKind::PayPal, Whose::Own, date, from, until)?;
        if self.lock_reports().tamper {
            let text = String::from_utf8_lossy(&body).into_owned();
            // The report footer's gross credits, one digit more.
            let altered: Vec<String> = text
                .lines()
                .map(|l| match l.strip_prefix("RF,") {
                    Some(rest) => {
                        let mut f: Vec<String> = rest.split(',').map(String::from).collect();
                        if let Some(credits) = f.get_mut(1) {
                            credits.push('1');
                        }
                        format!("RF,{}", f.join(","))
                    }
                    None => l.to_string(),
                })
                .map(|l| format!("{l}\n"))
                .collect();
            let altered = altered.concat();
            body = altered.into_bytes();
        }
        let path = dir.join(format!("STL-{}.01.009.CSV", date.format("%Y%m%d")));
        let part = path.with_extension("CSV.part");
        std::fs::write(&part, body)?;
        std::fs::rename(&part, &path)?;
        Ok(Some(path))
    }

    /// An Adyen report as served: while tampering is on, another merchant
    /// account's lines under the announced name.
    pub(crate) fn serve_adyen_report(&self, name: &str) -> Option<Vec<u8>> {
        let r = self.lock_reports();
        let body = r.files.get(&format!("adyen/{name}"))?.clone();
        if !r.tamper {
            return Some(body);
        }
        let text = String::from_utf8_lossy(&body).replace(
            &format!(",{},", crate::wire::ADYEN_REPORT_MERCHANT),
            ",AnotherMerchant,",
        );
        Some(text.into_bytes())
    }

    /// The Stripe report run made under `key`, or `make` one.
    pub(crate) fn stripe_run(
        &self,
        key: &str,
        make: impl FnOnce() -> serde_json::Value,
    ) -> serde_json::Value {
        if let Some(run) = self.lock_reports().runs.get(key) {
            return run.clone();
        }
        // Made without the lock held: making a report takes it.
        let run = make();
        self.lock_reports()
            .runs
            .entry(key.to_string())
            .or_insert(run)
            .clone()
    }

    pub(crate) fn stripe_run_by_id(&self, id: &str) -> Option<serde_json::Value> {
        self.lock_reports()
            .runs
            .values()
            .find(|r| r.get("error").is_none() && r["id"] == id)
            .cloned()
    }
}
