//! What the cases share: fixtures, a registration, a claim, reports and
//! webhooks, and draining the inbox.

use finality_core::money::{Amount, Currency, MerchantRef, PaymentId, ProviderRef};
use finality_core::{Kind, Source, Status, Timestamp};
use finality_store::model::*;
use finality_store::review::NewAudit;
use finality_store::Store;

pub const T0: Timestamp = Timestamp(1_700_000_000_000);

pub(crate) const LEASE_MS: i64 = 30_000;

/// A valid payment for tests.
pub fn new_payment(id: &str) -> NewPayment {
    NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: "sim".into(),
        provider_ref: Some(ProviderRef::parse(&format!("ref_{id}")).unwrap()),
        merchant_ref: None,
        account: None,
        kind: Kind::Payment,
        amount: Amount::new(1250, Currency::parse("USD").unwrap()).unwrap(),
        metadata: serde_json::json!({"order": id}),
    }
}

pub async fn register(db: &dyn Store, id: &str, first_poll_at: Timestamp) {
    let r = db
        .register(&new_payment(id), T0, first_poll_at)
        .await
        .unwrap();
    assert!(matches!(r, Registered::Created(_)), "{r:?}");
}

pub(crate) fn claim_req(now: Timestamp, limit: u32, worker: &str) -> ClaimRequest {
    ClaimRequest {
        now,
        limit,
        lease_until: Timestamp(now.0 + LEASE_MS),
        worker: worker.into(),
        weights: Default::default(),
        fair: true,
    }
}

pub(crate) fn attempt(job: &ClaimedJob, worker: &str, now: Timestamp, outcome: &str) -> NewAttempt {
    NewAttempt {
        payment_id: job.payment_id.clone(),
        provider: job.provider.clone(),
        worker: worker.into(),
        started_at: now,
        latency_ms: 3,
        outcome: outcome.into(),
        provider_status: Some(outcome.into()),
        error_class: None,
        error: None,
    }
}

pub(crate) fn report(id: &str, status: Status, event: &str) -> Report {
    Report {
        payment_id: id.into(),
        status,
        source: Source::Webhook,
        event_id: Some(event.into()),
        observed_at: T0,
        reason: None,
        actor: None,
    }
}

pub(crate) async fn outbox_for(db: &dyn Store, id: &str) -> Vec<OutboxEvent> {
    let all = db.events_after(0, 100_000).await.unwrap();
    all.into_iter().filter(|e| e.payment_id == id).collect()
}

pub fn inbox_event(event_id: &str, provider_ref: &str, status: Status) -> NewInboxEvent {
    NewInboxEvent {
        provider: "sim".into(),
        account: None,
        event_id: event_id.into(),
        provider_ref: Some(provider_ref.into()),
        merchant_ref: None,
        observed: Some(status),
        provider_status: Some(status.as_str().into()),
        occurred_at: Some(T0),
        reported: Default::default(),
        raw_body: format!("{{\"id\":\"{event_id}\"}}").into_bytes(),
        headers: serde_json::json!({"webhook-id": event_id}),
        state: InboxState::Received,
        reason: None,
        source: Source::Webhook,
    }
}

/// Sequence what waits; the feed's last position then.
pub(crate) async fn sequenced_head(db: &dyn Store) -> i64 {
    db.sequence_feed(1000).await.unwrap();
    db.feed_after(0, 100_000)
        .await
        .unwrap()
        .last()
        .map_or(0, |e| e.seq)
}

/// Claim and process every due inbox event; returns the outcomes.
pub async fn drain_inbox(db: &dyn Store, now: Timestamp) -> Vec<InboxOutcome> {
    let mut out = Vec::new();
    loop {
        let batch = db
            .inbox_claim(now, 50, Timestamp(now.0 + LEASE_MS))
            .await
            .unwrap();
        if batch.is_empty() {
            return out;
        }
        for ev in batch {
            out.push(db.inbox_process(&ev, now).await.unwrap());
        }
    }
}

/// A payment known only by the merchant's reference.
pub fn merchant_payment(id: &str, merchant_ref: &str) -> NewPayment {
    NewPayment {
        provider_ref: None,
        merchant_ref: Some(MerchantRef::parse(merchant_ref).unwrap()),
        ..new_payment(id)
    }
}

pub(crate) async fn claim_one(db: &dyn Store, id: &str, now: Timestamp) -> ClaimedJob {
    let jobs = db.claim(&claim_req(now, 100, "W")).await.unwrap();
    jobs.into_iter()
        .find(|j| j.payment_id == id)
        .unwrap_or_else(|| panic!("{id} was not claimed"))
}

pub(crate) fn merchant_event(
    event_id: &str,
    provider_ref: &str,
    merchant_ref: &str,
) -> NewInboxEvent {
    NewInboxEvent {
        merchant_ref: Some(merchant_ref.into()),
        ..inbox_event(event_id, provider_ref, Status::Succeeded)
    }
}

pub(crate) fn to_review(id: &str, reason: &str, at: Timestamp) -> Report {
    Report {
        payment_id: id.into(),
        status: Status::NeedsReview,
        source: Source::Sweep,
        event_id: None,
        observed_at: at,
        reason: Some(reason.into()),
        actor: None,
    }
}

pub(crate) fn audit(action: &str, payment_id: Option<&str>, at: Timestamp) -> NewAudit {
    NewAudit {
        at,
        actor: "ops-alice".into(),
        role: "reviewer".into(),
        action: action.into(),
        payment_id: payment_id.map(str::to_string),
        detail: serde_json::json!({"status": "succeeded", "reason": "bank statement"}),
        outcome: "scheduled".into(),
        remote_addr: Some("127.0.0.1".into()),
    }
}
