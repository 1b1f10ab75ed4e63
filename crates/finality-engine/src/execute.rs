//! One poll: call the provider (no database lock held), classify the answer,
//! and complete the job in one fenced transaction.

use crate::breaker::Admit;
use crate::health::Pause;
use crate::{Engine, ProviderEntry};
use finality_core::{NextPoll, Timestamp};
use finality_providers::{Observation, PollTarget, ProviderError};
use finality_store::{AfterPoll, ClaimedJob, Completion, Count, NewAttempt};
use rand::Rng;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// A random draw in [-1, 1] for schedule jitter.
fn jitter_unit() -> f64 {
    rand::thread_rng().gen_range(-1.0..=1.0)
}

/// Up to a second of spread, so polls deferred by a pause do not all fire
/// in the same millisecond when it ends.
fn spread(t: Timestamp) -> Timestamp {
    t.plus(Duration::from_millis(
        rand::thread_rng().gen_range(0..1_000),
    ))
}

impl Engine {
    /// Hold a claimed job until its time, take an execution permit for the
    /// provider call, then hand the result to the completer. The permit
    /// bounds provider calls in flight, so it is given back as soon as the
    /// call returns; the job itself stays held (its lease intact) until its
    /// completion is durable. A job that waited so long for a permit that
    /// half its lease is gone (an overloaded node) is handed back, due now
    /// and uncounted, rather than polled on a lease that may run out
    /// mid-call.
    pub(crate) async fn execute_at(
        &self,
        job: ClaimedJob,
        lease_until: Timestamp,
        permits: Arc<Semaphore>,
    ) {
        let wait = job.due_at.since(self.clock.now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let completion = {
            // A bulk provider's calls are made (one at a time) by its
            // batcher, which must see many polls at once: no permit.
            let _permit = if self.bulk.contains_key(&job.provider) {
                None
            } else {
                let Ok(p) = permits.acquire().await else {
                    return; // closed: never happens, the producer owns it
                };
                Some(p)
            };
            let now = self.clock.now();
            if now.plus(self.config.lease / 2) > lease_until {
                tracing::warn!(payment_id = %job.payment_id, "held too long waiting for a worker; handing the poll back");
                Completion {
                    payment_id: job.payment_id.clone(),
                    lock_token: job.lock_token,
                    now,
                    attempt: None,
                    observed: None,
                    then: AfterPoll::defer(now, None),
                }
            } else {
                self.poll(&job).await
            }
        };
        self.completer.complete(&*self.store, completion).await;
    }

    /// Poll one claimed job to completion.
    pub(crate) async fn execute(&self, job: ClaimedJob) {
        let completion = self.poll(&job).await;
        self.completer.complete(&*self.store, completion).await;
    }

    async fn poll(&self, job: &ClaimedJob) -> Completion {
        let now = self.clock.now();
        let base = |attempt, observed, then| Completion {
            payment_id: job.payment_id.clone(),
            lock_token: job.lock_token,
            now: self.clock.now(),
            attempt,
            observed,
            then,
        };
        let Some(entry) = self.providers.get(&job.provider) else {
            let reason = format!(
                "no provider named `{}` is configured; a human must settle it",
                job.provider
            );
            tracing::error!(payment_id = %job.payment_id, provider = %job.provider, "{reason}");
            let then = AfterPoll::GiveUp {
                reason,
                count: Count::Nothing,
            };
            return base(None, None, then);
        };
        if let Some(p) = self.health.paused(&job.provider, now) {
            let why = format!("provider paused ({}): {}", p.class, p.reason);
            return base(None, None, AfterPoll::defer(spread(p.until), Some(why)));
        }
        if let Admit::Defer(until) = self.health.breakers().admit(&job.provider, now) {
            let why = "circuit open: the provider's calls keep failing (timeouts or 5xx); \
                       polls wait for a probe to succeed";
            return base(
                None,
                None,
                AfterPoll::defer(spread(until), Some(why.into())),
            );
        }

        let batcher = self.bulk.get(&job.provider);
        let rate_wait =
            |at| AfterPoll::defer(at, Some("waiting for the provider's rate limit".into()));
        if batcher.is_none() {
            if let Err(at) = self.rates.acquire(&job.provider).await {
                return base(None, None, rate_wait(at));
            }
        }
        let now = self.clock.now();
        let lateness = now.since(job.due_at).as_secs_f64();
        metrics::histogram!("finality_poll_lateness_seconds", "provider" => job.provider.clone())
            .record(lateness);
        let started = Instant::now();
        let target = PollTarget {
            payment_id: &job.payment_id,
            provider_ref: &job.provider_ref,
            kind: job.kind,
            attempt: job.attempts,
            due_at: job.due_at,
        };
        let result = match batcher {
            Some(b) => match b.query(&target).await {
                crate::bulk::Answer::Result(r) => r,
                crate::bulk::Answer::Defer(at) => return base(None, None, rate_wait(at)),
            },
            None => entry.adapter.query_status(&target).await,
        };
        let latency_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let done = self.clock.now();
        if batcher.is_none() {
            // (A batcher records its one request itself.)
            self.health
                .breakers()
                .observe(&job.provider, done, result.as_ref().err());
        }
        let outcome = match &result {
            Ok(o) => o.status.map_or("unknown", |s| s.as_str()),
            Err(e) => e.class().as_str(),
        };
        metrics::counter!("finality_polls_total", "provider" => job.provider.clone(), "outcome" => outcome).increment(1);
        let mut attempt = NewAttempt {
            payment_id: job.payment_id.clone(),
            provider: job.provider.clone(),
            worker: self.config.worker_id.clone(),
            started_at: now,
            latency_ms,
            outcome: String::new(),
            provider_status: None,
            error_class: None,
            error: None,
        };
        match result {
            Ok(Observation {
                status,
                provider_status,
            }) => {
                attempt.outcome = status.map_or("unknown", |s| s.as_str()).to_string();
                attempt.provider_status = Some(provider_status);
                let then = self.after_answer(entry, job, done);
                base(Some(attempt), status, then)
            }
            Err(err) => {
                attempt.outcome = "error".into();
                attempt.error_class = Some(err.class().as_str().into());
                attempt.error = Some(err.to_string());
                let then = self.after_error(entry, job, done, &err);
                base(Some(attempt), None, then)
            }
        }
    }

    /// After an answer that left the payment open: the next poll by the
    /// schedule, or review when attempts or age ran out.
    fn after_answer(&self, entry: &ProviderEntry, job: &ClaimedJob, done: Timestamp) -> AfterPoll {
        let attempts = job.attempts + 1;
        match entry
            .policy
            .next_poll(job.registered_at, done, attempts, jitter_unit())
        {
            NextPoll::At(t) => AfterPoll::Reschedule {
                next_poll_at: t,
                count: Count::Attempt,
                last_error: None,
            },
            NextPoll::GiveUp(g) if !entry.adapter.capabilities().poll => AfterPoll::GiveUp {
                reason: format!(
                    "{}: this provider is webhook-only and no notification arrived",
                    g.reason()
                ),
                count: Count::Attempt,
            },
            NextPoll::GiveUp(g) => AfterPoll::GiveUp {
                reason: g.reason(),
                count: Count::Attempt,
            },
        }
    }

    fn after_error(
        &self,
        entry: &ProviderEntry,
        job: &ClaimedJob,
        done: Timestamp,
        err: &ProviderError,
    ) -> AfterPoll {
        let provider = &job.provider;
        let pause_for = match err {
            ProviderError::Transient { .. } => {
                tracing::warn!(payment_id = %job.payment_id, %provider, error = %err, "status query failed; will retry");
                // No answer says nothing about the payment: an error in a
                // row, not an attempt; and while the provider as a whole is
                // failing (breaker open) not even that (docs/state_machine.md).
                if !self.health.breakers().is_closed(provider) {
                    return AfterPoll::defer(spread(done), Some(err.to_string()));
                }
                return match entry.policy.next_after_error(
                    job.registered_at,
                    done,
                    job.attempts,
                    job.errors + 1,
                    jitter_unit(),
                ) {
                    NextPoll::At(t) => AfterPoll::Reschedule {
                        next_poll_at: t,
                        count: Count::Error,
                        last_error: Some(err.to_string()),
                    },
                    NextPoll::GiveUp(g) => AfterPoll::GiveUp {
                        reason: format!("{} (last: {err})", g.reason()),
                        count: Count::Error,
                    },
                };
            }
            ProviderError::RateLimited { retry_after, .. } => {
                let wait =
                    retry_after.unwrap_or_else(|| entry.policy.schedule.nominal(job.attempts));
                tracing::warn!(%provider, ?wait, "provider is rate limiting; pausing its polls");
                wait
            }
            ProviderError::Permanent { .. } => {
                tracing::error!(
                    %provider, error = %err, pause = ?entry.pause_on_permanent_error,
                    "ALERT: permanent provider error (credentials or configuration); provider paused"
                );
                entry.pause_on_permanent_error
            }
        };
        let until = done.plus(pause_for);
        // For alerting: a pause in force while this is in the future.
        metrics::gauge!("finality_provider_paused_until_seconds", "provider" => provider.clone(), "class" => err.class().as_str())
            .set(until.0 as f64 / 1000.0);
        self.health.pause(
            provider,
            Pause {
                until,
                class: err.class(),
                reason: err.to_string(),
            },
        );
        AfterPoll::defer(until, Some(err.to_string()))
    }
}
