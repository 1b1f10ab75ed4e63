//! Retry schedules as data, and the policy that decides when to give up.
//!
//! A delay is counted from the *completion* of the previous query, so a slow
//! provider answer never makes the next poll come early.

use crate::clock::Timestamp;
use serde::{Deserialize, Serialize};
use std::time::Duration;

fn default_jitter() -> f64 {
    0.2
}

/// When to ask again after `n` completed queries. Every variant is
/// configurable from `finality.toml` (`kind = "fixed" | "exponential" |
/// "fibonacci" | "quick_then" | "piecewise"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Schedule {
    /// A fixed list of delays; the last one repeats.
    Fixed {
        #[serde(with = "crate::serde_duration")]
        delays: Vec<Duration>,
    },
    /// `base * factor^n`, capped, with ±`jitter` (a fraction, default 0.2).
    Exponential {
        #[serde(with = "humantime_serde")]
        base: Duration,
        factor: f64,
        #[serde(with = "humantime_serde")]
        cap: Duration,
        #[serde(default = "default_jitter")]
        jitter: f64,
    },
    /// `base * fib(n)` (1, 1, 2, 3, 5, …), capped, with ±`jitter`.
    Fibonacci {
        #[serde(with = "humantime_serde")]
        base: Duration,
        #[serde(with = "humantime_serde")]
        cap: Duration,
        #[serde(default = "default_jitter")]
        jitter: f64,
    },
    /// `count` quick polls `interval` apart, then the `then` schedule.
    QuickThen {
        count: u32,
        #[serde(with = "humantime_serde")]
        interval: Duration,
        then: Box<Schedule>,
    },
    /// By the payment's age: every `every` until age `until`, then growing
    /// by `factor` per poll up to `cap`, ±`jitter`. Past `until` the delay
    /// is `every + (factor − 1) × (age − until)`, which is exactly the
    /// geometric sequence ×`factor` written as a function of age, so it
    /// needs no count of polls since the switch.
    Piecewise {
        #[serde(with = "humantime_serde")]
        every: Duration,
        #[serde(with = "humantime_serde")]
        until: Duration,
        factor: f64,
        #[serde(with = "humantime_serde")]
        cap: Duration,
        #[serde(default = "default_jitter")]
        jitter: f64,
    },
    /// By the payment's age: every `every` until age `until`, then after a
    /// `fraction` of its age (at least `every`, at most `cap`), ±`jitter`.
    /// A payment that settles at age A is then found at most about
    /// `fraction` × A late: the detection delay of a slow payment whose
    /// webhook was lost stays a bounded share of how long it took, where
    /// `piecewise`'s doubling lets it grow to the payment's whole age.
    /// `later` (optional) changes the fraction from given ages on, e.g.
    /// `later = [{ after = "2h", fraction = 0.12 }, { after = "1day",
    /// fraction = 0.5 }]`: a larger fraction where the delay it allows is
    /// short anyway (a young payment), a smaller one where slow payments
    /// settle, and a large one where open payments rarely settle any more.
    Proportional {
        #[serde(with = "humantime_serde")]
        every: Duration,
        #[serde(with = "humantime_serde")]
        until: Duration,
        fraction: f64,
        #[serde(with = "humantime_serde")]
        cap: Duration,
        #[serde(default = "default_jitter")]
        jitter: f64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        later: Vec<FractionStep>,
    },
    /// At every step the shortest delay of any schedule in `of`: never
    /// polls less often than any of them. The webhook outage schedule is
    /// the fastest of the polls-only default and the provider's own, so an
    /// operator's quicker `schedule` is never slowed down by an outage.
    Fastest { of: Vec<Schedule> },
}

/// From age `after` on, a `proportional` schedule waits `fraction` of the
/// payment's age.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FractionStep {
    #[serde(with = "humantime_serde")]
    pub after: Duration,
    pub fraction: f64,
}

