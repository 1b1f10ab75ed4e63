//! Searching schedule families for the fewest provider calls at a target
//! lost-webhook detection time, with the schedule code alone (the real
//! `RetryPolicy::next_poll` over drawn payments, no engine): microseconds
//! per payment, so thousands of candidates take seconds. The winner is then
//! confirmed on the engine by `finality simulate`'s machinery.

use crate::simulate::model::Draw;
use finality_core::{NextPoll, RetryPolicy, Schedule};
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// What a schedule costs and catches over a set of draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eval {
    /// Provider calls per payment (polls made before the payment was final
    /// here, by its webhook or by that poll).
    pub calls: f64,
    /// p95 of the time from settlement to the first poll after it, over
    /// every settled payment as if its webhook had been lost (the lost ones
    /// are a random share, so this is their p95 with far less noise).
    pub p95: f64,
    /// Settled within the give-up window, yet no poll after settlement
    /// before the schedule gave up (as if the webhook had been lost).
    pub undetected: usize,
}

/// Evaluate `policy` over `draws`, with the jitter drawn from `seed`.
pub fn evaluate(policy: &RetryPolicy, draws: &[Draw], seed: u64) -> Eval {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut calls = 0u64;
    let mut detection = Vec::with_capacity(draws.len());
    let mut undetected = 0;
    for d in draws {
        let reg = d.registered_at;
        let mut t = policy.first_poll_at(reg);
        let mut attempts = 0u32;
        loop {
            // A poll happens only while no webhook has made it final.
            if d.webhook_at.is_none_or(|w| t < w) {
                calls += 1;
            }
            if let Some(s) = d.settles_at.filter(|s| *s <= t) {
                detection.push((t.0 - s.0) as f64 / 1000.0);
                break;
            }
            attempts += 1;
            match policy.next_poll(reg, t, attempts, rng.gen_range(-1.0..=1.0)) {
                NextPoll::At(next) => t = next,
                NextPoll::GiveUp(_) => {
                    if d.settles_at
                        .is_some_and(|s| s.since(reg) <= policy.give_up_after)
                    {
                        undetected += 1;
                    }
                    break;
                }
            }
        }
    }
    detection.sort_by(f64::total_cmp);
    let p95 = if detection.is_empty() {
        0.0
    } else {
        let rank = ((0.95 * detection.len() as f64).ceil() as usize).clamp(1, detection.len());
        detection[rank - 1]
    };
    Eval {
        calls: calls as f64 / draws.len().max(1) as f64,
        p95,
        undetected,
    }
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

fn feasible(e: &Eval, target_p95: f64) -> bool {
    e.undetected == 0 && e.p95 <= target_p95
}

/// For each family, the longest first interval that still meets the target
/// (a coarse geometric scan from 5 s to 1 h, then bisection between the
/// last interval that meets it and the first that does not), and of those
/// the one with the fewest calls. `None` when no candidate meets it.
pub fn search(
    base: &RetryPolicy,
    draws: &[Draw],
    target_p95: Duration,
    seed: u64,
) -> (Option<Found>, usize) {
    let target = target_p95.as_secs_f64();
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
                        let (found, n) = longest_first(*family, base, draws, target, seed);
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
    draws: &[Draw],
    target: f64,
    seed: u64,
) -> (Option<Found>, usize) {
    let eval = |first: Duration| {
        let policy = RetryPolicy {
            schedule: family.schedule(first),
            ..base.clone()
        };
        evaluate(&policy, draws, seed)
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
