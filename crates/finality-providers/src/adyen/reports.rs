//! Adyen's settlement reports, downloaded when Adyen announces them
//! (docs.adyen.com/reporting/automatically-get-reports): a
//! `REPORT_AVAILABLE` notification, HMAC-signed like every other, names
//! the file in `pspReference` (`settlement_detail_report_batch_12.csv`)
//! and where to get it in `reason`
//! (`https://ca-test.adyen.com/reports/download/MerchantAccount/{account}/{file}`).
//! The file is downloaded with the report user's credentials: basic
//! authentication, or its API key in `X-API-Key`.
//!
//! Adyen publishes no hash or size for a report. What is checked is what
//! the signed announcement says: the URL is on Adyen (or the configured
//! base URL) and ends in the announced file under `MerchantAccount/{account}`;
//! the download is as long as its `Content-Length`; and every line of the
//! file belongs to that merchant account and, for a batch report, to that
//! batch. A file that is not the one announced is refused.

use super::AdyenAdapter;
use crate::http::Timeouts;
use crate::settlement::fetch::{download, same_origin, Defaults, FetchError, Fetched};
use crate::settlement::Format;
use crate::webhook::Disposition;
use crate::ProviderError;
use finality_core::secret::Secret;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// Adyen announces each report when it is made; the day and hour do not
/// apply (a settlement batch closes on Adyen's schedule).
pub const DEFAULTS: Defaults = Defaults {
    time_zone: "UTC",
    ready_at: "00:00",
    report: "settlement_detail_report",
    announced: true,
};

const DOWNLOAD: Duration = Duration::from_secs(600);

/// How a report download authenticates.
pub enum ReportAuth {
    /// The report user (`report_123456@Company.YourCompany`) and password.
    Basic { user: String, password: Secret },
    /// The report user's API key, as `X-API-Key`.
    ApiKey(Secret),
}

/// What downloading announced reports needs.
pub struct ReportAccess {
    http: reqwest::Client,
    /// The configured base URL: a download there is allowed too (a
    /// simulator, a proxy in front of Adyen).
    base_url: String,
    auth: ReportAuth,
    timeouts: Timeouts,
}

impl ReportAccess {
    pub fn new(
        base_url: &str,
        auth: ReportAuth,
        timeouts: Timeouts,
    ) -> Result<Self, ProviderError> {
        Ok(ReportAccess {
            http: crate::http::client(Timeouts {
                connect: timeouts.connect,
                total: DOWNLOAD,
            })?,
            base_url: base_url.trim_end_matches('/').to_string(),
            auth,
            timeouts,
        })
    }
}

/// Whether `name` is a plain file name (no path, no walking up).
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Why an announced URL is not followed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NotFollowed(String);

/// The merchant account an announced URL downloads from, when the URL is
/// one finality follows with the report user's credentials: on Adyen
/// (`https://*.adyen.com`) or the configured base URL, ending in
/// `/reports/download/MerchantAccount/{account}/{name}`.
pub(crate) fn announced_account(
    url: &str,
    name: &str,
    base_url: &str,
) -> Result<String, NotFollowed> {
    let no = |why: String| Err(NotFollowed(why));
    if !plain_name(name) {
        return no(format!("`{name}` is not a plain file name"));
    }
    let u =
        reqwest::Url::parse(url).map_err(|e| NotFollowed(format!("`{url}` is not a URL: {e}")))?;
    let on_adyen = u.scheme() == "https"
        && u.host_str().is_some_and(|h| h.ends_with(".adyen.com"))
        && u.port().is_none();
    if !(on_adyen || same_origin(url, base_url)) {
        return no(format!(
            "`{url}` is neither on an https adyen.com host nor on the configured base_url: not \
             followed with the report user's credentials"
        ));
    }
    if u.query().is_some() || u.fragment().is_some() {
        return no(format!("`{url}` carries a query or fragment"));
    }
    let segs: Vec<&str> = u.path_segments().map(|s| s.collect()).unwrap_or_default();
    match segs.as_slice() {
        [.., "reports", "download", "MerchantAccount", account, file]
            if *file == name && plain_name(account) =>
        {
            Ok((*account).to_string())
        }
        _ => no(format!(
            "`{url}` is not …/reports/download/MerchantAccount/{{account}}/{name}"
        )),
    }
}

/// Whether `name` is a Settlement details report. Adyen: "File name
/// format: Includes the batch number, date, and/or a unique identifier,
/// depending on how you generate the report" (settlement-details-report
/// page), the default `settlement_detail_report_batch_4.csv`, "To add a
/// date to the file name, contact our Support Team": so the documented
/// stem and `.csv`, whatever follows the stem.
pub fn is_settlement_details(name: &str) -> bool {
    name.starts_with("settlement_detail_report") && name.ends_with(".csv")
}

