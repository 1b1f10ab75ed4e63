//! The inbox processor: applies acknowledged webhook events through the one
//! `apply` path, after the provider already has its 2xx, so a slow database
//! or a burst never makes a provider time out and retry.

use finality_core::{Clock, Schedule, Timestamp};
use finality_store::prelude::*;
use finality_store::{InboxEvent, InboxOutcome, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The inbox row an authentic event becomes, however it came (a verified
/// webhook, or the provider's event list with source `sweep`): its
/// disposition decides the state it is stored in, and `scope` (the account
/// that named or verified it) is the only one whose payments it can reach.
pub fn inbox_row(
    scope: &finality_core::Scope,
    ev: finality_providers::webhook::WebhookEvent,
    raw_body: Vec<u8>,
    headers: serde_json::Value,
    source: finality_core::Source,
) -> finality_store::NewInboxEvent {
    use finality_providers::webhook::Disposition;
    use finality_store::InboxState;
    // Another merchant's event, or money the adapter could not read: kept
    // for a human, never applied.
    let wrong = finality_core::found_by_adapter(ev.status, &ev.reported).map(String::from);
    let (state, reason) = match (ev.disposition, wrong) {
        (Disposition::Apply, Some(why)) => (InboxState::Review, Some(why)),
        (Disposition::Apply, None) => (InboxState::Received, None),
        (Disposition::Ignore(why), _) => (InboxState::Ignored, Some(why)),
        (Disposition::Review(why), _) => (InboxState::Review, Some(why)),
        (Disposition::Report { name, .. }, _) => (
            InboxState::Ignored,
            Some(format!(
                "settlement report `{name}` announced: downloaded and reconciled by the \
                 settlement fetcher"
            )),
        ),
    };
    finality_store::NewInboxEvent {
        provider: scope.provider().to_string(),
        account: scope.account().map(String::from),
        event_id: ev.event_id,
        provider_ref: ev.provider_ref,
        merchant_ref: ev.merchant_ref,
        observed: ev.status,
        provider_status: ev.provider_status,
        occurred_at: ev.occurred_at,
        reported: finality_core::Reported {
            mismatch: None,
            ..ev.reported
        },
        raw_body,
        headers,
        state,
        reason,
        source,
    }
}

/// Settings of the inbox processor.
#[derive(Debug, Clone)]
pub struct InboxConfig {
    pub batch_size: u32,
    /// How long a claimed event is leased to this processor.
    pub lease: Duration,
    /// Longest sleep without looking at the database.
    pub idle_check: Duration,
    /// How often orphans whose payment now exists are re-checked (a backstop
    /// for the hand-over done at registration).
    pub adopt_every: Duration,
}

impl Default for InboxConfig {
    fn default() -> Self {
        InboxConfig {
            batch_size: 64,
            lease: Duration::from_secs(30),
            idle_check: Duration::from_secs(1),
            adopt_every: Duration::from_secs(10),
        }
    }
}

pub struct InboxProcessor<S: ?Sized = dyn Store> {
    /// The roles the processor uses: the inbox, and payments for learning webhook delays.
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    config: InboxConfig,
    /// Where to record registration-to-webhook delays, and for which
    /// providers (those with `webhook_wait_quantile`).
    learn: Option<(Arc<crate::Health>, std::collections::HashSet<String>)>,
    /// A failure was recorded since the next retry time was last read.
    retry_pending: std::sync::atomic::AtomicBool,
}

/// Retry delay after the n-th failed processing attempt: 1 s doubling,
/// 5 min cap (retries as data, like every background loop's).
fn retry_delay(attempts: u32) -> Duration {
    let schedule = Schedule::Exponential {
        base: Duration::from_secs(1),
        factor: 2.0,
        cap: Duration::from_secs(300),
        jitter: 0.0,
    };
    schedule.delay(attempts.saturating_sub(1), 0.0)
}

impl<S: ?Sized + WebhookInbox + PaymentStore + 'static> InboxProcessor<S> {
    pub fn new(store: Arc<S>, clock: Arc<dyn Clock>, config: InboxConfig) -> Arc<Self> {
        Arc::new(InboxProcessor {
            store,
            clock,
            config,
            learn: None,
            retry_pending: Default::default(),
        })
    }

    /// As [`InboxProcessor::new`], recording into `health` how long after
    /// registration each final webhook of `providers` came (one read of the
    /// payment per such webhook).
    pub fn learning(
        store: Arc<S>,
        clock: Arc<dyn Clock>,
        config: InboxConfig,
        health: Arc<crate::Health>,
        providers: &crate::Providers,
    ) -> Arc<Self> {
        let names: std::collections::HashSet<String> = providers
            .iter()
            .filter(|(_, p)| p.webhook_wait_quantile.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        Arc::new(InboxProcessor {
            store,
            clock,
            config,
            learn: (!names.is_empty()).then_some((health, names)),
            retry_pending: Default::default(),
        })
    }

    /// Record how long this payment's final webhook took, if it is learned.
    async fn learn(&self, provider: &str, payment_id: &str, source: finality_core::Source) {
        let Some((health, names)) = &self.learn else {
            return;
        };
        if source != finality_core::Source::Webhook || !names.contains(provider) {
            return;
        }
        match self.store.get(payment_id).await {
            Ok(Some(view)) => {
                health
                    .webhook_waits
                    .observe(provider, view.payment.created_at, self.clock.now())
            }
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(%payment_id, error = %e, "reading a payment to learn its webhook delay failed")
            }
        }
    }

    /// Process every event due now; returns how many were processed.
    pub async fn process_due(&self) -> finality_store::Result<usize> {
        let mut n = 0;
        // Fast path: take and apply in one transaction, while it works.
        loop {
            let now = self.clock.now();
            let taken = tracing::Instrument::instrument(
                self.store.inbox_take_and_process(
                    now,
                    self.config.batch_size,
                    now.plus(self.config.lease),
                ),
                tracing::debug_span!("inbox apply", batch = self.config.batch_size),
            )
            .await;
            match taken {
                Ok(done) if done.is_empty() => return Ok(n),
                Ok(done) => {
                    n += done.len();
                    let partial = done.len() < self.config.batch_size as usize;
                    for (ev, out) in done {
                        self.report(ev, Ok(out), now).await;
                    }
                    // Fewer than asked for: nothing else was due when they
                    // were taken (what arrives since wakes the loop).
                    if partial {
                        return Ok(n);
                    }
                }
                Err(e) => {
                    tracing::debug!(error = %e, "applying due webhooks at once failed; claiming them one at a time");
                    break;
                }
            }
        }
        loop {
            let now = self.clock.now();
            let batch = self
                .store
                .inbox_claim(now, self.config.batch_size, now.plus(self.config.lease))
                .await?;
            if batch.is_empty() {
                return Ok(n);
            }
            n += batch.len();
            // The safe path after the fast one failed: each event in its
            // own transaction, each failure recorded on its own event.
            for ev in batch {
                self.process(ev).await;
            }
        }
    }

    async fn process(&self, ev: InboxEvent) {
        let now = self.clock.now();
        let out = self.store.inbox_process(&ev, now).await;
        self.report(ev, out, now).await;
    }

    /// Count, log and learn from one event's outcome; record a failure.
    /// Every line logged carries the webhook's provider, reference and
    /// event id.
    async fn report(
        &self,
        ev: InboxEvent,
        out: finality_store::Result<InboxOutcome>,
        now: Timestamp,
    ) {
        let span = tracing::info_span!(
            "webhook",
            provider = %ev.provider,
            provider_ref = ev.provider_ref.as_deref().unwrap_or_default(),
            event_id = %ev.event_id
        );
        tracing::Instrument::instrument(self.report_in_span(ev, out, now), span).await
    }

    async fn report_in_span(
        &self,
        ev: InboxEvent,
        out: finality_store::Result<InboxOutcome>,
        now: Timestamp,
    ) {
        let provider = ev.provider.clone();
        match out {
            Ok(InboxOutcome::Applied {
                payment_id,
                from,
                to,
            }) => {
                if to.is_final() {
                    self.learn(&provider, &payment_id, ev.source).await;
                }
                metrics::counter!("finality_webhooks_applied_total", "provider" => provider)
                    .increment(1);
                tracing::info!(%payment_id, %from, %to, event_id = %ev.event_id, "status changed by webhook");
            }
            Ok(InboxOutcome::Ignored { reason }) => {
                metrics::counter!("finality_webhooks_ignored_total", "provider" => provider)
                    .increment(1);
                tracing::debug!(event_id = %ev.event_id, %reason, "webhook changed nothing");
            }
            Ok(InboxOutcome::Review { reason }) => {
                metrics::counter!("finality_webhooks_review_total", "provider" => provider)
                    .increment(1);
                tracing::warn!(event_id = %ev.event_id, %reason, "webhook kept for review, not applied");
            }
            Ok(InboxOutcome::Orphaned) => {
                metrics::counter!("finality_webhooks_orphaned_total", "provider" => provider)
                    .increment(1);
                tracing::info!(event_id = %ev.event_id, provider_ref = ?ev.provider_ref, "webhook for an unregistered payment kept until it is registered");
            }
            Ok(InboxOutcome::LeaseLost) => {}
            Err(e) => {
                let retry_at: Timestamp = now.plus(retry_delay(ev.attempts));
                tracing::warn!(event_id = %ev.event_id, error = %e, attempts = ev.attempts, "processing a webhook failed; will retry");
                self.retry_pending
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                if let Err(e2) = self.store.inbox_fail(&ev, &e.to_string(), retry_at).await {
                    tracing::error!(event_id = %ev.event_id, error = %e2, "recording the failure failed; the lease will expire and it is retried");
                }
            }
        }
    }

    /// Run until `shutdown`, waking on new events (same process) or a
    /// registration (any node), on the next retry time, or at
    /// `idle_check`; not on its own status changes.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut wake = self.store.subscribe_inbox();
        let mut last_adopt = self.clock.now();
        while !shutdown.is_cancelled() {
            let processed = self.process_due().await;
            if let Err(e) = &processed {
                tracing::error!(error = %e, "claiming webhooks failed");
            }
            let now = self.clock.now();
            if now.since(last_adopt) >= self.config.adopt_every {
                last_adopt = now;
                match self.store.inbox_adopt_orphans(now).await {
                    Ok(0) => {}
                    Ok(n) => {
                        tracing::info!(adopted = n, "orphaned webhooks whose payment now exists")
                    }
                    Err(e) => tracing::error!(error = %e, "adopting orphaned webhooks failed"),
                }
            }
            // When the next retry is due matters only after an idle round
            // or a failure here: while events flow, each round is woken by
            // the next one's arrival, and `idle_check` bounds the rest.
            let idle = !matches!(processed, Ok(n) if n > 0);
            let failed = self
                .retry_pending
                .swap(false, std::sync::atomic::Ordering::Relaxed);
            let next = if idle || failed {
                self.store.inbox_next_due().await.ok().flatten()
            } else {
                None
            };
            let sleep = next
                .map_or(self.config.idle_check, |t| t.since(self.clock.now()))
                .min(self.config.idle_check);
            tokio::select! {
                _ = tokio::time::sleep(sleep) => {}
                _ = wake.changed() => {}
                _ = shutdown.cancelled() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn retry_delay_backs_off_and_caps() {
        use super::retry_delay;
        use std::time::Duration;
        assert_eq!(retry_delay(1), Duration::from_secs(1));
        assert_eq!(retry_delay(3), Duration::from_secs(4));
        assert_eq!(retry_delay(30), Duration::from_secs(300));
    }
}
