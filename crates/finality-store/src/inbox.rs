//! The webhook inbox: verified events stored at acknowledgement, then
//! applied through the same path as every other status change.

use crate::driver::Backend;
use crate::driver::{placeholders, stmt, Conn, Fields, InboxRows, NumberedWrite};
use crate::error::{DbContext, Result};
use crate::model::*;
use crate::payments::{apply_in, find_payment_by_ref, write_provider_ref};
use finality_core::{contradicts_success, Status, Timestamp};

/// Storing and processing webhook events.
#[async_trait::async_trait]
pub trait WebhookInbox: Send + Sync {
    /// Put verified webhook events into the inbox, each in one transaction
    /// with the others of its request; `true` for each event that was new,
    /// `false` for a duplicate (decided by the unique constraint).
    async fn inbox_insert(&self, events: &[NewInboxEvent], now: Timestamp) -> Result<Vec<bool>>;

    /// Lease up to `limit` received or failed events due for processing.
    async fn inbox_claim(
        &self,
        now: Timestamp,
        limit: u32,
        lease_until: Timestamp,
    ) -> Result<Vec<InboxEvent>>;

    /// Apply one claimed event through `apply` (source `webhook`) and record
    /// the result on the inbox row, in one transaction.
    async fn inbox_process(&self, ev: &InboxEvent, now: Timestamp) -> Result<InboxOutcome>;

    /// Take the events due now (up to `limit`) and apply them, all in one
    /// transaction: no lease is needed, since the rows stay locked until
    /// the commit and a crash rolls everything back. The fast path of the
    /// inbox processor; on an error it falls back to claiming with a
    /// lease and processing one at a time, where failures are recorded.
    async fn inbox_take_and_process(
        &self,
        now: Timestamp,
        limit: u32,
        lease_until: Timestamp,
    ) -> Result<Vec<(InboxEvent, InboxOutcome)>> {
        let evs = self.inbox_claim(now, limit, lease_until).await?;
        let out = self.inbox_process_batch(&evs, now).await?;
        Ok(evs.into_iter().zip(out).collect())
    }

    /// Apply several claimed events in one transaction (one commit for a
    /// burst); all or nothing. On an error the caller processes them one
    /// at a time, so one bad event cannot hold the others back.
    async fn inbox_process_batch(
        &self,
        evs: &[InboxEvent],
        now: Timestamp,
    ) -> Result<Vec<InboxOutcome>> {
        let mut out = Vec::with_capacity(evs.len());
        for ev in evs {
            out.push(self.inbox_process(ev, now).await?);
        }
        Ok(out)
    }

    /// Record a processing failure; the event is retried at `retry_at`.
    async fn inbox_fail(&self, ev: &InboxEvent, error: &str, retry_at: Timestamp) -> Result<()>;

    /// Send orphaned events whose payment now exists back to processing (a
    /// backstop for the hand-over done at registration).
    async fn inbox_adopt_orphans(&self, now: Timestamp) -> Result<u64>;

    async fn inbox_get(&self, provider: &str, event_id: &str) -> Result<Option<InboxEvent>>;
    async fn inbox_next_due(&self) -> Result<Option<Timestamp>>;
    async fn inbox_counts(&self) -> Result<Vec<(InboxState, i64)>>;
}

/// Feed positions given at most in one inbox transaction (the sequencer
/// takes any more).
const NUMBER_AT_MOST: u32 = 1000;

pub(crate) const INBOX_COLUMNS: &str =
    "id, provider, event_id, provider_ref, merchant_ref, observed_status, \
     provider_status, occurred_at, received_at, state, reason, attempts, source, \
     reported_amount, reported_currency";

pub(crate) fn inbox_from_row(r: &impl Fields) -> Result<InboxEvent> {
    let t = "webhook_inbox";
    Ok(InboxEvent {
        id: r.int("id", t)?,
        provider: r.text("provider", t)?,
        event_id: r.text("event_id", t)?,
        provider_ref: r.opt_text("provider_ref", t)?,
        merchant_ref: r.opt_text("merchant_ref", t)?,
        observed: r.opt_parsed("observed_status", t)?,
        provider_status: r.opt_text("provider_status", t)?,
        occurred_at: r.opt_int("occurred_at", t)?.map(Timestamp),
        reported: finality_core::Reported {
            amount: r.opt_int("reported_amount", t)?,
            currency: r.opt_text("reported_currency", t)?,
            mismatch: None,
        },
        received_at: Timestamp(r.int("received_at", t)?),
        state: r.parsed("state", t)?,
        reason: r.opt_text("reason", t)?,
        attempts: r.count("attempts", t)?,
        source: r.parsed("source", t)?,
    })
}

