//! WeChat Pay's trade bill (交易账单): `GET /v3/bill/tradebill` (APIv3) or
//! `POST /pay/downloadbill` (APIv2), `bill_type` ALL, SUCCESS or REFUND.
//! Layout and sources: docs/SETTLEMENT_FORMATS.md §5.
//!
//! - Four parts: the detail header, the detail rows, the summary header
//!   (`总交易单数,…`), the summary row. "明细数据和汇总数据每个字段前会增加1个
//!   字符" — every field of the data rows starts with one extra character, a
//!   backtick, so spreadsheets do not show long ids in scientific notation;
//!   the header rows have none.
//! - "对账单中涉及金额的字段单位为“元”": amounts in yuan, decimals; fees
//!   (`手续费`) with five decimal places.
//! - What a row is: `交易状态` — `SUCCESS` a payment, `REFUND` a refund (a
//!   snapshot: "出账后退款状态不会更新", so only `退款状态` SUCCESS is
//!   taken as a refund; a refund still processing is `Other`).
//! - The payment: `微信订单号` (WeChat's `transaction_id`), and the
//!   merchant's `商户订单号` (`out_trade_no`).

use super::header::{record, Header};
use super::{fee_minor, LineKind, ReportError, SettlementLine};
use finality_core::money::Currency;
use std::io::Read;

const TIME: &str = "交易时间";
const TRANSACTION_ID: &str = "微信订单号";
const OUT_TRADE_NO: &str = "商户订单号";
const STATE: &str = "交易状态";
const CURRENCY: &str = "货币种类";
const ORDER_AMOUNT: &str = "订单金额";
const SETTLEMENT_AMOUNT: &str = "应结订单金额";
const REFUND_AMOUNT: &str = "退款金额";
const REFUND_STATE: &str = "退款状态";
const FEE: &str = "手续费";
/// A service provider's bill: the sub-merchant each row is of ("Sub vendor
/// ID(sub_mch_id) | 服务商模式下具体交易归属的商户号", WeChat Pay's bill
/// guide).
const SUB_MCHID: &str = "特约商户号";
/// The first cell of the summary header: what follows is totals.
const SUMMARY: &str = "总交易单数";

/// A data row's fields, each without its leading backtick. Free text
/// (商品名称, 商户数据包) is not quoted and may hold a comma: a piece that
/// does not start with a backtick belongs to the field before it.
fn fields(rec: &csv::StringRecord) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(rec.len());
    for piece in rec.iter() {
        match (piece.strip_prefix('`'), out.last_mut()) {
            (None, Some(last)) => {
                last.push(',');
                last.push_str(piece);
            }
            (Some(v), _) => out.push(v.to_string()),
            (None, None) => out.push(piece.to_string()),
        }
    }
    out
}

fn cell(f: &[String], i: usize) -> &str {
    f.get(i).map_or("", |s| s.trim())
}

pub(super) fn read_trade_bill<'a, R: Read + Send + 'a>(
    input: R,
) -> Result<impl Iterator<Item = Result<SettlementLine, ReportError>> + Send + 'a, ReportError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(super::decode_gbk_or_utf8(input)?);
    let header = Header::read(&mut reader)?;
    let pos = |name: &str| header.pos(name);
    let need = |name: &str| {
        header.need(
            name,
            "no such column in the header: not a WeChat Pay trade bill?",
        )
    };
    need(TIME)?;
    let txn = need(TRANSACTION_ID)?;
    let out_trade_no = need(OUT_TRADE_NO)?;
    let state = need(STATE)?;
    let currency = need(CURRENCY)?;
    // ALL and SUCCESS bills carry the order amount; older ones only the
    // amount to settle.
    let (amount_col, amount_name) = match pos(ORDER_AMOUNT) {
        Some(i) => (i, ORDER_AMOUNT),
        None => (need(SETTLEMENT_AMOUNT)?, SETTLEMENT_AMOUNT),
    };
    let refund_amount = pos(REFUND_AMOUNT);
    let refund_state = pos(REFUND_STATE);
    let fee = pos(FEE);
    let sub_mchid = pos(SUB_MCHID);
    let width = header.len();
    let mut in_summary = false;
    Ok(reader.into_records().filter_map(move |rec| {
        let (rec, line) = match record(rec) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        if in_summary || rec.get(0) == Some(SUMMARY) {
            in_summary = true;
            return None;
        }
        let f = fields(&rec);
        if f.len() == 1 && cell(&f, 0).is_empty() {
            return None;
        }
        if f.len() != width {
            return Some(Err(ReportError::new(
                line,
                "row",
                format!("{} fields where the header has {width}", f.len()),
            )));
        }
        Some(row(
            &f,
            line,
            RowColumns {
                txn,
                out_trade_no,
                state,
                currency,
                amount: (amount_col, amount_name),
                refund_amount,
                refund_state,
                fee,
                sub_mchid,
            },
        ))
    }))
}

