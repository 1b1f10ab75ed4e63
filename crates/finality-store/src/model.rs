//! The values that cross the store boundary.

use finality_core::money::{Amount, MerchantRef, PaymentId, ProviderRef};
use finality_core::{Kind, Source, Status, Timestamp};
use serde_json::Value;

/// A payment to register: every field already validated at the edge.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPayment {
    pub id: PaymentId,
    pub provider: String,
    /// The provider's id; `None` when only the merchant's reference is known
    /// (the create call timed out) and the adapter must find it.
    pub provider_ref: Option<ProviderRef>,
    /// The merchant's own reference, when given. At least one of the two is
    /// always set (checked at the edge and by the schema).
    pub merchant_ref: Option<MerchantRef>,
    /// The provider's account the payment belongs to (a Stripe connected
    /// account, an Adyen merchant account, …): polled as that account.
    /// `None`: the provider's own.
    pub account: Option<String>,
    pub kind: Kind,
    pub amount: Amount,
    /// A JSON object the caller wants back; finality does not read it.
    pub metadata: Value,
}

/// What registration did.
#[derive(Debug, Clone, PartialEq)]
pub enum Registered {
    /// A new payment, `pending`, with its first poll scheduled.
    Created(Payment),
    /// The same id with the same body was registered before: nothing changed.
    Existing(Payment),
    /// The same id exists with a different body.
    Conflict(Payment),
    /// Another payment already tracks this provider reference or this
    /// merchant reference (`field` says which) with the same provider.
    RefTaken {
        other_id: String,
        field: &'static str,
    },
}

/// A payment as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Payment {
    pub id: String,
    pub provider: String,
    /// `None` until found when registered by merchant reference alone.
    pub provider_ref: Option<String>,
    pub merchant_ref: Option<String>,
    pub account: Option<String>,
    pub kind: Kind,
    pub amount: i64,
    pub currency: String,
    pub metadata: Value,
    pub status: Status,
    pub status_source: Option<Source>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub finalized_at: Option<Timestamp>,
}

impl Payment {
    /// The row a registration creates: `pending`, nothing observed yet.
    pub fn pending(p: &NewPayment, now: Timestamp) -> Payment {
        Payment {
            id: p.id.as_str().to_string(),
            provider: p.provider.clone(),
            provider_ref: p.provider_ref.as_ref().map(|r| r.as_str().to_string()),
            merchant_ref: p.merchant_ref.as_ref().map(|r| r.as_str().to_string()),
            account: p.account.clone(),
            kind: p.kind,
            amount: p.amount.minor,
            currency: p.amount.currency.as_str().to_string(),
            metadata: p.metadata.clone(),
            status: Status::Pending,
            status_source: None,
            created_at: now,
            updated_at: now,
            finalized_at: None,
        }
    }

    /// Whether `p` describes this payment exactly (the idempotency check).
    pub fn same_body(&self, p: &NewPayment) -> bool {
        // A request without the provider's id matches a payment whose id was
        // found since: retrying the registration is not a different body.
        let provider_ref_same = match &p.provider_ref {
            Some(r) => self.provider_ref.as_deref() == Some(r.as_str()),
            None => p.merchant_ref.is_some(),
        };
        self.provider == p.provider
            && provider_ref_same
            && self.merchant_ref.as_deref() == p.merchant_ref.as_ref().map(MerchantRef::as_str)
            && self.account == p.account
            && self.kind == p.kind
            && self.amount == p.amount.minor
            && self.currency == p.amount.currency.as_str()
            && self.metadata == p.metadata
    }
}

/// The poll state of a non-final payment.
#[derive(Debug, Clone, PartialEq)]
pub struct PollState {
    pub attempts: u32,
    /// Status queries that failed in a row (no answer), reset by an answer.
    pub errors: u32,
    /// `None` when parked (needs review): polled again only on request.
    pub next_poll_at: Option<Timestamp>,
    /// Set while a worker holds the lease.
    pub locked_by: Option<String>,
    pub last_error: Option<String>,
}

