//! Settlement reports: what a provider says it actually settled, line by
//! line, read as a stream (a report of a gigabyte is never held in memory)
//! into one shape, [`SettlementLine`], for reconciliation. A line that does
//! not read is an error naming its line and column, never skipped.
//!
//! Formats ([`Format`]), one module each: Adyen's Settlement details report
//! (`adyen`), Stripe's itemized balance and payout reconciliation reports
//! (`stripe`), PayPal's Settlement Report (`paypal`), and [`Columns`], any
//! CSV whose columns are named by the caller (a provider without a
//! dedicated format, or an export of one's own).

mod adyen;
mod alipay;
mod columns;
pub mod fetch;
mod header;
mod paypal;
pub use paypal::check_stl_totals;
pub mod sftp;
mod stripe;
mod wechat;

pub use columns::{read_csv, Columns};

use finality_core::money::{Currency, DecimalError};

use std::io::Read;

/// What a report line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineKind {
    /// Money captured for a payment.
    Charge,
    Refund,
    Chargeback,
    /// A fee on its own line.
    Fee,
    /// Money paid out to the merchant's bank.
    Payout,
    /// Anything else the report lists (adjustments, reserves…).
    Other,
}

impl LineKind {
    /// Charges, refunds and chargebacks are about one payment; fees,
    /// payouts and the rest are not checked against any.
    pub fn names_a_payment(self) -> bool {
        matches!(
            self,
            LineKind::Charge | LineKind::Refund | LineKind::Chargeback
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LineKind::Charge => "charge",
            LineKind::Refund => "refund",
            LineKind::Chargeback => "chargeback",
            LineKind::Fee => "fee",
            LineKind::Payout => "payout",
            LineKind::Other => "other",
        }
    }
}

/// A line kind that is none of [`LineKind`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown line kind `{0}` (charge, refund, chargeback, fee, payout, other)")]
pub struct UnknownLineKind(pub String);

impl std::str::FromStr for LineKind {
    type Err = UnknownLineKind;
    fn from_str(s: &str) -> Result<Self, UnknownLineKind> {
        Ok(match s {
            "charge" => LineKind::Charge,
            "refund" => LineKind::Refund,
            "chargeback" => LineKind::Chargeback,
            "fee" => LineKind::Fee,
            "payout" => LineKind::Payout,
            "other" => LineKind::Other,
            other => return Err(UnknownLineKind(other.to_string())),
        })
    }
}

/// One line of a settlement report, in finality's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct SettlementLine {
    /// The line's number in the file (the header is line 1).
    pub line: u64,
    pub kind: LineKind,
    /// The provider's id of the payment the line is about.
    pub provider_ref: Option<String>,
    /// Another id of the same payment, tried after `provider_ref` (Stripe's
    /// charge id beside its PaymentIntent id).
    pub alt_ref: Option<String>,
    /// The merchant's reference, where the report carries it.
    pub merchant_ref: Option<String>,
    /// Gross, in minor units; negative for money going back.
    pub amount: i64,
    pub currency: String,
    pub fee: Option<i64>,
    /// The account the line says it is of, where the report names one per
    /// line (Adyen's `Merchant Account`: "The report may contain line
    /// items for multiple merchant accounts"; WeChat Pay's 特约商户号, the
    /// sub-merchant of a service provider's bill). `None`: the report's own.
    pub account: Option<String>,
}

impl SettlementLine {
    /// The references the line may be matched by, in the order they are
    /// tried: the provider's id, another id of the provider's, the
    /// merchant's reference.
    pub fn references(&self) -> impl Iterator<Item = &str> {
        [&self.provider_ref, &self.alt_ref, &self.merchant_ref]
            .into_iter()
            .filter_map(|r| r.as_deref())
    }
}

/// Why a report could not be read: the line, the column and what was wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {column}: {message}")]
pub struct ReportError {
    pub line: u64,
    pub column: String,
    pub message: String,
}

impl ReportError {
    fn new(line: u64, column: &str, message: impl std::fmt::Display) -> Self {
        ReportError {
            line,
            column: column.to_string(),
            message: message.to_string(),
        }
    }
}

