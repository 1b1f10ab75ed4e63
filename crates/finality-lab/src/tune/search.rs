//! Searching schedule families for the fewest provider calls at a target
//! lost-webhook detection time, with the schedule code alone
//! ([`finality_core::cost`]: the real `RetryPolicy::next_poll` over drawn
//! payments, no engine): microseconds per payment, so thousands of
//! candidates take seconds. The winner is then confirmed on the engine by
//! `finality simulate`'s machinery.

use crate::simulate::model::Draw;
use finality_core::{RetryPolicy, Schedule};
use std::time::Duration;

pub use finality_core::cost::Cost as Eval;
use finality_core::cost::Fate;

/// The fates of `draws`, as the evaluator takes them.
pub fn fates(draws: &[Draw]) -> Vec<Fate> {
    draws
        .iter()
        .map(|d| Fate {
            registered_at: d.registered_at,
            settles_at: d.settles_at,
            webhook_at: d.webhook_at,
        })
        .collect()
}

/// Evaluate `policy` over `draws` (the p95 as the tail).
#[cfg(test)]
pub fn evaluate(policy: &RetryPolicy, draws: &[Fate], seed: u64) -> Eval {
    finality_core::cost::evaluate(policy, draws, seed, 0.95)
}

/// The quantile the search holds to the target: 0.95 plus two standard
/// errors of a quantile estimated from `settled` recorded payments, so a
/// history that happens to settle a little early does not buy a schedule
/// that misses the target on the provider's real traffic (0.956 from 6,000
/// settled payments, 0.951 from 100,000).
pub fn tail_quantile(settled: usize) -> f64 {
    let n = settled.max(1) as f64;
    (0.95 + 2.0 * (0.95 * 0.05 / n).sqrt()).min(0.99)
}

/// A candidate's shape, all but its first interval (`every` / `base`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Family {
    /// Every X until age `until`, then ×`factor` up to `cap`.
    Piecewise {
        until: Duration,
        factor: f64,
        cap: Duration,
    },
    /// X, then ×`factor` per poll up to `cap`.
    Exponential { factor: f64, cap: Duration },
    /// Every X until age `until`, then after `fraction` of the age, up to
    /// `cap`: the family that holds a p99 target.
    Proportional {
        until: Duration,
        fraction: f64,
        cap: Duration,
    },
}

/// The jitter every candidate gets (spreads polls of payments registered
/// together; small enough not to move the figures).
const JITTER: f64 = 0.1;

impl Family {
    pub fn schedule(self, first: Duration) -> Schedule {
        match self {
            Family::Piecewise { until, factor, cap } => Schedule::Piecewise {
                every: first,
                until,
                factor,
                cap: cap.max(first),
                jitter: JITTER,
            },
            Family::Exponential { factor, cap } => Schedule::Exponential {
                base: first,
                factor,
                cap: cap.max(first),
                jitter: JITTER,
            },
            Family::Proportional {
                until,
                fraction,
                cap,
            } => Schedule::Proportional {
                every: first,
                until,
                fraction,
                cap: cap.max(first),
                jitter: JITTER,
                later: Vec::new(),
            },
        }
    }

    /// The shapes searched.
    pub fn all() -> Vec<Family> {
        let m = |n: u64| Duration::from_secs(n * 60);
        let h = |n: u64| Duration::from_secs(n * 3600);
        let mut out = Vec::new();
        for until in [m(10), m(20), m(30), h(1), h(2), h(4)] {
            for factor in [1.5, 2.0, 3.0] {
                for cap in [h(1), h(6), h(24), h(48)] {
                    out.push(Family::Piecewise { until, factor, cap });
                }
            }
        }
        for factor in [1.5, 2.0, 3.0] {
            for cap in [h(1), h(6), h(24), h(48)] {
                out.push(Family::Exponential { factor, cap });
            }
        }
        for until in [m(10), m(20), m(30), h(1)] {
            for fraction in [0.1, 0.15, 0.2, 0.3] {
                for cap in [h(6), h(24)] {
                    out.push(Family::Proportional {
                        until,
                        fraction,
                        cap,
                    });
                }
            }
        }
        out
    }
}