async fn set_inbox_state<C: Conn>(
    conn: &mut C,
    id: i64,
    state: InboxState,
    reason: Option<&str>,
    now: Timestamp,
) -> Result<()> {
    conn.run(
        stmt(
            "UPDATE webhook_inbox SET state = $2, reason = $3, processed_at = $4, \
             next_attempt_at = NULL WHERE id = $1",
            "recording a webhook's outcome",
        )
        .int(id)
        .text(state.as_str())
        .opt_text(reason)
        .int(now.0),
    )
    .await?;
    Ok(())
}

enum ByMerchantRef {
    Found(String),
    None,
    /// A payment has the merchant reference but tracks another provider
    /// object: the event is not about it.
    Other(String),
}

/// The payment registered with this merchant reference, recording the
/// provider's id the event names when the payment had none.
async fn adopt_by_merchant_ref<C: Conn>(
    conn: &mut C,
    provider: &str,
    merchant_ref: &str,
    provider_ref: Option<&str>,
) -> Result<ByMerchantRef> {
    let row = conn
        .opt(
            stmt(
                "SELECT id, provider_ref FROM payments WHERE provider = $1 AND merchant_ref = $2",
                "finding a payment by merchant reference",
            )
            .text(provider)
            .text(merchant_ref),
        )
        .await?;
    let Some(row) = row else {
        return Ok(ByMerchantRef::None);
    };
    let id = row.text("id", "payments")?;
    match (row.opt_text("provider_ref", "payments")?, provider_ref) {
        (None, Some(found)) => {
            // Not found by provider reference before this, so no other
            // payment holds it: safe to record.
            write_provider_ref(conn, &id, found).await?;
            Ok(ByMerchantRef::Found(id))
        }
        (Some(known), Some(named)) if known != named => Ok(ByMerchantRef::Other(other_object(
            named,
            &id,
            merchant_ref,
            &known,
        ))),
        _ => Ok(ByMerchantRef::Found(id)),
    }
}

/// The report a webhook event makes about `payment_id`. The provider's own
/// words go into the history (a reversal says `CAPTURE_FAILED`,
/// `charge.refunded`, …).
pub(crate) fn webhook_report(ev: &InboxEvent, payment_id: &str, status: Status) -> Report {
    Report {
        payment_id: payment_id.to_string(),
        status,
        source: ev.source,
        event_id: Some(ev.event_id.clone()),
        observed_at: ev.occurred_at.unwrap_or(ev.received_at),
        reason: ev
            .provider_status
            .as_ref()
            .map(|w| format!("provider: {w}")),
        actor: None,
    }
}

/// The report a webhook event makes about a payment registered for
/// `amount` minor units of `currency`, and the mismatch, if the event's
/// money is not that (see [`finality_core::money_mismatch`]): the report
/// then moves the payment to `needs_review` with both values, instead of
/// the status the event names.
pub(crate) fn checked_report(
    ev: &InboxEvent,
    payment_id: &str,
    status: Status,
    amount: i64,
    currency: &str,
) -> (Report, Option<String>) {
    let mut report = webhook_report(ev, payment_id, status);
    let mismatch = finality_core::money_mismatch(status, &ev.reported, amount, currency);
    if let Some(why) = &mismatch {
        report.status = Status::NeedsReview;
        report.reason = Some(match &report.reason {
            Some(words) => format!("{why} ({words})"),
            None => why.clone(),
        });
    }
    (report, mismatch)
}