/// A fee written with more decimal places than its currency has (WeChat
/// Pay writes `7.79000`), in minor units: extra places that are zeros are
/// dropped, others round half away from zero. Fees are reported, never
/// decided on; amounts that decide must be exact (`parse_decimal`).
fn fee_minor(ccy: Currency, text: &str) -> Result<i64, DecimalError> {
    let t = text.trim();
    let exp = ccy.exponent() as usize;
    if let Some((int, frac)) = t.split_once('.') {
        if frac.len() > exp && frac.bytes().all(|b| b.is_ascii_digit()) {
            let (keep, extra) = frac.split_at(exp);
            let base = if exp == 0 {
                ccy.parse_decimal(int)?
            } else {
                ccy.parse_decimal(&format!("{int}.{keep}"))?
            };
            let up = i64::from(extra.as_bytes()[0] >= b'5');
            let rounded = if base < 0 || int.starts_with('-') {
                base.checked_sub(up)
            } else {
                base.checked_add(up)
            };
            return rounded.ok_or_else(|| DecimalError::TooLarge(text.to_string()));
        }
    }
    ccy.parse_decimal(t)
}

/// Lines of a text report in a legacy Chinese encoding (GBK, as Alipay's
/// bills come) or in UTF-8: the first 8 KiB decide (valid UTF-8, or a
/// byte-order mark, means UTF-8). Streamed: nothing is read whole.
fn decode_gbk_or_utf8<'a, R: Read + Send + 'a>(
    input: R,
) -> Result<Box<dyn Read + Send + 'a>, ReportError> {
    use std::io::BufRead;
    let mut input = std::io::BufReader::with_capacity(8192, input);
    let head = input
        .fill_buf()
        .map_err(|e| ReportError::new(1, "file", e.to_string()))?;
    let utf8 = match std::str::from_utf8(head) {
        Ok(_) => true,
        // Cut inside a character at the buffer's end: still UTF-8.
        Err(e) => e.error_len().is_none(),
    };
    let encoding = if utf8 { None } else { Some(encoding_rs::GBK) };
    Ok(Box::new(
        encoding_rs_io::DecodeReaderBytesBuilder::new()
            .encoding(encoding)
            .bom_override(true)
            .build(input),
    ))
}

/// A report's layout.
#[derive(Debug, Clone, PartialEq)]
pub enum Format {
    /// Any CSV, its columns named.
    Columns(Columns),
    /// Adyen's Settlement details report (`settlement_detail_report_batch_N.csv`),
    /// columns by name as Adyen documents them: `Psp Reference`, `Merchant
    /// Reference`, `Type`, `Gross Currency`, `Gross Debit (GC)`, `Gross
    /// Credit (GC)`, `Commission (NC)`, … Source:
    /// docs.adyen.com/reporting/settlement-reconciliation/transaction-level/settlement-details-report.
    AdyenSettlementDetails,
    /// Stripe's itemized reports (`balance_change_from_activity.itemized.*`,
    /// `payout_reconciliation.itemized.*`), columns by name as Stripe's
    /// report-type pages document them: `payment_intent_id`, `charge_id`,
    /// `source_id`, `reporting_category`, `currency`, `gross`, `fee`.
    /// Source: docs.stripe.com/reports/report-types/balance.
    StripeItemized,
    /// PayPal's Settlement Report (`STL-yyyymmdd.…`): `RH`/`SH`/`CH`/`SB`/
    /// `SF`… rows, `SB` rows read by the names of the latest `CH` row,
    /// amounts ×100 in every currency. Source:
    /// developer.paypal.com/docs/reports/sftp-reports/settlement-report/.
    PaypalStl,
    /// WeChat Pay's trade bill (交易账单, `bill_type` ALL, SUCCESS or
    /// REFUND): a header row, data rows whose every field starts with a
    /// backtick, then a summary header and row; amounts in yuan. Source:
    /// pay.weixin.qq.com/docs/merchant/products/bill-download/format-trade.html.
    WechatTradeBill,
    /// Alipay's trade bill (业务明细, from
    /// `alipay.data.dataservice.bill.downloadurl.query`, `bill_type=trade`):
    /// GBK, `#` lines around a 25-column table, amounts in yuan.
    AlipayTradeBill,
}

