//! Coalescing due polls into bulk requests, for providers whose adapter has
//! a bulk query ([`Provider::bulk_limit`] > 1): each poll hands its target
//! to its provider's batcher and waits; the batcher gathers what arrives
//! within a few milliseconds (up to the limit), takes one rate-limit token,
//! makes one request, records one outcome on the breaker, and hands each
//! poll its own answer. The polls then complete exactly as single ones do.

use crate::health::Health;
use crate::rate::RateLimits;
use finality_core::{Clock, Kind, Timestamp};
use finality_providers::{Observation, PollTarget, Provider, ProviderError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How long a batcher waits for more polls after the first one: a bulk
/// poll may start this much after its time, in exchange for sharing its
/// request with the polls due just after it. Polls that went out together
/// are rescheduled together, so batches grow and stay aligned.
const LINGER: Duration = Duration::from_millis(100);

/// What a poll gets back.
pub(crate) enum Answer {
    Result(Result<Observation, ProviderError>),
    /// No rate-limit token: poll again at this time, counting nothing.
    Defer(Timestamp),
}

struct Request {
    payment_id: String,
    provider_ref: Option<String>,
    merchant_ref: Option<String>,
    kind: Kind,
    attempt: u32,
    due_at: Timestamp,
    reply: oneshot::Sender<Answer>,
}

/// One provider's batcher (the polls' side).
pub(crate) struct Batcher {
    tx: mpsc::Sender<Request>,
}

impl Batcher {
    pub(crate) fn spawn(
        provider: String,
        adapter: Arc<dyn Provider>,
        limit: usize,
        rates: Arc<RateLimits>,
        health: Arc<Health>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let (tx, rx) = mpsc::channel(limit * 4);
        tokio::spawn(run(provider, adapter, limit, rates, health, clock, rx));
        Batcher { tx }
    }

    pub(crate) async fn query(&self, t: &PollTarget<'_>) -> Answer {
        let (reply, rx) = oneshot::channel();
        let req = Request {
            payment_id: t.payment_id.to_string(),
            provider_ref: t.provider_ref.map(str::to_string),
            merchant_ref: t.merchant_ref.map(str::to_string),
            kind: t.kind,
            attempt: t.attempt,
            due_at: t.due_at,
            reply,
        };
        if self.tx.send(req).await.is_err() {
            return Answer::Result(Err(ProviderError::Transient {
                message: "the bulk batcher has stopped".into(),
            }));
        }
        rx.await.unwrap_or_else(|_| {
            Answer::Result(Err(ProviderError::Transient {
                message: "the bulk batcher dropped the poll".into(),
            }))
        })
    }
}

async fn run(
    provider: String,
    adapter: Arc<dyn Provider>,
    limit: usize,
    rates: Arc<RateLimits>,
    health: Arc<Health>,
    clock: Arc<dyn Clock>,
    mut rx: mpsc::Receiver<Request>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let until = tokio::time::Instant::now() + LINGER;
        while batch.len() < limit {
            match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(Some(r)) => batch.push(r),
                Ok(None) | Err(_) => break,
            }
        }
        if let Err(at) = rates.acquire(&provider).await {
            for r in batch {
                let _ = r.reply.send(Answer::Defer(at));
            }
            continue;
        }
        let targets: Vec<PollTarget<'_>> = batch
            .iter()
            .map(|r| PollTarget {
                payment_id: &r.payment_id,
                provider_ref: r.provider_ref.as_deref(),
                merchant_ref: r.merchant_ref.as_deref(),
                kind: r.kind,
                attempt: r.attempt,
                due_at: r.due_at,
            })
            .collect();
        let result = adapter.query_status_bulk(&targets).await;
        drop(targets);
        health
            .breakers()
            .observe(&provider, clock.now(), result.as_ref().err());
        metrics::counter!("finality_bulk_requests_total", "provider" => provider.clone())
            .increment(1);
        metrics::histogram!("finality_bulk_request_size", "provider" => provider.clone())
            .record(batch.len() as f64);
        match result {
            Ok(answers) if answers.len() == batch.len() => {
                for (r, a) in batch.into_iter().zip(answers) {
                    let _ = r.reply.send(Answer::Result(a));
                }
            }
            Ok(answers) => {
                let e = ProviderError::Transient {
                    message: format!(
                        "bulk answer had {} results for {} payments",
                        answers.len(),
                        batch.len()
                    ),
                };
                for r in batch {
                    let _ = r.reply.send(Answer::Result(Err(e.clone())));
                }
            }
            Err(e) => {
                // A refusal of a request about many payments is about the
                // request, not one payment: the provider's problem.
                let e = match e {
                    ProviderError::Refused { message } => ProviderError::Permanent { message },
                    e => e,
                };
                for r in batch {
                    let _ = r.reply.send(Answer::Result(Err(e.clone())));
                }
            }
        }
    }
}
