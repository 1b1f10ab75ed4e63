//! Alipay's trade bill (业务明细, `…_业务明细.csv` in the zip that
//! `alipay.data.dataservice.bill.downloadurl.query` with `bill_type=trade`
//! points at). Layout and sources: docs/SETTLEMENT_FORMATS.md §4.2.
//!
//! - GBK-encoded (UTF-8 is accepted too: the first 8 KiB decide).
//! - `#` lines before and after the table (account, dates, "业务明细列表",
//!   totals, export time) are skipped; the table's header is the first
//!   other line and must have `支付宝交易号`.
//! - Ids are often padded with a tab (`2026…\t,`): every cell is trimmed.
//! - What a row is: `业务类型`, `交易` (a payment) or `退款` (a refund);
//!   amounts in yuan. A refund's amount is what the merchant gave back
//!   (`商家实收（元）`, negative), else `订单金额（元）`, taken as money out
//!   whatever its sign.
//! - The payment: `支付宝交易号` (Alipay's `trade_no`) and the merchant's
//!   `商户订单号` (`out_trade_no`); a refund row carries its payment's.

use super::header::{record, Header};
use super::{LineKind, ReportError, SettlementLine};
use finality_core::money::Currency;
use std::io::Read;

const TRADE_NO: &str = "支付宝交易号";
const OUT_TRADE_NO: &str = "商户订单号";
const BUSINESS: &str = "业务类型";
const ORDER_AMOUNT: &str = "订单金额（元）";
const RECEIVED: &str = "商家实收（元）";
const FEE: &str = "服务费（元）";

/// Where the columns are, from the table's header row.
struct Columns {
    width: usize,
    trade_no: usize,
    out_trade_no: usize,
    business: usize,
    order_amount: usize,
    received: Option<usize>,
    fee: Option<usize>,
}

impl Columns {
    fn from_header(rec: &csv::StringRecord, line: u64) -> Result<Self, ReportError> {
        let header = Header::of(rec, line);
        let pos = |name: &str| header.pos(name);
        let need = |name: &str| {
            header.need(
                name,
                "no such column in the header: not an Alipay trade bill (业务明细), or not \
                 GBK or UTF-8?",
            )
        };
        Ok(Columns {
            width: header.len(),
            trade_no: need(TRADE_NO)?,
            out_trade_no: need(OUT_TRADE_NO)?,
            business: need(BUSINESS)?,
            order_amount: need(ORDER_AMOUNT)?,
            received: pos(RECEIVED),
            fee: pos(FEE),
        })
    }
}

pub(super) fn read_trade_bill<'a, R: Read + Send + 'a>(
    input: R,
) -> Result<impl Iterator<Item = Result<SettlementLine, ReportError>> + Send + 'a, ReportError> {
    // The `#` lines are read as rows and skipped here (the CSV reader's own
    // comment handling does not count them in line numbers).
    let reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(super::decode_gbk_or_utf8(input)?);
    let mut cols: Option<Columns> = None;
    let mut failed = false;
    Ok(reader.into_records().filter_map(move |rec| {
        if failed {
            return None;
        }
        let (rec, line) = match record(rec) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let first = rec
            .get(0)
            .unwrap_or_default()
            .trim_start_matches('\u{feff}');
        if first.starts_with('#') || rec.iter().all(|c| c.trim().is_empty()) {
            return None;
        }
        match &cols {
            None => match Columns::from_header(&rec, line) {
                Ok(c) => {
                    cols = Some(c);
                    None
                }
                Err(e) => {
                    // Without a header, no later row can be read.
                    failed = true;
                    Some(Err(e))
                }
            },
            Some(c) => Some(row(&rec, c, line)),
        }
    }))
}