/// What the inbox row records after its report was applied: the same for
/// every backend. An event whose money did not match (`mismatch`) is a
/// `review` row with that reason, whatever its report did to the payment.
pub(crate) fn verdict(
    ev: &InboxEvent,
    status: Status,
    payment_id: String,
    applied: ApplyOutcome,
    mismatch: Option<String>,
) -> (InboxState, Option<String>, InboxOutcome) {
    if let Some(why) = mismatch {
        let out = match applied {
            ApplyOutcome::Applied { from, to } => InboxOutcome::Applied {
                payment_id,
                from,
                to,
            },
            _ => InboxOutcome::Review {
                reason: why.clone(),
            },
        };
        return (InboxState::Review, Some(why), out);
    }
    match applied {
        ApplyOutcome::Applied { from, to } => (
            InboxState::Applied,
            None,
            InboxOutcome::Applied {
                payment_id,
                from,
                to,
            },
        ),
        ApplyOutcome::Unchanged => {
            let why = format!("duplicate: payment is already {status}");
            (
                InboxState::Ignored,
                Some(why.clone()),
                InboxOutcome::Ignored { reason: why },
            )
        }
        // Never "ignored: already final" for a failure after success: it may
        // be money leaving, or a stale report; a human decides.
        ApplyOutcome::Ignored { current, .. } if contradicts_success(current, status) => {
            let why = format!(
                "the provider reports {status} (`{}`) after the payment succeeded: not \
                 applied, kept for review",
                ev.provider_status.as_deref().unwrap_or("")
            );
            (
                InboxState::Review,
                Some(why.clone()),
                InboxOutcome::Review { reason: why },
            )
        }
        // A fact for a human about a payment that is already final (an
        // Adyen CAPTURE_FAILED after the payment succeeded): kept beside it.
        ApplyOutcome::Ignored { current, .. } if status == Status::NeedsReview => {
            let why = format!(
                "the provider reports `{}` for a payment that is {current}: kept for review",
                ev.provider_status.as_deref().unwrap_or("")
            );
            (
                InboxState::Review,
                Some(why.clone()),
                InboxOutcome::Review { reason: why },
            )
        }
        ApplyOutcome::Ignored { current, reason } => {
            let why = format!("{reason}: payment is {current}, event says {status}");
            (
                InboxState::Ignored,
                Some(why.clone()),
                InboxOutcome::Ignored { reason: why },
            )
        }
        ApplyOutcome::NotFound => {
            let why = ORPHANED.to_string();
            (InboxState::Orphaned, Some(why), InboxOutcome::Orphaned)
        }
    }
}

/// Why an event about an archived payment is kept for review, if it is.
async fn archived_reason<C: Conn>(conn: &mut C, ev: &InboxEvent) -> Result<Option<String>> {
    if ev.provider_ref.is_none() && ev.merchant_ref.is_none() {
        return Ok(None);
    }
    let row = conn
        .opt(
            stmt(
                "SELECT id, archive FROM archived_payments WHERE provider = $1 \
                 AND (provider_ref = $2 OR merchant_ref = $3) ORDER BY archived_at DESC LIMIT 1",
                "looking for an archived payment",
            )
            .text(&ev.provider)
            .opt_text(ev.provider_ref.as_deref())
            .opt_text(ev.merchant_ref.as_deref()),
        )
        .await?;
    row.map(|row| {
        Ok(format!(
            "payment {} was archived by retention ({}): restore that day \
             (`finality archive restore`) to apply this event",
            row.text("id", "archived_payments")?,
            row.text("archive", "archived_payments")?
        ))
    })
    .transpose()
}

/// The amount and currency a payment was registered with.
async fn registered_money<C: Conn>(conn: &mut C, payment_id: &str) -> Result<(i64, String)> {
    let row = conn
        .opt(
            stmt(
                "SELECT amount, currency FROM payments WHERE id = $1",
                "reading a payment's registered amount",
            )
            .text(payment_id),
        )
        .await?;
    match row {
        Some(r) => Ok((
            r.int("amount", "payments")?,
            r.text("currency", "payments")?,
        )),
        // Gone meanwhile: `apply` says so (not found); nothing to compare.
        None => Ok((0, String::new())),
    }
}

/// Why an event waits: the payment it names is not registered (yet).
pub(crate) const ORPHANED: &str = "no payment tracks this provider reference yet";

/// The reason recorded for an event whose provider status has no mapping:
/// every status a provider publishes has a row in its adapter's map, so
/// this is a word the provider added since, kept for a human (a review row)
/// rather than dropped.
pub(crate) fn unknown_status(ev: &InboxEvent) -> String {
    format!(
        "unknown provider status `{}`: not in the adapter's map, kept for review, not applied",
        ev.provider_status.as_deref().unwrap_or("")
    )
}

/// The reason recorded when the payment with the event's merchant
/// reference tracks another provider object.
pub(crate) fn other_object(named: &str, id: &str, merchant_ref: &str, known: &str) -> String {
    format!(
        "event is about `{named}` but payment {id} (merchant reference `{merchant_ref}`) \
         tracks `{known}`: not applied"
    )
}