/// A schedule that cannot work as written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ScheduleError(pub String);

impl Schedule {
    /// The schedule before the measured defaults (`default_webhooks_first`,
    /// `default_polls_only`): ten polls a second apart, then exponential
    /// from 5 s to 1 h. Kept for [`RetryPolicy::default`] and as the
    /// `quick_exponential` row `finality simulate` compares against.
    pub fn default_quick_then_exponential() -> Schedule {
        Schedule::QuickThen {
            count: 10,
            interval: Duration::from_secs(1),
            then: Box::new(Schedule::Exponential {
                base: Duration::from_secs(5),
                factor: 2.0,
                cap: Duration::from_secs(3600),
                jitter: 0.2,
            }),
        }
    }

    /// The default where webhooks are the fast path and polls the safety
    /// net: every 103 s until 30 min of age, then after a share of the
    /// payment's age: 40 % until 90 min, 25 % until 3 h, 10 % until a day
    /// (where slow payments such as bank transfers settle), then daily;
    /// ±10 %. Chosen with `finality simulate` on the `mixture` model
    /// (100,000 payments, seeds 1 to 11): 3.12–3.22 provider calls per
    /// payment, a payment whose webhook was lost caught within 102–106 s at
    /// p95 and 1,345–2,237 s at p99, nothing that settled within a week
    /// missed (`docs/CONVERGENCE.md`). The doubling it replaced caught the
    /// same p95 with 2.7 calls, but its p99 was 20,389 s: a slow payment
    /// whose webhook was lost was found hours late.
    pub fn default_webhooks_first() -> Schedule {
        let step = |after_secs: u64, fraction: f64| FractionStep {
            after: Duration::from_secs(after_secs),
            fraction,
        };
        Schedule::Proportional {
            every: Duration::from_secs(103),
            until: Duration::from_secs(30 * 60),
            fraction: 0.4,
            cap: Duration::from_secs(24 * 3600),
            jitter: 0.1,
            later: vec![
                step(90 * 60, 0.25),
                step(3 * 3600, 0.10),
                step(24 * 3600, 1.0),
            ],
        }
    }

    /// The default before the proportional one: every 100 s until 30 min
    /// of age, then ×2 up to a day, ±10 % (2.7 calls per payment, p95
    /// 103 s, p99 20,389 s on the `mixture` model). Kept as the `doubling`
    /// row `finality simulate` compares against.
    pub fn doubling() -> Schedule {
        Schedule::doubling_after(Duration::from_secs(100))
    }

    /// Every `every` until 30 min of age, then ×2 up to a day, ±10 %.
    fn doubling_after(every: Duration) -> Schedule {
        Schedule::Piecewise {
            every,
            until: Duration::from_secs(30 * 60),
            factor: 2.0,
            cap: Duration::from_secs(24 * 3600),
            jitter: 0.1,
        }
    }

    /// The default where polls are the only way to learn a status (no
    /// webhooks configured, or a provider's webhooks are down): ten polls a
    /// second apart (card payments settle in seconds), then the
    /// webhooks-first schedule. Measured with `finality simulate` on the
    /// `mixture` model without webhooks' help: 12.2 calls per payment, a
    /// settlement caught within 111 s at p95 and 1,906 s at p99, none
    /// missed; the previous `quick_then` exponential made 12.9 calls for a
    /// p95 of 595 s.
    pub fn default_polls_only() -> Schedule {
        Schedule::QuickThen {
            count: 10,
            interval: Duration::from_secs(1),
            then: Box::new(Schedule::default_webhooks_first()),
        }
    }

    /// Fewer calls for a slower catch of a lost webhook: every 240 s until
    /// 30 min, then ×2 up to a day, ±10 % (1.3 calls per payment, p95 239 s
    /// on the `mixture` model).
    pub fn economy() -> Schedule {
        Schedule::doubling_after(Duration::from_secs(240))
    }

