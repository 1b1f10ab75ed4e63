//! Adyen's Settlement details report (`settlement_detail_report_batch_N.csv`),
//! columns by name as Adyen documents them. Layout and sources:
//! docs/SETTLEMENT_FORMATS.md §2.

use super::header::{record, Header};
use super::{LineKind, ReportError, SettlementLine};
use finality_core::money::Currency;
use std::io::Read;

/// What Adyen's `Type` values are, in finality's terms. Adyen documents the
/// set as open-ended; a type not listed here is [`LineKind::Other`].
///
/// Variants of the three that name a payment (`SettledBulk`,
/// `RefundedInInstallments`, `…ExternallyWithInfo`) are read by their
/// stem; their reversals (`ChargebackReversed`, `RefundedReversed`) are
/// `Other`: finality has no transition out of `reversed`.
fn adyen_kind(t: &str) -> LineKind {
    match t {
        "Fee" | "MiscCosts" | "PaymentCost" | "InvoiceDeduction" => LineKind::Fee,
        "MerchantPayout" | "PaidOut" => LineKind::Payout,
        t if t.contains("Reversed") => LineKind::Other,
        t if t.starts_with("Settled") => LineKind::Charge,
        t if t.starts_with("Refunded") => LineKind::Refund,
        t if t.starts_with("Chargeback") || t == "SecondChargeback" => LineKind::Chargeback,
        _ => LineKind::Other,
    }
}