/// `inbox_process` inside an open transaction: inbox row first, then the
/// payment (inside `apply_in`), then its poll job.
async fn inbox_process_in<C: Conn>(
    conn: &mut C,
    ev: &InboxEvent,
    now: Timestamp,
) -> Result<InboxOutcome> {
    let fenced = conn
        .opt(
            stmt(C::SQL.lock_inbox, "locking a webhook")
                .int(ev.id)
                .int4(i32::try_from(ev.attempts).unwrap_or(i32::MAX)),
        )
        .await?;
    if fenced.is_none() {
        return Ok(InboxOutcome::LeaseLost);
    }
    let payment = match &ev.provider_ref {
        Some(r) => find_payment_by_ref(conn, &ev.provider, r).await?,
        None => None,
    };
    let payment = match (payment, &ev.merchant_ref) {
        (Some(id), _) => Some(id),
        (None, Some(m)) => {
            match adopt_by_merchant_ref(conn, &ev.provider, m, ev.provider_ref.as_deref()).await? {
                ByMerchantRef::Found(id) => Some(id),
                ByMerchantRef::None => None,
                ByMerchantRef::Other(why) => {
                    set_inbox_state(conn, ev.id, InboxState::Ignored, Some(&why), now).await?;
                    return Ok(InboxOutcome::Ignored { reason: why });
                }
            }
        }
        (None, None) => None,
    };
    let Some(payment_id) = payment else {
        // A payment retention archived cannot take it; a person can
        // (restore the day, then resolve).
        if let Some(why) = archived_reason(conn, ev).await? {
            set_inbox_state(conn, ev.id, InboxState::Review, Some(&why), now).await?;
            return Ok(InboxOutcome::Review { reason: why });
        }
        set_inbox_state(conn, ev.id, InboxState::Orphaned, Some(ORPHANED), now).await?;
        return Ok(InboxOutcome::Orphaned);
    };
    let Some(status) = ev.observed else {
        let why = unknown_status(ev);
        set_inbox_state(conn, ev.id, InboxState::Review, Some(&why), now).await?;
        return Ok(InboxOutcome::Review { reason: why });
    };
    // The registration is read only when there is money to compare.
    let (amount, currency) =
        if ev.reported.is_empty() || !finality_core::reported::is_checked(status) {
            (0, String::new())
        } else {
            registered_money(conn, &payment_id).await?
        };
    let (report, mismatch) = checked_report(ev, &payment_id, status, amount, &currency);
    let applied = apply_in(conn, &report, now).await?;
    let (state, reason, out) = verdict(ev, status, payment_id, applied, mismatch);
    set_inbox_state(conn, ev.id, state, reason.as_deref(), now).await?;
    Ok(out)
}

/// Payments found by `(provider, provider_ref)` and locked in the same
/// statement that took their webhooks: id, status, kind.
type Locked = std::collections::HashMap<(String, String), (String, Current)>;

/// What the inbox decides an event on: the payment's status and kind, and
/// the money it was registered for.
#[derive(Debug, Clone)]
struct Current {
    status: Status,
    kind: finality_core::Kind,
    amount: i64,
    currency: String,
}

impl Current {
    fn from_row(r: &impl Fields, prefix: &str) -> Result<Self> {
        let t = "payments";
        Ok(Current {
            status: r.parsed(&format!("{prefix}status"), t)?,
            kind: r.parsed(&format!("{prefix}kind"), t)?,
            amount: r.int(&format!("{prefix}amount"), t)?,
            currency: r.text(&format!("{prefix}currency"), t)?,
        })
    }
}

/// Whether a batch's inbox rows must be checked against their leases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fence {
    /// Claimed earlier with a lease: another processor may have taken
    /// them since (its lease bumped `attempts`).
    Check,
    /// Selected under lock in this very transaction.
    Held,
}

/// The lease fence, for a whole batch at once: an event whose row is no
/// longer ours (attempts moved on, or already processed) is `LeaseLost`.
async fn fence_all<C: Conn>(
    conn: &mut C,
    evs: &[InboxEvent],
    out: &mut [Option<InboxOutcome>],
) -> Result<()> {
    let sql = format!(
        "SELECT id, attempts FROM webhook_inbox WHERE id IN ({}) \
         AND state IN ('received', 'failed'){}",
        placeholders(1, evs.len()),
        C::SQL.row_lock
    );
    let mut q = stmt(&sql, "locking webhooks");
    for ev in evs {
        q = q.int(ev.id);
    }
    let held: std::collections::HashMap<i64, u32> = conn
        .all(q)
        .await?
        .iter()
        .map(|r| {
            Ok((
                r.int("id", "webhook_inbox")?,
                r.count("attempts", "webhook_inbox")?,
            ))
        })
        .collect::<Result<_>>()?;
    for (i, ev) in evs.iter().enumerate() {
        if held.get(&ev.id) != Some(&ev.attempts) {
            out[i] = Some(InboxOutcome::LeaseLost);
        }
    }
    Ok(())
}

