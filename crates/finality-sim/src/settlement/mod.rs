//! The simulated provider's settlement report: every payment it settled,
//! written as Adyen's Settlement details report (the 30 columns Adyen
//! documents, in Adyen's order), with discrepancies injected on purpose so
//! that reconciliation can be checked against a known answer.
//!
//! The report is written as a stream from an iterator of settled payments,
//! so the same writer serves the simulator's own payments and the
//! benchmark's million synthetic ones. Which payments get which discrepancy
//! is drawn from a seed, and everything injected is returned
//! ([`Injected`]), so a test knows what each line should be classified as.

use finality_core::money::Currency;
use finality_core::Timestamp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::Write;

pub(crate) mod adyen;
pub mod bills;
pub(crate) mod stl;

pub use adyen::ADYEN_HEADER;

/// A payment the provider settled, as its report lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// The provider's id (`Psp Reference`).
    pub psp_reference: String,
    pub merchant_reference: Option<String>,
    /// Minor units.
    pub amount: i64,
    pub currency: String,
    pub at: Timestamp,
}

/// What to get wrong, each a probability per settled payment (drawn
/// exclusively: a payment gets at most one), plus lines for payments the
/// merchant never registered.
#[derive(Debug, Clone, PartialEq)]
pub struct Inject {
    /// Settled, but left out of the report.
    pub missing: f64,
    /// Listed with a gross one major unit higher than it settled.
    pub wrong_amount: f64,
    /// Listed, then refunded in full on a second line.
    pub refunded: f64,
    /// Lines for payments nobody registered, per settled payment.
    pub unknown: f64,
    pub seed: u64,
}

impl Inject {
    /// No discrepancy: the report is the provider's truth.
    pub fn none() -> Self {
        Inject {
            missing: 0.0,
            wrong_amount: 0.0,
            refunded: 0.0,
            unknown: 0.0,
            seed: 0,
        }
    }
}

/// What a report holds besides plain settled lines: the provider
/// references each discrepancy was injected on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Injected {
    pub missing: Vec<String>,
    pub wrong_amount: Vec<String>,
    pub refunded: Vec<String>,
    pub unknown: Vec<String>,
    /// Lines written after the header.
    pub lines: u64,
    /// `Settled` lines with the right amount.
    pub settled: u64,
    /// Batch-level lines (one `Fee`, one `MerchantPayout`).
    pub batch_lines: u64,
}

/// `amount` minor units as Adyen writes a gross: a decimal in major units
/// with the currency's own number of decimals.
pub fn decimal(amount: i64, currency: &str) -> String {
    finality_core::money::decimal_in(amount, currency)
}

pub(crate) fn date(t: Timestamp) -> String {
    chrono::DateTime::from_timestamp_millis(t.0)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

/// The fee the simulated provider keeps: 1.4 % + 0.25 in minor units.
pub(crate) fn fee_of(amount: i64) -> i64 {
    amount * 14 / 1000 + 25
}

/// How one provider writes its report: the layout's header, one line per
/// settled payment or its refund, and what closes the file.
pub trait Layout {
    /// A line for `s`: money in of `gross` with `fee` kept, or (`refund`)
    /// all of it given back.
    fn line(&mut self, s: &Settled, refund: bool, gross: i64, fee: i64) -> std::io::Result<()>;
    /// Close the report after its last line; the lines it wrote.
    fn finish(&mut self, totals: &Totals) -> std::io::Result<u64>;
}

/// What a report's lines add up to, for its closing lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub fees: i64,
    pub net: i64,
    pub last_at: Timestamp,
    pub currency: String,
    pub charges: u64,
    pub refunds: u64,
    pub gross: i64,
    pub refunded: i64,
}

/// Write `settled` through `layout`, with `inject`'s discrepancies drawn
/// from its seed (each payment gets at most one). Memory stays flat: one
/// line at a time.
pub fn write_report(
    settled: impl IntoIterator<Item = Settled>,
    inject: &Inject,
    layout: &mut dyn Layout,
) -> std::io::Result<Injected> {
    let mut rng = StdRng::seed_from_u64(inject.seed);
    let mut done = Injected::default();
    let mut t = Totals::default();
    let charge = |layout: &mut dyn Layout, t: &mut Totals, s: &Settled, gross: i64| {
        t.fees += fee_of(gross);
        t.net += gross - fee_of(gross);
        t.charges += 1;
        t.gross += gross;
        layout.line(s, false, gross, fee_of(gross))
    };
    for s in settled {
        let r: f64 = rng.gen();
        let unknown = rng.gen_bool(inject.unknown.clamp(0.0, 1.0));
        t.last_at = t.last_at.max(s.at);
        if t.currency.is_empty() {
            t.currency.clone_from(&s.currency);
        }
        if r < inject.missing {
            done.missing.push(s.psp_reference.clone());
        } else if r < inject.missing + inject.wrong_amount {
            let gross =
                s.amount + 10i64.pow(Currency::parse(&s.currency).map_or(2, |c| c.exponent()));
            charge(layout, &mut t, &s, gross)?;
            done.wrong_amount.push(s.psp_reference.clone());
            done.lines += 1;
        } else {
            charge(layout, &mut t, &s, s.amount)?;
            done.settled += 1;
            done.lines += 1;
            if r < inject.missing + inject.wrong_amount + inject.refunded {
                layout.line(&s, true, s.amount, 0)?;
                t.net -= s.amount;
                t.refunds += 1;
                t.refunded += s.amount;
                done.refunded.push(s.psp_reference.clone());
                done.lines += 1;
            }
        }
        if unknown {
            let stranger = Settled {
                psp_reference: format!("99{:014}", done.unknown.len() + 1),
                merchant_reference: None,
                ..s.clone()
            };
            charge(layout, &mut t, &stranger, s.amount)?;
            done.unknown.push(stranger.psp_reference);
            done.lines += 1;
        }
    }
    let closing = layout.finish(&t)?;
    done.lines += closing;
    done.batch_lines += closing;
    Ok(done)
}

