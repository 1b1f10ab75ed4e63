//! The simulated provider's report as PayPal's Settlement Report (STL):
//! `RH`, `FH`, `SH`, the `CH` of PayPal's current 22 columns (as in
//! SmashPig's real-derived fixture), one `SB` per event (T0006 payment,
//! T1107 refund naming the payment it takes back), then the section's and
//! the report's footers (gross credits and debits, fees) and counts, and
//! `FF`. Amounts ×100 in every currency, as PayPal writes them.

use super::{Layout, Settled, Totals};
use std::io::Write;

const CH: [&str; 22] = [
    "CH",
    "Transaction ID",
    "Invoice ID",
    "PayPal Reference ID",
    "PayPal Reference ID Type",
    "Transaction Event Code",
    "Transaction Initiation Date",
    "Transaction Completion Date",
    "Transaction Debit or Credit",
    "Gross Transaction Amount",
    "Gross Transaction Currency",
    "Fee Debit or Credit",
    "Fee Amount",
    "Fee Currency",
    "Custom Field",
    "Consumer ID",
    "Payment Tracking ID",
    "Store ID",
    "Bank Reference ID",
    "Credit Transactional Fee",
    "Credit Promotional Fee",
    "Credit Term",
];

/// PayPal's ×100 amount of `minor` units of `currency`.
fn x100(minor: i64, currency: &str) -> String {
    let exp = finality_core::money::Currency::parse(currency).map_or(2, |c| c.exponent());
    (minor * 100 / 10i64.pow(exp)).to_string()
}

fn stamp(t: finality_core::Timestamp) -> String {
    chrono::DateTime::from_timestamp_millis(t.millis() - 8 * 3600 * 1000)
        .map(|d| d.format("%Y/%m/%d %H:%M:%S -0800").to_string())
        .unwrap_or_default()
}

/// One STL file of PayPal account `account` for `date` (`yyyy/mm/dd`).
pub(crate) struct StlLayout<W: Write> {
    w: csv::Writer<W>,
    rows: u64,
    credits: i64,
    debits: i64,
    fees: i64,
}

impl<W: Write> StlLayout<W> {
    pub(crate) fn new(out: W, account: &str, date: &str) -> std::io::Result<Self> {
        let mut w = csv::WriterBuilder::new().flexible(true).from_writer(out);
        w.write_record([
            "RH",
            &format!("{date} 02:21:10 -0800"),
            "A",
            account,
            "009",
            "",
        ])?;
        w.write_record(["FH", "01"])?;
        w.write_record([
            "SH",
            &format!("{date} 00:00:00 -0800"),
            &format!("{date} 23:59:59 -0800"),
            account,
            "",
        ])?;
        w.write_record(CH)?;
        Ok(StlLayout {
            w,
            rows: 0,
            credits: 0,
            debits: 0,
            fees: 0,
        })
    }
}

impl<W: Write> Layout for StlLayout<W> {
    fn line(&mut self, s: &Settled, refund: bool, gross: i64, fee: i64) -> std::io::Result<()> {
        let c = &s.currency;
        let at = stamp(s.at);
        let invoice = s.merchant_reference.clone().unwrap_or_default();
        let amount = x100(gross, c);
        let fee_text = if fee == 0 {
            String::new()
        } else {
            x100(fee, c)
        };
        let (txn, reference, code, dir) = if refund {
            (
                format!("{}R", s.psp_reference),
                s.psp_reference.as_str(),
                "T1107",
                "DR",
            )
        } else {
            (s.psp_reference.clone(), "", "T0006", "CR")
        };
        let fee_dir = if fee == 0 { "" } else { "DR" };
        let fee_ccy = if fee == 0 { "" } else { c.as_str() };
        let ref_type = if refund { "TXN" } else { "" };
        self.w.write_record([
            "SB", &txn, &invoice, reference, ref_type, code, &at, &at, dir, &amount, c, fee_dir,
            &fee_text, fee_ccy, "", "", "", "", "", "", "", "",
        ])?;
        if refund {
            self.debits += gross;
        } else {
            self.credits += gross;
        }
        self.fees += fee;
        self.rows += 1;
        Ok(())
    }

    fn finish(&mut self, t: &Totals) -> std::io::Result<u64> {
        let c = if t.currency.is_empty() {
            "USD"
        } else {
            t.currency.as_str()
        };
        // The code, the currency, gross credits and debits, fees debited
        // and credited, six (CR/DR, balance) pairs, the row count.
        let totals = |code: &str| {
            let mut f = vec![
                code.to_string(),
                c.to_string(),
                x100(self.credits, c),
                x100(self.debits, c),
                x100(self.fees, c),
                "0".into(),
            ];
            for _ in 0..6 {
                f.extend(["CR".to_string(), "0".to_string()]);
            }
            f.push(self.rows.to_string());
            f
        };
        self.w.write_record(totals("SF"))?;
        self.w.write_record(["SC", &self.rows.to_string()])?;
        self.w.write_record(totals("RF"))?;
        self.w.write_record(["RC", &self.rows.to_string()])?;
        self.w.write_record(["FF", &(self.rows + 9).to_string()])?;
        self.w.flush()?;
        Ok(0)
    }
}