/// One applied transition.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    pub from: Option<Status>,
    pub to: Status,
    pub source: Source,
    pub event_id: Option<String>,
    pub reason: Option<String>,
    pub actor: Option<String>,
    pub observed_at: Timestamp,
    pub at: Timestamp,
}

/// A payment with its poll state and full history.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentView {
    pub payment: Payment,
    pub poll: Option<PollState>,
    pub history: Vec<HistoryEntry>,
    /// The provider's sub-objects counted for it (captures, refunds,
    /// attempts, disputes): its amounts are their sums.
    pub pieces: Vec<finality_core::amounts::Piece>,
    /// Facts after final, open and closed, oldest first.
    pub flags: Vec<Flag>,
}

/// A status report from any source, on its way through `apply`.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub payment_id: String,
    pub status: Status,
    pub source: Source,
    /// The provider's event id (webhooks) or finality's own id of the report.
    pub event_id: Option<String>,
    /// When the provider (or human) said it.
    pub observed_at: Timestamp,
    pub reason: Option<String>,
    pub actor: Option<String>,
}

impl Report {
    /// A human's settlement: `reason` and `actor` are kept on the history row.
    pub fn manual(
        payment_id: &str,
        status: Status,
        reason: String,
        actor: String,
        now: Timestamp,
    ) -> Self {
        Report {
            payment_id: payment_id.to_string(),
            status,
            source: Source::Manual,
            event_id: None,
            observed_at: now,
            reason: Some(reason),
            actor: Some(actor),
        }
    }
}

/// What `apply` did.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyOutcome {
    Applied {
        from: Status,
        to: Status,
    },
    Unchanged,
    Ignored {
        current: Status,
        reason: &'static str,
    },
    NotFound,
}

/// A job handed to one worker until `locked_until`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedJob {
    pub payment_id: String,
    pub provider: String,
    /// `None` until the provider's id is found (registered by merchant
    /// reference alone).
    pub provider_ref: Option<String>,
    pub merchant_ref: Option<String>,
    /// The provider's account the poll is made as (`None`: its own).
    pub account: Option<String>,
    pub kind: Kind,
    pub registered_at: Timestamp,
    /// Status queries answered before this one.
    pub attempts: u32,
    /// Status queries that failed in a row just before this one.
    pub errors: u32,
    /// When this poll was due (for lateness).
    pub due_at: Timestamp,
    /// Set when this poll is an early look (brought forward by a webhook
    /// that failed verification): the time the schedule had it due. An
    /// early look spends no attempt; unless it finds the payment final,
    /// the job goes back to this time ([`crate::PollQueue::look_early`]).
    pub resume_at: Option<Timestamp>,
    /// Fences every later write of this claim.
    pub lock_token: i64,
}

/// Ask for up to `limit` jobs due at or before `now`, leased until `now + lease`.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    pub now: Timestamp,
    pub limit: u32,
    pub lease_until: Timestamp,
    pub worker: String,
    /// Each round is shared between the lanes (provider, account) with due
    /// work in proportion to their weights: 1 unless named here.
    pub weights: std::sync::Arc<std::collections::HashMap<Lane, u32>>,
    /// Share the round between lanes (the default); `false`: first due
    /// first across every lane, one statement (for measuring the share's
    /// cost, and for an operator who wants the old order).
    pub fair: bool,
}

/// Where a job waits to be claimed: its provider and account (`""`: the
/// provider's own). The claim is fair between lanes.
pub type Lane = (String, String);

/// One provider call, recorded whatever its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAttempt {
    pub payment_id: String,
    pub provider: String,
    pub worker: String,
    pub started_at: Timestamp,
    pub latency_ms: i64,
    /// The mapped status, `unknown` for an unmapped provider status, or `error`.
    pub outcome: String,
    pub provider_status: Option<String>,
    pub error_class: Option<String>,
    pub error: Option<String>,
}

/// A recorded provider call.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRecord {
    pub id: i64,
    pub attempt: NewAttempt,
}

