//! The simulated provider's report as Adyen's Settlement details report:
//! the 30 columns Adyen documents, in Adyen's order, closed by the batch's
//! `Fee` and `MerchantPayout` lines.

use super::{date, decimal, Layout, Settled, Totals};
use std::io::Write;

/// Adyen's Settlement details report header, 30 columns in Adyen's order
/// (docs/SETTLEMENT_FORMATS.md §2.2).
pub const ADYEN_HEADER: [&str; 30] = [
    "Company Account",
    "Merchant Account",
    "Psp Reference",
    "Merchant Reference",
    "Payment Method",
    "Creation Date",
    "TimeZone",
    "Type",
    "Modification Reference",
    "Gross Currency",
    "Gross Debit (GC)",
    "Gross Credit (GC)",
    "Exchange Rate",
    "Net Currency",
    "Net Debit (NC)",
    "Net Credit (NC)",
    "Commission (NC)",
    "Markup (NC)",
    "Scheme Fees (NC)",
    "Interchange (NC)",
    "Payment Method Variant",
    "Modification Merchant Reference",
    "Batch Number",
    "Reserved4",
    "Reserved5",
    "Reserved6",
    "Reserved7",
    "Reserved8",
    "Reserved9",
    "Reserved10",
];

/// One line of the report, by column name; the 30 columns in Adyen's order
/// (columns not named here are empty).
#[derive(Default)]
struct Row<'a> {
    psp: &'a str,
    merchant_ref: &'a str,
    method: &'a str,
    created: &'a str,
    kind: &'a str,
    modification: &'a str,
    gross_currency: &'a str,
    gross_debit: &'a str,
    gross_credit: &'a str,
    rate: &'a str,
    net_currency: &'a str,
    net_debit: &'a str,
    net_credit: &'a str,
    interchange: &'a str,
    variant: &'a str,
    modification_merchant_ref: &'a str,
    batch: &'a str,
}

impl Row<'_> {
    fn write<W: Write>(&self, w: &mut csv::Writer<W>) -> std::io::Result<()> {
        w.write_record([
            "SimCompany",
            "SimMerchant",
            self.psp,
            self.merchant_ref,
            self.method,
            self.created,
            "UTC",
            self.kind,
            self.modification,
            self.gross_currency,
            self.gross_debit,
            self.gross_credit,
            self.rate,
            self.net_currency,
            self.net_debit,
            self.net_credit,
            "",
            "",
            "",
            self.interchange,
            self.variant,
            self.modification_merchant_ref,
            self.batch,
            "",
            "",
            "",
            "",
            "",
            "",
            "",
        ])?;
        Ok(())
    }
}

/// Lines of one Adyen batch.
pub(crate) struct AdyenLayout<W: Write> {
    w: csv::Writer<W>,
    batch: String,
    modref: u64,
}

impl<W: Write> AdyenLayout<W> {
    pub(crate) fn new(out: W, batch: u32) -> std::io::Result<Self> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(ADYEN_HEADER)?;
        Ok(AdyenLayout {
            w,
            batch: batch.to_string(),
            modref: 0,
        })
    }
}

impl<W: Write> Layout for AdyenLayout<W> {
    fn line(&mut self, s: &Settled, refund: bool, gross: i64, fee: i64) -> std::io::Result<()> {
        self.modref += 1;
        let kind = if refund { "Refunded" } else { "Settled" };
        let g = decimal(gross, &s.currency);
        let n = decimal(gross - fee, &s.currency);
        let (gd, gc, nd, nc) = if refund {
            (g.clone(), String::new(), g, String::new())
        } else {
            (String::new(), g, String::new(), n)
        };
        let fee_text = if fee == 0 {
            String::new()
        } else {
            decimal(fee, &s.currency)
        };
        let mref = s.merchant_reference.clone().unwrap_or_default();
        let modification_mref = if refund { mref.clone() } else { String::new() };
        Row {
            psp: &s.psp_reference,
            merchant_ref: &mref,
            method: "visa",
            created: &date(s.at),
            kind,
            modification: &format!("{:016}", self.modref),
            gross_currency: &s.currency,
            gross_debit: &gd,
            gross_credit: &gc,
            rate: "1",
            net_currency: &s.currency,
            net_debit: &nd,
            net_credit: &nc,
            interchange: &fee_text,
            variant: "visaclassic",
            modification_merchant_ref: &modification_mref,
            batch: &self.batch,
        }
        .write(&mut self.w)
    }

    /// The batch's own lines: its fees, and the payout of what is left.
    fn finish(&mut self, t: &Totals) -> std::io::Result<u64> {
        let mut lines = 0;
        if !t.currency.is_empty() {
            let at = date(t.last_at);
            let batch = self.batch.clone();
            for (kind, text, amount) in [
                ("Fee", format!("Transaction Fees batch {batch}"), t.fees),
                (
                    "MerchantPayout",
                    format!("sim batch {batch}, SimMerchant"),
                    t.net,
                ),
            ] {
                Row {
                    created: &at,
                    kind,
                    modification: &text,
                    net_currency: &t.currency,
                    net_debit: &decimal(amount, &t.currency),
                    batch: &batch,
                    ..Row::default()
                }
                .write(&mut self.w)?;
                lines += 1;
            }
        }
        self.w.flush()?;
        Ok(lines)
    }
}