#[derive(Clone, Copy)]
struct RowColumns {
    txn: usize,
    out_trade_no: usize,
    state: usize,
    currency: usize,
    amount: (usize, &'static str),
    refund_amount: Option<usize>,
    refund_state: Option<usize>,
    fee: Option<usize>,
    sub_mchid: Option<usize>,
}

fn row(rec: &[String], line: u64, c: RowColumns) -> Result<SettlementLine, ReportError> {
    let ccy = Currency::parse(cell(rec, c.currency))
        .map_err(|e| ReportError::new(line, CURRENCY, e.message))?;
    let money = |i: usize, name: &str| {
        ccy.parse_decimal(cell(rec, i))
            .map_err(|m| ReportError::new(line, name, m))
    };
    // A bill without the refund-status column lists refunds that happened.
    let refunded = c.refund_state.is_none_or(|i| cell(rec, i) == "SUCCESS");
    let (kind, amount) = match cell(rec, c.state) {
        "SUCCESS" => (LineKind::Charge, money(c.amount.0, c.amount.1)?),
        "REFUND" if refunded => match c.refund_amount {
            Some(i) => (LineKind::Refund, -money(i, REFUND_AMOUNT)?),
            None => {
                return Err(ReportError::new(
                    line,
                    REFUND_AMOUNT,
                    "a refund row in a bill without a refund amount column",
                ))
            }
        },
        "" => {
            return Err(ReportError::new(
                line,
                STATE,
                "empty: a payment (SUCCESS) or a refund (REFUND)?",
            ))
        }
        _ => (LineKind::Other, 0),
    };
    let fee = match c.fee.map(|i| cell(rec, i)) {
        Some(t) if !t.is_empty() => {
            Some(fee_minor(ccy, t).map_err(|m| ReportError::new(line, FEE, m))?)
        }
        _ => None,
    };
    let text = |i: usize| {
        Some(cell(rec, i))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    Ok(SettlementLine {
        line,
        kind,
        provider_ref: text(c.txn),
        alt_ref: None,
        merchant_ref: text(c.out_trade_no),
        amount,
        currency: ccy.as_str().to_string(),
        fee: fee.filter(|f| *f != 0),
        // A merchant's own bill writes `0` here (no sub-merchant): the
        // line is the report's own, not an account named "0".
        account: c.sub_mchid.and_then(text).filter(|s| s != "0"),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Format;
    use super::*;

    fn read(body: &str) -> Vec<Result<SettlementLine, ReportError>> {
        Format::WechatTradeBill
            .read(body.as_bytes())
            .unwrap()
            .collect()
    }

    /// WeChat Pay publishes its sample bill only as an image; these are
    /// the APIv3 downloads reproduced in an SDK's tests,
    /// gunsluo/wechatpay-go `tradebill_test.go` (commit 599175d3),
    /// verbatim: an ALL bill with three payments and its summary.
    const ALL: &str = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注
`2021-01-28 17:07:11,`wx81be3101902f7cb2,`1601959334,`0,`,`4200000925202101284997714292,`S20210128170702357723,`ofyak5qR_1wYsC99CsWA6R9MJazA,`NATIVE,`SUCCESS,`OTHERS,`CNY,`0.01,`0.00,`0,`0,`0.00,`0.00,`,`,`for testing,`cipher code,`0.00000,`1.00%,`0.01,`0.00,`
`2021-01-28 15:35:18,`wx81be3101902f7cb2,`1601959334,`0,`,`4200000910202101282955148400,`S20210128153505214586,`ofyak5qR_1wYsC99CsWA6R9MJazA,`NATIVE,`SUCCESS,`OTHERS,`CNY,`0.01,`0.00,`0,`0,`0.00,`0.00,`,`,`for testing,`cipher code,`0.00000,`1.00%,`0.01,`0.00,`
`2021-01-28 16:59:46,`wx81be3101902f7cb2,`1601959334,`0,`,`4200000926202101281412639609,`S20210128165824499930,`ofyak5qR_1wYsC99CsWA6R9MJazA,`NATIVE,`SUCCESS,`OTHERS,`CNY,`0.01,`0.00,`0,`0,`0.00,`0.00,`,`,`for testing,`cipher code,`0.00000,`1.00%,`0.01,`0.00,`
总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额
`3,`0.03,`0.00,`0.00,`0.00000,`0.03,`0.00
";

    /// The same repository's REFUND bill (its header, then its row).
    const REFUND: &str = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,退款申请时间,退款成功时间,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注
`2021-01-24 16:16:25,`wx81be3101902f7cb2,`1601959334,`0,`,`4200000844202101245866928772,`S20210124161554311546,`ofyak5qR_1wYsC99CsWA6R9MJazA,`NATIVE,`REFUND,`OTHERS,`CNY,`0.00,`0.00,`2021-02-01 14:33:21,`2021-02-01 14:33:24,`50300807172021020106006664916,`S20210201143320649393,`0.01,`0.00,`ORIGINAL,`SUCCESS,`for testing,`cipher code,`0.00000,`1.00%,`0.00,`0.01,`
总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额
`2,`0.00,`0.02,`0.00,`0.00000,`0.00,`0.02
";

    #[test]
    fn sdk_all_bill() {
        let lines: Vec<_> = read(ALL).into_iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(lines.len(), 3, "the summary is not a line");
        let first = &lines[0];
        assert_eq!(first.line, 2);
        assert_eq!(first.kind, LineKind::Charge);
        assert_eq!(
            first.provider_ref.as_deref(),
            Some("4200000925202101284997714292")
        );
        assert_eq!(first.merchant_ref.as_deref(), Some("S20210128170702357723"));
        assert_eq!(
            (first.amount, first.currency.as_str(), first.fee),
            (1, "CNY", None)
        );
    }

    #[test]
    fn sdk_refund_bill_with_a_byte_order_mark() {
        let lines: Vec<_> = read(&format!("\u{feff}{REFUND}"))
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].kind, LineKind::Refund);
        assert_eq!(lines[0].amount, -1);
        assert_eq!(
            lines[0].provider_ref.as_deref(),
            Some("4200000844202101245866928772"),
            "the payment it takes back, not the refund's own id"
        );
    }

    #[test]
    fn a_comma_in_free_text_stays_in_its_field() {
        let header = ALL.lines().next().unwrap();
        let body = format!(
            "{header}\n\
             `2021-01-28 17:07:11,`wx1,`1,`0,`,`42001,`S1,`o,`NATIVE,`SUCCESS,`OTHERS,`CNY,`12.00,`0.00,`0,`0,`0.00,`0.00,`,`,`T-shirt, blue,`a,b,`0.07000,`0.60%,`12.00,`0.00,`\n\
             `2021-01-28 17:07:12,`wx1,`1,`0,`,`42002,`S2,`o,`NATIVE,`SUCCESS,`OTHERS,`CNY\n"
        );
        let out = read(&body);
        let first = out[0].as_ref().unwrap();
        assert_eq!((first.amount, first.fee), (1200, Some(7)));
        let e = out[1].clone().unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (3, "row"), "{e}");
        assert!(
            e.message.contains("12 fields where the header has 27"),
            "{e}"
        );
    }

    #[test]
    fn fees_with_five_places_and_errors_by_line() {
        let header = ALL.lines().next().unwrap();
        let body = format!(
            "{header}\n\
             `2021-01-28 17:07:11,`wx1,`1,`0,`,`42001,`S1,`o,`NATIVE,`SUCCESS,`OTHERS,`CNY,`1299.02,`0.00,`0,`0,`0.00,`0.00,`,`,`x,`y,`7.79000,`0.60%,`1299.02,`0.00,`\n\
             `2021-01-28 17:07:12,`wx1,`1,`0,`,`42002,`S2,`o,`NATIVE,`SUCCESS,`OTHERS,`CNY,`12.3.4,`0.00,`0,`0,`0.00,`0.00,`,`,`x,`y,`0.00000,`0.60%,`12.3.4,`0.00,`\n\
             `2021-01-28 17:07:13,`wx1,`1,`0,`,`42003,`S3,`o,`NATIVE,`REVOKED,`OTHERS,`CNY,`0.00,`0.00,`0,`0,`0.00,`0.00,`,`,`x,`y,`0.00000,`0.60%,`5.00,`0.00,`\n"
        );
        let out = read(&body);
        let first = out[0].as_ref().unwrap();
        assert_eq!((first.amount, first.fee), (129902, Some(779)));
        let e = out[1].clone().unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (3, ORDER_AMOUNT), "{e}");
        assert_eq!(out[2].as_ref().unwrap().kind, LineKind::Other);
        let e = Format::WechatTradeBill
            .read("a,b\n".as_bytes())
            .err()
            .unwrap();
        assert_eq!((e.line, e.column.as_str()), (1, TIME));
    }
}
