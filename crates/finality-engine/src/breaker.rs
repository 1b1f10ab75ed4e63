//! A circuit breaker per provider: a burst of transient failures (timeouts,
//! 5xx, refused connections) opens it; while open, that provider's due polls
//! are deferred without spending anything and without calling; when the open
//! period ends one probe is let through (half-open): an answer closes the
//! breaker, a failure opens it again for twice as long (capped).
//!
//! Hand-written rather than a crate: the breaker must run on the engine's
//! `Clock` (virtual time in tests and the demo), which the general-purpose
//! breaker crates do not take, and the state machine is a few lines.

use finality_core::Timestamp;
use finality_providers::ProviderError;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// When a breaker opens and for how long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerConfig {
    /// Transient failures within `window`, with no answer between them,
    /// that open the breaker.
    pub failures: u32,
    pub window: Duration,
    /// First open period; doubles after each failed probe up to `max_open`.
    pub open_for: Duration,
    pub max_open: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failures: 5,
            window: Duration::from_secs(10),
            open_for: Duration::from_secs(5),
            max_open: Duration::from_secs(120),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum State {
    Closed {
        failures: VecDeque<Timestamp>,
    },
    Open {
        until: Timestamp,
        open_for: Duration,
    },
    /// A probe is in flight since `since`; everything else waits.
    HalfOpen {
        since: Timestamp,
        open_for: Duration,
    },
}

/// What the engine may do with a due poll of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Call,
    /// The one call that tests a provider after an outage.
    Probe,
    /// Do not call; poll again at this time (nothing counted).
    Defer(Timestamp),
}

/// What a call's outcome means to the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The provider answered (any answer, including a 4xx about the payment).
    Answered,
    /// Timeout, refused connection, 5xx.
    Failed,
}

/// Breakers of every provider, shared by the engine and `/readyz`.
#[derive(Debug, Default)]
pub struct Breakers {
    config: BreakerConfig,
    state: Mutex<HashMap<String, State>>,
}

/// A breaker that is not closed, for `/readyz` and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tripped {
    pub provider: String,
    /// `open` or `half_open`.
    pub state: &'static str,
    pub until: Timestamp,
}