    pub fn validate(&self) -> Result<(), ScheduleError> {
        let bad = |m: &str| Err(ScheduleError(m.to_string()));
        match self {
            Schedule::Fixed { delays } if delays.is_empty() => bad("fixed: `delays` is empty"),
            Schedule::Fixed { .. } => Ok(()),
            Schedule::Exponential {
                base,
                factor,
                cap,
                jitter,
            } => {
                if !(factor.is_finite() && *factor >= 1.0) {
                    return bad("exponential: `factor` must be >= 1");
                }
                check_base_cap_jitter("exponential", *base, *cap, *jitter)
            }
            Schedule::Fibonacci { base, cap, jitter } => {
                check_base_cap_jitter("fibonacci", *base, *cap, *jitter)
            }
            Schedule::QuickThen { then, .. } => then.validate(),
            Schedule::Fastest { of } if of.is_empty() => bad("fastest: `of` is empty"),
            Schedule::Fastest { of } => of.iter().try_for_each(Schedule::validate),
            Schedule::Piecewise {
                every,
                factor,
                cap,
                jitter,
                ..
            } => {
                if !(factor.is_finite() && *factor >= 1.0) {
                    return bad("piecewise: `factor` must be >= 1");
                }
                check_base_cap_jitter("piecewise", *every, *cap, *jitter)
                    .map_err(|e| ScheduleError(e.0.replace("`base`", "`every`")))
            }
            Schedule::Proportional {
                every,
                fraction,
                cap,
                jitter,
                later,
                ..
            } => {
                let fraction_ok = |f: f64| f.is_finite() && f > 0.0 && f <= 10.0;
                if !fraction_ok(*fraction) {
                    return bad("proportional: `fraction` must be in (0, 10]");
                }
                if later.iter().any(|s| !fraction_ok(s.fraction)) {
                    return bad("proportional: each `later` fraction must be in (0, 10]");
                }
                if later.windows(2).any(|w| w[0].after >= w[1].after) {
                    return bad("proportional: `later` steps must be in increasing `after` order");
                }
                check_base_cap_jitter("proportional", *every, *cap, *jitter)
                    .map_err(|e| ScheduleError(e.0.replace("`base`", "`every`")))
            }
        }
    }

    /// The delay before query number `n + 1`, given `n` completed queries,
    /// before jitter. Non-decreasing in `n` for every variant but `Fixed`
    /// (whose list is the user's to order).
    pub fn nominal(&self, n: u32) -> Duration {
        match self {
            Schedule::Fixed { delays } => {
                let i = (n as usize).min(delays.len().saturating_sub(1));
                delays.get(i).copied().unwrap_or(Duration::ZERO)
            }
            Schedule::Exponential {
                base, factor, cap, ..
            } => {
                let secs = base.as_secs_f64() * factor.powi(n.min(1024) as i32);
                cap_secs(secs, *cap)
            }
            Schedule::Fibonacci { base, cap, .. } => {
                cap_secs(base.as_secs_f64() * fibonacci(n) as f64, *cap)
            }
            Schedule::QuickThen {
                count,
                interval,
                then,
            } => {
                if n < *count {
                    *interval
                } else {
                    then.nominal(n - count)
                }
            }
            // Without the payment's age (a retry loop), as if every poll so
            // far had come `every` apart.
            Schedule::Piecewise { every, .. } | Schedule::Proportional { every, .. } => {
                self.nominal_at(n, every.mul_f64(f64::from(n)))
            }
            Schedule::Fastest { of } => fastest(of, |s| s.nominal(n)),
        }
    }

