//! Any CSV whose columns are named by the caller.

use super::header::{record, Header};
use super::{LineKind, ReportError, SettlementLine};
use finality_core::money::Currency;
use std::io::Read;

/// A CSV report described by its column names.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns {
    /// The column holding the provider's payment id.
    pub reference: String,
    pub amount: String,
    pub currency: String,
    /// The column saying what a line is; without it every line is a charge.
    pub kind: Option<String>,
    /// Values of `kind` and what they mean (`SALE` → charge, …); a value
    /// not listed is [`LineKind::Other`].
    pub kinds: Vec<(String, LineKind)>,
    pub fee: Option<String>,
    pub merchant_ref: Option<String>,
    /// Amounts written as decimals (`12.50`) rather than minor units (`1250`).
    pub decimal: bool,
}

struct Index {
    reference: usize,
    amount: usize,
    currency: usize,
    kind: Option<usize>,
    fee: Option<usize>,
    merchant_ref: Option<usize>,
}

/// Read `input` as a CSV report with these columns: each line as it is
/// read. The header is checked first; a column named but absent is an
/// error on line 1 listing the columns found.
pub fn read_csv<'a, R: Read + Send + 'a>(
    input: R,
    cols: &'a Columns,
) -> Result<impl Iterator<Item = Result<SettlementLine, ReportError>> + Send + 'a, ReportError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .trim(csv::Trim::All)
        .from_reader(input);
    let header = Header::read(&mut reader)?;
    let why = format!("no such column in the header (found: {})", header.names());
    let find = |name: &str| header.need(name, &why);
    let idx = Index {
        reference: find(&cols.reference)?,
        amount: find(&cols.amount)?,
        currency: find(&cols.currency)?,
        kind: cols.kind.as_deref().map(find).transpose()?,
        fee: cols.fee.as_deref().map(find).transpose()?,
        merchant_ref: cols.merchant_ref.as_deref().map(find).transpose()?,
    };
    Ok(reader.into_records().map(move |rec| {
        let (rec, line) = record(rec)?;
        let get = |i: usize| rec.get(i).unwrap_or_default();
        let currency_text = get(idx.currency);
        let currency = Currency::parse(currency_text)
            .map_err(|e| ReportError::new(line, &cols.currency, e.message))?;
        let money = |col: &str, text: &str| -> Result<i64, ReportError> {
            if cols.decimal {
                currency
                    .parse_decimal(text)
                    .map_err(|m| ReportError::new(line, col, m))
            } else {
                text.parse::<i64>().map_err(|_| {
                    ReportError::new(
                        line,
                        col,
                        format!("`{text}` is not an integer of minor units"),
                    )
                })
            }
        };
        let amount = money(&cols.amount, get(idx.amount))?;
        let fee = match idx.fee {
            Some(i) if !get(i).is_empty() => {
                Some(money(cols.fee.as_deref().unwrap_or("fee"), get(i))?)
            }
            _ => None,
        };
        let kind = match idx.kind {
            None => LineKind::Charge,
            Some(i) => cols
                .kinds
                .iter()
                .find(|(v, _)| v == get(i))
                .map_or(LineKind::Other, |(_, k)| *k),
        };
        let text = |i: Option<usize>| i.map(get).filter(|s| !s.is_empty()).map(str::to_string);
        Ok(SettlementLine {
            line,
            kind,
            provider_ref: text(Some(idx.reference)),
            alt_ref: None,
            merchant_ref: text(idx.merchant_ref),
            amount,
            currency: currency.as_str().to_string(),
            fee,
            account: None,
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Columns {
        Columns {
            reference: "psp".into(),
            amount: "gross".into(),
            currency: "ccy".into(),
            kind: Some("type".into()),
            kinds: vec![
                ("SALE".into(), LineKind::Charge),
                ("REFUND".into(), LineKind::Refund),
            ],
            fee: Some("fee".into()),
            merchant_ref: None,
            decimal: true,
        }
    }

    #[test]
    fn lines_in_finality_terms() {
        let csv = "psp,type,gross,fee,ccy\nch_1,SALE,12.50,0.66,EUR\nch_1,REFUND,-12.50,,EUR\nx,RESERVE,1,,JPY\n";
        let lines: Vec<_> = read_csv(csv.as_bytes(), &cols())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].line, 2);
        assert_eq!(lines[0].kind, LineKind::Charge);
        assert_eq!(lines[0].amount, 1250);
        assert_eq!(lines[0].fee, Some(66));
        assert_eq!(lines[1].kind, LineKind::Refund);
        assert_eq!(lines[1].amount, -1250);
        assert_eq!(lines[2].kind, LineKind::Other);
        assert_eq!(lines[2].amount, 1, "JPY has no minor unit");
    }

    #[test]
    fn errors_name_the_line_and_the_column() {
        let e = read_csv("a,b\n1,2\n".as_bytes(), &cols()).err().unwrap();
        assert_eq!(e.line, 1);
        assert_eq!(e.column, "psp");
        assert!(e.message.contains("found: a, b"), "{e}");
        let csv = "psp,type,gross,fee,ccy\nch_1,SALE,12.50,,EUR\nch_2,SALE,12.5.0,,EUR\n";
        let out: Vec<_> = read_csv(csv.as_bytes(), &cols()).unwrap().collect();
        assert!(out[0].is_ok());
        let e = out[1].clone().unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (3, "gross"), "{e}");
        let csv = "psp,type,gross,fee,ccy\nch_1,SALE,12.50,,euro\n";
        let e = read_csv(csv.as_bytes(), &cols())
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (2, "ccy"));
        let csv = "psp,type,gross,fee,ccy\nch_1,SALE,12.50\n";
        let e = read_csv(csv.as_bytes(), &cols())
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    proptest::proptest! {
        /// Whatever the bytes, reading ends in lines or errors: no panic.
        #[test]
        fn any_bytes_read_or_fail_cleanly(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let mut input = b"psp,type,gross,fee,ccy\n".to_vec();
            input.extend(body);
            let c = cols();
            let mut columns_named = true;
            if let Ok(lines) = read_csv(std::io::Cursor::new(input), &c) {
                for e in lines.filter_map(Result::err) {
                    columns_named &= !e.column.is_empty();
                }
            }
            proptest::prop_assert!(columns_named);
        }
    }
}
