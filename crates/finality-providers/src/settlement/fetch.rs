//! A day's settlement report fetched by machine, as each provider publishes
//! a way to (docs/RECONCILIATION.md, "Fetched on a schedule"): WeChat Pay's
//! `GET /v3/bill/tradebill` (a download URL and the file's SHA1), Stripe's
//! `POST /v1/reporting/report_runs` (a file of a stated size), Alipay's
//! `alipay.data.dataservice.bill.downloadurl.query` (a zip, each entry
//! checked by its CRC-32).
//!
//! `[providers.NAME.settlement]` says when: the provider's own day (its
//! time zone) and the hour it documents the day before's report as ready.
//! A download is written to a file as it arrives (a report of a gigabyte is
//! never held in memory) and checked against what the provider gives to
//! check it by before anything reads it: a file that fails is refused, not
//! imported.

use super::Format;
use crate::http::{classify_transport, failure, Timeouts};
use crate::ProviderError;
use chrono::{NaiveDate, NaiveTime, TimeZone};
use finality_core::{ConfigError, Timestamp};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// `[providers.NAME.settlement]`: fetch each day's report on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettlementConfig {
    /// The provider's day, an IANA zone (`Asia/Shanghai`, `UTC`). Unset:
    /// the adapter's documented one ([`Defaults`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// The local time (`HH:MM`) on the day after when a day's report is
    /// documented as ready. Unset: the adapter's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_at: Option<String>,
    /// How long after `ready_at` a report may still be missing before
    /// it is overdue (`finality_settlement_report_overdue_seconds`).
    #[serde(default = "default_grace", with = "humantime_serde")]
    pub grace: Duration,
    /// The first day to fetch. Unset: the day before the first start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_day: Option<NaiveDate>,
    /// Which report: WeChat Pay `bill_type` (`ALL`), Stripe `report_type`
    /// (`balance_change_from_activity.itemized.3`), Alipay `bill_type`
    /// (`trade`). Unset: the adapter's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// How often a provider whose report is not there yet is asked again
    /// (and, for reports a provider announces, how often the announced
    /// ones are looked for: at most a minute apart).
    #[serde(default = "default_every", with = "humantime_serde")]
    pub every: Duration,
    /// Adyen: the report user (`report_123456@Company.YourCompany`) whose
    /// password is in `password_env`; or set `api_key_env` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The environment variable holding `user`'s password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// Adyen: the environment variable holding the report user's API key
    /// (sent as `X-API-Key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// PayPal: the SFTP server the daily settlement report is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sftp: Option<super::sftp::SftpConfig>,
}

fn default_grace() -> Duration {
    Duration::from_secs(6 * 3600)
}

fn default_every() -> Duration {
    Duration::from_secs(15 * 60)
}

/// An adapter's documented report: its day's zone, the hour the day
/// before's report is ready, and which report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    pub time_zone: &'static str,
    pub ready_at: &'static str,
    pub report: &'static str,
    /// The provider announces each file (Adyen's `REPORT_AVAILABLE`)
    /// rather than making one per day at a known hour.
    pub announced: bool,
}

/// The schedule a [`SettlementConfig`] makes for one adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportSchedule {
    pub tz: chrono_tz::Tz,
    pub ready_at: NaiveTime,
    pub grace: Duration,
    pub report: String,
    pub first_day: Option<NaiveDate>,
    pub every: Duration,
    /// Files are announced (see [`Defaults::announced`]), not made per day.
    pub announced: bool,
}

impl SettlementConfig {
    /// Check it against the adapter's documented `d` and make its
    /// schedule; the field is relative to the table.
    pub fn schedule(&self, d: Defaults) -> Result<ReportSchedule, ConfigError> {
        let zone = self.time_zone.as_deref().unwrap_or(d.time_zone);
        let tz: chrono_tz::Tz = zone.parse().map_err(|_| {
            ConfigError::new(
                "time_zone",
                format!("`{zone}` is not an IANA time zone (e.g. Asia/Shanghai, UTC)"),
            )
        })?;
        let at = self.ready_at.as_deref().unwrap_or(d.ready_at);
        let ready_at = NaiveTime::parse_from_str(at, "%H:%M")
            .map_err(|_| ConfigError::new("ready_at", format!("`{at}` is not HH:MM")))?;
        if self.every < Duration::from_secs(1) {
            return Err(ConfigError::new("every", "must be at least 1s"));
        }
        Ok(ReportSchedule {
            tz,
            ready_at,
            grace: self.grace,
            report: self.report.clone().unwrap_or_else(|| d.report.to_string()),
            first_day: self.first_day,
            every: self.every,
            announced: d.announced,
        })
    }
}

impl ReportSchedule {
    /// A local time in the provider's zone as an instant (the earliest,
    /// should a zone's clocks skip or repeat it).
    fn instant(&self, local: chrono::NaiveDateTime) -> Timestamp {
        Timestamp(self.tz.from_local_datetime(&local).earliest().map_or_else(
            || local.and_utc().timestamp_millis(),
            |t| t.timestamp_millis(),
        ))
    }