    /// The delay before query `n + 1` of a payment `age` old, before jitter:
    /// only `Piecewise` and `Proportional` depend on the age; the others on
    /// `n` alone.
    pub fn nominal_at(&self, n: u32, age: Duration) -> Duration {
        match self {
            Schedule::Piecewise {
                every,
                until,
                factor,
                cap,
                ..
            } => {
                if age < *until {
                    *every
                } else {
                    let past = (age - *until).as_secs_f64();
                    cap_secs(every.as_secs_f64() + (factor - 1.0) * past, *cap)
                }
            }
            Schedule::Proportional {
                every,
                until,
                fraction,
                cap,
                later,
                ..
            } => {
                if age < *until {
                    *every
                } else {
                    let f = later
                        .iter()
                        .rev()
                        .find(|s| age >= s.after)
                        .map_or(*fraction, |s| s.fraction);
                    let secs = (f * age.as_secs_f64()).max(every.as_secs_f64());
                    cap_secs(secs, *cap)
                }
            }
            Schedule::QuickThen {
                count,
                interval,
                then,
            } => {
                if n < *count {
                    *interval
                } else {
                    then.nominal_at(n - count, age)
                }
            }
            Schedule::Fastest { of } => fastest(of, |s| s.nominal_at(n, age)),
            _ => self.nominal(n),
        }
    }

    /// [`Schedule::delay`] for a payment `age` old.
    pub fn delay_at(&self, n: u32, age: Duration, unit: f64) -> Duration {
        match self {
            Schedule::QuickThen { count, then, .. } if n >= *count => {
                then.delay_at(n - count, age, unit)
            }
            Schedule::Piecewise { cap, jitter, .. }
            | Schedule::Proportional { cap, jitter, .. } => {
                let nominal = self.nominal_at(n, age).as_secs_f64();
                cap_secs(nominal * (1.0 + jitter * unit.clamp(-1.0, 1.0)), *cap)
            }
            Schedule::Fastest { of } => fastest(of, |s| s.delay_at(n, age, unit)),
            _ => self.delay(n, unit),
        }
    }

    /// The delay before query `n + 1` with jitter applied. `unit` is a random
    /// draw in `[-1, 1]` (passed in so the result is reproducible); the result
    /// stays within `nominal * (1 ± jitter)` and never above the cap.
    pub fn delay(&self, n: u32, unit: f64) -> Duration {
        match self {
            Schedule::QuickThen { count, then, .. } if n >= *count => then.delay(n - count, unit),
            Schedule::Piecewise { every, .. } | Schedule::Proportional { every, .. } => {
                self.delay_at(n, every.mul_f64(f64::from(n)), unit)
            }
            Schedule::Exponential { cap, jitter, .. } | Schedule::Fibonacci { cap, jitter, .. } => {
                let nominal = self.nominal(n).as_secs_f64();
                let u = unit.clamp(-1.0, 1.0);
                cap_secs(nominal * (1.0 + jitter * u), *cap)
            }
            Schedule::Fastest { of } => fastest(of, |s| s.delay(n, unit)),
            _ => self.nominal(n),
        }
    }
}

/// The shortest of `of`'s delays (zero for an empty list, which
/// [`Schedule::validate`] refuses).
fn fastest(of: &[Schedule], delay: impl Fn(&Schedule) -> Duration) -> Duration {
    of.iter().map(delay).min().unwrap_or(Duration::ZERO)
}

fn check_base_cap_jitter(
    name: &str,
    base: Duration,
    cap: Duration,
    jitter: f64,
) -> Result<(), ScheduleError> {
    if base.is_zero() {
        return Err(ScheduleError(format!("{name}: `base` must be > 0")));
    }
    if cap < base {
        return Err(ScheduleError(format!("{name}: `cap` must be >= `base`")));
    }
    if !(0.0..1.0).contains(&jitter) {
        return Err(ScheduleError(format!(
            "{name}: `jitter` must be in [0, 1), got {jitter}"
        )));
    }
    Ok(())
}

fn cap_secs(secs: f64, cap: Duration) -> Duration {
    if !secs.is_finite() || secs >= cap.as_secs_f64() {
        cap
    } else {
        Duration::from_secs_f64(secs.max(0.0))
    }
}