impl Breakers {
    pub fn new(config: BreakerConfig) -> Self {
        Breakers {
            config,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, State>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// May a poll of `provider` call it at `now`?
    pub fn admit(&self, provider: &str, now: Timestamp) -> Admit {
        let mut map = self.lock();
        let Some(state) = map.get_mut(provider) else {
            return Admit::Call;
        };
        match *state {
            State::Closed { .. } => Admit::Call,
            State::Open { until, open_for } if now >= until => {
                *state = State::HalfOpen {
                    since: now,
                    open_for,
                };
                Admit::Probe
            }
            State::Open { until, .. } => Admit::Defer(until),
            // A probe that never reported (its task died) is replaced after
            // one open period.
            State::HalfOpen { since, open_for } if now >= since.plus(open_for) => {
                *state = State::HalfOpen {
                    since: now,
                    open_for,
                };
                Admit::Probe
            }
            State::HalfOpen { since, open_for } => Admit::Defer(since.plus(open_for)),
        }
    }

    /// Record a call's outcome; returns `Some(true)` when this failure
    /// opened (or re-opened) the breaker, `Some(false)` when this answer
    /// closed it, `None` when nothing changed.
    pub fn record(&self, provider: &str, now: Timestamp, outcome: Outcome) -> Option<bool> {
        let c = self.config;
        let mut map = self.lock();
        let state = map
            .entry(provider.to_string())
            .or_insert_with(|| State::Closed {
                failures: VecDeque::new(),
            });
        match (state.clone(), outcome) {
            (State::Closed { .. }, Outcome::Answered) => {
                *state = State::Closed {
                    failures: VecDeque::new(),
                };
                None
            }
            (State::Closed { mut failures }, Outcome::Failed) => {
                failures.push_back(now);
                while failures.front().is_some_and(|t| now.since(*t) > c.window) {
                    failures.pop_front();
                }
                if failures.len() >= c.failures as usize {
                    *state = State::Open {
                        until: now.plus(c.open_for),
                        open_for: c.open_for,
                    };
                    Some(true)
                } else {
                    *state = State::Closed { failures };
                    None
                }
            }
            (State::HalfOpen { .. } | State::Open { .. }, Outcome::Answered) => {
                *state = State::Closed {
                    failures: VecDeque::new(),
                };
                Some(false)
            }
            (State::HalfOpen { open_for, .. }, Outcome::Failed) => {
                let open_for = (open_for * 2).min(c.max_open);
                *state = State::Open {
                    until: now.plus(open_for),
                    open_for,
                };
                Some(true)
            }
            // A call admitted before the breaker opened failed late.
            (State::Open { .. }, Outcome::Failed) => None,
        }
    }

    /// Record how a call (or bulk request) to `provider` ended, by its
    /// error if any, and log and export what that changed.
    pub fn observe(&self, provider: &str, now: Timestamp, err: Option<&ProviderError>) {
        let outcome = match err {
            Some(ProviderError::Transient { .. }) => Outcome::Failed,
            _ => Outcome::Answered,
        };
        report(provider, self.record(provider, now, outcome));
    }

    /// Whether `provider`'s breaker is closed (calls flow normally).
    pub fn is_closed(&self, provider: &str) -> bool {
        matches!(self.lock().get(provider), None | Some(State::Closed { .. }))
    }

    /// Breakers that are open or half-open.
    pub fn tripped(&self) -> Vec<Tripped> {
        let map = self.lock();
        let mut v: Vec<Tripped> = map
            .iter()
            .filter_map(|(p, s)| match s {
                State::Closed { .. } => None,
                State::Open { until, .. } => Some(Tripped {
                    provider: p.clone(),
                    state: "open",
                    until: *until,
                }),
                State::HalfOpen { since, open_for } => Some(Tripped {
                    provider: p.clone(),
                    state: "half_open",
                    until: since.plus(*open_for),
                }),
            })
            .collect();
        v.sort_by(|a, b| a.provider.cmp(&b.provider));
        v
    }
}

/// Log and export a breaker change ([`Breakers::record`]'s answer).
fn report(provider: &str, change: Option<bool>) {
    match change {
        Some(true) => {
            tracing::error!(%provider, "ALERT: circuit opened: the provider's calls keep failing; polls deferred until a probe succeeds");
            metrics::gauge!("finality_provider_circuit_open", "provider" => provider.to_string())
                .set(1.0);
        }
        Some(false) => {
            tracing::info!(%provider, "circuit closed: the provider answered a probe");
            metrics::gauge!("finality_provider_circuit_open", "provider" => provider.to_string())
                .set(0.0);
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timestamp = Timestamp(1_000_000);

    fn at(ms: i64) -> Timestamp {
        Timestamp(T.0 + ms)
    }

    #[test]
    fn a_burst_opens_an_answer_closes_after_a_probe() {
        let b = Breakers::new(BreakerConfig::default());
        for i in 0..4 {
            assert_eq!(b.admit("p", at(i)), Admit::Call);
            assert_eq!(b.record("p", at(i), Outcome::Failed), None);
        }
        assert_eq!(
            b.record("p", at(4), Outcome::Failed),
            Some(true),
            "the fifth opens it"
        );
        assert_eq!(b.admit("p", at(10)), Admit::Defer(at(5_004)));
        assert_eq!(b.admit("p", at(5_004)), Admit::Probe);
        assert_eq!(
            b.admit("p", at(5_005)),
            Admit::Defer(at(10_004)),
            "one probe at a time"
        );
        assert_eq!(
            b.record("p", at(5_100), Outcome::Failed),
            Some(true),
            "failed probe"
        );
        assert_eq!(b.admit("p", at(5_200)), Admit::Defer(at(15_100)), "doubled");
        assert_eq!(b.admit("p", at(15_100)), Admit::Probe);
        assert_eq!(b.record("p", at(15_150), Outcome::Answered), Some(false));
        assert_eq!(b.admit("p", at(15_151)), Admit::Call);
        assert!(b.tripped().is_empty());
    }

    #[test]
    fn failures_spread_out_or_interrupted_by_answers_do_not_open() {
        let b = Breakers::new(BreakerConfig::default());
        for i in 0..10 {
            b.record("p", at(i * 3_000), Outcome::Failed);
        }
        assert_eq!(b.admit("p", at(30_001)), Admit::Call, "4 per 10 s at most");
        for i in 0..10 {
            b.record("q", at(i), Outcome::Failed);
            if i % 3 == 0 {
                b.record("q", at(i), Outcome::Answered);
            }
        }
        assert_eq!(b.admit("q", at(11)), Admit::Call);
        assert_eq!(b.admit("other", at(11)), Admit::Call);
    }

    #[test]
    fn open_period_is_capped() {
        let c = BreakerConfig::default();
        let b = Breakers::new(c);
        for i in 0..5 {
            b.record("p", at(i), Outcome::Failed);
        }
        let mut now = at(4);
        for _ in 0..10 {
            let Admit::Defer(until) = b.admit("p", now) else {
                panic!("expected open")
            };
            now = until;
            assert_eq!(b.admit("p", now), Admit::Probe);
            b.record("p", now, Outcome::Failed);
        }
        let Admit::Defer(until) = b.admit("p", now) else {
            panic!("expected open")
        };
        assert_eq!(until.since(now), c.max_open);
    }
}