/// The best schedule found: its shape, first interval and figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    pub family: Family,
    pub first: Duration,
    pub eval: Eval,
}

impl Found {
    pub fn policy(&self, base: &RetryPolicy) -> RetryPolicy {
        RetryPolicy {
            schedule: self.family.schedule(self.first),
            ..base.clone()
        }
    }
}

/// What a candidate must meet: its tail quantile within the p95 target
/// and, when one is given, its p99 within the p99 target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    pub p95: f64,
    pub p99: Option<f64>,
}

fn feasible(e: &Eval, target: Target) -> bool {
    e.undetected == 0 && e.tail <= target.p95 && target.p99.is_none_or(|t| e.p99 <= t)
}

/// For each family, the longest first interval that still meets the target
/// (a coarse geometric scan from 5 s to 1 h, then bisection between the
/// last interval that meets it and the first that does not), and of those
/// the one with the fewest calls. `None` when no candidate meets it.
pub fn search(
    base: &RetryPolicy,
    draws: &[Fate],
    target_p95: Duration,
    target_p99: Option<Duration>,
    tail_q: f64,
    seed: u64,
) -> (Option<Found>, usize) {
    let target = Target {
        p95: target_p95.as_secs_f64(),
        p99: target_p99.map(|d| d.as_secs_f64()),
    };
    let families = Family::all();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = families.len().div_ceil(threads);
    let results: Vec<(Option<Found>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = families
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut best: Option<Found> = None;
                    let mut tried = 0;
                    for family in part {
                        let (found, n) = longest_first(*family, base, draws, target, tail_q, seed);
                        tried += n;
                        if let Some(f) = found {
                            if best.is_none_or(|b| f.eval.calls < b.eval.calls) {
                                best = Some(f);
                            }
                        }
                    }
                    (best, tried)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or((None, 0)))
            .collect()
    });
    let tried = results.iter().map(|r| r.1).sum();
    let best = results
        .into_iter()
        .filter_map(|r| r.0)
        .min_by(|a, b| a.eval.calls.total_cmp(&b.eval.calls));
    (best, tried)
}

fn longest_first(
    family: Family,
    base: &RetryPolicy,
    draws: &[Fate],
    target: Target,
    tail_q: f64,
    seed: u64,
) -> (Option<Found>, usize) {
    let eval = |first: Duration| {
        let policy = RetryPolicy {
            schedule: family.schedule(first),
            ..base.clone()
        };
        finality_core::cost::evaluate(&policy, draws, seed, tail_q)
    };
    let mut tried = 0;
    let mut good: Option<(Duration, Eval)> = None;
    let mut bad: Option<Duration> = None;
    let (lo, hi) = (5.0f64, 3600.0f64);
    let steps = 12;
    for i in 0..=steps {
        let first = Duration::from_secs_f64(lo * (hi / lo).powf(f64::from(i) / f64::from(steps)));
        let e = eval(first);
        tried += 1;
        if feasible(&e, target) {
            good = Some((first, e));
        } else if good.is_some() {
            bad = Some(first);
            break;
        }
    }
    let Some((mut g, mut ge)) = good else {
        return (None, tried);
    };
    if let Some(mut b) = bad {
        for _ in 0..10 {
            let mid = Duration::from_secs_f64((g.as_secs_f64() * b.as_secs_f64()).sqrt());
            let e = eval(mid);
            tried += 1;
            if feasible(&e, target) {
                (g, ge) = (mid, e);
            } else {
                b = mid;
            }
        }
    }
    // Whole seconds, as a person would write it in finality.toml.
    let first = Duration::from_secs(g.as_secs().max(1));
    let e = eval(first);
    tried += 1;
    let (first, e) = if feasible(&e, target) {
        (first, e)
    } else {
        (g, ge)
    };
    (
        Some(Found {
            family,
            first,
            eval: e,
        }),
        tried,
    )
}
