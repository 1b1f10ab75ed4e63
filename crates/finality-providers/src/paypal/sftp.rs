//! PayPal's daily Settlement Report, fetched from its SFTP server
//! (developer.paypal.com/docs/reports/sftp-reports/settlement-report/):
//! generated every 24 hours into `/ppreports/outgoing` as
//! `STL-yyyymmdd.sequenceNumber.version.CSV`, for PayPal's day (its
//! sections run from 00:00:00 to 23:59:59 at -0800, US Pacific time).
//!
//! The server is known by its pinned host key; the file by the size the
//! server states and by its own report footers (every currency's `RF`
//! gross credits and debits against the `SB` rows).

use super::PayPalAdapter;
use crate::settlement::fetch::{Defaults, FetchError, FetchResult, Fetched, ReportDay};
use crate::settlement::sftp::SftpAccess;
use crate::settlement::Format;
use std::path::Path;

/// PayPal's day is US Pacific (the STL's `SH` rows run 00:00:00 to
/// 23:59:59 -0800); the day's file is written overnight (SmashPig's
/// real-derived file has its `RH` at 02:21): asked for from 06:00.
pub const DEFAULTS: Defaults = Defaults {
    time_zone: "America/Los_Angeles",
    ready_at: "06:00",
    report: "STL",
    announced: false,
};

/// The (sequence, version) of `name` when it is `report`'s file of `date`
/// (`STL-20261203.01.009.CSV`).
pub fn day_file(name: &str, report: &str, date: chrono::NaiveDate) -> Option<(String, String)> {
    let rest = name.strip_prefix(&format!("{report}-{}.", date.format("%Y%m%d")))?;
    let mut parts = rest.split('.');
    let (seq, ver, ext) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(seq) && digits(ver) && ext.eq_ignore_ascii_case("csv") && parts.next().is_none())
        .then(|| (seq.to_string(), ver.to_string()))
}

impl PayPalAdapter {
    /// Fetch reports from `access` (`[providers.NAME.settlement.sftp]`).
    pub fn with_sftp(mut self, access: SftpAccess) -> Self {
        self.sftp = Some(access);
        self
    }

    pub(super) async fn fetch_stl(&self, day: &ReportDay, dest: &Path) -> FetchResult {
        let Some(sftp) = &self.sftp else {
            return Err(FetchError::Unsupported);
        };
        let (name, size) = sftp
            .fetch(|n| day_file(n, &day.report, day.date), dest)
            .await?;
        let file = std::fs::File::open(dest)?;
        let rows = crate::settlement::check_stl_totals(std::io::BufReader::new(file))
            .map_err(|e| FetchError::Refused(format!("{name}: {e}")))?;
        Ok(Fetched {
            name,
            format: Format::PaypalStl,
            bytes: size,
            checked: format!(
                "{size} bytes as the SFTP server says; {rows} rows adding up to the report \
                 footers"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_day_file_is_named_as_paypal_names_it() {
        let d = chrono::NaiveDate::from_ymd_opt(2026, 12, 3).unwrap();
        assert_eq!(
            day_file("STL-20261203.01.009.CSV", "STL", d),
            Some(("01".into(), "009".into()))
        );
        for other in [
            "STL-20261204.01.009.CSV",
            "STL-20261203.01.CSV",
            "TRR-20261203.01.009.CSV",
            "STL-20261203.01.009.CSV.part",
        ] {
            assert_eq!(day_file(other, "STL", d), None, "{other}");
        }
    }
}
