//! Fitting a provider's recorded history: when its payments settled at the
//! provider, how its webhooks arrived, how many never settled. The fit is
//! the history itself (draws resample it), so it keeps whatever shape the
//! provider has rather than forcing one.

use crate::simulate::model::Empirical;
use finality_core::{Source, Status, Timestamp};
use finality_store::{ListFilter, PaymentStore};
use std::time::Duration;

/// What a provider's history says.
#[derive(Debug, Clone, Default)]
pub struct Fit {
    pub provider: String,
    /// Payments read (registered in the window, not open).
    pub payments: usize,
    /// Open payments left out: their fate is not known yet.
    pub open: usize,
    pub by_webhook: usize,
    /// Final by a poll or the event list: the webhook did not come first
    /// (lost, late, or the poll was simply earlier).
    pub by_poll: usize,
    /// In review or settled by hand: treated as never settling.
    pub never: usize,
    pub empirical: Empirical,
}

impl Fit {
    /// The share of webhooks taken as lost: every payment whose final
    /// status a poll learned first. An upper bound (a poll may have beaten
    /// a webhook that was on its way), so the schedule errs on the safe side.
    pub fn webhook_loss(&self) -> f64 {
        let settled = self.by_webhook + self.by_poll;
        if settled == 0 {
            return 1.0;
        }
        self.by_poll as f64 / settled as f64
    }

    /// Quantile `q` of the settle times (seconds), over settled payments.
    pub fn settle_quantile(&self, q: f64) -> Option<f64> {
        let mut v: Vec<f64> = self
            .empirical
            .fates
            .iter()
            .filter_map(|(a, _)| a.map(|d| d.as_secs_f64()))
            .collect();
        quantile(&mut v, q)
    }

    /// Quantile `q` of the webhook delays (seconds).
    pub fn delay_quantile(&self, q: f64) -> Option<f64> {
        let mut v: Vec<f64> = self
            .empirical
            .webhook_delays
            .iter()
            .map(Duration::as_secs_f64)
            .collect();
        quantile(&mut v, q)
    }
}

fn quantile(v: &mut [f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

fn after(from: Timestamp, to: Timestamp) -> Duration {
    Duration::from_millis(u64::try_from(to.0 - from.0).unwrap_or(0))
}

/// Read up to `max` payments of `provider` registered since `since`, with
/// their history and calls, and fit them.
pub async fn read(
    store: &dyn PaymentStore,
    provider: &str,
    since: Timestamp,
    max: usize,
) -> finality_store::Result<Fit> {
    let mut fit = Fit {
        provider: provider.to_string(),
        ..Fit::default()
    };
    let mut after_id = None;
    'pages: loop {
        let page = store
            .list(&ListFilter {
                provider: Some(provider.to_string()),
                after_id: after_id.clone(),
                limit: 1000,
                ..Default::default()
            })
            .await?;
        let Some(last) = page.last() else { break };
        after_id = Some(last.id.clone());
        for p in page {
            if p.created_at < since {
                continue;
            }
            if fit.payments + fit.open >= max {
                break 'pages;
            }
            if !p.status.is_final() && p.status != Status::NeedsReview {
                fit.open += 1;
                continue;
            }
            fit.payments += 1;
            let Some(view) = store.get(&p.id).await? else {
                continue;
            };
            let settled = view
                .history
                .iter()
                .find(|h| h.to.is_final() && h.to != Status::NeedsReview);
            let Some(h) = settled else {
                fit.never += 1;
                fit.empirical.fates.push((None, Status::NeedsReview));
                continue;
            };
            let at = match h.source {
                Source::Webhook => {
                    fit.by_webhook += 1;
                    fit.empirical
                        .webhook_delays
                        .push(after(h.observed_at, h.at));
                    h.observed_at
                }
                Source::Sweep => {
                    fit.by_poll += 1;
                    h.observed_at
                }
                Source::StatusQuery => {
                    fit.by_poll += 1;
                    // Settled between the last call that still saw it open
                    // and the one that saw it final: the midpoint.
                    let calls = store.attempts(&p.id).await?;
                    let seen = calls
                        .iter()
                        .position(|c| c.attempt.outcome == h.to.as_str())
                        .unwrap_or(calls.len().saturating_sub(1));
                    let to = calls
                        .get(seen)
                        .map_or(h.observed_at, |c| c.attempt.started_at);
                    let from = seen
                        .checked_sub(1)
                        .and_then(|i| calls.get(i))
                        .map_or(p.created_at, |c| c.attempt.started_at);
                    Timestamp(from.0 + (to.0 - from.0) / 2)
                }
                Source::Manual => {
                    fit.never += 1;
                    fit.empirical.fates.push((None, Status::NeedsReview));
                    continue;
                }
            };
            fit.empirical
                .fates
                .push((Some(after(p.created_at, at)), h.to));
        }
    }
    Ok(fit)
}
