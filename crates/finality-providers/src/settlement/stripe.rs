//! Stripe's itemized reports: `balance_change_from_activity.itemized.*`
//! and `payout_reconciliation.itemized.*` (Dashboard → Reports → Balance or
//! Payout reconciliation → Download → Itemized; or the Reporting API's
//! `report_runs`). Columns are read by name, since the file's order is the
//! order of the `columns` asked for. Layout and sources:
//! docs/SETTLEMENT_FORMATS.md §1.
//!
//! - The payment: `payment_intent_id` ("The unique ID of the related
//!   Payment Intent, if any"), else `charge_id` ("the original charge
//!   associated with this balance transaction. Available for charges,
//!   refunds and disputes"), else `source_id`; finality's Stripe adapter
//!   tracks PaymentIntents, and the charge id is tried as well.
//! - Amounts: `gross` and `fee`, "expressed in major units of the
//!   currency", signed (refunds, disputes, payouts and fees are negative);
//!   `currency` may be lower case (`usd`). Both are in the account's
//!   balance currency; where the report has `customer_facing_amount` and
//!   `customer_facing_currency` ("the amount of the original charge, refund
//!   or dispute as seen by the customer"), a charge, refund or dispute is
//!   compared in those instead.
//! - What a line is: `reporting_category` (charge, refund, dispute, fee,
//!   payout, …; Stripe documents the set as growing: an unknown category
//!   is [`LineKind::Other`]).

use super::header::{record, Header};
use super::{LineKind, ReportError, SettlementLine};
use finality_core::money::Currency;
use std::io::Read;

/// `reporting_category` in finality's terms. A dispute reversal (money
/// back after a won dispute) is `Other`: finality has no transition out of
/// `reversed`, so a person reads it in the report.
fn stripe_kind(category: &str) -> LineKind {
    match category {
        "charge" => LineKind::Charge,
        "refund" => LineKind::Refund,
        "dispute" => LineKind::Chargeback,
        "fee" | "tax" | "platform_earning" => LineKind::Fee,
        "payout" | "payout_reversal" => LineKind::Payout,
        _ => LineKind::Other,
    }
}