pub(super) fn read_adyen<'a, R: Read + Send + 'a>(
    input: R,
) -> Result<impl Iterator<Item = Result<SettlementLine, ReportError>> + Send + 'a, ReportError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(input);
    let header = Header::read(&mut reader)?;
    let find = |name: &str| {
        header.need(
            name,
            "no such column in the header: not an Adyen Settlement details report?",
        )
    };
    let psp = find("Psp Reference")?;
    let merchant_account = header.pos("Merchant Account");
    let merchant = find("Merchant Reference")?;
    let kind = find("Type")?;
    let currency = find("Gross Currency")?;
    // Fees are in the net (settlement) currency, which may differ.
    let net_currency = header.pos("Net Currency");
    let debit = find("Gross Debit (GC)")?;
    let credit = find("Gross Credit (GC)")?;
    let fees: Vec<(usize, &'static str)> = [
        "Commission (NC)",
        "Markup (NC)",
        "Scheme Fees (NC)",
        "Interchange (NC)",
    ]
    .into_iter()
    .filter_map(|n| header.pos(n).map(|i| (i, n)))
    .collect();
    Ok(reader.into_records().map(move |rec| {
        let (rec, line) = record(rec)?;
        let get = |i: usize| rec.get(i).unwrap_or_default();
        let kind = adyen_kind(get(kind));
        let ccy_text = get(currency);
        // Batch-level rows (fees, payouts) may carry no gross at all.
        if ccy_text.is_empty() && get(debit).is_empty() && get(credit).is_empty() {
            return Ok(SettlementLine {
                line,
                kind,
                provider_ref: None,
                alt_ref: None,
                merchant_ref: None,
                amount: 0,
                currency: String::new(),
                fee: None,
                account: merchant_account
                    .map(get)
                    .filter(|s| !s.is_empty())
                    .map(String::from),
            });
        }
        let ccy = Currency::parse(ccy_text)
            .map_err(|e| ReportError::new(line, "Gross Currency", e.message))?;
        let net_ccy = match net_currency.map(get).filter(|t| !t.is_empty()) {
            Some(t) => {
                Currency::parse(t).map_err(|e| ReportError::new(line, "Net Currency", e.message))?
            }
            None => ccy,
        };
        // Adyen writes `.11` and `500` as well as `5.00`.
        let money = |ccy: Currency, col: &str, text: &str| -> Result<i64, ReportError> {
            if text.is_empty() {
                return Ok(0);
            }
            let t = if text.starts_with('.') {
                format!("0{text}")
            } else {
                text.to_string()
            };
            ccy.parse_decimal(&t)
                .map_err(|m| ReportError::new(line, col, m))
        };
        let too_large = |col: &str| ReportError::new(line, col, "the amount is too large");
        let amount = money(ccy, "Gross Credit (GC)", get(credit))?
            .checked_sub(money(ccy, "Gross Debit (GC)", get(debit))?)
            .ok_or_else(|| too_large("Gross Debit (GC)"))?;
        let mut fee: Option<i64> = None;
        for &(i, col) in &fees {
            let v = money(net_ccy, col, get(i))?;
            if v != 0 {
                fee = Some(
                    fee.unwrap_or(0)
                        .checked_add(v)
                        .ok_or_else(|| too_large(col))?,
                );
            }
        }
        let text = |i: usize| Some(get(i)).filter(|s| !s.is_empty()).map(str::to_string);
        Ok(SettlementLine {
            line,
            kind,
            provider_ref: text(psp),
            alt_ref: None,
            merchant_ref: text(merchant),
            amount,
            currency: ccy.as_str().to_string(),
            fee,
            account: merchant_account.and_then(text),
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::super::Format;
    use super::*;

    /// The 30-column header of Adyen's Settlement details report, and the
    /// two sample rows Adyen publishes in its documentation, verbatim.
    /// Source: https://docs.adyen.com/pt/reporting/settlement-reconciliation/transaction-level/settlement-details-report
    /// ("Transactions"); header as in Adyen-generated files reproduced in
    /// wikimedia/wikimedia-fundraising-SmashPig,
    /// PaymentProviders/Adyen/Tests/Data/settlement_detail_report_donation.csv.
    const ADYEN_HEADER: &str = "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Modification Merchant Reference,Batch Number,Reserved4,Reserved5,Reserved6,Reserved7,Reserved8,Reserved9,Reserved10";
    const ADYEN_DOC_ROWS: &str = "TestCompany,TestMerchant,1813702551707653,3vpzf7,visa,2013-06-03 11:26:49,CET,Settled,1713702551795048,GBP,,5.00,1,GBP,,4.88,,0.04,0.01,0.07,visaclassic,,,,,,,,,
TestCompany,TestMerchant,1313642467023511,324959451,visa,2013-03-26 22:37:26,CET,Chargeback,2313642467170922,EUR,349.99,,1,EUR,357.49,,7.5,,,,visaclassic,,,,,,,,,
";
    /// Refund and batch-level fee and payout rows from Adyen-generated files,
    /// as reproduced in wikimedia/wikimedia-fundraising-SmashPig
    /// (PaymentProviders/Adyen/Tests/Data/settlement_detail_report_refund.csv,
    /// …_donation.csv), not published by Adyen itself.
    const SMASHPIG_ROWS: &str = "Wikimedia,WikimediaCOM,4522268860022701,92598312.0,visa,2016-02-10 10:25:36,PST,Refunded,4522268869855336,USD,1.00,,1,USD,1.00,,,,,,visaclassic,92598312.0,3,,,,,,,
Wikimedia,WikimediaCOM,,,,2016-02-15 21:29:37,PST,Fee,Transaction Fees February  2016,EUR,,,,USD,1.80,,,,,,,,3,,,,,,,
Wikimedia,WikimediaCOM,,,,2016-02-18 19:53:26,PST,MerchantPayout,\"TX2342222277XT batch 2, WikimediaCOM batch 2, WikimediaCOM\",EUR,,,,USD,0.76,,,,,,,,2,,,,,,,
";

    #[test]
    fn adyen_published_sample_rows() {
        let body = format!("{ADYEN_HEADER}\n{ADYEN_DOC_ROWS}{SMASHPIG_ROWS}");
        let lines: Vec<_> = Format::AdyenSettlementDetails
            .read(body.as_bytes())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(lines.len(), 5);
        let settled = &lines[0];
        assert_eq!(settled.kind, LineKind::Charge);
        assert_eq!(settled.provider_ref.as_deref(), Some("1813702551707653"));
        assert_eq!(settled.merchant_ref.as_deref(), Some("3vpzf7"));
        assert_eq!((settled.amount, settled.currency.as_str()), (500, "GBP"));
        assert_eq!(settled.fee, Some(12), "0.04 + 0.01 + 0.07");
        let chargeback = &lines[1];
        assert_eq!(chargeback.kind, LineKind::Chargeback);
        assert_eq!(
            (chargeback.amount, chargeback.currency.as_str()),
            (-34999, "EUR")
        );
        assert_eq!(chargeback.fee, Some(750));
        assert_eq!(lines[2].kind, LineKind::Refund);
        assert_eq!(lines[2].amount, -100);
        assert_eq!(lines[3].kind, LineKind::Fee);
        assert_eq!(lines[3].provider_ref, None);
        assert_eq!(lines[4].kind, LineKind::Payout);
        assert_eq!(lines[4].line, 6);
    }

    #[test]
    fn not_an_adyen_report() {
        let e = Format::AdyenSettlementDetails
            .read("a,b\n1,2\n".as_bytes())
            .err()
            .unwrap();
        assert_eq!((e.line, e.column.as_str()), (1, "Psp Reference"));
    }
}
