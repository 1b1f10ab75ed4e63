//! Stripe's itemized balance report, fetched by machine (Stripe API
//! reference, Report Runs; docs.stripe.com/reports/report-types):
//!
//! 1. `POST /v1/reporting/report_runs` with `report_type`,
//!    `parameters[interval_start]` (inclusive) and `[interval_end]`
//!    (exclusive) as Unix seconds, `parameters[timezone]` and an explicit
//!    `parameters[columns]` (so the file's layout does not depend on the
//!    report type's default set). Each attempt has an `Idempotency-Key` of
//!    its own: Stripe keeps "the resulting status code and body of the
//!    first request made for any given idempotency key, regardless of
//!    whether it succeeds or fails" for 24 hours (Stripe API reference,
//!    Idempotent requests), so one key per day would answer every retry
//!    of a day refused as "not available yet" with that refusal. A run made
//!    and still `pending` is remembered by its id and asked again, not made
//!    again.
//! 2. `GET /v1/reporting/report_runs/{id}`: `pending` is "not ready yet",
//!    `failed` names its `error`, `succeeded` carries `result`, a File
//!    with its `size` and `url`.
//! 3. The file's `url` (on `files.stripe.com`, or the configured base URL's
//!    host) is downloaded with the secret key; its length must be `size`.
//!
//! A run whose interval ends after the report type's `data_available_end`
//! is refused by Stripe with a 400: not ready yet.
//!
//! A connected account's report is the platform's run of the Connect
//! report type: "By default, the API returns report data for your platform
//! account activity. To view data for your connected accounts, use the
//! Connect-specific report types" (Stripe docs, Connect report type), e.g.
//! `connected_account_balance_change_from_activity.itemized.3` with the
//! optional run parameter `connected_account`. Report runs are the
//! platform's own objects: made and read without `Stripe-Account`.

use super::StripeAdapter;
use crate::http::{classify_transport, failure, request_id};
use crate::settlement::fetch::{download, same_origin, Defaults, FetchError, Fetched, ReportDay};
use crate::settlement::Format;
use crate::ProviderError;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// Stripe's balance activity, itemized, by UTC day once the day's balance
/// data is complete (Stripe documents the availability per report type as
/// `data_available_end`; a run asked too early is refused, then retried).
pub const DEFAULTS: Defaults = Defaults {
    time_zone: "UTC",
    ready_at: "12:00",
    report: "balance_change_from_activity.itemized.3",
    announced: false,
};

/// The columns asked for, each one [`Format::StripeItemized`] reads.
///
/// `customer_facing_amount` and `customer_facing_currency` ("the amount of
/// the original charge, refund or dispute as seen by the customer"): a
/// payment presented in another currency than the account settles in is
/// compared in the money it was registered with, not in `gross`.
const COLUMNS: &[&str] = &[
    "balance_transaction_id",
    "created_utc",
    "currency",
    "gross",
    "fee",
    "net",
    "reporting_category",
    "source_id",
    "charge_id",
    "payment_intent_id",
    "customer_facing_amount",
    "customer_facing_currency",
];

const FILES_ORIGIN: &str = "https://files.stripe.com";
const DOWNLOAD: Duration = Duration::from_secs(600);

