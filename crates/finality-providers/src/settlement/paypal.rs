//! PayPal's Settlement Report (`STL-yyyymmdd.sequence.version.CSV`, SFTP
//! `/ppreports/outgoing`). Layout and sources: docs/SETTLEMENT_FORMATS.md §3.
//!
//! - A file of typed rows, the type in the first field: `RH` report
//!   header, `FH` file header, `SH` section header, `CH` the column names
//!   of the section's `SB` rows, `SB` one transaction event, `SF`/`SC`
//!   section totals and count, `RF`/`RC` report totals and count, `FF`.
//!   `SB` rows are read by the names of the latest `CH` row (PayPal added
//!   columns over the versions; whitespace in names is normalised, since
//!   older files spell `Transaction  Debit or Credit` with two spaces).
//! - UTF-8, maybe with a byte-order mark; text fields quoted, numbers not.
//! - "Money amount fields are unsigned, with no currency symbol, decimal
//!   separator, or other punctuation. Amounts should be interpreted by the
//!   debit or credit column … 100,00 yen and $100.00 USD are both
//!   represented as 10000": ×100 in every currency, whatever its ISO 4217
//!   exponent (PayPal's settlement-report page, "Know before you begin").
//! - What a row is: its `Transaction Event Code` (T-code). A refund's or a
//!   chargeback's own `Transaction ID` is new; the payment it takes back is
//!   its `PayPal Reference ID`.

use super::header::{record, Header};
use super::{LineKind, ReportError, SettlementLine};
use finality_core::money::Currency;
use std::io::{BufRead, Read};

/// Row types PayPal documents; anything else means this is not an STL
/// file (or a damaged one).
const ROW_TYPES: &[&str] = &["RH", "FH", "SH", "CH", "SB", "SF", "SC", "RF", "RC", "FF"];

/// T-codes in finality's terms (PayPal's transaction event codes:
/// developer.paypal.com/docs/transaction-search/transaction-event-codes).
/// T00xx are payments; T1107 a refund; T1106 a reversal by PayPal and
/// T1201 a chargeback; T01xx fees (T0106 the chargeback fee); T04xx
/// withdrawals to the bank. A chargeback reversal (T1202), currency
/// conversions (T02xx) and the rest are `Other`.
fn stl_kind(code: &str) -> LineKind {
    match code {
        "T1107" => LineKind::Refund,
        "T1106" | "T1201" => LineKind::Chargeback,
        c if c.starts_with("T00") => LineKind::Charge,
        c if c.starts_with("T01") => LineKind::Fee,
        c if c.starts_with("T04") => LineKind::Payout,
        _ => LineKind::Other,
    }
}

const TXN: &str = "Transaction ID";
const CODE: &str = "Transaction Event Code";
const DIRECTION: &str = "Transaction Debit or Credit";
const GROSS: &str = "Gross Transaction Amount";
const CURRENCY: &str = "Gross Transaction Currency";

/// Where the `SB` fields are, from a `CH` row.
struct Columns {
    txn: usize,
    code: usize,
    direction: usize,
    gross: usize,
    currency: usize,
    invoice: Option<usize>,
    reference: Option<usize>,
    fee_direction: Option<usize>,
    fee: Option<usize>,
}

impl Columns {
    fn from_ch(rec: &csv::StringRecord, line: u64) -> Result<Self, ReportError> {
        let header = Header::of(rec, line);
        let need = |n: &str| header.need(n, "not in the column header (CH) row");
        let opt = |n: &str| header.pos(n);
        Ok(Columns {
            txn: need(TXN)?,
            code: need(CODE)?,
            direction: need(DIRECTION)?,
            gross: need(GROSS)?,
            currency: need(CURRENCY)?,
            invoice: opt("Invoice ID"),
            reference: opt("PayPal Reference ID"),
            fee_direction: opt("Fee Debit or Credit"),
            fee: opt("Fee Amount"),
        })
    }
}