    /// Local midnight starting `date`.
    fn midnight(&self, date: NaiveDate) -> Timestamp {
        self.instant(date.and_time(NaiveTime::MIN))
    }

    /// The report of `date` for `report`, with the instants it covers.
    pub fn day(&self, date: NaiveDate) -> ReportDay {
        let next = date.succ_opt().unwrap_or(date);
        ReportDay {
            date,
            from: self.midnight(date),
            until: self.midnight(next),
            report: self.report.clone(),
            time_zone: self.tz.name().to_string(),
        }
    }

    /// When `date`'s report is documented as ready: `ready_at` on the day
    /// after, local time.
    pub fn ready(&self, date: NaiveDate) -> Timestamp {
        let next = date.succ_opt().unwrap_or(date);
        self.instant(next.and_time(self.ready_at))
    }

    /// The provider's date at `now`.
    pub fn today(&self, now: Timestamp) -> NaiveDate {
        chrono::DateTime::from_timestamp_millis(now.millis())
            .unwrap_or_default()
            .with_timezone(&self.tz)
            .date_naive()
    }

    /// The newest day whose report is ready at `now`.
    pub fn newest_ready(&self, now: Timestamp) -> NaiveDate {
        let mut d = self.today(now);
        while self.ready(d) > now {
            match d.pred_opt() {
                Some(p) => d = p,
                None => break,
            }
        }
        d
    }
}

/// One day's report, as asked of the provider.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportDay {
    pub date: NaiveDate,
    /// The day's first instant in the provider's zone (inclusive) …
    pub from: Timestamp,
    /// … and the next day's (exclusive).
    pub until: Timestamp,
    pub report: String,
    /// The provider's zone, an IANA name (Stripe's `parameters[timezone]`).
    pub time_zone: String,
}

/// A report written to its file and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The provider's name for it, or one made of the day and report.
    pub name: String,
    pub format: Format,
    pub bytes: u64,
    /// What it was checked by (`SHA1 as hash_value says`, `size as the
    /// report run says`, `zip CRC-32`).
    pub checked: String,
}

/// What fetching a report gives.
pub type FetchResult = Result<Fetched, FetchError>;

/// Why a day's report was not fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The provider has not made it yet (or says there is none yet): asked
    /// again later, overdue after its ready time and grace.
    #[error("not ready: {0}")]
    NotReady(String),
    /// The provider says there is no report because nothing happened that
    /// day (no trade, no refund): the day is imported as an empty report,
    /// so every payment finality holds for it is missing from it, and the
    /// days after it are fetched. `certain: false` where the provider's
    /// answer also means "not made yet" (Alipay's `isp.bill_not_exist`):
    /// then not ready until the day's grace has passed.
    #[error("no report: {said}")]
    NoActivity {
        said: String,
        certain: bool,
        /// The format the day's report would have had (boxed: a `Format`
        /// is large, and this error is returned everywhere).
        format: Box<Format>,
    },
    /// It arrived but does not check out (hash, size, CRC): refused,
    /// nothing imported, alerted.
    #[error("refused: {0}")]
    Refused(String),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("writing the report: {0}")]
    Io(#[from] std::io::Error),
    /// This adapter has no report fetching.
    #[error("this adapter fetches no settlement report")]
    Unsupported,
}

impl From<super::sftp::SftpError> for FetchError {
    fn from(e: super::sftp::SftpError) -> Self {
        use super::sftp::SftpError as E;
        match e {
            E::NotThere(m) => FetchError::NotReady(m),
            E::Refused(m) => FetchError::Refused(m),
            E::Transient(message) => FetchError::Provider(ProviderError::Transient { message }),
            E::Setting(message) | E::Permanent(message) => {
                FetchError::Provider(ProviderError::Permanent { message })
            }
            E::Io(e) => FetchError::Io(e),
        }
    }
}

/// What a download was, as it passed into its file.
#[derive(Debug)]
pub struct Downloaded {
    pub bytes: u64,
    pub sha1: [u8; 20],
    /// The length the answer's `Content-Length` announced, if it did.
    pub content_length: Option<u64>,
}

/// Send `req` and write the answer's body to `dest` as it arrives,
/// counting and hashing it (SHA1: WeChat Pay's `hash_type`).
pub async fn download(
    req: reqwest::RequestBuilder,
    dest: &Path,
    timeouts: Timeouts,
) -> Result<Downloaded, FetchError> {
    download_capped(req, dest, timeouts, MAX_REPORT_BYTES).await
}

/// The most a settlement report (or a bill's zip entry, expanded) may be:
/// a day of a million payments is a few hundred megabytes in every
/// provider's layout, so 4 GiB is room for the largest merchant, and an
/// answer past it (a misbehaving server, a zip bomb) is refused before it
/// fills the disk.
pub const MAX_REPORT_BYTES: u64 = 4 << 30;

