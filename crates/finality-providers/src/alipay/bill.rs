//! Alipay's trade bill (业务明细), fetched by machine:
//! `alipay.data.dataservice.bill.downloadurl.query` with `bill_type`
//! (`trade`) and `bill_date` (`yyyy-MM-dd`) answers, signed like every
//! answer, a `bill_download_url` valid for 30 seconds; the file is a zip
//! holding `…_业务明细.csv` (the detail, GBK) and `…_业务明细(汇总).csv` (the
//! summary). Alipay publishes no hash for it: every entry is checked by
//! its zip CRC-32 as it is read out. The day's bill is made by about
//! 09:00 Beijing time the day after (docs/SETTLEMENT_FORMATS.md §4.2).
//!
//! `40004 isp.bill_not_exist` ("账单不存在") is Alipay's answer both for a
//! bill not made yet and for a day without trades (the same code for both,
//! as the public SDKs that handle it say: "账单尚未生成，或该日无交易").
//! So it is "not ready" until the day's grace has passed, and after that
//! a day without trades: imported empty, so the days after it are fetched
//! ([`FetchError::NoActivity`], not certain).

use super::AlipayAdapter;
use crate::settlement::fetch::{download, Defaults, FetchError, Fetched, ReportDay};
use crate::settlement::Format;
use crate::ProviderError;
use serde_json::json;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

pub const DEFAULTS: Defaults = Defaults {
    time_zone: "Asia/Shanghai",
    ready_at: "10:00",
    report: "trade",
    announced: false,
};

const DOWNLOAD: Duration = Duration::from_secs(600);

/// Alipay's summary entry's name ends so; the detail is the other CSV.
const SUMMARY: &str = "(汇总).csv";

/// A zip entry's name: UTF-8 when the entry says so, else GBK as Alipay
/// writes it.
fn entry_name(raw: &[u8]) -> String {
    match std::str::from_utf8(raw) {
        Ok(s) => s.to_string(),
        Err(_) => encoding_rs::GBK.decode(raw).0.into_owned(),
    }
}

/// Copy the detail CSV out of the zip at `zip_path` into `dest`; every
/// byte read out is checked against its entry's CRC-32 by the zip reader.
pub fn detail_from_zip(zip_path: &Path, dest: &Path) -> Result<u64, FetchError> {
    detail_from_zip_capped(zip_path, dest, crate::settlement::fetch::MAX_REPORT_BYTES)
}

/// [`detail_from_zip`] with its bound: an entry that expands past `cap`
/// bytes (a zip bomb, whatever its header claims) is refused there.
fn detail_from_zip_capped(zip_path: &Path, dest: &Path, cap: u64) -> Result<u64, FetchError> {
    let refused = |why: String| FetchError::Refused(why);
    let mut archive = zip::ZipArchive::new(std::fs::File::open(zip_path)?)
        .map_err(|e| refused(format!("the bill is not a readable zip: {e}")))?;
    let mut detail = None;
    for i in 0..archive.len() {
        let entry = archive
            .by_index_raw(i)
            .map_err(|e| refused(format!("zip entry {i}: {e}")))?;
        let name = entry_name(entry.name_raw());
        if name.to_ascii_lowercase().ends_with(".csv") && !name.ends_with(SUMMARY) {
            detail = Some((i, name));
        }
    }
    let (i, name) = detail
        .ok_or_else(|| refused("the bill's zip holds no detail CSV (…_业务明细.csv)".into()))?;
    let mut entry = archive
        .by_index(i)
        .map_err(|e| refused(format!("zip entry `{name}`: {e}")))?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dest)?);
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = entry
            .read(&mut buf)
            .map_err(|e| refused(format!("zip entry `{name}` does not check out: {e}")))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > cap {
            return Err(refused(format!(
                "zip entry `{name}` expands past the bound of {cap} bytes: not imported"
            )));
        }
        out.write_all(&buf[..n])?;
    }
    out.flush()?;
    Ok(total)
}

impl AlipayAdapter {
    pub(crate) async fn fetch_bill(
        &self,
        day: &ReportDay,
        dest: &Path,
    ) -> Result<Fetched, FetchError> {
        let date = day.date.format("%Y-%m-%d").to_string();
        let r = self
            .call(
                "alipay.data.dataservice.bill.downloadurl.query",
                json!({"bill_type": day.report, "bill_date": date}),
            )
            .await?;
        let code = r["code"].as_str().unwrap_or_default();
        let sub = r["sub_code"].as_str().unwrap_or_default();
        if code != "10000" {
            let msg = format!(
                "{code} {sub} {}",
                r["sub_msg"]
                    .as_str()
                    .unwrap_or(r["msg"].as_str().unwrap_or_default())
            );
            return Err(match sub {
                "isp.bill_not_exist" => FetchError::NoActivity {
                    said: format!("Alipay answers {msg} (no bill yet, or no trade that day)"),
                    certain: false,
                    format: Box::new(Format::AlipayTradeBill),
                },
                _ => ProviderError::Permanent {
                    message: format!("Alipay refused the bill query: {msg}"),
                }
                .into(),
            });
        }
        let url = r["bill_download_url"].as_str().unwrap_or_default();
        let parsed = reqwest::Url::parse(url).map_err(|e| ProviderError::Permanent {
            message: format!("bill_download_url `{url}`: {e}"),
        })?;
        // The link is a time-limited grant of its own: no credential is
        // sent with it.
        let zip_path = dest.with_extension("zip.part");
        let req = self.http.get(parsed).timeout(DOWNLOAD);
        let got = download(req, &zip_path, self.timeouts).await;
        let out = got.and_then(|_| detail_from_zip(&zip_path, dest));
        let _ = std::fs::remove_file(&zip_path);
        let bytes = out?;
        Ok(Fetched {
            name: format!("alipay-{}-{date}.csv", day.report),
            format: Format::AlipayTradeBill,
            bytes,
            checked: "zip CRC-32 of the detail entry".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bill zip whose detail entry is a megabyte of one byte repeated (a
    /// few kilobytes zipped): past a smaller bound it is refused, not
    /// expanded onto the disk.
    #[test]
    fn hostile_a_zip_entry_past_its_bound_is_refused() {
        let dir = std::env::temp_dir();
        let tag = std::process::id();
        let zip_path = dir.join(format!("finality-bomb-{tag}.zip"));
        let dest = dir.join(format!("finality-bomb-{tag}.csv"));
        {
            let mut w = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            w.start_file("20881234_20261203_业务明细.csv", opts)
                .unwrap();
            w.write_all(&vec![b'0'; 1 << 20]).unwrap();
            w.finish().unwrap();
        }
        assert!(std::fs::metadata(&zip_path).unwrap().len() < 64 * 1024);
        let got = detail_from_zip_capped(&zip_path, &dest, 64 * 1024);
        assert!(
            matches!(&got, Err(FetchError::Refused(why)) if why.contains("expands past the bound")),
            "{got:?}"
        );
        assert_eq!(
            detail_from_zip_capped(&zip_path, &dest, 1 << 20).unwrap(),
            1 << 20
        );
        std::fs::remove_file(&zip_path).ok();
        std::fs::remove_file(&dest).ok();
    }
}