/// Every format's name, as `--format` and `format=` take it.
pub const FORMAT_NAMES: &[&str] = &[
    "adyen-settlement-details",
    "stripe-itemized",
    "paypal-stl",
    "wechat-trade-bill",
    "alipay-trade-bill",
    "csv",
];

/// A format asked for by name, as the CLI's flags and the API's query
/// parameters give it: one place decides what the names mean.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FormatSpec {
    /// One of [`FORMAT_NAMES`]: `csv` takes the columns below.
    pub format: String,
    pub reference: Option<String>,
    pub amount: Option<String>,
    pub currency: Option<String>,
    pub kind: Option<String>,
    /// `VALUE=kind` each (`SALE=charge`).
    pub kinds: Vec<String>,
    pub fee: Option<String>,
    pub merchant_ref: Option<String>,
    pub decimal: bool,
}

/// A [`FormatSpec`] that does not make a format: the parameter at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SpecError {
    pub field: &'static str,
    pub message: String,
}

impl FormatSpec {
    pub fn build(self) -> Result<Format, SpecError> {
        let err = |field, message: String| SpecError { field, message };
        match self.format.as_str() {
            "adyen-settlement-details" => Ok(Format::AdyenSettlementDetails),
            "stripe-itemized" => Ok(Format::StripeItemized),
            "paypal-stl" => Ok(Format::PaypalStl),
            "wechat-trade-bill" => Ok(Format::WechatTradeBill),
            "alipay-trade-bill" => Ok(Format::AlipayTradeBill),
            "csv" => {
                let need = |v: Option<String>, field: &'static str| {
                    v.ok_or_else(|| {
                        err(
                            field,
                            format!("format `csv` needs `{field}`, the name of its column"),
                        )
                    })
                };
                let mut kinds = Vec::with_capacity(self.kinds.len());
                for k in &self.kinds {
                    let (value, kind) = k
                        .split_once('=')
                        .ok_or_else(|| err("kinds", format!("`{k}` is not VALUE=KIND")))?;
                    let kind: LineKind = kind
                        .parse()
                        .map_err(|e: UnknownLineKind| err("kinds", e.to_string()))?;
                    kinds.push((value.to_string(), kind));
                }
                Ok(Format::Columns(Columns {
                    reference: need(self.reference, "reference")?,
                    amount: need(self.amount, "amount")?,
                    currency: need(self.currency, "currency")?,
                    kind: self.kind,
                    kinds,
                    fee: self.fee,
                    merchant_ref: self.merchant_ref,
                    decimal: self.decimal,
                }))
            }
            other => Err(err(
                "format",
                format!("unknown format `{other}` ({})", FORMAT_NAMES.join(", ")),
            )),
        }
    }
}

/// A stream of a report's lines.
pub type Lines<'a> = Box<dyn Iterator<Item = Result<SettlementLine, ReportError>> + Send + 'a>;

