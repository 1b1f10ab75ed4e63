//! Settle-time models: when each simulated payment settles at the provider,
//! with what status, and when (or whether) its webhook arrives.

use finality_core::{Status, Timestamp};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use serde::Deserialize;
use std::time::Duration;

/// A log-normal time: `median` and `sigma` (the standard deviation of the
/// natural logarithm).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogNormalTime {
    #[serde(with = "humantime_serde")]
    pub median: Duration,
    pub sigma: f64,
}

impl LogNormalTime {
    fn sample(&self, rng: &mut impl Rng) -> Duration {
        let mu = self.median.as_secs_f64().max(1e-3).ln();
        match LogNormal::new(mu, self.sigma.max(0.0)) {
            Ok(d) => Duration::from_secs_f64(d.sample(rng).min(1e9)),
            Err(_) => self.median,
        }
    }
}

/// One part of a mixture: a share of payments that settle after a
/// log-normal time (or never).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    pub share: f64,
    /// `None`: these payments never settle at the provider.
    #[serde(default)]
    pub settles_after: Option<LogNormalTime>,
    /// The final status they settle with (default `succeeded`).
    #[serde(default = "succeeded")]
    pub status: Status,
}

fn succeeded() -> Status {
    Status::Succeeded
}

/// A whole model: the mixture, how webhooks behave, and the run's shape.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    #[serde(default)]
    pub name: String,
    pub components: Vec<Component>,
    /// The share of webhooks that never arrive.
    pub webhook_loss: f64,
    /// When a webhook arrives after settlement.
    pub webhook_delay: LogNormalTime,
    /// Payments are registered at an even rate over this window.
    #[serde(with = "humantime_serde")]
    pub registration_window: Duration,
    /// Polling stops (the payment goes to review) at this age.
    #[serde(with = "humantime_serde")]
    pub horizon: Duration,
    /// The provider's webhook sender is down over this stretch (from the
    /// run's start): webhooks falling due in it are never sent.
    #[serde(default)]
    pub webhook_outage: Option<Outage>,
    /// Drawn from recorded history instead of `components` and
    /// `webhook_delay` (`finality tune`'s fit).
    #[serde(skip)]
    pub empirical: Option<std::sync::Arc<Empirical>>,
}

/// Payments' fates as recorded: each draw takes one at random (a
/// non-parametric fit, which keeps whatever shape the history has).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Empirical {
    /// How long after registration each recorded payment settled at the
    /// provider (`None`: it never did), and with what status.
    pub fates: Vec<(Option<Duration>, Status)>,
    /// Observed delays from settlement to the webhook's arrival.
    pub webhook_delays: Vec<Duration>,
}

/// `{ from = "6h", until = "8h" }`, counted from the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    #[serde(with = "humantime_serde")]
    pub from: Duration,
    #[serde(with = "humantime_serde")]
    pub until: Duration,
}

/// An `--outage` that cannot be used, naming what was given.
#[derive(Debug, thiserror::Error)]
pub enum OutageError {
    #[error("`{0}`: expected FROM..UNTIL, e.g. 6h..8h")]
    Shape(String),
    #[error("`{value}`: {source}")]
    Duration {
        value: String,
        source: humantime::DurationError,
    },
    #[error("`{0}`: the outage must end after it starts")]
    Order(String),
}

impl std::str::FromStr for Outage {
    type Err = OutageError;
    /// `6h..8h`.
    fn from_str(s: &str) -> Result<Self, OutageError> {
        let (a, b) = s
            .split_once("..")
            .ok_or_else(|| OutageError::Shape(s.to_string()))?;
        let parse = |v: &str| {
            humantime::parse_duration(v.trim()).map_err(|source| OutageError::Duration {
                value: v.to_string(),
                source,
            })
        };
        let (from, until) = (parse(a)?, parse(b)?);
        if until <= from {
            return Err(OutageError::Order(s.to_string()));
        }
        Ok(Outage { from, until })
    }
}

/// One simulated payment as drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Draw {
    pub registered_at: Timestamp,
    /// When it settles at the provider; `None` never.
    pub settles_at: Option<Timestamp>,
    pub status: Status,
    /// When its webhook arrives; `None`: lost (or it never settles).
    pub webhook_at: Option<Timestamp>,
}