/// Several claimed events in one open transaction, in a fixed handful of
/// statements for the common case (an event naming a registered payment
/// by the provider's id, with a known status, the only one for its payment
/// in the batch): fence the inbox rows, find and lock their payments,
/// decide each in Rust, write every change through the one transition
/// writer at once, and return the rows' outcomes grouped (and, when
/// nothing after needs to see them, the changes), for the caller to write
/// (see [`Pending`]). Every other event
/// (merchant reference only, orphan, unknown status, a second event for a
/// payment) then goes through [`inbox_process_in`], in the same
/// transaction, so it sees the batch's changes.
async fn inbox_process_many_in<C: Conn>(
    conn: &mut C,
    evs: &[InboxEvent],
    now: Timestamp,
    fence: Fence,
    locked: Option<&Locked>,
) -> Result<(Vec<InboxOutcome>, Pending)> {
    use std::collections::{HashMap, HashSet};
    let mut out: Vec<Option<InboxOutcome>> = vec![None; evs.len()];
    let mut pending = Pending::default();
    if fence == Fence::Check {
        fence_all(conn, evs, &mut out).await?;
    }
    // 2. Payments by the provider's id, per provider (found and locked
    // already when the events were taken with them).
    let mut by_ref: HashMap<(String, String), String> = HashMap::new();
    let mut current: HashMap<String, Current> = HashMap::new();
    if let Some(locked) = locked {
        for ((provider, r), (id, cur)) in locked {
            by_ref.insert((provider.clone(), r.clone()), id.clone());
            current.insert(id.clone(), cur.clone());
        }
    } else {
        let mut providers: HashMap<&str, Vec<&str>> = HashMap::new();
        for (i, ev) in evs.iter().enumerate() {
            if let (None, Some(r), Some(_)) = (&out[i], ev.provider_ref.as_deref(), ev.observed) {
                providers.entry(ev.provider.as_str()).or_default().push(r);
            }
        }
        for (provider, refs) in &providers {
            let sql = format!(
                "SELECT id, provider_ref FROM payments WHERE provider = $1 AND provider_ref IN ({})",
                placeholders(2, refs.len())
            );
            let mut q = stmt(&sql, "finding payments by provider reference").text(provider);
            for r in refs {
                q = q.text(r);
            }
            for row in conn.all(q).await? {
                by_ref.insert(
                    (provider.to_string(), row.text("provider_ref", "payments")?),
                    row.text("id", "payments")?,
                );
            }
        }
    }
    // The fast path: found, known status, first for its payment.
    let mut fast: Vec<(usize, String, Status)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (i, ev) in evs.iter().enumerate() {
        let (None, Some(r), Some(status)) = (&out[i], ev.provider_ref.as_deref(), ev.observed)
        else {
            continue;
        };
        if let Some(id) = by_ref.get(&(ev.provider.clone(), r.to_string())) {
            if seen.insert(id.clone()) {
                fast.push((i, id.clone(), status));
            }
        }
    }
    if !fast.is_empty() {
        // 3. Lock those payments (in id order, as every writer does),
        // unless they were locked when taken.
        if locked.is_none() {
            let mut ids: Vec<&str> = fast.iter().map(|(_, id, _)| id.as_str()).collect();
            ids.sort_unstable();
            let sql = format!(
                "SELECT id, status, kind, amount, currency FROM payments WHERE id IN ({}) \
                 ORDER BY id{}",
                placeholders(1, ids.len()),
                C::SQL.row_lock
            );
            let mut q = stmt(&sql, "locking payments");
            for id in &ids {
                q = q.text(id);
            }
            for r in conn.all(q).await? {
                current.insert(r.text("id", "payments")?, Current::from_row(&r, "")?);
            }
        }
        // 4. Decide each; 5. one write for every change.
        // Deleted meanwhile: the one-at-a-time path says what it is.
        let reports: Vec<(usize, &Current, Status, Report, Option<String>)> = fast
            .iter()
            .filter_map(|(i, id, status)| {
                let cur = current.get(id)?;
                let (report, mismatch) =
                    checked_report(&evs[*i], id, *status, cur.amount, &cur.currency);
                Some((*i, cur, *status, report, mismatch))
            })
            .collect();
        let mut changes = Vec::new();
        let mut decided = Vec::new();
        for (i, cur, status, report, mismatch) in &reports {
            let (applied, change) =
                crate::payments::decide_report(report, cur.kind, cur.status, now);
            changes.extend(change);
            decided.push((
                *i,
                report.payment_id.clone(),
                *status,
                applied,
                mismatch.clone(),
            ));
        }
        // 6. The rows' outcomes: written by the caller (see [`Pending`]).
        for (i, id, status, applied, mismatch) in decided {
            let (state, reason, o) = verdict(&evs[i], status, id, applied, mismatch);
            pending
                .marks
                .entry((state, reason))
                .or_default()
                .push(evs[i].id);
            out[i] = Some(o);
        }
        // The changes too, unless an event below must see them.
        for c in &changes {
            pending.writes.add(c);
        }
        if out.iter().any(Option::is_none) {
            conn.write(&std::mem::take(&mut pending.writes)).await?;
        }
    }
    // Everything else, one at a time, after the batch's changes.
    for (i, ev) in evs.iter().enumerate() {
        if out[i].is_none() {
            out[i] = Some(inbox_process_in(conn, ev, now).await?);
        }
    }
    Ok((out.into_iter().flatten().collect(), pending))
}