/// An STL amount (×100, unsigned) in `currency`'s minor units.
fn minor(text: &str, currency: Currency, line: u64, col: &str) -> Result<i64, ReportError> {
    let v: i64 = text.parse().ok().filter(|v| *v >= 0).ok_or_else(|| {
        ReportError::new(
            line,
            col,
            format!("`{text}` is not an unsigned integer amount"),
        )
    })?;
    let exp = currency.exponent();
    let scaled = v
        .checked_mul(10i64.pow(exp))
        .ok_or_else(|| ReportError::new(line, col, format!("`{text}` is too large")))?;
    if scaled % 100 != 0 {
        return Err(ReportError::new(
            line,
            col,
            format!(
                "`{text}` is not a whole amount of {} (PayPal writes every amount ×100)",
                currency.as_str()
            ),
        ));
    }
    Ok(scaled / 100)
}

/// `CR` adds, `DR` takes away.
fn sign(text: &str, line: u64, col: &str) -> Result<i64, ReportError> {
    match text {
        "CR" => Ok(1),
        "DR" => Ok(-1),
        other => Err(ReportError::new(
            line,
            col,
            format!("`{other}` is neither CR nor DR"),
        )),
    }
}

pub(super) fn read_stl<'a, R: Read + Send + 'a>(
    input: R,
) -> Result<impl Iterator<Item = Result<SettlementLine, ReportError>> + Send + 'a, ReportError> {
    let mut input = std::io::BufReader::new(input);
    let bom = input
        .fill_buf()
        .map_err(|e| ReportError::new(1, "file", e.to_string()))?
        .starts_with(b"\xEF\xBB\xBF");
    if bom {
        input.consume(3);
    }
    let reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(input);
    let mut cols: Option<Columns> = None;
    Ok(reader.into_records().filter_map(move |rec| {
        let (rec, line) = match record(rec) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        match rec.get(0).unwrap_or_default() {
            "CH" => match Columns::from_ch(&rec, line) {
                Ok(c) => {
                    cols = Some(c);
                    None
                }
                Err(e) => Some(Err(e)),
            },
            "SB" => Some(match &cols {
                Some(c) => body_row(&rec, c, line),
                None => Err(ReportError::new(
                    line,
                    "CH",
                    "a section body (SB) row before any column header (CH) row",
                )),
            }),
            t if ROW_TYPES.contains(&t) => None,
            "" if rec.len() <= 1 => None,
            other => Some(Err(ReportError::new(
                line,
                "row type",
                format!(
                    "`{other}` is not a settlement report row type ({}): not a PayPal STL file?",
                    ROW_TYPES.join(", ")
                ),
            ))),
        }
    }))
}