/// fib(0) = 1, fib(1) = 1, fib(2) = 2, … saturating.
fn fibonacci(n: u32) -> u64 {
    let (mut a, mut b) = (1u64, 1u64);
    for _ in 0..n {
        let next = a.saturating_add(b);
        a = b;
        b = next;
    }
    a
}

/// Why polling stops without a final status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    Attempts(u32),
    /// Failed queries in a row (timeouts, 5xx): the provider never answered.
    Errors(u32),
    Age(Duration),
}

impl GiveUp {
    /// The reason when nothing could be asked (webhook-only provider, or no
    /// way to find the payment): the schedule ran, no query was made.
    pub fn reason_without_queries(self) -> String {
        match self {
            GiveUp::Attempts(n) => {
                format!("gave up after {n} scheduled checks (no status query was possible)")
            }
            other => other.reason(),
        }
    }

    pub fn reason(self) -> String {
        match self {
            GiveUp::Attempts(n) => format!("gave up after {n} status queries"),
            GiveUp::Errors(n) => format!(
                "gave up after {n} status queries in a row failed (timeouts or server errors)"
            ),
            GiveUp::Age(d) => format!(
                "gave up: still not final {} after registration",
                humantime_serde::re::humantime::format_duration(d)
            ),
        }
    }
}

/// What to do after a query that did not settle the payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextPoll {
    At(Timestamp),
    GiveUp(GiveUp),
}

/// A schedule plus the bounds that end it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    pub schedule: Schedule,
    /// Age after registration at which a still-open payment goes to review.
    #[serde(with = "humantime_serde")]
    pub give_up_after: Duration,
    /// Status queries after which a still-open payment goes to review.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            schedule: Schedule::default_quick_then_exponential(),
            give_up_after: Duration::from_secs(7 * 24 * 3600),
            max_attempts: 60,
        }
    }
}

impl RetryPolicy {
    /// When the first query is due after registration.
    pub fn first_poll_at(&self, registered_at: Timestamp) -> Timestamp {
        registered_at.plus(self.schedule.nominal_at(0, Duration::ZERO))
    }

    /// After `attempts` completed queries (the last one finishing at
    /// `completed_at`) left the payment open: when to ask again, or give up.
    /// The last poll is pulled in to land exactly on the age deadline.
    pub fn next_poll(
        &self,
        registered_at: Timestamp,
        completed_at: Timestamp,
        attempts: u32,
        unit: f64,
    ) -> NextPoll {
        if attempts >= self.max_attempts {
            return NextPoll::GiveUp(GiveUp::Attempts(attempts));
        }
        let deadline = registered_at.plus(self.give_up_after);
        if completed_at >= deadline {
            return NextPoll::GiveUp(GiveUp::Age(self.give_up_after));
        }
        let age = completed_at.since(registered_at);
        let at = completed_at.plus(self.schedule.delay_at(attempts, age, unit));
        NextPoll::At(at.min(deadline))
    }

    /// After a query that failed without an answer (timeout, 5xx): such
    /// failures say nothing about the payment, so they do not spend its
    /// attempts; they have their own budget of `max_attempts` failures in
    /// a row, and the delay backs off over answers and failures together.
    pub fn next_after_error(
        &self,
        registered_at: Timestamp,
        completed_at: Timestamp,
        attempts: u32,
        errors: u32,
        unit: f64,
    ) -> NextPoll {
        if errors >= self.max_attempts {
            return NextPoll::GiveUp(GiveUp::Errors(errors));
        }
        let deadline = registered_at.plus(self.give_up_after);
        if completed_at >= deadline {
            return NextPoll::GiveUp(GiveUp::Age(self.give_up_after));
        }
        let age = completed_at.since(registered_at);
        let at = completed_at.plus(self.schedule.delay_at(
            attempts.saturating_add(errors),
            age,
            unit,
        ));
        NextPoll::At(at.min(deadline))
    }
}

#[cfg(test)]
mod tests;