impl Model {
    /// The model the convergence targets are measured on: 2 % never settle;
    /// 70 % settle after a median 20 s (σ 1.0), 25 % after 5 min (σ 1.2),
    /// 3 % after 6 h (σ 1.0); 2 % of webhooks are lost, the rest arrive a
    /// median 1 s (σ 0.8) after settlement; registrations even over 24 h;
    /// polling stops at 7 days.
    pub fn mixture() -> Model {
        let lognormal = |secs: u64, sigma: f64| LogNormalTime {
            median: Duration::from_secs(secs),
            sigma,
        };
        Model {
            name: "mixture".into(),
            components: vec![
                Component {
                    share: 0.02,
                    settles_after: None,
                    status: Status::Succeeded,
                },
                Component {
                    share: 0.70,
                    settles_after: Some(lognormal(20, 1.0)),
                    status: Status::Succeeded,
                },
                Component {
                    share: 0.25,
                    settles_after: Some(lognormal(300, 1.2)),
                    status: Status::Succeeded,
                },
                Component {
                    share: 0.03,
                    settles_after: Some(lognormal(6 * 3600, 1.0)),
                    status: Status::Succeeded,
                },
            ],
            webhook_loss: 0.02,
            webhook_delay: LogNormalTime {
                median: Duration::from_secs(1),
                sigma: 0.8,
            },
            registration_window: Duration::from_secs(24 * 3600),
            horizon: Duration::from_secs(7 * 24 * 3600),
            webhook_outage: None,
            empirical: None,
        }
    }

    /// A provider whose payments settle in a known window, as bank
    /// transfers and vouchers do: 98 % after a log-normal of median 15 min
    /// (σ 0.3), 2 % never; webhooks as in `mixture`. Where waiting for the
    /// webhook (`webhook_wait_quantile`) pays.
    pub fn slow_settle() -> Model {
        let mut m = Model::mixture();
        m.name = "slow_settle".into();
        m.components = vec![
            Component {
                share: 0.98,
                settles_after: Some(LogNormalTime {
                    median: Duration::from_secs(15 * 60),
                    sigma: 0.3,
                }),
                status: Status::Succeeded,
            },
            Component {
                share: 0.02,
                settles_after: None,
                status: Status::Succeeded,
            },
        ];
        m
    }

    /// The simulator's own model (`finality sim`'s defaults): its settle
    /// time and outcome mix (the rest never settles) and its webhook loss;
    /// webhooks otherwise arrive a median 1 s (σ 0.8) after settlement.
    pub fn simulator() -> Model {
        let sim = finality_sim::SimConfig::default();
        let settles_after = Some(match sim.settle {
            finality_sim::config::SettleTime::LogNormal { median, sigma } => {
                LogNormalTime { median, sigma }
            }
            finality_sim::config::SettleTime::Fixed { after } => LogNormalTime {
                median: after,
                sigma: 0.0,
            },
        });
        let o = &sim.outcomes;
        let settle = |share: f64, status: Status| Component {
            share,
            settles_after,
            status,
        };
        Model {
            name: "simulator".into(),
            components: vec![
                settle(o.succeeded, Status::Succeeded),
                settle(o.failed, Status::Failed),
                settle(o.cancelled, Status::Cancelled),
                Component {
                    share: (1.0 - o.succeeded - o.failed - o.cancelled).max(0.0),
                    settles_after: None,
                    status: Status::Succeeded,
                },
            ],
            webhook_loss: sim.webhooks.lost,
            webhook_delay: LogNormalTime {
                median: Duration::from_secs(1),
                sigma: 0.8,
            },
            registration_window: Duration::from_secs(24 * 3600),
            horizon: Duration::from_secs(7 * 24 * 3600),
            webhook_outage: None,
            empirical: None,
        }
    }