/// Check an STL file against its own report footers: every currency's
/// `RF` row gives the report's total gross credits and debits (its 3rd
/// and 4th fields, as PayPal's files and SmashPig's fixtures show them);
/// the `SB` rows must add up to them, and a file with `SB` rows but no
/// `RF` row is cut short. The number of `SB` rows when it checks out.
pub fn check_stl_totals<R: Read>(input: R) -> Result<u64, ReportError> {
    use std::collections::BTreeMap;
    let mut input = std::io::BufReader::new(input);
    if input
        .fill_buf()
        .map_err(|e| ReportError::new(1, "file", e.to_string()))?
        .starts_with(b"\xEF\xBB\xBF")
    {
        input.consume(3);
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(input);
    let mut cols: Option<Columns> = None;
    // currency → (credits, debits), as written (×100).
    let mut rows: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut footers: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut count = 0u64;
    for (i, rec) in reader.records().enumerate() {
        let line = i as u64 + 1;
        let rec = rec.map_err(|e| ReportError::new(line, "row", e.to_string()))?;
        let field = |n: usize| rec.get(n).unwrap_or_default();
        let number = |n: usize| {
            field(n).parse::<i64>().map_err(|_| {
                ReportError::new(line, "amount", format!("`{}` is not an amount", field(n)))
            })
        };
        match field(0) {
            "CH" => cols = Some(Columns::from_ch(&rec, line)?),
            "SB" => {
                let c = cols
                    .as_ref()
                    .ok_or_else(|| ReportError::new(line, "CH", "an SB row before any CH row"))?;
                let t = rows.entry(field(c.currency).to_string()).or_default();
                match field(c.direction) {
                    "CR" => t.0 += number(c.gross)?,
                    "DR" => t.1 += number(c.gross)?,
                    other => {
                        return Err(ReportError::new(
                            line,
                            DIRECTION,
                            format!("`{other}` is neither CR nor DR"),
                        ))
                    }
                }
                count += 1;
            }
            "RF" => {
                let t = footers.entry(field(1).to_string()).or_default();
                t.0 += number(2)?;
                t.1 += number(3)?;
            }
            _ => {}
        }
    }
    if count > 0 && footers.is_empty() {
        return Err(ReportError::new(
            0,
            "RF",
            format!("{count} SB rows and no report footer (RF): the file is cut short"),
        ));
    }
    let currencies: std::collections::BTreeSet<&String> =
        rows.keys().chain(footers.keys()).collect();
    for ccy in currencies {
        let got = rows.get(ccy).copied().unwrap_or_default();
        let said = footers.get(ccy).copied().unwrap_or_default();
        if got != said {
            return Err(ReportError::new(
                0,
                "RF",
                format!(
                "{ccy}: the SB rows add up to gross credits {} and debits {}, the report footer \
                 (RF) says {} and {}: altered or cut short",
                    got.0, got.1, said.0, said.1
                ),
            ));
        }
    }
    Ok(count)
}

fn body_row(
    rec: &csv::StringRecord,
    c: &Columns,
    line: u64,
) -> Result<SettlementLine, ReportError> {
    let get = |i: usize| rec.get(i).unwrap_or_default();
    let opt = |i: Option<usize>| i.map(get).filter(|s| !s.is_empty()).map(str::to_string);
    let currency = Currency::parse(get(c.currency))
        .map_err(|e| ReportError::new(line, CURRENCY, e.message))?;
    let amount =
        sign(get(c.direction), line, DIRECTION)? * minor(get(c.gross), currency, line, GROSS)?;
    let fee = match (c.fee_direction.map(get), c.fee.map(get)) {
        (Some(d), Some(a)) if !a.is_empty() => {
            // A fee debited is a cost (positive), one credited back negative.
            Some(-sign(d, line, "Fee Debit or Credit")? * minor(a, currency, line, "Fee Amount")?)
        }
        _ => None,
    };
    // A T00xx debit is money the merchant sent (a mass payment), not one
    // received: not a charge of a payment finality tracks.
    let kind = match stl_kind(get(c.code)) {
        LineKind::Charge if amount < 0 => LineKind::Other,
        k => k,
    };
    let txn = opt(Some(c.txn));
    let provider_ref = match kind {
        LineKind::Refund | LineKind::Chargeback => opt(c.reference).or(txn),
        _ => txn,
    };
    Ok(SettlementLine {
        line,
        kind,
        provider_ref,
        alt_ref: None,
        merchant_ref: opt(c.invoice),
        amount,
        currency: currency.as_str().to_string(),
        fee,
        account: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Format;
    use super::*;

    fn read(body: &str) -> Vec<Result<SettlementLine, ReportError>> {
        Format::PaypalStl.read(body.as_bytes()).unwrap().collect()
    }

    /// PayPal publishes no sample file we could retrieve (the spec's
    /// appendix was not readable); this is the test data of a public
    /// integration, wikimedia/wikimedia-fundraising-SmashPig,
    /// PaymentProviders/PayPal/Tests/Data/stl_brl_refund.csv (commit
    /// 7a95899f), verbatim, with its byte-order mark: a BRL refund (T1107)
    /// and two currency conversions (T0200).
    const BRL_REFUND: &str = "\u{feff}\"RH\",2025/12/24 02:21:10 -0800,\"A\",\"EZ782AXEUJUW8\",009,
\"FH\",01
\"SH\",2025/12/23 00:00:00 -0800,2025/12/23 23:59:59 -0800,\"EZ782AXEUJUW8\",\"\"
\"CH\",\"Transaction ID\",\"Invoice ID\",\"PayPal Reference ID\",\"PayPal Reference ID Type\",\"Transaction Event Code\",\"Transaction Initiation Date\",\"Transaction Completion Date\",\"Transaction Debit or Credit\",\"Gross Transaction Amount\",\"Gross Transaction Currency\",\"Fee Debit or Credit\",\"Fee Amount\",\"Fee Currency\",\"Custom Field\",\"Consumer ID\",\"Payment Tracking ID\",\"Store ID\",\"Bank Reference ID\",\"Credit Transactional Fee\",\"Credit Promotional Fee\",\"Credit Term\"
\"SB\",\"451689\",\"233490290.3\",\"3K905\",\"TXN\",\"T1107\",2025/12/23 08:57:17 -0800,2025/12/23 08:57:17 -0800,\"DR\",1500,\"BRL\",\"CR\",338,\"BRL\",\"6ZEkGk\",\"EJGW\",\"\",\"\",\"\",,,
\"SB\",\"826671\",\"233490290.3\",\"451689\",\"TXN\",\"T0200\",2025/12/23 08:57:17 -0800,2025/12/23 08:57:17 -0800,\"DR\",211,\"USD\",\"\",,\"\",\"6ZEkGk\",\"\",\"\",\"\",\"\",,,
\"SB\",\"9DT340\",\"233490290.3\",\"451689\",\"TXN\",\"T0200\",2025/12/23 08:57:17 -0800,2025/12/23 08:57:17 -0800,\"CR\",1162,\"BRL\",\"\",,\"\",\"6ZEkGk\",\"\",\"\",\"\",\"\",,,
";

    /// Rows of SmashPig's `stl.csv` (commit e5f67fd4), verbatim: a T0006
    /// payment, a T1107 refund, a T0400 withdrawal, and the SF/RF footers
    /// (unquoted codes and numbers, as that file has them).
    const STL_ROWS: &str = "\"SB\",5678,2444.1,4H844,\"TXN\",\"T0006\",2026/01/06 00:00:30 -0800,2026/01/06 00:00:30 -0800,\"CR\",5200,\"AUD\",\"DR\",225,\"AUD\",\"\",YM2C,\"\",\"\",\"\",,,
\"SB\",6899,2216.15,99900,\"TXN\",T1107,2026/01/06 23:31:39 -0800,2026/01/06 23:31:39 -0800,DR,134,\"GBP\",CR,47,\"GBP\",\"\",AZVDZ,\"\",\"\",\"\",,,
\"SB\",3MG88942N0662370U,,,,T0400,2026/01/06 23:31:39 -0800,2026/01/06 23:31:39 -0800,DR,100,\"GBP\",,,,,,,,1047428557493,,,
\"SF\",\"GBP\",834,134,87,47,\"CR\",547,\"CR\",5530,\"CR\",5530,\"CR\",5530,\"CR\",0,\"CR\",0,1
\"RF\",\"GBP\",834,134,87,47,\"CR\",547,\"CR\",5530,\"CR\",5530,\"CR\",5530,\"CR\",0,\"CR\",0,1
";

    /// SmashPig's `stl.csv` (testdata/paypal/smashpig_stl.csv): its SB rows
    /// add up to its RF rows' gross credits and debits per currency; one
    /// amount changed, or the footers cut off, is refused.
    #[test]
    fn report_footer_totals_check_the_rows() {
        let text = include_str!("../../testdata/paypal/smashpig_stl.csv");
        assert_eq!(check_stl_totals(text.as_bytes()), Ok(4));
        let altered = text.replacen(",535,", ",536,", 1);
        let err = check_stl_totals(altered.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("AUD") && err.contains("5736"), "{err}");
        let cut: String = text
            .lines()
            .filter(|l| !l.starts_with("\"RF\""))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(check_stl_totals(cut.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("cut short"));
    }

    #[test]
    fn smashpig_brl_refund() {
        let lines: Vec<_> = read(BRL_REFUND)
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(lines.len(), 3);
        let refund = &lines[0];
        assert_eq!(refund.line, 5);
        assert_eq!(refund.kind, LineKind::Refund);
        assert_eq!(
            refund.provider_ref.as_deref(),
            Some("3K905"),
            "the payment it takes back"
        );
        assert_eq!(refund.merchant_ref.as_deref(), Some("233490290.3"));
        assert_eq!((refund.amount, refund.currency.as_str()), (-1500, "BRL"));
        assert_eq!(refund.fee, Some(-338), "the fee credited back");
        assert_eq!(lines[1].kind, LineKind::Other, "T0200 currency conversion");
        assert_eq!(lines[2].amount, 1162);
    }

    #[test]
    fn smashpig_stl_rows_under_the_same_header() {
        let header: String = BRL_REFUND
            .lines()
            .take(4)
            .map(|l| format!("{l}\n"))
            .collect();
        let lines: Vec<_> = read(&format!("{header}{STL_ROWS}"))
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(lines.len(), 3, "footers are not lines");
        assert_eq!(
            (
                lines[0].kind,
                lines[0].provider_ref.as_deref(),
                lines[0].amount,
                lines[0].fee
            ),
            (LineKind::Charge, Some("5678"), 5200, Some(225))
        );
        assert_eq!(lines[0].merchant_ref.as_deref(), Some("2444.1"));
        assert_eq!(
            (
                lines[1].kind,
                lines[1].provider_ref.as_deref(),
                lines[1].amount
            ),
            (LineKind::Refund, Some("99900"), -134)
        );
        assert_eq!((lines[2].kind, lines[2].amount), (LineKind::Payout, -100));
    }

    /// PayPal's own example: "100,00 yen and $100.00 USD are both
    /// represented as 10000" (developer.paypal.com settlement report, "Know
    /// before you begin"); and KWD, three decimals.
    #[test]
    fn amounts_are_times_100_in_every_currency() {
        let jpy = Currency::parse("JPY").unwrap();
        let usd = Currency::parse("USD").unwrap();
        assert_eq!(minor("10000", jpy, 2, GROSS).unwrap(), 100);
        assert_eq!(minor("10000", usd, 2, GROSS).unwrap(), 10000);
        assert_eq!(
            minor("1250", Currency::parse("KWD").unwrap(), 2, GROSS).unwrap(),
            12500
        );
        let e = minor("150", jpy, 7, GROSS).unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (7, GROSS));
        assert!(e.message.contains("not a whole amount of JPY"), "{e}");
        assert!(minor("-5", usd, 2, GROSS).is_err());
    }

    #[test]
    fn older_headers_with_two_spaces_and_errors_by_line() {
        let body = "\"CH\",\"Transaction ID\",\"Invoice ID\",\"Transaction Event Code\",\"Transaction  Debit or Credit\",\"Gross Transaction Amount\",\"Gross Transaction Currency\"\n\
                    \"SB\",\"A1\",\"inv-1\",\"T0006\",\"CR\",1000,\"EUR\"\n\
                    \"SB\",\"A2\",\"inv-2\",\"T0006\",\"XX\",1000,\"EUR\"\n\
                    \"ZZ\",1\n";
        let out = read(body);
        assert_eq!(out[0].as_ref().unwrap().amount, 1000);
        let e = out[1].clone().unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (3, DIRECTION), "{e}");
        let e = out[2].clone().unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (4, "row type"), "{e}");
        let e = read("\"SB\",\"A1\"\n")[0].clone().unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (1, "CH"));
        let e = read("\"CH\",\"Transaction ID\"\n")[0].clone().unwrap_err();
        assert_eq!(e.column, CODE);
    }
}