fn row(rec: &csv::StringRecord, c: &Columns, line: u64) -> Result<SettlementLine, ReportError> {
    // Fields are not quoted: a comma in free text (商品名称, 备注) shifts
    // every column after it. Refuse rather than read the wrong column.
    if rec.len() != c.width {
        return Err(ReportError::new(
            line,
            "row",
            format!(
                "{} fields where the header has {} (a comma in a text field?)",
                rec.len(),
                c.width
            ),
        ));
    }
    // Alipay's domestic bills are in yuan.
    let cny = Currency::parse("CNY").map_err(|e| ReportError::new(line, "currency", e.message))?;
    let get = |i: usize| rec.get(i).unwrap_or_default().trim();
    let money = |i: usize, name: &str| {
        cny.parse_decimal(get(i))
            .map_err(|m| ReportError::new(line, name, m))
    };
    let kind = match get(c.business) {
        "交易" => LineKind::Charge,
        "退款" => LineKind::Refund,
        "" => {
            return Err(ReportError::new(
                line,
                BUSINESS,
                "empty: a payment (交易) or a refund (退款)?",
            ))
        }
        _ => LineKind::Other,
    };
    let amount = match kind {
        LineKind::Charge => money(c.order_amount, ORDER_AMOUNT)?,
        LineKind::Refund => match c.received.filter(|&i| !get(i).is_empty()) {
            Some(i) => -money(i, RECEIVED)?.abs(),
            None => -money(c.order_amount, ORDER_AMOUNT)?.abs(),
        },
        _ => 0,
    };
    let fee = match c.fee.map(get) {
        Some(t) if !t.is_empty() => Some(
            cny.parse_decimal(t)
                .map_err(|m| ReportError::new(line, FEE, m))?,
        ),
        _ => None,
    };
    let text = |i: usize| Some(get(i)).filter(|s| !s.is_empty()).map(str::to_string);
    Ok(SettlementLine {
        line,
        kind,
        provider_ref: text(c.trade_no),
        alt_ref: None,
        merchant_ref: text(c.out_trade_no),
        amount,
        currency: cny.as_str().to_string(),
        fee: fee.filter(|f| *f != 0),
        account: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Format;
    use super::*;

    /// The detail header as three independent public parsers of this bill
    /// have it, identically (docs/SETTLEMENT_FORMATS.md §4.2; Alipay's own
    /// page was not reachable). Full-width parentheses are part of it.
    const HEADER: &str = "支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注";

    /// A bill shaped as public integrations' tests show real ones: `#`
    /// lines around the table, tab-padded ids, a payment, its partial
    /// refund (negative 商家实收), and a fee.
    fn bill() -> String {
        format!(
            "#支付宝业务明细查询\n\
             #账号：[20880000000000000156]\n\
             #起始日期：[2026年11月30日 00:00:00]   终止日期：[2026年12月01日 00:00:00]\n\
             #-----------------------------------------业务明细列表----------------------------------------\n\
             {HEADER}\n\
             2026113022001400000000000001\t,order-1\t,交易\t,T-shirt,2026-11-30 10:00:00,2026-11-30 10:00:05,\t,\t,\t,\t,**明(138******00)\t,99.00,99.00,0.00,0.00,0.00,0.00,0.00,,0.00\t,0.00,\t,0.59,0.00,\n\
             2026113022001400000000000001\t,order-1\t,退款\t,T-shirt,2026-11-30 12:00:00,2026-11-30 12:00:03,\t,\t,\t,\t,**明(138******00)\t,99.00,-20.00,0.00,0.00,0.00,0.00,0.00,,0.00\t,0.00,R-order-1-1\t,-0.12,0.00,部分退款\n\
             #-----------------------------------------业务明细列表结束------------------------------------\n\
             #交易合计：1笔，商家实收共99.00元，商家优惠共0.00元\n\
             #退款合计：1笔，商家实收退款共-20.00元，商家优惠退款共0.00元\n\
             #导出时间：[2026年12月01日 09:12:41]\n"
        )
    }

    fn lines(bytes: &[u8]) -> Vec<SettlementLine> {
        Format::AlipayTradeBill
            .read(bytes)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_bill_in_gbk_as_alipay_sends_it() {
        let text = bill();
        let (gbk, _, lossy) = encoding_rs::GBK.encode(&text);
        assert!(!lossy);
        assert!(std::str::from_utf8(&gbk).is_err(), "really GBK");
        let l = lines(&gbk);
        assert_eq!(l.len(), 2, "the # lines are not lines");
        assert_eq!(l[0].line, 6);
        assert_eq!(l[0].kind, LineKind::Charge);
        assert_eq!(
            l[0].provider_ref.as_deref(),
            Some("2026113022001400000000000001")
        );
        assert_eq!(l[0].merchant_ref.as_deref(), Some("order-1"));
        assert_eq!(
            (l[0].amount, l[0].currency.as_str(), l[0].fee),
            (9900, "CNY", Some(59))
        );
        assert_eq!((l[1].kind, l[1].amount), (LineKind::Refund, -2000));
        assert_eq!(l[1].provider_ref, l[0].provider_ref, "tied to its payment");
    }

    #[test]
    fn the_same_bill_in_utf8() {
        assert_eq!(lines(bill().as_bytes()).len(), 2);
    }

    #[test]
    fn errors_name_the_line_and_the_column() {
        let bad = bill().replace("99.00,99.00", "99.0.0,99.00");
        let (gbk, _, _) = encoding_rs::GBK.encode(&bad);
        let out: Vec<_> = Format::AlipayTradeBill.read(&gbk[..]).unwrap().collect();
        let e = out[0].clone().unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (6, ORDER_AMOUNT), "{e}");
        let out: Vec<_> = Format::AlipayTradeBill
            .read("#x\na,b\n1,2\n".as_bytes())
            .unwrap()
            .collect();
        assert_eq!(out.len(), 1, "one error, then nothing");
        let e = out[0].clone().unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (2, TRADE_NO), "{e}");
    }
}