/// The batch a settlement details report's name says it is
/// (`settlement_detail_report_batch_12.csv`, or with a date after it,
/// `settlement_detail_report_batch_12_2026_12_03.csv`: `12`); `None` for
/// a report named by date or id alone (one made by hand, or for several
/// merchant accounts).
pub fn batch_of(name: &str) -> Option<&str> {
    if !is_settlement_details(name) {
        return None;
    }
    let (_, after) = name.split_once("_batch_")?;
    let end = after
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(after.len());
    let (digits, rest) = after.split_at(end);
    (!digits.is_empty() && (rest == ".csv" || rest.starts_with('_'))).then_some(digits)
}

/// What the lines of an announced report were checked to be.
struct Lines {
    count: u64,
    /// The merchant accounts they name, in order.
    accounts: std::collections::BTreeSet<String>,
}

/// The lines of the file at `path`: with a batch (`batch`, from its
/// name), every one names `account` and that batch, as one merchant
/// account's batch report does; without one (a report by date or id,
/// which Adyen makes "for one or for multiple merchant accounts"), each
/// names the merchant account it is of, and is routed to it.
fn check_lines(path: &Path, account: &str, batch: Option<&str>) -> Result<Lines, FetchError> {
    let file = std::fs::File::open(path)?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(std::io::BufReader::new(file));
    let refuse = |why: String| FetchError::Refused(why);
    let header = reader
        .headers()
        .map_err(|e| refuse(format!("the header does not read: {e}")))?
        .clone();
    let col = |n: &str| header.iter().position(|h| h == n);
    let merchant = col("Merchant Account")
        .ok_or_else(|| refuse("no `Merchant Account` column: not an Adyen report".into()))?;
    let batch_col = match batch {
        Some(_) => Some(col("Batch Number").ok_or_else(|| {
            refuse("no `Batch Number` column in a settlement details report".into())
        })?),
        None => None,
    };
    let mut lines = Lines {
        count: 0,
        accounts: Default::default(),
    };
    for (i, rec) in reader.records().enumerate() {
        let line = i + 2;
        let rec = rec.map_err(|e| refuse(format!("line {line} does not read: {e}")))?;
        let got = rec.get(merchant).unwrap_or_default();
        if got.is_empty() {
            return Err(refuse(format!(
                "line {line} names no merchant account: it could not be routed"
            )));
        }
        if batch.is_some() && got != account {
            return Err(refuse(format!(
                "line {line} is merchant account `{got}`'s, not `{account}`'s as announced: \
                 not the file Adyen announced"
            )));
        }
        if let (Some(c), Some(want)) = (batch_col, batch) {
            let got = rec.get(c).unwrap_or_default();
            if got != want {
                return Err(refuse(format!(
                    "line {line} is of batch {got}, not {want} as the file's name says: not \
                     the file Adyen announced"
                )));
            }
        }
        lines.accounts.insert(got.to_string());
        lines.count += 1;
    }
    Ok(lines)
}

impl AdyenAdapter {
    /// Download announced reports with `access` (`[providers.NAME.settlement]`).
    pub fn with_reports(mut self, access: ReportAccess) -> Self {
        self.reports = Some(access);
        self
    }

    /// What a verified item becomes once reports are downloaded here: a
    /// `REPORT_AVAILABLE` that names a file this adapter would follow is a
    /// report to fetch; one naming anything else is kept for a human.
    pub(crate) fn announced(&self, item: &Value, d: Disposition) -> Disposition {
        let Some(access) = &self.reports else {
            return d;
        };
        if item["eventCode"] != "REPORT_AVAILABLE" || item["success"] != "true" {
            return d;
        }
        let name = item["pspReference"].as_str().unwrap_or_default();
        let url = item["reason"].as_str().unwrap_or_default();
        match announced_account(url, name, &access.base_url) {
            Ok(_) => Disposition::Report {
                name: name.to_string(),
                url: url.to_string(),
            },
            Err(why) => Disposition::Review(format!(
                "Adyen REPORT_AVAILABLE for `{name}` not followed: {why}"
            )),
        }
    }