pub(super) fn read_stripe<'a, R: Read + Send + 'a>(
    input: R,
) -> Result<impl Iterator<Item = Result<SettlementLine, ReportError>> + Send + 'a, ReportError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .trim(csv::Trim::All)
        .from_reader(input);
    let header = Header::read(&mut reader)?;
    let pos = |name: &str| header.pos(name);
    let need = |name: &str| {
        header.need(
            name,
            "no such column in the header: not a Stripe itemized report, or run without it \
             (ask for it in `columns`)",
        )
    };
    let category = need("reporting_category")?;
    let currency = need("currency")?;
    let gross = need("gross")?;
    let fee = pos("fee");
    // What the customer paid, in their currency: a payment in EUR on an
    // account that settles in USD has `gross` in USD.
    let facing = pos("customer_facing_amount").zip(pos("customer_facing_currency"));
    let refs: Vec<usize> = ["payment_intent_id", "charge_id", "source_id"]
        .iter()
        .filter_map(|n| pos(n))
        .collect();
    if refs.is_empty() {
        return Err(ReportError::new(
            1,
            "payment_intent_id",
            "none of payment_intent_id, charge_id, source_id is in the header: \
             no line could be tied to a payment",
        ));
    }
    Ok(reader.into_records().map(move |rec| {
        let (rec, line) = record(rec)?;
        let get = |i: usize| rec.get(i).unwrap_or_default();
        let kind = stripe_kind(get(category));
        let ccy = Currency::parse(&get(currency).to_ascii_uppercase())
            .map_err(|e| ReportError::new(line, "currency", e.message))?;
        let money = |col: &str, text: &str| -> Result<i64, ReportError> {
            ccy.parse_decimal(text)
                .map_err(|m| ReportError::new(line, col, m))
        };
        let mut amount = money("gross", get(gross))?;
        let mut currency_out = ccy;
        if let Some((fa, fc)) = facing.filter(|_| kind.names_a_payment()) {
            if !get(fa).is_empty() && !get(fc).is_empty() {
                let c = Currency::parse(&get(fc).to_ascii_uppercase())
                    .map_err(|e| ReportError::new(line, "customer_facing_currency", e.message))?;
                let v = c
                    .parse_decimal(get(fa))
                    .map_err(|m| ReportError::new(line, "customer_facing_amount", m))?
                    .abs();
                amount = if amount < 0 { -v } else { v };
                currency_out = c;
            }
        }
        let fee = match fee.map(get) {
            Some(t) if !t.is_empty() => Some(money("fee", t)?),
            _ => None,
        };
        // Payment intent, else charge, else the balance transaction's source.
        let mut ids = refs
            .iter()
            .map(|&i| get(i))
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let provider_ref = ids.next();
        let alt_ref = ids.next();
        Ok(SettlementLine {
            line,
            kind,
            provider_ref,
            alt_ref,
            merchant_ref: None,
            amount,
            currency: currency_out.as_str().to_string(),
            fee,
            account: None,
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::super::Format;
    use super::*;

    /// Stripe publishes no sample itemized CSV; this is the test data of a
    /// public integration, wikimedia/wikimedia-fundraising-SmashPig,
    /// PaymentProviders/Stripe/Tests/Data/settlement_report.csv (commit
    /// 9d1d61a9), verbatim: Stripe's documented column names (with
    /// `payment_metadata[…]` columns and one, `gateway_account`, Stripe
    /// does not document), a charge, its refund, a dispute reversal with a
    /// lower-case currency, and a payout.
    const SMASHPIG: &str = "balance_transaction_id,payment_metadata[external_identifier],payment_metadata[orchestrator_tx_ref],payment_metadata[gr4vy_tx_ref],payment_metadata[gr4vy_tx_sid],payment_metadata[orchestrator_tx_sid],source_id,payment_intent_id,charge_id,created,available_on,automatic_payout_effective_at,currency,gross,fee,net,reporting_category,payment_method_type,card_brand,card_country,card_funding,description,trace_id_status,gateway_account,automatic_payout_id
txn_001,24315.1,,,,,ch_123,pi_123,ch_123,2026-01-30 10:11:12,2026-01-30 00:00:00,2026-01-31 00:00:00,USD,25,0.95,24.05,charge,card,visa,US,credit,,pending,acct_live,po_test123
txn_rfnd_002,,24316.1,,,abcd,re_123,pi_123,ch_123,2026-01-30 12:30:00,2026-01-30 00:00:00,2026-01-31 00:00:00,USD,-10,0,-10,refund,card,visa,US,credit,,pending,acct_live,po_test123
txn_1Tj9xrJ,,2467.1,5vdtL,2467.1,5vdtLc,du_1Tc2b,pi_3TRX,ch_3TRX,2026-06-17 03:16:29,2026-06-17 03:16:29,2026-06-18 00:26:43,usd,3.35,0,3.35,dispute_reversal,card,Visa,US,debit,Chargeback reversal for ch_3TRX4VJaRQOHTfEW10um5PzQ,supported,,
txn_005,,,,,,po_123,,,2026-01-31 00:00:00,2026-01-31 00:00:00,2026-01-31 00:00:00,USD,24,0,23.05,payout,,,,,Payout,available,acct_live,po_test123
";

    #[test]
    fn smashpig_fixture_in_finality_terms() {
        let lines: Vec<_> = Format::StripeItemized
            .read(SMASHPIG.as_bytes())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(lines.len(), 4);
        let charge = &lines[0];
        assert_eq!(charge.kind, LineKind::Charge);
        assert_eq!(charge.provider_ref.as_deref(), Some("pi_123"));
        assert_eq!(charge.alt_ref.as_deref(), Some("ch_123"));
        assert_eq!((charge.amount, charge.fee), (2500, Some(95)));
        assert_eq!(charge.line, 2);
        let refund = &lines[1];
        assert_eq!(refund.kind, LineKind::Refund);
        assert_eq!(
            refund.provider_ref.as_deref(),
            Some("pi_123"),
            "tied to its payment"
        );
        assert_eq!(refund.amount, -1000);
        assert_eq!(lines[2].kind, LineKind::Other, "dispute_reversal");
        assert_eq!(lines[2].currency, "USD");
        assert_eq!(lines[2].amount, 335);
        assert_eq!(lines[3].kind, LineKind::Payout);
        assert_eq!(lines[3].provider_ref.as_deref(), Some("po_123"));
    }

    /// The columns of `balance_change_from_activity.itemized.1` in the
    /// order docs.stripe.com/reports/report-types/balance lists them, with
    /// rows written to that layout (a JPY charge: no minor unit; a dispute).
    #[test]
    fn documented_itemized_1_columns() {
        let header = "balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,description,customer_facing_amount,customer_facing_currency,automatic_payout_id,automatic_payout_effective_at,customer_id,customer_email,customer_name,customer_description,shipping_address_line1,shipping_address_line2,shipping_address_city,shipping_address_state,shipping_address_postal_code,shipping_address_country,charge_id,payment_intent_id,charge_created_utc,invoice_id,subscription_id,payment_method_type,is_link,card_brand,card_funding,card_country,statement_descriptor";
        let rows = "txn_1,2026-11-30 10:00:00,2026-12-02 00:00:00,jpy,1200,46,1154,charge,ch_1,,1200,jpy,po_1,2026-12-02 00:00:00,cus_1,,,,,,,,,,ch_1,pi_1,2026-11-30 10:00:00,,,card,false,visa,credit,JP,SHOP\n\
                    txn_2,2026-11-30 11:00:00,2026-12-02 00:00:00,usd,-20.00,15.00,-35.00,dispute,dp_1,,20.00,usd,po_1,2026-12-02 00:00:00,cus_2,,,,,,,,,,ch_2,pi_2,2026-11-20 10:00:00,,,card,false,visa,credit,US,SHOP\n";
        let body = format!("{header}\n{rows}");
        let lines: Vec<_> = Format::StripeItemized
            .read(body.as_bytes())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            (lines[0].kind, lines[0].amount, lines[0].currency.as_str()),
            (LineKind::Charge, 1200, "JPY")
        );
        assert_eq!(lines[0].provider_ref.as_deref(), Some("pi_1"));
        assert_eq!(
            (lines[1].kind, lines[1].amount, lines[1].fee),
            (LineKind::Chargeback, -2000, Some(1500))
        );
    }

    /// A EUR payment on an account that settles in USD: compared in what
    /// the customer paid.
    #[test]
    fn customer_facing_amount_over_the_balance_currency() {
        let body = "payment_intent_id,reporting_category,currency,gross,fee,customer_facing_amount,customer_facing_currency\n\
                    pi_1,charge,usd,27.10,1.09,25.00,eur\n\
                    pi_1,refund,usd,-27.05,0,25.00,eur\n\
                    po_1,payout,usd,-26.01,0,,\n";
        let lines: Vec<_> = Format::StripeItemized
            .read(body.as_bytes())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!((lines[0].amount, lines[0].currency.as_str()), (2500, "EUR"));
        assert_eq!(
            (lines[1].amount, lines[1].currency.as_str()),
            (-2500, "EUR")
        );
        assert_eq!(
            (lines[2].amount, lines[2].currency.as_str()),
            (-2601, "USD")
        );
    }

    #[test]
    fn errors_name_the_line_and_the_column() {
        let e = Format::StripeItemized
            .read("balance_transaction_id,gross\n".as_bytes())
            .err()
            .unwrap();
        assert_eq!((e.line, e.column.as_str()), (1, "reporting_category"));
        let e = Format::StripeItemized
            .read("reporting_category,currency,gross\n".as_bytes())
            .err()
            .unwrap();
        assert_eq!(e.column, "payment_intent_id", "{e}");
        let body = "payment_intent_id,reporting_category,currency,gross\npi_1,charge,usd,10\npi_2,charge,usd,ten\n";
        let out: Vec<_> = Format::StripeItemized
            .read(body.as_bytes())
            .unwrap()
            .collect();
        assert!(out[0].is_ok());
        let e = out[1].clone().unwrap_err();
        assert_eq!((e.line, e.column.as_str()), (3, "gross"), "{e}");
    }
}