/// What a finished poll spends of the payment's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// The provider answered: one attempt; failures in a row start over.
    Attempt,
    /// No answer (timeout, 5xx, refused): one more failure in a row.
    Error,
    /// A deferral (rate limit, paused provider, open breaker): nothing.
    Nothing,
}

/// What happens to the job after a poll that did not make the payment final.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterPoll {
    /// Poll again at `next_poll_at`, counting the poll as `count` says.
    Reschedule {
        next_poll_at: Timestamp,
        count: Count,
        last_error: Option<String>,
    },
    /// Attempts, errors or age exhausted: move to `needs_review` and park
    /// the job, counting this last poll as `count` says.
    GiveUp { reason: String, count: Count },
}

impl AfterPoll {
    /// Poll again at `next_poll_at` counting nothing (a pause, an open
    /// breaker, a rate limit, a poll handed back).
    pub fn defer(next_poll_at: Timestamp, why: Option<String>) -> Self {
        AfterPoll::Reschedule {
            next_poll_at,
            count: Count::Nothing,
            last_error: why,
        }
    }
}

/// The end of one claimed poll, written in one fenced transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub payment_id: String,
    pub lock_token: i64,
    pub now: Timestamp,
    pub attempt: Option<NewAttempt>,
    /// A status the provider reported, applied with source `status_query`.
    pub observed: Option<Status>,
    pub then: AfterPoll,
}

/// What a completion did.
#[derive(Debug, Clone, PartialEq)]
pub enum CompleteOutcome {
    /// Written. `applied` lists the transitions made (observed, then review).
    Done { applied: Vec<(Status, Status)> },
    /// The lease was lost (expired and re-claimed, or the job was settled or
    /// parked meanwhile): nothing but the attempt record was written.
    LeaseLost,
}

/// What "poll now" did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollNow {
    Scheduled,
    /// A worker holds it right now; its result is on the way.
    InFlight,
    AlreadyFinal,
    NotFound,
}

/// Filters for listing payments; pages are keyset-paged by id.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub status: Option<Status>,
    pub provider: Option<String>,
    pub after_id: Option<String>,
    pub limit: u32,
}

/// One row of the outbox: an applied transition, to be published.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEvent {
    pub seq: i64,
    pub event_id: String,
    pub payment_id: String,
    pub event_type: String,
    pub status: Status,
    pub previous_status: Option<Status>,
    pub source: Source,
    pub occurred_at: Timestamp,
}

/// Where a webhook event is in its processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InboxState {
    /// Durable and acknowledged; not yet applied.
    Received,
    /// Applied through `apply` (a transition was made).
    Applied,
    /// Changed nothing: a duplicate, stale or contradicting report (see reason).
    Ignored,
    /// No payment tracks its provider reference yet; applied on registration.
    Orphaned,
    /// Processing failed (retried with backoff), or the signed body could not
    /// be parsed (kept as evidence, not retried).
    Failed,
    /// Kept for a human, never applied: a fact finality cannot act on by
    /// itself (an Adyen batch item whose signature does not verify beside
    /// items that do). See the reason.
    Review,
    /// Verified with the provider's credentials, but of an account this
    /// provider does not have (or has disabled): kept, never applied to
    /// another account's payment, and sent to processing when that
    /// account is added or enabled.
    Parked,
}

impl InboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            InboxState::Received => "received",
            InboxState::Applied => "applied",
            InboxState::Ignored => "ignored",
            InboxState::Orphaned => "orphaned",
            InboxState::Failed => "failed",
            InboxState::Review => "review",
            InboxState::Parked => "parked",
        }
    }
}

/// A stored inbox state that is none of [`InboxState`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown inbox state `{0}`")]
pub struct UnknownInboxState(pub String);