    /// Download the announced `name` from `url` into `dest` and check it
    /// is the file announced.
    pub(crate) async fn fetch_announced_report(
        &self,
        name: &str,
        url: &str,
        dest: &Path,
    ) -> Result<Fetched, FetchError> {
        let Some(access) = &self.reports else {
            return Err(FetchError::Unsupported);
        };
        let account = announced_account(url, name, &access.base_url)
            .map_err(|e| FetchError::Refused(e.to_string()))?;
        if let Some(ours) = self.merchant_account.as_deref() {
            if ours != account {
                return Err(FetchError::Refused(format!(
                    "`{url}` is merchant account `{account}`'s, this provider is `{ours}`"
                )));
            }
        }
        let req = access.http.get(url);
        let req = match &access.auth {
            ReportAuth::Basic { user, password } => req.basic_auth(user, Some(password.expose())),
            ReportAuth::ApiKey(key) => req.header("x-api-key", key.expose()),
        };
        let got = download(req, dest, access.timeouts).await?;
        if let Some(len) = got.content_length.filter(|l| *l != got.bytes) {
            return Err(FetchError::Refused(format!(
                "`{name}` is {} bytes, its Content-Length says {len}: cut short or altered in \
                 transit",
                got.bytes
            )));
        }
        if !is_settlement_details(name) {
            return Err(FetchError::Refused(format!(
                "`{name}` is not a settlement details report (settlement_detail_report…csv: \
                 by batch, date or id), the one report finality reconciles for Adyen"
            )));
        }
        let batch = batch_of(name);
        let lines = check_lines(dest, &account, batch)?;
        let whose: Vec<&str> = lines.accounts.iter().map(String::as_str).collect();
        Ok(Fetched {
            name: name.to_string(),
            format: Format::AdyenSettlementDetails,
            bytes: got.bytes,
            checked: format!(
                "{} bytes as Content-Length says; {} lines of merchant account{} {}{}",
                got.bytes,
                lines.count,
                if whose.len() > 1 { "s" } else { "" },
                if whose.is_empty() {
                    account.as_str().to_string()
                } else {
                    whose.join(", ")
                },
                batch.map(|b| format!(", batch {b}")).unwrap_or_default()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The URL of Adyen's own REPORT_AVAILABLE example
    /// (docs.adyen.com/reporting/automatically-get-reports), its
    /// `[merchantAccountCode]` placeholder filled in.
    const DOC_URL: &str = "https://ca-test.adyen.com/reports/download/MerchantAccount/\
                           TestMerchant/settlement_detail_report_batch_12.csv";

    /// Adyen's documented default name, and names with a date or an id
    /// after the documented stem ("Includes the batch number, date, and/or
    /// a unique identifier").
    #[test]
    fn settlement_details_reports_by_batch_date_or_id() {
        for (name, batch) in [
            ("settlement_detail_report_batch_4.csv", Some("4")),
            (
                "settlement_detail_report_batch_12_2026_12_03.csv",
                Some("12"),
            ),
            ("settlement_detail_report_2026_12_03.csv", None),
            ("settlement_detail_report_7d2f9c1e.csv", None),
            ("settlement_detail_report_batch_.csv", None),
        ] {
            assert!(is_settlement_details(name), "{name}");
            assert_eq!(batch_of(name), batch, "{name}");
        }
        for other in [
            "received_payments_report_2026_12_03.csv",
            "settlement_detail_report_batch_4.xlsx",
        ] {
            assert!(!is_settlement_details(other), "{other}");
            assert_eq!(batch_of(other), None);
        }
    }

    #[test]
    fn an_announced_url_names_its_account_and_file() {
        let name = "settlement_detail_report_batch_12.csv";
        assert_eq!(
            announced_account(DOC_URL, name, "http://127.0.0.1:1").unwrap(),
            "TestMerchant"
        );
        assert_eq!(batch_of(name), Some("12"));
        for (url, name) in [
            // Another host: the credentials are not sent there.
            (
                "https://ca-test.adyen.com.evil.example/reports/download/MerchantAccount/M/f.csv",
                "f.csv",
            ),
            (
                "http://ca-test.adyen.com/reports/download/MerchantAccount/M/f.csv",
                "f.csv",
            ),
            // Another file than announced, a path in the name.
            (DOC_URL, "settlement_detail_report_batch_13.csv"),
            (
                "https://ca-test.adyen.com/reports/download/MerchantAccount/M/..%2Ff.csv",
                "../f.csv",
            ),
            (
                "https://ca-test.adyen.com/reports/download/MerchantAccount/M/f.csv?x=1",
                "f.csv",
            ),
        ] {
            assert!(
                announced_account(url, name, "http://127.0.0.1:1").is_err(),
                "{url}"
            );
        }
        assert!(announced_account(
            "http://127.0.0.1:1/adyen/reports/download/MerchantAccount/M/f.csv",
            "f.csv",
            "http://127.0.0.1:1/adyen"
        )
        .is_ok());
    }
}