/// Write `settled` as batch `batch` of an Adyen Settlement details report,
/// with `inject`'s discrepancies.
pub fn write_adyen_report<W: Write>(
    settled: impl IntoIterator<Item = Settled>,
    inject: &Inject,
    batch: u32,
    out: W,
) -> std::io::Result<Injected> {
    let mut layout = adyen::AdyenLayout::new(out, batch)?;
    write_report(settled, inject, &mut layout)
}

impl crate::model::Simulator {
    /// Every payment this simulator settled as succeeded by `until`, in
    /// the order they settled.
    pub fn settled_until(&self, until: Timestamp) -> Vec<Settled> {
        let mut out: Vec<Settled> = self
            .plans_snapshot()
            .into_iter()
            .filter(|p| p.outcome == crate::plan::Outcome::Succeeded)
            .filter_map(|p| {
                let at = p.settles_at.filter(|t| *t <= until)?;
                Some(Settled {
                    psp_reference: p.id,
                    merchant_reference: p.merchant_ref,
                    amount: p.amount,
                    currency: p.currency,
                    at,
                })
            })
            .collect();
        out.sort_by(|a, b| (a.at, &a.psp_reference).cmp(&(b.at, &b.psp_reference)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settled(n: usize) -> Vec<Settled> {
        (0..n)
            .map(|i| Settled {
                psp_reference: format!("psp{i:06}"),
                merchant_reference: Some(format!("order-{i}")),
                amount: 1000 + i as i64,
                currency: "EUR".into(),
                at: Timestamp(1_767_225_600_000 + i as i64 * 1000),
            })
            .collect()
    }

    #[test]
    fn decimals_follow_the_currency() {
        assert_eq!(decimal(1250, "EUR"), "12.50");
        assert_eq!(decimal(5, "EUR"), "0.05");
        assert_eq!(decimal(1250, "JPY"), "1250");
        assert_eq!(decimal(1250, "KWD"), "1.250");
        assert_eq!(decimal(-990, "USD"), "-9.90");
    }

    #[test]
    fn a_clean_report_lists_every_payment_once() {
        let mut buf = Vec::new();
        let done = write_adyen_report(settled(50), &Inject::none(), 7, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert_eq!(text.lines().count(), 1 + 50 + 2);
        assert_eq!((done.settled, done.lines, done.batch_lines), (50, 52, 2));
        assert!(text.starts_with("Company Account,Merchant Account,Psp Reference,"));
        assert!(text.contains(",psp000003,order-3,visa,2026-01-01 00:00:03,UTC,Settled,"));
        assert!(text.contains(",EUR,,10.03,1,EUR,,"), "{text}");
    }

    #[test]
    fn injected_discrepancies_are_exclusive_and_reported() {
        let inject = Inject {
            missing: 0.1,
            wrong_amount: 0.1,
            refunded: 0.1,
            unknown: 0.05,
            seed: 3,
        };
        let mut buf = Vec::new();
        let done = write_adyen_report(settled(1000), &inject, 1, &mut buf).unwrap();
        for list in [
            &done.missing,
            &done.wrong_amount,
            &done.refunded,
            &done.unknown,
        ] {
            assert!(list.len() > 10, "{done:?}");
        }
        let text = String::from_utf8(buf).unwrap();
        for r in &done.missing {
            assert!(!text.contains(r.as_str()), "{r} is missing");
        }
        for r in &done.refunded {
            assert!(text.contains(&format!(",{r},")));
            assert!(!done.wrong_amount.contains(r) && !done.missing.contains(r));
        }
        assert_eq!(text.lines().count() as u64, 1 + done.lines);
        // The same seed draws the same report.
        let mut again = Vec::new();
        write_adyen_report(settled(1000), &inject, 1, &mut again).unwrap();
        assert_eq!(again, text.into_bytes());
    }
}
