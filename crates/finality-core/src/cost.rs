//! What a retry policy costs and catches over a set of payment fates,
//! computed with the schedule code alone (`RetryPolicy::next_poll`, no
//! engine, no store): microseconds a payment, so a tuner can try thousands
//! of schedules in seconds. `finality simulate` confirms on the engine.

use crate::{NextPoll, RetryPolicy, Timestamp};

/// One payment's fate at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fate {
    pub registered_at: Timestamp,
    /// When it settles at the provider; `None` never.
    pub settles_at: Option<Timestamp>,
    /// When its final webhook arrives; `None` lost (or never settles).
    pub webhook_at: Option<Timestamp>,
}

/// The figures of one policy over a set of fates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Provider calls per payment: polls made before the payment was final
    /// (by its webhook, or by that poll).
    pub calls: f64,
    /// p95 of the time from settlement to the first poll after it, in
    /// seconds, over every settled payment as if its webhook had been lost
    /// (the lost ones are a random share: their p95, with far less noise).
    pub p95: f64,
    /// The same at the quantile asked for (a tuner's margin above 0.95).
    pub tail: f64,
    /// The same at 0.99: the tail a slow payment's lost webhook lands in.
    pub p99: f64,
    /// Settled within the give-up window, yet not polled after settling
    /// before the policy gave up (as if the webhook had been lost).
    pub undetected: usize,
}

/// A reproducible stream of jitter units in `[-1, 1]` (splitmix64): a few
/// lines, so the core stays free of a random-number dependency.
struct Units(u64);

impl Units {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// Evaluate `policy` over `fates`, jitter drawn from `seed`; `tail_q` is
/// the quantile of [`Cost::tail`].
pub fn evaluate(policy: &RetryPolicy, fates: &[Fate], seed: u64, tail_q: f64) -> Cost {
    let mut units = Units(seed);
    let mut calls = 0u64;
    let mut detection = Vec::with_capacity(fates.len());
    let mut undetected = 0;
    for f in fates {
        let reg = f.registered_at;
        let mut t = policy.first_poll_at(reg);
        let mut attempts = 0u32;
        loop {
            // A poll happens only while no webhook has made it final.
            if f.webhook_at.is_none_or(|w| t < w) {
                calls += 1;
            }
            if let Some(s) = f.settles_at.filter(|s| *s <= t) {
                detection.push((t.0 - s.0) as f64 / 1000.0);
                break;
            }
            attempts += 1;
            match policy.next_poll(reg, t, attempts, units.next()) {
                NextPoll::At(next) => t = next,
                NextPoll::GiveUp(_) => {
                    if f.settles_at
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
    let at = |q: f64| {
        if detection.is_empty() {
            return 0.0;
        }
        let rank = ((q * detection.len() as f64).ceil() as usize).clamp(1, detection.len());
        detection[rank - 1]
    };
    Cost {
        calls: calls as f64 / fates.len().max(1) as f64,
        p95: at(0.95),
        tail: at(tail_q),
        p99: at(0.99),
        undetected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Schedule;
    use std::time::Duration;

    /// Every 60 s, no jitter: a payment settling at 90 s is found by the
    /// poll at 120 s (30 s late, 2 calls); one whose webhook comes at 50 s
    /// costs nothing; one that never settles costs every poll to give-up.
    #[test]
    fn counts_polls_and_detection_by_hand() {
        let policy = RetryPolicy {
            schedule: Schedule::Fixed {
                delays: vec![Duration::from_secs(60)],
            },
            give_up_after: Duration::from_secs(300),
            max_attempts: 100,
        };
        let t = |s: i64| Timestamp(s * 1000);
        let fates = [
            Fate {
                registered_at: t(0),
                settles_at: Some(t(90)),
                webhook_at: None,
            },
            Fate {
                registered_at: t(0),
                settles_at: Some(t(40)),
                webhook_at: Some(t(50)),
            },
            Fate {
                registered_at: t(0),
                settles_at: None,
                webhook_at: None,
            },
        ];
        let c = evaluate(&policy, &fates, 1, 0.95);
        // 2 + 0 + polls at 60, 120, 180, 240, 300 (the last one on the deadline).
        assert_eq!(c.calls, (2.0 + 0.0 + 5.0) / 3.0);
        // As if lost: 30 s and 20 s late.
        assert_eq!(c.p95, 30.0);
        assert_eq!(c.undetected, 0);
    }
}