impl StripeAdapter {
    /// `req` with the platform's key alone: report runs and their files are
    /// the platform's, a connected account's too (by `connected_account`).
    fn platform_authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        req.bearer_auth(&self.secret_key)
            .header("stripe-version", super::STRIPE_VERSION)
    }

    /// The report type run for `report`: its Connect twin for a connected
    /// account (unless configured as one already).
    fn report_type(&self, report: &str) -> String {
        match &self.account {
            Some(_) if !report.starts_with("connected_account_") => {
                format!("connected_account_{report}")
            }
            _ => report.to_string(),
        }
    }

    async fn send_json(&self, req: reqwest::RequestBuilder) -> Result<Value, ProviderError> {
        let resp = self
            .platform_authed(req)
            .header("x-request-id", request_id())
            .send()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))?;
        if !resp.status().is_success() {
            return Err(failure(resp).await);
        }
        resp.json()
            .await
            .map_err(|e| classify_transport(&e, self.timeouts))
    }

    /// The report runs made and not finished, by day.
    fn report_runs(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, String>> {
        self.report_runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Make the day's report run: a key of this attempt's own (a refusal
    /// is not replayed to the next attempt), the run remembered by its id
    /// until it finishes.
    async fn create_report_run(
        &self,
        day_key: &str,
        form: &[(String, String)],
    ) -> Result<String, FetchError> {
        let attempt = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let create = self
            .http
            .post(format!("{}/v1/reporting/report_runs", self.base_url))
            .header("idempotency-key", format!("finality-{day_key}-{attempt:x}"))
            .form(form);
        let run = match self.send_json(create).await {
            Ok(run) => run,
            Err(ProviderError::Refused { message }) if message.contains("available") => {
                return Err(FetchError::NotReady(message))
            }
            Err(e) => return Err(e.into()),
        };
        let id = run["id"].as_str().unwrap_or_default().to_string();
        if id.is_empty() {
            return Err(ProviderError::Permanent {
                message: "the report run Stripe answered has no id".into(),
            }
            .into());
        }
        self.report_runs().insert(day_key.to_string(), id.clone());
        Ok(id)
    }

    pub(crate) async fn fetch_report_run(
        &self,
        day: &ReportDay,
        dest: &Path,
    ) -> Result<Fetched, FetchError> {
        let date = day.date.format("%Y-%m-%d").to_string();
        let tz = &day.time_zone;
        let report_type = self.report_type(&day.report);
        let mut form: Vec<(String, String)> = vec![
            ("report_type".into(), report_type.clone()),
            (
                "parameters[interval_start]".into(),
                (day.from.millis() / 1000).to_string(),
            ),
            (
                "parameters[interval_end]".into(),
                (day.until.millis() / 1000).to_string(),
            ),
            ("parameters[timezone]".into(), tz.to_string()),
        ];
        for (i, c) in COLUMNS.iter().enumerate() {
            form.push((format!("parameters[columns][{i}]"), (*c).to_string()));
        }
        // Each account's run its own: one key for two accounts' days would
        // answer the second with the first's run.
        let whose = match &self.account {
            Some(a) => {
                form.push(("parameters[connected_account]".into(), a.clone()));
                format!("-{a}")
            }
            None => String::new(),
        };
        let day_key = format!("{report_type}{whose}-{date}-{tz}");
        let known = self.report_runs().get(&day_key).cloned();
        let id = match known {
            Some(id) => id,
            None => self.create_report_run(&day_key, &form).await?,
        };
        let asked = self
            .send_json(self.http.get(format!(
                "{}/v1/reporting/report_runs/{}",
                self.base_url,
                crate::http::segment(&id)
            )))
            .await;
        let forget = || {
            self.report_runs().remove(&day_key);
        };
        let run = match asked {
            Ok(run) => run,
            // Asked again by a new run next time, not by this id forever.
            Err(e) => {
                forget();
                return Err(e.into());
            }
        };
        let status = run["status"].as_str().unwrap_or_default();
        if status != "pending" {
            forget();
        }
        match status {
            "succeeded" => {}
            "failed" => {
                return Err(ProviderError::Permanent {
                    message: format!(
                        "Stripe report run {id} failed: {}",
                        run["error"].as_str().unwrap_or("(no error given)")
                    ),
                }
                .into())
            }
            other => {
                return Err(FetchError::NotReady(format!(
                    "Stripe report run {id} is {other}"
                )))
            }
        }
        let file = &run["result"];
        let (url, size) = (
            file["url"].as_str().unwrap_or_default(),
            file["size"].as_u64(),
        );
        if !(same_origin(url, FILES_ORIGIN) || same_origin(url, &self.base_url)) {
            return Err(FetchError::Refused(format!(
                "report run {id}'s file url `{url}` is neither on files.stripe.com nor on the \
                 configured base_url: not followed with the secret key"
            )));
        }
        let size = size.ok_or_else(|| {
            FetchError::Refused(format!(
                "report run {id}'s file names no size: it cannot be checked"
            ))
        })?;
        let req = self.platform_authed(self.http.get(url).timeout(DOWNLOAD));
        let got = download(req, dest, self.timeouts).await?;
        if got.bytes != size {
            return Err(FetchError::Refused(format!(
                "report run {id}'s file is {} bytes, Stripe says {size}: cut short or altered \
                 in transit",
                got.bytes
            )));
        }
        Ok(Fetched {
            name: format!("stripe-{report_type}{whose}-{date}.csv"),
            format: Format::StripeItemized,
            bytes: got.bytes,
            checked: format!("size {size} bytes as the report run's file says"),
        })
    }
}
