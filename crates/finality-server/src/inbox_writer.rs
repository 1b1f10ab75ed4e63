//! Group commit for the webhook inbox. Each verified webhook request hands
//! its rows to a flusher and waits; a flusher takes every request queued
//! at that moment (up to [`MAX_ROWS`] rows) and stores them in one
//! transaction, then answers each request with its own rows' outcome. No
//! timer holds a request back: under light load a batch is one request,
//! under a burst it is whatever arrived while the previous batch was
//! committing. A failed transaction fails every request in it (each
//! answers 5xx, the provider retries) and stores none of them.
//!
//! Written here rather than with a crate: what it batches (inbox rows, the
//! answer per request, failure for all) is finality's own.

use crate::error::ApiError;
use finality_core::Clock;
use finality_store::{NewInboxEvent, WebhookInbox};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Mutex};

/// Most rows in one transaction: a burst is spread over several commits
/// rather than one that holds the inbox for long.
pub const MAX_ROWS: usize = 512;

/// Flushers a service runs: one. With one, a batch is every request that
/// arrived while the last one committed, so batches grow with the load and
/// the database does one commit and one statement for all of them. With
/// two on PostgreSQL (one committing while the next gathers) batches were
/// half the size and PostgreSQL's CPU per webhook nearly double: 32
/// connections, 11,088 against 7,364 webhooks/s and 45 against 85 µs of
/// PostgreSQL per webhook (`docs/PERFORMANCE.md`, session 22).
pub const FLUSHERS: usize = 1;

/// How a failed batch is told to each of its requests.
#[derive(Debug, Clone)]
struct Failure {
    unavailable: Option<&'static str>,
    message: String,
}

struct Job {
    rows: Vec<NewInboxEvent>,
    reply: oneshot::Sender<Result<Vec<bool>, Failure>>,
}

/// The handle requests store their rows through (cheap to clone).
#[derive(Clone)]
pub struct InboxWriter {
    tx: mpsc::Sender<Job>,
}

impl InboxWriter {
    /// Start `writers` flushers (a service starts [`FLUSHERS`]).
    pub fn start(store: Arc<dyn WebhookInbox>, writers: usize, clock: Arc<dyn Clock>) -> Self {
        let (tx, rx) = mpsc::channel(4 * MAX_ROWS);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..writers.max(1) {
            tokio::spawn(flush(store.clone(), clock.clone(), rx.clone()));
        }
        InboxWriter { tx }
    }

    /// Store `rows` (committed when this returns `Ok`); whether each was
    /// new.
    pub async fn insert(&self, rows: Vec<NewInboxEvent>) -> Result<Vec<bool>, ApiError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Job { rows, reply })
            .await
            .map_err(|_| stopped("the inbox writer has stopped"))?;
        match answer.await {
            Ok(Ok(fresh)) => Ok(fresh),
            Ok(Err(Failure {
                unavailable: Some(reason),
                message,
            })) => Err(ApiError::Unavailable {
                reason,
                detail: message,
            }),
            Ok(Err(f)) => Err(ApiError::Internal(f.message)),
            Err(_) => Err(stopped(
                "the inbox writer stopped before storing the webhook",
            )),
        }
    }
}

/// The service is stopping: the request is not stored (503, retried).
fn stopped(detail: &str) -> ApiError {
    ApiError::Unavailable {
        reason: "shutting down",
        detail: detail.into(),
    }
}

/// One flusher: gather what is queued, store it in one transaction, answer.
/// Ends when every handle is dropped.
async fn flush(
    store: Arc<dyn WebhookInbox>,
    clock: Arc<dyn Clock>,
    rx: Arc<Mutex<mpsc::Receiver<Job>>>,
) {
    loop {
        let mut jobs = Vec::new();
        {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else { return };
            let mut n = first.rows.len();
            jobs.push(first);
            while n < MAX_ROWS {
                match rx.try_recv() {
                    Ok(job) => {
                        n += job.rows.len();
                        jobs.push(job);
                    }
                    Err(_) => break,
                }
            }
        }
        let sizes: Vec<usize> = jobs.iter().map(|j| j.rows.len()).collect();
        let mut rows = Vec::with_capacity(sizes.iter().sum());
        for j in &mut jobs {
            rows.append(&mut j.rows);
        }
        ::metrics::histogram!("finality_inbox_batch_rows").record(rows.len() as f64);
        match store.inbox_insert(&rows, clock.now()).await {
            Ok(fresh) => {
                let mut fresh = fresh.into_iter();
                for (job, n) in jobs.into_iter().zip(sizes) {
                    // A request that gave up (its client went away) is
                    // stored all the same; nobody is left to answer.
                    let _ = job.reply.send(Ok(fresh.by_ref().take(n).collect()));
                }
            }
            Err(e) => {
                let failure = Failure {
                    unavailable: e.unavailable_reason(),
                    message: e.to_string(),
                };
                for job in jobs {
                    let _ = job.reply.send(Err(failure.clone()));
                }
            }
        }
    }
}