/// Outcomes of a batch's webhook rows not yet written: `(state, reason)`
/// to the rows' ids.
type Marks = std::collections::HashMap<(InboxState, Option<String>), Vec<i64>>;

/// What a batch left to its caller to write: its status changes (unless
/// written already, for events processed one at a time after them) and
/// its rows' outcomes. So the inbox processor writes them in the one
/// statement that also numbers the batch's events (PostgreSQL).
#[derive(Default)]
struct Pending {
    writes: crate::driver::Writes,
    marks: Marks,
}

impl Pending {
    /// Write it all; with `number`, give the transaction's events their
    /// feed positions too, and return them.
    async fn write<C: Conn + InboxRows>(
        self,
        conn: &mut C,
        now: Timestamp,
        number: Option<(u32, &str)>,
    ) -> Result<Option<crate::feed::Numbered>> {
        if let (Some(number), false) = (number, self.writes.out_event.is_empty()) {
            let marks: Vec<(i64, &str, Option<&str>)> = self
                .marks
                .iter()
                .flat_map(|((state, reason), ids)| {
                    ids.iter()
                        .map(move |id| (*id, state.as_str(), reason.as_deref()))
                })
                .collect();
            match conn
                .write_numbered(&self.writes, &marks, now, number.1)
                .await?
            {
                NumberedWrite::Numbered(rows) => return crate::feed::Numbered::of(&rows).map(Some),
                NumberedWrite::Unnumbered => {
                    let (limit, origin) = number;
                    return crate::feed::number_in(conn, limit, origin).await.map(Some);
                }
                NumberedWrite::NotHere => {}
            }
        }
        conn.write(&self.writes).await?;
        write_marks(conn, &self.marks, now, number).await
    }
}

/// Write `marks` (a batch's rows' outcomes, one `UPDATE` per distinct
/// outcome) and, when `number` is set, give the transaction's events their
/// feed positions (see [`crate::feed::number_in`]).
async fn write_marks<C: Conn>(
    conn: &mut C,
    marks: &Marks,
    now: Timestamp,
    number: Option<(u32, &str)>,
) -> Result<Option<crate::feed::Numbered>> {
    for ((state, reason), ids) in marks {
        let sql = format!(
            "UPDATE webhook_inbox SET state = $1, reason = $2, processed_at = $3, \
             next_attempt_at = NULL WHERE id IN ({})",
            placeholders(4, ids.len())
        );
        let mut q = stmt(&sql, "recording webhooks' outcomes")
            .text(state.as_str())
            .opt_text(reason.as_deref())
            .int(now.0);
        for id in ids {
            q = q.int(*id);
        }
        conn.run(q).await?;
    }
    match number {
        Some((limit, origin)) => crate::feed::number_in(conn, limit, origin).await.map(Some),
        None => Ok(None),
    }
}