    /// Check the shares and times; the field named is relative to the model.
    pub fn validate(&self) -> Result<(), finality_core::ConfigError> {
        use finality_core::ConfigError;
        let total: f64 = self.components.iter().map(|c| c.share).sum();
        if self.components.is_empty() || (total - 1.0).abs() > 1e-6 {
            return Err(ConfigError::new(
                "components",
                format!("the shares must add up to 1 (they add up to {total})"),
            ));
        }
        if let Some((i, _)) = self
            .components
            .iter()
            .enumerate()
            .find(|(_, c)| !(0.0..=1.0).contains(&c.share) || !c.status.is_final())
        {
            return Err(ConfigError::new(
                format!("components[{i}]"),
                "share must be within 0..1 and status final",
            ));
        }
        if !(0.0..=1.0).contains(&self.webhook_loss) {
            return Err(ConfigError::new("webhook_loss", "must be within 0..1"));
        }
        if self.horizon.is_zero() {
            return Err(ConfigError::new("horizon", "must be > 0"));
        }
        Ok(())
    }

    /// Draw `n` payments from `start`, reproducibly from `seed`.
    pub fn draw(&self, n: usize, start: Timestamp, seed: u64) -> Vec<Draw> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let window_ms = self.registration_window.as_millis() as f64;
        (0..n)
            .map(|i| {
                let registered_at =
                    Timestamp(start.0 + (window_ms * i as f64 / n.max(1) as f64) as i64);
                if let Some(e) = self.empirical.as_deref().filter(|e| !e.fates.is_empty()) {
                    let (after, status) = e.fates[rng.gen_range(0..e.fates.len())];
                    let settles_at = after.map(|a| registered_at.plus(a));
                    let lost = rng.gen::<f64>() < self.webhook_loss || e.webhook_delays.is_empty();
                    let webhook_at = settles_at.filter(|_| !lost).map(|s| {
                        s.plus(e.webhook_delays[rng.gen_range(0..e.webhook_delays.len())])
                    });
                    return Draw {
                        registered_at,
                        settles_at,
                        status,
                        webhook_at,
                    };
                }
                let mut pick: f64 = rng.gen();
                let component = self
                    .components
                    .iter()
                    .find(|c| {
                        pick -= c.share;
                        pick < 0.0
                    })
                    .or(self.components.last());
                let settles_at = component
                    .and_then(|c| c.settles_after)
                    .map(|t| registered_at.plus(t.sample(&mut rng)));
                let status = component.map_or(Status::Succeeded, |c| c.status);
                let lost = rng.gen::<f64>() < self.webhook_loss;
                let delay = self.webhook_delay.sample(&mut rng);
                let down = |t: Timestamp| {
                    self.webhook_outage
                        .is_some_and(|o| t >= start.plus(o.from) && t < start.plus(o.until))
                };
                let webhook_at = settles_at
                    .filter(|_| !lost)
                    .map(|s| s.plus(delay))
                    .filter(|t| !down(*t));
                Draw {
                    registered_at,
                    settles_at,
                    status,
                    webhook_at,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mixture_draws_its_shares() {
        let m = Model::mixture();
        m.validate().unwrap();
        let d = m.draw(20_000, Timestamp(0), 7);
        let never = d.iter().filter(|p| p.settles_at.is_none()).count() as f64 / 20_000.0;
        assert!((never - 0.02).abs() < 0.005, "{never}");
        let settled: Vec<&Draw> = d.iter().filter(|p| p.settles_at.is_some()).collect();
        let lost =
            settled.iter().filter(|p| p.webhook_at.is_none()).count() as f64 / settled.len() as f64;
        assert!((lost - 0.02).abs() < 0.005, "{lost}");
        assert_eq!(
            d.last().map(|p| p.registered_at.0 < 24 * 3600 * 1000),
            Some(true)
        );
        // Webhooks falling due in an outage window are never sent.
        let mut down = m.clone();
        down.webhook_outage = Some("0s..24h".parse().unwrap());
        assert!(down.draw(1_000, Timestamp(0), 7).iter().all(
            |p| p.webhook_at.is_none() || p.webhook_at.is_some_and(|t| t.0 >= 24 * 3600 * 1000)
        ));
        assert!("8h..6h"
            .parse::<Outage>()
            .unwrap_err()
            .to_string()
            .contains("end after"));
        assert!("6h"
            .parse::<Outage>()
            .unwrap_err()
            .to_string()
            .contains("FROM..UNTIL"));
        // Reproducible from the seed.
        assert_eq!(m.draw(100, Timestamp(0), 7), m.draw(100, Timestamp(0), 7));
    }
}