impl Format {
    /// Read `input` in this layout, line by line.
    pub fn read<'a, R: Read + Send + 'a>(&'a self, input: R) -> Result<Lines<'a>, ReportError> {
        match self {
            Format::Columns(c) => Ok(Box::new(read_csv(input, c)?)),
            Format::AdyenSettlementDetails => Ok(Box::new(adyen::read_adyen(input)?)),
            Format::StripeItemized => Ok(Box::new(stripe::read_stripe(input)?)),
            Format::PaypalStl => Ok(Box::new(paypal::read_stl(input)?)),
            Format::WechatTradeBill => Ok(Box::new(wechat::read_trade_bill(input)?)),
            Format::AlipayTradeBill => Ok(Box::new(alipay::read_trade_bill(input)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header each dedicated format accepts.
    fn formats() -> Vec<(Format, &'static str)> {
        vec![
            (
                Format::AdyenSettlementDetails,
                "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC)\n",
            ),
            (
                Format::StripeItemized,
                "payment_intent_id,charge_id,reporting_category,currency,gross,fee\n",
            ),
            (
                Format::PaypalStl,
                "\"CH\",\"Transaction ID\",\"Invoice ID\",\"PayPal Reference ID\",\"Transaction Event Code\",\"Transaction Debit or Credit\",\"Gross Transaction Amount\",\"Gross Transaction Currency\",\"Fee Debit or Credit\",\"Fee Amount\"\n",
            ),
            (
                Format::WechatTradeBill,
                "交易时间,微信订单号,商户订单号,交易状态,货币种类,应结订单金额,退款金额,退款状态,手续费,订单金额\n",
            ),
            (
                Format::AlipayTradeBill,
                "#支付宝业务明细查询\n支付宝交易号,商户订单号,业务类型,订单金额（元）,商家实收（元）,服务费（元）\n",
            ),
        ]
    }

    proptest::proptest! {
        /// Whatever follows the header, every format ends in lines or in
        /// errors that name a line and a column: no panic, nothing skipped
        /// silently.
        #[test]
        fn every_format_reads_or_fails_with_a_named_column(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            which in 0usize..5,
        ) {
            let (format, header) = formats().swap_remove(which);
            let mut input = header.as_bytes().to_vec();
            input.extend(body);
            let read: Vec<_> = match format.read(std::io::Cursor::new(input)) {
                Ok(lines) => lines.collect(),
                Err(e) => vec![Err(e)],
            };
            for line in read {
                match line {
                    Ok(l) => proptest::prop_assert!(l.line >= 1),
                    Err(e) => proptest::prop_assert!(!e.column.is_empty() && e.line >= 1, "{e}"),
                }
            }
        }

        /// Rows written as each format documents them read back as what
        /// was written: amount, currency, kind, reference.
        #[test]
        fn written_rows_read_back(amount in 1i64..10_000_000, jpy in proptest::bool::ANY, refund in proptest::bool::ANY) {
            let (ccy, exp) = if jpy { ("JPY", 0u32) } else { ("EUR", 2) };
            let decimal = if exp == 0 {
                amount.to_string()
            } else {
                format!("{}.{:02}", amount / 100, amount % 100)
            };
            let signed = if refund { -amount } else { amount };
            // Stripe: signed major units, category.
            let cat = if refund { "refund" } else { "charge" };
            let minus = if refund { "-" } else { "" };
            let stripe = format!("payment_intent_id,reporting_category,currency,gross\npi_1,{cat},{},{minus}{decimal}\n", ccy.to_lowercase());
            let l = Format::StripeItemized.read(stripe.as_bytes()).unwrap().next().unwrap().unwrap();
            proptest::prop_assert_eq!((l.amount, l.currency.as_str()), (signed, ccy));
            // PayPal: ×100 in every currency, CR/DR.
            let stl_amount = amount * 10i64.pow(2 - exp);
            let (code, dc) = if refund { ("T1107", "DR") } else { ("T0006", "CR") };
            let stl = format!("{}\"SB\",\"T1\",\"inv\",\"T0\",\"{code}\",\"{dc}\",{stl_amount},\"{ccy}\",\"\",\n", formats()[2].1);
            let l = Format::PaypalStl.read(stl.as_bytes()).unwrap().next().unwrap().unwrap();
            proptest::prop_assert_eq!((l.amount, l.currency.as_str()), (signed, ccy));
            let want_ref = if refund { "T0" } else { "T1" };
            proptest::prop_assert_eq!(l.provider_ref.as_deref(), Some(want_ref));
            // Adyen: unsigned, credit for money in, debit for money out.
            let (debit, credit, kind) = if refund { (decimal.as_str(), "", "Refunded") } else { ("", decimal.as_str(), "Settled") };
            let adyen = format!("{}C,M,psp1,ref1,visa,2026-01-01 00:00:00,UTC,{kind},m1,{ccy},{debit},{credit},1,{ccy},,,,,,\n", formats()[0].1);
            let l = Format::AdyenSettlementDetails.read(adyen.as_bytes()).unwrap().next().unwrap().unwrap();
            proptest::prop_assert_eq!((l.amount, l.currency.as_str()), (signed, ccy));
        }
    }
}