impl std::str::FromStr for InboxState {
    type Err = UnknownInboxState;
    fn from_str(s: &str) -> Result<Self, UnknownInboxState> {
        [
            InboxState::Received,
            InboxState::Applied,
            InboxState::Ignored,
            InboxState::Orphaned,
            InboxState::Failed,
            InboxState::Review,
            InboxState::Parked,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
        .ok_or_else(|| UnknownInboxState(s.to_string()))
    }
}

/// A verified webhook event on its way into the inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct NewInboxEvent {
    pub provider: String,
    /// The account the provider's material names or whose credentials
    /// verified it (`None`: the provider's own): it is matched only
    /// against that account's payments.
    pub account: Option<String>,
    /// The provider's event id: the deduplication key with `provider`.
    pub event_id: String,
    pub provider_ref: Option<String>,
    /// The merchant's reference, where the provider's event names it: finds
    /// a payment registered without the provider's id.
    pub merchant_ref: Option<String>,
    pub observed: Option<Status>,
    pub provider_status: Option<String>,
    pub occurred_at: Option<Timestamp>,
    /// The amount and currency the event names (`mismatch` is never
    /// stored: an event the adapter found wrong is stored for review): a
    /// final status counts only for the registered money.
    pub reported: finality_core::Reported,
    pub raw_body: Vec<u8>,
    /// The headers that matter for audit (signature, ids, timestamps).
    pub headers: Value,
    /// `Received`, or `Failed` for an authentic body that could not be parsed.
    pub state: InboxState,
    pub reason: Option<String>,
    /// How it came: `Webhook` (pushed by the provider), or `Sweep` (read
    /// from the provider's event list by the catch-up). Recorded as the
    /// source of the status change it makes.
    pub source: Source,
}

/// An inbox row.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxEvent {
    pub id: i64,
    pub provider: String,
    /// See [`NewInboxEvent::account`].
    pub account: Option<String>,
    pub event_id: String,
    pub provider_ref: Option<String>,
    pub merchant_ref: Option<String>,
    pub observed: Option<Status>,
    pub provider_status: Option<String>,
    pub occurred_at: Option<Timestamp>,
    /// See [`NewInboxEvent::reported`].
    pub reported: finality_core::Reported,
    pub received_at: Timestamp,
    pub state: InboxState,
    pub reason: Option<String>,
    /// Processing attempts so far; also fences a claim.
    pub attempts: u32,
    /// `Webhook` or `Sweep` (see [`NewInboxEvent::source`]).
    pub source: Source,
}

impl InboxEvent {
    /// Whose fact this is: the only key its payment is looked up by.
    pub fn scope(&self) -> finality_core::Scope {
        finality_core::Scope::new(self.provider.as_str(), self.account.as_deref())
    }
}

/// What processing one inbox event did.
#[derive(Debug, Clone, PartialEq)]
pub enum InboxOutcome {
    Applied {
        payment_id: String,
        from: Status,
        to: Status,
    },
    Ignored {
        reason: String,
    },
    /// Not applied and kept for a human (a failure reported after success).
    Review {
        reason: String,
    },
    Orphaned,
    /// Another processor holds it, or it was processed already.
    LeaseLost,
}

/// Where one push destination (an HTTP endpoint, NATS) stands in the feed.
#[derive(Debug, Clone, PartialEq)]
pub struct DestinationState {
    pub name: String,
    /// Every event at or below this feed position has been delivered.
    pub delivered_seq: i64,
    /// Failed tries of the event after `delivered_seq`.
    pub attempts: u32,
    pub failing_since: Option<Timestamp>,
    pub next_attempt_at: Option<Timestamp>,
    pub last_error: Option<String>,
    /// Paused by an admin: no attempts, no alert, its backlog kept.
    pub paused_at: Option<Timestamp>,
    /// The token name that paused it.
    pub paused_by: Option<String>,
}

impl DestinationState {
    /// A destination at the start of the feed, never tried.
    pub fn new(name: &str) -> Self {
        DestinationState {
            name: name.to_string(),
            delivered_seq: 0,
            attempts: 0,
            failing_since: None,
            next_attempt_at: None,
            last_error: None,
            paused_at: None,
            paused_by: None,
        }
    }

    /// `paused`, `failing` (its next event failed and waits for a retry)
    /// or `ok`: one word for the console and the CLI alike.
    pub fn condition(&self) -> &'static str {
        if self.paused_at.is_some() {
            "paused"
        } else if self.failing_since.is_some() {
            "failing"
        } else {
            "ok"
        }
    }
}

