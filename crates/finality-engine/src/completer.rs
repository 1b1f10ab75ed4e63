//! The completer: executors hand their results here, and whatever has
//! accumulated while the previous batch was committing is written in one
//! transaction (one commit, one fsync) instead of one each. An executor waits
//! for its own result to be durable, so a slot is only freed once its poll is
//! complete. On PostgreSQL two batch transactions may be in flight at once
//! ([`Store::parallel_writers`]), so one is being built while the other
//! commits; they never touch the same payment (each job is held by one
//! executor) and each locks in payment-id order.

use finality_core::Schedule;
use finality_store::{CompleteOutcome, Completion, PollQueue};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

type Item = (Completion, oneshot::Sender<()>);

/// The executors' side of the completer.
#[derive(Clone)]
pub(crate) struct Completer {
    tx: mpsc::Sender<Item>,
}

impl Completer {
    /// Start the completer task; it ends when every `Completer` is dropped.
    /// `writers`: how many batches may be written at once (the store's
    /// `parallel_writers`).
    pub(crate) fn spawn(queue: Arc<dyn PollQueue>, max_batch: usize, writers: usize) -> Self {
        let (tx, rx) = mpsc::channel(max_batch.max(1) * 2);
        tokio::spawn(run(queue, rx, max_batch.max(1), writers.max(1)));
        Completer { tx }
    }

    /// Write `c` durably (batched with others); returns once it is written
    /// or has definitively failed (then its lease expires and the poll is
    /// made again).
    pub(crate) async fn complete(&self, store: &dyn PollQueue, c: Completion) {
        let (done_tx, done_rx) = oneshot::channel();
        match self.tx.send((c, done_tx)).await {
            Ok(()) => {
                let _ = done_rx.await;
            }
            // The completer is gone (shutting down): write it directly.
            Err(mpsc::error::SendError((c, _))) => one_by_one(store, &c).await,
        }
    }
}

async fn run(
    store: Arc<dyn PollQueue>,
    mut rx: mpsc::Receiver<Item>,
    max_batch: usize,
    writers: usize,
) {
    let writers = Arc::new(tokio::sync::Semaphore::new(writers));
    while let Some(first) = rx.recv().await {
        // Wait for a free writer first: the batch then takes everything
        // that arrived meanwhile.
        let Ok(permit) = writers.clone().acquire_owned().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        let store = store.clone();
        tokio::spawn(async move {
            write(&*store, batch).await;
            drop(permit);
        });
    }
}

async fn write(store: &dyn PollQueue, batch: Vec<Item>) {
    let (cs, waiters): (Vec<Completion>, Vec<oneshot::Sender<()>>) = batch.into_iter().unzip();
    match store.complete_batch(&cs).await {
        Ok(outcomes) => {
            for (c, o) in cs.iter().zip(outcomes) {
                log_outcome(c, &o);
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, size = cs.len(), "completing a batch failed; completing one by one");
            for c in &cs {
                one_by_one(store, c).await;
            }
        }
    }
    for done in waiters {
        let _ = done.send(());
    }
}

fn log_outcome(c: &Completion, o: &CompleteOutcome) {
    match o {
        CompleteOutcome::Done { applied } => {
            for (from, to) in applied {
                tracing::info!(payment_id = %c.payment_id, %from, %to, "status changed by status query");
            }
        }
        CompleteOutcome::LeaseLost => {
            tracing::info!(payment_id = %c.payment_id, "lease lost before completion; result discarded");
        }
    }
}

/// One completion on its own, retried briefly if the database hiccups.
async fn one_by_one(store: &dyn PollQueue, c: &Completion) {
    // Retries as data: three quick retries, then the lease decides.
    let retry = Schedule::Fixed {
        delays: vec![
            Duration::from_millis(100),
            Duration::from_millis(300),
            Duration::from_millis(900),
        ],
    };
    for attempt in 1..=4u32 {
        match store.complete(c).await {
            Ok(o) => return log_outcome(c, &o),
            Err(e) if attempt < 4 => {
                tracing::warn!(payment_id = %c.payment_id, error = %e, "completing a poll failed; retrying");
                tokio::time::sleep(retry.delay(attempt - 1, 0.0)).await;
            }
            Err(e) => {
                tracing::error!(payment_id = %c.payment_id, error = %e, "completing a poll failed; the lease will expire and the poll repeat");
            }
        }
    }
}