#[async_trait::async_trait]
impl<B: Backend> WebhookInbox for B {
    async fn inbox_insert(&self, events: &[NewInboxEvent], now: Timestamp) -> Result<Vec<bool>> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        // No NOTIFY: the node that stored a webhook applies it (its own
        // processor is woken in process below); other nodes' processors
        // look every `idle_check`. A NOTIFY here would make every webhook
        // commit wait on PostgreSQL's one notification queue lock.
        let fresh = if <B::Conn as InboxRows>::ONE_STATEMENT {
            let mut conn = self.read().await?;
            conn.insert_inbox(events, now).await?
        } else {
            let mut tx = self.begin_write().await?;
            let fresh = tx.insert_inbox(events, now).await?;
            tx.commit().await.op("committing webhooks")?;
            fresh
        };
        if fresh.iter().any(|f| *f) {
            self.wakeups().bump_inbox();
        }
        Ok(fresh)
    }

    async fn inbox_claim(
        &self,
        now: Timestamp,
        limit: u32,
        lease_until: Timestamp,
    ) -> Result<Vec<InboxEvent>> {
        let mut conn = self.read().await?;
        conn.all(
            stmt(
                <B::Conn as Conn>::SQL.inbox_claim,
                "claiming webhooks to process",
            )
            .int(now.0)
            .int(i64::from(limit))
            .int(lease_until.0),
        )
        .await?
        .iter()
        .map(inbox_from_row)
        .collect()
    }

    async fn inbox_process(&self, ev: &InboxEvent, now: Timestamp) -> Result<InboxOutcome> {
        let mut tx = self.begin_write().await?;
        let out = inbox_process_in(&mut *tx, ev, now).await?;
        tx.commit().await.op("committing a webhook's effect")?;
        if matches!(out, InboxOutcome::Applied { .. }) {
            self.wakeups().bump_transitions();
        }
        Ok(out)
    }

    async fn inbox_process_batch(
        &self,
        evs: &[InboxEvent],
        now: Timestamp,
    ) -> Result<Vec<InboxOutcome>> {
        let mut tx = self.begin_write().await?;
        let (out, pending) = inbox_process_many_in(&mut *tx, evs, now, Fence::Check, None).await?;
        pending.write(&mut *tx, now, None).await?;
        tx.commit().await.op("committing webhooks' effects")?;
        if out
            .iter()
            .any(|o| matches!(o, InboxOutcome::Applied { .. }))
        {
            self.wakeups().bump_transitions();
        }
        Ok(out)
    }

    async fn inbox_take_and_process(
        &self,
        now: Timestamp,
        limit: u32,
        _lease_until: Timestamp,
    ) -> Result<Vec<(InboxEvent, InboxOutcome)>> {
        // Nothing due is the common case of a wake-up: a read, not a write
        // transaction. Unless webhooks were just stored here: then rows
        // are due (or taken by another node: an empty transaction).
        let due = if self.wakeups().webhooks_stored_since_last_look() {
            Some(())
        } else {
            let mut conn = self.read().await?;
            conn.opt(
                stmt(
                    "SELECT id FROM webhook_inbox WHERE state IN ('received', 'failed') \
                     AND next_attempt_at <= $1 LIMIT 1",
                    "looking for webhooks to apply",
                )
                .int(now.0),
            )
            .await?
            .map(|_| ())
        };
        if due.is_none() {
            return Ok(Vec::new());
        }
        let mut tx = self.begin_write().await?;
        // The due events and, in the same statement, the payments they
        // name by the provider's id, locked in id order as every writer
        // locks them (a payment a poller holds is waited for, briefly).
        let sql = format!(
            "WITH taken AS MATERIALIZED ( \
               SELECT {INBOX_COLUMNS}, next_attempt_at AS due FROM webhook_inbox \
               WHERE state IN ('received', 'failed') AND next_attempt_at <= $1 \
               ORDER BY next_attempt_at, id LIMIT $2{skip}), \
             locked AS MATERIALIZED ( \
               SELECT p.id AS pay_id, p.provider AS pay_provider, \
                 p.provider_ref AS pay_ref, p.status AS pay_status, p.kind AS pay_kind, \
                 p.amount AS pay_amount, p.currency AS pay_currency \
               FROM payments p WHERE EXISTS (SELECT 1 FROM taken t \
                 WHERE t.provider = p.provider AND t.provider_ref = p.provider_ref \
                 AND t.observed_status IS NOT NULL) \
               ORDER BY p.id{lock}) \
             SELECT taken.*, locked.* FROM taken LEFT JOIN locked \
               ON locked.pay_provider = taken.provider AND locked.pay_ref = taken.provider_ref \
             ORDER BY taken.due, taken.id",
            skip = <B::Conn as Conn>::SQL.skip_locked,
            lock = <B::Conn as Conn>::SQL.row_lock,
        );
        let rows = tx
            .all(
                stmt(&sql, "taking webhooks to apply")
                    .int(now.0)
                    .int(i64::from(limit)),
            )
            .await?;
        // One row per event: `(provider, provider_ref)` is unique in
        // `payments`, so the join matches at most one.
        let mut evs: Vec<InboxEvent> = Vec::with_capacity(rows.len());
        let mut locked = Locked::new();
        for r in &rows {
            let ev = inbox_from_row(r)?;
            if let (Some(id), Some(r_ref)) = (
                r.opt_text("pay_id", "payments")?,
                r.opt_text("pay_ref", "payments")?,
            ) {
                locked.insert(
                    (ev.provider.clone(), r_ref),
                    (id, Current::from_row(r, "pay_")?),
                );
            }
            evs.push(ev);
        }
        if evs.is_empty() {
            return Ok(Vec::new());
        }
        // Taken under lock in this transaction: nobody else can hold them.
        let (out, pending) =
            inbox_process_many_in(&mut *tx, &evs, now, Fence::Held, Some(&locked)).await?;
        // The status changes get their feed positions in this transaction
        // too, in the statement that writes the changes and records the
        // rows' outcomes (PostgreSQL): the event is in the feed at this
        // commit, instead of one sequencer round (a statement and a
        // commit) later. The `feed_state` lock this takes is held
        // only from here to the commit.
        let applied = out
            .iter()
            .any(|o| matches!(o, InboxOutcome::Applied { .. }));
        let epoch = self.wakeups().feed_epoch();
        let number = applied.then_some((NUMBER_AT_MOST, self.wakeups().origin()));
        let numbered = pending.write(&mut *tx, now, number).await?;
        if let Err(e) = tx.commit().await.op("committing webhooks' effects") {
            if numbered.is_some() {
                // It may have committed: readers ask the database.
                self.wakeups().feed_grew_unknown();
            }
            return Err(e);
        }
        if let Some(numbered) = numbered {
            let n = crate::feed::numbered_committed(self.wakeups(), numbered, epoch);
            if n >= u64::from(NUMBER_AT_MOST) {
                // More may wait unnumbered: the sequencer takes them.
                self.wakeups().bump_transitions();
            } else {
                self.wakeups().bump_work();
            }
        }
        Ok(evs.into_iter().zip(out).collect())
    }

    async fn inbox_fail(&self, ev: &InboxEvent, error: &str, retry_at: Timestamp) -> Result<()> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "UPDATE webhook_inbox SET state = 'failed', reason = $3, next_attempt_at = $4 \
                 WHERE id = $1 AND attempts = $2 AND state IN ('received', 'failed')",
                "recording a webhook failure",
            )
            .int(ev.id)
            .int4(i32::try_from(ev.attempts).unwrap_or(i32::MAX))
            .text(error)
            .int(retry_at.0),
        )
        .await?;
        Ok(())
    }

    async fn inbox_adopt_orphans(&self, now: Timestamp) -> Result<u64> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "UPDATE webhook_inbox SET state = 'received', next_attempt_at = $1 \
                 WHERE state = 'orphaned' AND EXISTS (SELECT 1 FROM payments p \
                   WHERE p.provider = webhook_inbox.provider \
                   AND (p.provider_ref = webhook_inbox.provider_ref \
                        OR p.merchant_ref = webhook_inbox.merchant_ref))",
                "adopting orphaned webhooks",
            )
            .int(now.0),
        )
        .await
    }

    async fn inbox_get(&self, provider: &str, event_id: &str) -> Result<Option<InboxEvent>> {
        let sql = format!(
            "SELECT {INBOX_COLUMNS} FROM webhook_inbox WHERE provider = $1 AND event_id = $2"
        );
        let mut conn = self.read().await?;
        conn.opt(
            stmt(&sql, "reading a webhook")
                .text(provider)
                .text(event_id),
        )
        .await?
        .as_ref()
        .map(inbox_from_row)
        .transpose()
    }

    async fn inbox_next_due(&self) -> Result<Option<Timestamp>> {
        let mut conn = self.read().await?;
        let r = conn
            .opt(stmt(
                "SELECT MIN(next_attempt_at) AS due FROM webhook_inbox \
                 WHERE state IN ('received', 'failed')",
                "finding the next webhook to process",
            ))
            .await?;
        Ok(r.map(|r| r.opt_int("due", "webhook_inbox"))
            .transpose()?
            .flatten()
            .map(Timestamp))
    }

    async fn inbox_counts(&self) -> Result<Vec<(InboxState, i64)>> {
        let mut conn = self.read().await?;
        conn.all(stmt(
            "SELECT state, COUNT(*) AS n FROM webhook_inbox GROUP BY state ORDER BY state",
            "counting webhooks by state",
        ))
        .await?
        .iter()
        .map(|r| {
            Ok((
                r.parsed("state", "webhook_inbox")?,
                r.int("n", "webhook_inbox")?,
            ))
        })
        .collect()
    }
}