/// What an event says beyond the transition, read when it is sent (so a
/// consumer need not ask for the payment): the payment as it is then
/// (`None` once retention archived it), and the reason and actor of the
/// transition (a review, a manual resolve).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EventDetails {
    pub payment: Option<Payment>,
    pub reason: Option<String>,
    pub actor: Option<String>,
    /// The payment's counted sub-objects as they were when the event was
    /// written (empty: none counted): the counters after the transition,
    /// whenever the event is read or replayed.
    pub pieces: Vec<finality_core::amounts::Piece>,
    /// The flag a `payment.flagged` or `payment.flag_resolved` event is
    /// about, as it was then.
    pub flag: Option<Flag>,
}

/// Where the feed begins and ends: what a rewind can reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedBounds {
    /// The last position given (0: none yet).
    pub head: i64,
    /// The oldest event still kept, and when it occurred (`None`: none is).
    pub oldest: Option<(i64, Timestamp)>,
}

/// The history the feed's positions belong to now (docs/EVENTS.md, "When
/// the feed's history was rewound"). A failover that lost commits, or a
/// restore, gives positions after `since` again, to other events; the
/// epoch changed when it did, so a cursor of the old one is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedEpoch {
    /// Names this history; cursors carry it.
    pub epoch: String,
    /// The last position this history shares with the one before it.
    pub since: i64,
    /// The last position given (0: none yet).
    pub head: i64,
}

/// One event asked to be sent again to one destination.
#[derive(Debug, Clone, PartialEq)]
pub struct Redelivery {
    pub id: i64,
    pub destination: String,
    pub event_id: String,
    pub requested_at: Timestamp,
    pub requested_by: String,
    pub done_at: Option<Timestamp>,
    /// `delivered`, or why not.
    pub outcome: Option<String>,
}

/// One delivery attempt of one event to one destination.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryAttempt {
    pub destination: String,
    pub event_id: String,
    pub feed_seq: i64,
    pub at: Timestamp,
    pub status_code: Option<u16>,
    pub latency_ms: i64,
    pub error: Option<String>,
}

/// A token bucket's shape: the rate it refills at and what it holds at most.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub per_second: f64,
    pub burst: f64,
}

impl Bucket {
    /// Refill from `(tokens, updated_at)` to `now`, then take up to `want`
    /// whole tokens: `(granted, tokens left)`. Time going backwards (another
    /// node's clock) refills nothing.
    pub fn take(self, tokens: f64, updated_at: Timestamp, now: Timestamp, want: u32) -> (u32, f64) {
        let elapsed_s = (now.0 - updated_at.0).max(0) as f64 / 1000.0;
        let avail = (tokens + elapsed_s * self.per_second).min(self.burst);
        let granted = avail.floor().clamp(0.0, f64::from(want));
        (granted as u32, avail - granted)
    }
}

/// What recording a provider id found by merchant reference did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefRecorded {
    /// Recorded on the payment and its poll job.
    Recorded,
    /// The payment already had exactly this provider id.
    Same,
    /// The payment already tracks a different provider id (a webhook named
    /// it first): contradictory, for a human.
    Different { existing: String },
    /// Another payment of this provider already tracks this id.
    Taken { other_id: String },
    /// The claim's lease was lost: nothing written.
    LeaseLost,
}

/// One flag on a payment.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    pub id: i64,
    pub payment_id: String,
    /// Why a person must look (the webhook's review reason).
    pub reason: String,
    /// The provider's event that raised it.
    pub event_id: Option<String>,
    pub provider_status: Option<String>,
    /// The provider's sub-object it is about (`capture:8825408195409505`):
    /// a later report of it succeeding closes the flag.
    pub piece_key: Option<String>,
    pub opened_at: Timestamp,
    pub closed_at: Option<Timestamp>,
    /// The token's name of the person, or `provider`.
    pub closed_by: Option<String>,
    pub resolution: Option<String>,
}
