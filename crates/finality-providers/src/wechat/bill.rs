//! WeChat Pay's trade bill (交易账单), fetched by machine: `GET
//! /v3/bill/tradebill?bill_date=YYYY-MM-DD&bill_type=ALL` (a sub-merchant's
//! with `&sub_mchid=…`) answers, signed like every answer, `hash_type`
//! (`SHA1`), `hash_value` and a `download_url` on the API's own host; the
//! file is downloaded with a signed GET and must hash to `hash_value`
//! (WeChat Pay's 申请交易账单 and 下载账单 docs; gunsluo/wechatpay-go
//! `tradebill.go`). WeChat Pay starts making the day before's bill at 09:00
//! Beijing time and asks merchants to fetch it after 10:00, which is when
//! finality does by default. Until it is made, the answer is 400
//! `STATEMENT_CREATING` ("账单生成中": not ready yet). 400
//! `NO_STATEMENT_EXIST` ("账单文件不存在", whose remedy WeChat Pay gives as
//! "请检查当前商户号是否在指定日期有交易或退款发生": check whether the
//! merchant had a trade or refund that day) is a day without trades or
//! refunds: imported as an empty bill, so the days after it are fetched
//! (WeChat Pay API v3 下载账单 error table).

use super::WeChatAdapter;
use crate::settlement::fetch::{download, same_origin, Defaults, FetchError, Fetched, ReportDay};
use crate::settlement::Format;
use crate::ProviderError;
use std::path::Path;
use std::time::Duration;

/// WeChat Pay's documented bill: Beijing time, ready after 10:00, `ALL`.
pub const DEFAULTS: Defaults = Defaults {
    time_zone: "Asia/Shanghai",
    ready_at: "10:00",
    report: "ALL",
    announced: false,
};

/// A bill download may take this long (the client's own timeout is for
/// status queries).
const DOWNLOAD: Duration = Duration::from_secs(600);

impl WeChatAdapter {
    pub(crate) async fn fetch_bill(
        &self,
        day: &ReportDay,
        dest: &Path,
    ) -> Result<Fetched, FetchError> {
        let date = day.date.format("%Y-%m-%d");
        let mut path = format!(
            "/v3/bill/tradebill?bill_date={date}&bill_type={}",
            crate::http::segment(&day.report)
        );
        if let Some(sub) = &self.sub_mchid {
            path.push_str(&format!("&sub_mchid={}", crate::http::segment(sub)));
        }
        let answer = match self.signed_get(&path).await {
            Ok(Some(v)) => v,
            Ok(None) => return Err(FetchError::NotReady(format!("no bill for {date} (404)"))),
            Err(ProviderError::Refused { message }) if message.contains("NO_STATEMENT_EXIST") => {
                return Err(FetchError::NoActivity {
                    said: format!("WeChat Pay answers {message} (no trade or refund that day)"),
                    certain: true,
                    format: Box::new(Format::WechatTradeBill),
                })
            }
            Err(ProviderError::Refused { message }) if message.contains("STATEMENT_CREATING") => {
                return Err(FetchError::NotReady(message))
            }
            Err(e) => return Err(e.into()),
        };
        let field = |name: &str| answer[name].as_str().unwrap_or_default().to_string();
        let (hash_type, hash_value, url) = (
            field("hash_type"),
            field("hash_value"),
            field("download_url"),
        );
        if !hash_type.eq_ignore_ascii_case("SHA1") || hash_value.is_empty() {
            return Err(FetchError::Refused(format!(
                "the bill answer names hash_type `{hash_type}` and hash_value `{hash_value}`: \
                 SHA1 and a value are expected, and a bill that cannot be checked is not \
                 imported"
            )));
        }
        if !same_origin(&url, &self.base_url) {
            return Err(FetchError::Refused(format!(
                "download_url `{url}` is not on the configured base_url: not followed with \
                 the merchant's signature"
            )));
        }
        let parsed = reqwest::Url::parse(&url).map_err(|e| ProviderError::Permanent {
            message: format!("download_url `{url}`: {e}"),
        })?;
        let signed_path = match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_string(),
        };
        let req = self
            .http
            .get(parsed)
            .timeout(DOWNLOAD)
            .header("authorization", self.authorization("GET", &signed_path, ""));
        let got = download(req, dest, self.timeouts).await?;
        let sha1 = hex::encode(got.sha1);
        if !sha1.eq_ignore_ascii_case(&hash_value) {
            return Err(FetchError::Refused(format!(
                "the bill's SHA1 is {sha1}, WeChat Pay's hash_value says {hash_value}: \
                 altered or cut short in transit"
            )));
        }
        Ok(Fetched {
            name: format!("wechat-tradebill-{date}-{}.csv", day.report),
            format: Format::WechatTradeBill,
            bytes: got.bytes,
            checked: format!("SHA1 {sha1} as hash_value says"),
        })
    }
}
