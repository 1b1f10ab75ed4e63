//! One poll: call the provider (no database lock held), classify the answer,
//! and complete the job in one fenced transaction.

use crate::breaker::Admit;
use crate::health::Pause;
use crate::{Engine, ProviderEntry};
use finality_core::{NextPoll, Timestamp};
use finality_providers::{Observation, PollTarget, ProviderError};
use finality_store::{AfterPoll, ClaimedJob, Completion, Count, NewAttempt, RefRecorded};
use rand::Rng;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether an answer is about the registered money.
enum Money {
    Counts,
    /// Not the registered amount, currency or account: review, with why.
    Mismatch(String),
    /// The registration could not be read to compare: asked again.
    Unknown(String),
}

/// Why a provider id found by merchant reference was not adopted.
enum Adopt {
    Unfound(String),
    Contradiction(String),
}

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
        permits: Arc<crate::permits::FairPermits>,
    ) {
        let wait = job.due_at.since(self.clock.now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let completion = {
            // A bulk provider's calls are made (one at a time) by its
            // batcher, which must see many polls at once: no permit.
            let _permit = if job.account.is_none() && self.bulk.contains_key(&job.provider) {
                None
            } else {
                Some(permits.acquire(&job_scope(&job)).await)
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
                    then: match job.resume_at {
                        Some(resume) => early_look_then(
                            AfterPoll::defer(now, None),
                            self.back_after_early_look(&job, resume, now),
                        ),
                        None => AfterPoll::defer(now, None),
                    },
                }
            } else {
                self.poll(&job).await
            }
        };
        tracing::Instrument::instrument(
            self.completer.complete(&*self.queue, completion),
            tracing::info_span!("complete"),
        )
        .await;
    }

    /// Poll one claimed job to completion.
    pub(crate) async fn execute(&self, job: ClaimedJob) {
        let completion = self.poll(&job).await;
        self.completer.complete(&*self.queue, completion).await;
    }

    async fn poll(&self, job: &ClaimedJob) -> Completion {
        let mut c = self.look(job).await;
        if let Some(resume) = job.resume_at {
            c.then = early_look_then(c.then, self.back_after_early_look(job, resume, c.now));
        }
        c
    }

    /// Where an early look puts its job back: the time the schedule had
    /// (`resume`), or sooner when the policy in force now polls sooner (an
    /// outage began while the look was in flight).
    fn back_after_early_look(
        &self,
        job: &ClaimedJob,
        resume: Timestamp,
        now: Timestamp,
    ) -> Timestamp {
        let Some(entry) = self.providers.get(&job.provider) else {
            return resume;
        };
        match entry.policy_now(&self.health, &job_scope(job)).next_poll(
            job.registered_at,
            now,
            job.attempts,
            jitter_unit(),
        ) {
            NextPoll::At(at) => at.min(resume),
            NextPoll::GiveUp(_) => resume,
        }
    }

    async fn look(&self, job: &ClaimedJob) -> Completion {
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
        let target = PollTarget {
            payment_id: &job.payment_id,
            provider_ref: job.provider_ref.as_deref(),
            merchant_ref: job.merchant_ref.as_deref(),
            kind: job.kind,
            attempt: job.attempts,
            due_at: job.due_at,
        };
        let scope = job_scope(job);
        let adapter = match self.account_adapter(entry, job, &scope, now) {
            Ok(a) => a,
            Err(then) => return base(None, None, then),
        };
        if let Some(why) = adapter.unqueryable(&target) {
            // Nothing to ask: no call, no token. The schedule still runs so
            // the payment reaches review at its end with this reason (a
            // webhook or a human can settle it before).
            let then = self.after_answer(entry, job, now, Some(why), false);
            return base(None, None, then);
        }
        if let Some(p) = self.health.paused(&scope, now) {
            let why = format!("provider paused ({}): {}", p.class, p.reason);
            return base(None, None, AfterPoll::defer(spread(p.until), Some(why)));
        }
        if let Admit::Defer(until) = self.health.breakers().admit(&scope, now) {
            let why = "circuit open: the provider's calls keep failing (timeouts or 5xx); \
                       polls wait for a probe to succeed";
            return base(
                None,
                None,
                AfterPoll::defer(spread(until), Some(why.into())),
            );
        }

        // An account's polls are its own requests (its credentials), never
        // coalesced with the provider's.
        let batcher = match &job.account {
            None => self.bulk.get(&job.provider),
            Some(_) => None,
        };
        let rate_wait =
            |at| AfterPoll::defer(at, Some("waiting for the provider's rate limit".into()));
        if batcher.is_none() {
            if let Err(at) = self.rates.acquire(&scope).await {
                return base(None, None, rate_wait(at));
            }
        }
        let now = self.clock.now();
        let lateness = now.since(job.due_at).as_secs_f64();
        metrics::histogram!("finality_poll_lateness_seconds", "provider" => job.provider.clone())
            .record(lateness);
        let started = Instant::now();
        let call_span = tracing::info_span!("provider call", provider = %job.provider);
        let result = match batcher {
            Some(b) => match tracing::Instrument::instrument(b.query(&target), call_span).await {
                crate::bulk::Answer::Result(r) => r,
                crate::bulk::Answer::Defer(at) => return base(None, None, rate_wait(at)),
            },
            None => tracing::Instrument::instrument(adapter.query_status(&target), call_span).await,
        };
        let latency_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let done = self.clock.now();
        if batcher.is_none() {
            // (A batcher records its one request itself.)
            self.health
                .breakers()
                .observe(&scope, done, result.as_ref().err());
        }
        let outcome = match &result {
            Ok(o) => o.status.map_or("unknown", |s| s.as_str()),
            Err(e) => e.class().as_str(),
        };
        metrics::counter!("finality_polls_total", "provider" => job.provider.clone(), "outcome" => outcome).increment(1);
        // Wall time of the call (a batched call's wait for its batch
        // included): what the provider costs each poll.
        metrics::histogram!(
            "finality_provider_call_seconds",
            "provider" => job.provider.clone(),
            "outcome" => if result.is_ok() { "ok" } else { outcome }
        )
        .record(started.elapsed().as_secs_f64());
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
                provider_ref: found,
                reported,
            }) => {
                attempt.outcome = status.map_or("unknown", |s| s.as_str()).to_string();
                let mut note = None;
                if job.provider_ref.is_none() {
                    match self
                        .adopt_ref(job, found.as_deref(), status.is_some(), &provider_status)
                        .await
                    {
                        Ok(()) => {}
                        Err(Adopt::Unfound(why)) => note = Some(why),
                        Err(Adopt::Contradiction(reason)) => {
                            attempt.provider_status = Some(provider_status);
                            let then = AfterPoll::GiveUp {
                                reason,
                                count: Count::Attempt,
                            };
                            return base(Some(attempt), None, then);
                        }
                    }
                }
                attempt.provider_status = Some(provider_status);
                match self.money_check(job, status, &reported).await {
                    Money::Counts => {}
                    Money::Mismatch(why) => {
                        // "Paid", but not the registered money (or not to
                        // this merchant): a human decides, never `succeeded`.
                        tracing::warn!(payment_id = %job.payment_id, reason = %why, "answer for other money; sent to review");
                        attempt.outcome = "mismatch".into();
                        let then = AfterPoll::GiveUp {
                            reason: why,
                            count: Count::Attempt,
                        };
                        return base(Some(attempt), None, then);
                    }
                    // Asked again soon, the attempt not counted.
                    Money::Unknown(why) => {
                        tracing::warn!(payment_id = %job.payment_id, reason = %why, "answer not applied");
                        let then = AfterPoll::defer(spread(done), Some(why));
                        return base(Some(attempt), None, then);
                    }
                }
                if status.is_some_and(|s| s.is_final()) {
                    self.watch_webhooks(entry, job, done).await;
                }
                let then = self.after_answer(entry, job, done, note, true);
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

    /// Whether an answer of `status` counts for this payment's money
    /// ([`finality_core::money_mismatch`]). The registration is read only
    /// when the answer reports money for a status that moves it (about once
    /// a payment).
    async fn money_check(
        &self,
        job: &ClaimedJob,
        status: Option<finality_core::Status>,
        reported: &finality_core::Reported,
    ) -> Money {
        let Some(status) = status else {
            return Money::Counts;
        };
        if let Some(why) = finality_core::found_by_adapter(Some(status), reported) {
            return Money::Mismatch(why.to_string());
        }
        if reported.is_empty() || !finality_core::reported::is_checked(status) {
            return Money::Counts;
        }
        match self.payments.get(&job.payment_id).await {
            Ok(Some(v)) => {
                match finality_core::money_mismatch(
                    status,
                    reported,
                    v.payment.amount,
                    &v.payment.currency,
                ) {
                    Some(why) => Money::Mismatch(why),
                    None => Money::Counts,
                }
            }
            // Gone meanwhile: the completion finds nothing to change.
            Ok(None) => Money::Counts,
            Err(e) => Money::Unknown(format!(
                "the answer was not applied: the registered amount could not be read ({e})"
            )),
        }
    }

    /// A poll learned a final status no webhook had announced. Enough of
    /// those in a row mean the provider's webhooks are down: say so loudly,
    /// switch it to its outage schedule, and bring its open payments' next
    /// polls forward to that schedule's first delay (they may be hours away
    /// under the webhooks-first schedule).
    async fn watch_webhooks(&self, entry: &ProviderEntry, job: &ClaimedJob, now: Timestamp) {
        let Some(outage) = &entry.outage_policy else {
            return;
        };
        if !self
            .health
            .settled_by_poll(&job_scope(job), now, entry.webhook_outage_after)
        {
            return;
        }
        tracing::error!(
            provider = %job.provider, settled_by_poll = entry.webhook_outage_after,
            "ALERT: webhooks look down (payments keep settling by polls, no webhook arrived); \
             polling by the outage schedule until one does"
        );
        let by = outage.first_poll_at(now);
        match self.queue.hurry(&job.provider, by, now).await {
            Ok(n) => {
                tracing::info!(provider = %job.provider, polls = n, "open payments' polls brought forward")
            }
            Err(e) => {
                tracing::warn!(provider = %job.provider, error = %e, "bringing polls forward failed; they switch at their next poll")
            }
        }
    }

    /// Record the provider's id a lookup by merchant reference found, so
    /// every later poll and webhook uses it. `Unfound`: nothing to record
    /// yet (the note kept on the job says why); `Contradiction`: the answer
    /// cannot be squared with what is recorded, for a human.
    async fn adopt_ref(
        &self,
        job: &ClaimedJob,
        found: Option<&str>,
        answered: bool,
        provider_status: &str,
    ) -> Result<(), Adopt> {
        let merchant_ref = job.merchant_ref.as_deref().unwrap_or_default();
        let Some(found) = found else {
            if answered {
                // The provider answered about this payment without naming
                // its id yet (WeChat Pay before the buyer pays): nothing amiss.
                return Ok(());
            }
            return Err(Adopt::Unfound(format!(
                "no single {} payment found by merchant reference `{merchant_ref}` yet \
                 ({provider_status}); if none ever is, the create call never reached the provider",
                job.provider
            )));
        };
        match self
            .queue
            .record_provider_ref(&job.payment_id, job.lock_token, found)
            .await
        {
            Ok(RefRecorded::Recorded) => {
                tracing::info!(payment_id = %job.payment_id, %merchant_ref, provider_ref = %found, "found the provider's id by merchant reference");
                Ok(())
            }
            // Lost lease: the completion is fenced too and writes nothing.
            Ok(RefRecorded::Same | RefRecorded::LeaseLost) => Ok(()),
            Ok(RefRecorded::Different { existing }) => Err(Adopt::Contradiction(format!(
                "merchant reference `{merchant_ref}` led to {found}, but the payment already \
                 tracks {existing}"
            ))),
            Ok(RefRecorded::Taken { other_id }) => Err(Adopt::Contradiction(format!(
                "merchant reference `{merchant_ref}` led to {found}, which payment {other_id} \
                 already tracks: registered twice?"
            ))),
            Err(e) => {
                tracing::warn!(payment_id = %job.payment_id, error = %e, "recording a found provider id failed; the next poll finds it again");
                Err(Adopt::Unfound(format!(
                    "found {found} by merchant reference `{merchant_ref}` but could not record it: {e}"
                )))
            }
        }
    }

    /// After an answer that left the payment open (or a poll that could
    /// not be made, `note` saying why): the next poll by the schedule, or
    /// review when attempts or age ran out, with the note in the reason.
    fn after_answer(
        &self,
        entry: &ProviderEntry,
        job: &ClaimedJob,
        done: Timestamp,
        note: Option<String>,
        queried: bool,
    ) -> AfterPoll {
        if let Some(resume) = job.resume_at {
            // An early look that left the payment open: never what gives
            // up. `early_look_then` makes it uncounted and puts it back on
            // the schedule.
            return AfterPoll::Reschedule {
                next_poll_at: resume,
                count: Count::Attempt,
                last_error: note,
            };
        }
        let attempts = job.attempts + 1;
        match entry.policy_now(&self.health, &job_scope(job)).next_poll(
            job.registered_at,
            done,
            attempts,
            jitter_unit(),
        ) {
            NextPoll::At(t) => AfterPoll::Reschedule {
                next_poll_at: t,
                count: Count::Attempt,
                last_error: note,
            },
            NextPoll::GiveUp(g) => AfterPoll::GiveUp {
                reason: match (note, queried) {
                    (Some(n), true) => format!("{}: {n}", g.reason()),
                    (Some(n), false) => format!("{}: {n}", g.reason_without_queries()),
                    (None, _) => g.reason(),
                },
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
        // An account's pause and breaker are its own (a 401 for one
        // connected account leaves the others polling).
        let scope = job_scope(job);
        let provider = &scope;
        let pause_for = match err {
            ProviderError::Transient { .. } => {
                tracing::warn!(payment_id = %job.payment_id, %provider, error = %err, "status query failed; will retry");
                // No answer says nothing about the payment: an error in a
                // row, not an attempt; and while the provider as a whole is
                // failing (breaker open) not even that (docs/state_machine.md).
                if !self.health.breakers().is_closed(provider) {
                    return AfterPoll::defer(spread(done), Some(err.to_string()));
                }
                if let Some(resume) = job.resume_at {
                    // Placed and uncounted by `early_look_then`.
                    return AfterPoll::Reschedule {
                        next_poll_at: resume,
                        count: Count::Error,
                        last_error: Some(err.to_string()),
                    };
                }
                return match entry.policy_now(&self.health, provider).next_after_error(
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
                let age = self.clock.now().since(job.registered_at);
                let wait = retry_after.unwrap_or_else(|| {
                    entry
                        .policy_now(&self.health, provider)
                        .schedule
                        .nominal_at(job.attempts, age)
                });
                tracing::warn!(%provider, ?wait, "provider is rate limiting; pausing its polls");
                wait
            }
            ProviderError::Refused { .. } => {
                // Only evidence about the provider pauses it: a refusal of
                // a reference it answered for before (its API or our
                // account changed). A reference it never answered for was
                // chosen by whoever registered it, and however many such
                // payments a caller registers, each is only its own
                // problem (docs/PROVIDERS.md, "What pauses a provider").
                let answered_before = job.attempts > 0;
                let distinct = if answered_before {
                    self.health.refused(provider, &job.payment_id, done)
                } else {
                    0
                };
                if distinct < crate::health::REFUSALS_TO_PAUSE {
                    // About this payment (its reference), whoever caused
                    // it: a human looks at it; the provider's other
                    // payments go on.
                    tracing::warn!(payment_id = %job.payment_id, %provider, error = %err, "the provider refused this payment's status query; sent to review");
                    return AfterPoll::GiveUp {
                        reason: format!(
                            "the provider refused the status query for this payment ({err}): \
                             check its reference"
                        ),
                        count: Count::Attempt,
                    };
                }
                tracing::error!(
                    %provider, error = %err, distinct, pause = ?entry.pause_on_permanent_error,
                    "ALERT: the provider refused queries for many distinct payments; provider paused"
                );
                entry.pause_on_permanent_error
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
        // Refusals across many payments are the provider's problem: paused
        // and alerted as a permanent error is.
        let class = match err.class() {
            finality_core::ErrorClass::Refused => finality_core::ErrorClass::Permanent,
            c => c,
        };
        // For alerting: a pause in force while this is in the future.
        metrics::gauge!("finality_provider_paused_until_seconds", "provider" => provider.clone(), "class" => class.as_str())
            .set(until.0 as f64 / 1000.0);
        self.health.pause(
            provider,
            Pause {
                until,
                class,
                reason: err.to_string(),
            },
        );
        AfterPoll::defer(until, Some(err.to_string()))
    }
}

/// What an early look (a poll brought forward by an unverified webhook,
/// [`ClaimedJob::resume_at`]) leaves behind: never a counted attempt or
/// error; an answer or an error puts the job back at `back` (where the
/// schedule has it), a deferral at the later of its own time and `back`.
/// Give-ups stand: they are about the answer (a refusal, other money), not
/// the count, and count nothing either.
fn early_look_then(then: AfterPoll, back: Timestamp) -> AfterPoll {
    match then {
        AfterPoll::GiveUp { reason, .. } => AfterPoll::GiveUp {
            reason,
            count: Count::Nothing,
        },
        AfterPoll::Reschedule {
            next_poll_at,
            count,
            last_error,
        } => AfterPoll::Reschedule {
            next_poll_at: match count {
                Count::Nothing => next_poll_at.max(back),
                Count::Attempt | Count::Error => back,
            },
            count: Count::Nothing,
            last_error,
        },
    }
}

/// Where a job's health and rate limit are kept: its provider, or its
/// account of that provider ([`crate::accounts::scope`]).
fn job_scope(job: &ClaimedJob) -> String {
    crate::accounts::scope(&job.provider, job.account.as_deref())
}

impl Engine {
    /// The adapter a job's poll is made with: its account's, when it names
    /// one. An account this node does not know yet (added on another node
    /// a moment ago) is asked about again in 10 s; a disabled one, or one
    /// that could not be set up here, waits as a paused provider does.
    fn account_adapter(
        &self,
        entry: &ProviderEntry,
        job: &ClaimedJob,
        scope: &str,
        now: Timestamp,
    ) -> Result<Arc<dyn finality_providers::Provider>, AfterPoll> {
        let Some(id) = job.account.as_deref() else {
            return Ok(entry.adapter.clone());
        };
        let provider = &job.provider;
        let (wait, why) = match entry.accounts.get(id) {
            Some(a) if a.disabled => (
                entry.pause_on_permanent_error,
                format!(
                    "account `{id}` of provider `{provider}` is disabled: its payments wait \
                     until it is enabled again or they are settled by hand"
                ),
            ),
            Some(a) => match &a.adapter {
                Ok(adapter) => {
                    if let Some(r) = a.spec.rate_limit {
                        self.rates.ensure(
                            scope,
                            finality_store::Bucket {
                                per_second: r.per_second,
                                burst: f64::from(r.burst),
                            },
                        );
                    }
                    return Ok(adapter.clone());
                }
                Err(e) => (
                    entry.pause_on_permanent_error,
                    format!("account `{id}` could not be set up on this node: {e}"),
                ),
            },
            None => (
                Duration::from_secs(10),
                format!(
                    "account `{id}` of provider `{provider}` is not configured on this node \
                     (finality accounts add)"
                ),
            ),
        };
        Err(AfterPoll::defer(spread(now.plus(wait)), Some(why)))
    }
}