/// [`download`] with its bound: an answer that announces more than `cap`
/// bytes is refused before reading, one that sends more is cut off there.
pub async fn download_capped(
    req: reqwest::RequestBuilder,
    dest: &Path,
    timeouts: Timeouts,
    cap: u64,
) -> Result<Downloaded, FetchError> {
    use sha1::Digest;
    let mut resp = req
        .send()
        .await
        .map_err(|e| classify_transport(&e, timeouts))?;
    if !resp.status().is_success() {
        return Err(failure(resp).await.into());
    }
    let content_length = resp.content_length();
    let too_large = |n: u64| {
        FetchError::Refused(format!(
            "the report is {n} bytes or more, past the bound of {cap} bytes: not downloaded"
        ))
    };
    if let Some(n) = content_length.filter(|n| *n > cap) {
        return Err(too_large(n));
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(dest)?);
    let mut hash = sha1::Sha1::new();
    let mut bytes = 0u64;
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| classify_transport(&e, timeouts))?
    {
        hash.update(&chunk);
        bytes += chunk.len() as u64;
        if bytes > cap {
            return Err(too_large(bytes));
        }
        file.write_all(&chunk)?;
    }
    file.flush()?;
    Ok(Downloaded {
        bytes,
        sha1: hash.finalize().into(),
        content_length,
    })
}

/// Whether `url` is on the same scheme, host and port as `base`: a download
/// URL an answer names is followed with credentials only there.
pub fn same_origin(url: &str, base: &str) -> bool {
    match (reqwest::Url::parse(url), reqwest::Url::parse(base)) {
        (Ok(u), Ok(b)) => u.origin() == b.origin(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SettlementConfig {
        serde_json::from_value(serde_json::json!({})).unwrap()
    }

    const WECHAT: Defaults = Defaults {
        time_zone: "Asia/Shanghai",
        ready_at: "10:00",
        report: "ALL",
        announced: false,
    };

    #[test]
    fn a_beijing_day_is_ready_at_ten_the_next_morning() {
        let s = cfg().schedule(WECHAT).unwrap();
        let d = NaiveDate::from_ymd_opt(2026, 12, 3).unwrap();
        let day = s.day(d);
        // 2026-12-03T00:00+08:00 = 2026-12-02T16:00Z.
        assert_eq!(day.from, Timestamp(1_796_227_200_000));
        assert_eq!(day.until.millis() - day.from.millis(), 86_400_000);
        // Ready 2026-12-04T10:00+08:00 = 02:00Z.
        assert_eq!(s.ready(d), Timestamp(1_796_349_600_000));
        assert_eq!(s.newest_ready(Timestamp(1_796_349_600_000)), d);
        assert_eq!(
            s.newest_ready(Timestamp(1_796_349_599_999)),
            NaiveDate::from_ymd_opt(2026, 12, 2).unwrap()
        );
    }

    #[test]
    fn bad_settings_name_their_field() {
        let mut c = cfg();
        c.time_zone = Some("Mars/Olympus".into());
        assert_eq!(c.schedule(WECHAT).unwrap_err().field, "time_zone");
        let mut c = cfg();
        c.ready_at = Some("25:00".into());
        assert_eq!(c.schedule(WECHAT).unwrap_err().field, "ready_at");
    }

    /// A server on loopback answering `body` with or without announcing
    /// its length, once.
    async fn serve_once(body: Vec<u8>, announce: bool) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut s, _) = listener.accept().await.unwrap();
            let mut req = [0u8; 1024];
            let _ = s.read(&mut req).await;
            let head = if announce {
                format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len())
            } else {
                "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n".to_string()
            };
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&body).await;
            let _ = s.shutdown().await;
        });
        format!("http://{addr}/report.csv")
    }

    #[tokio::test]
    async fn hostile_a_download_past_its_bound_is_refused() {
        let dest = std::env::temp_dir().join(format!("finality-cap-{}.part", std::process::id()));
        let timeouts = Timeouts {
            connect: Duration::from_secs(5),
            total: Duration::from_secs(10),
        };
        let http = reqwest::Client::new();
        for announce in [true, false] {
            let url = serve_once(vec![b'x'; 5000], announce).await;
            let got = download_capped(http.get(&url), &dest, timeouts, 4096).await;
            assert!(
                matches!(&got, Err(FetchError::Refused(why)) if why.contains("past the bound of 4096 bytes")),
                "announced {announce}: {got:?}"
            );
        }
        let url = serve_once(vec![b'x'; 4096], true).await;
        let got = download_capped(http.get(&url), &dest, timeouts, 4096)
            .await
            .unwrap();
        assert_eq!(got.bytes, 4096);
        std::fs::remove_file(&dest).ok();
    }

    #[test]
    fn downloads_are_followed_only_to_the_configured_origin() {
        assert!(same_origin(
            "https://api.mch.weixin.qq.com/v3/billdownload/file?token=x",
            "https://api.mch.weixin.qq.com"
        ));
        assert!(!same_origin(
            "https://evil.example/v3/billdownload/file?token=x",
            "https://api.mch.weixin.qq.com"
        ));
    }
}
