//! Applying webhooks inside a transaction: one at a time or a batch at
//! once, fenced by each row's lease, with the payments' locks taken in id
//! order; the inbox rows' own reads and writes.

use crate::driver::{placeholders, stmt, Conn, Fields, InboxRows, NumberedWrite};
use crate::error::Result;
use crate::inbox::decide::{checked_report, other_object, unknown_status, verdict, ByMerchantRef};
use crate::model::*;
use crate::payments::by_ref;
use crate::payments::sql::{apply_in, write_provider_ref};
use finality_core::{Scope, Status, Timestamp};

pub(crate) const INBOX_COLUMNS: &str =
    "id, provider, account, event_id, provider_ref, merchant_ref, observed_status, \
     provider_status, occurred_at, received_at, state, reason, attempts, source, \
     reported_amount, reported_currency, reported_pieces";

pub(crate) fn inbox_from_row(r: &impl Fields) -> Result<InboxEvent> {
    let t = "webhook_inbox";
    Ok(InboxEvent {
        id: r.int("id", t)?,
        provider: r.text("provider", t)?,
        account: r.account("account", t)?,
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
            pieces: crate::amounts::from_text(r.opt_text("reported_pieces", t)?.as_deref(), t)?,
        },
        received_at: Timestamp(r.int("received_at", t)?),
        state: r.parsed("state", t)?,
        reason: r.opt_text("reason", t)?,
        attempts: r.count("attempts", t)?,
        source: r.parsed("source", t)?,
    })
}

pub(crate) async fn set_inbox_state<C: Conn>(
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

/// The payment of `scope` registered with this merchant reference,
/// recording the provider's id the event names when the payment had none.
pub(crate) async fn adopt_by_merchant_ref<C: Conn>(
    conn: &mut C,
    scope: &Scope,
    merchant_ref: &str,
    provider_ref: Option<&str>,
    attempt: bool,
) -> Result<ByMerchantRef> {
    let Some((id, known)) = by_ref::by_merchant_ref(conn, scope, merchant_ref).await? else {
        return Ok(ByMerchantRef::None);
    };
    match (known, provider_ref) {
        (None, Some(_)) if attempt => Ok(ByMerchantRef::Attempt(id)),
        (None, Some(found)) => {
            // Not found by provider reference before this, so no other
            // payment of the scope holds it: safe to record.
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

/// Why an event about an archived payment is kept for review, if it is.
pub(crate) async fn archived_reason<C: Conn>(
    conn: &mut C,
    ev: &InboxEvent,
) -> Result<Option<String>> {
    if ev.provider_ref.is_none() && ev.merchant_ref.is_none() {
        return Ok(None);
    }
    let found = by_ref::archived(
        conn,
        &ev.scope(),
        ev.provider_ref.as_deref(),
        ev.merchant_ref.as_deref(),
    )
    .await?;
    Ok(found.map(|(id, archive)| {
        format!(
            "payment {id} was archived by retention ({archive}): restore that day \
             (`finality archive restore`) to apply this event"
        )
    }))
}

/// The amount and currency a payment was registered with.
pub(crate) async fn registered_money<C: Conn>(
    conn: &mut C,
    payment_id: &str,
) -> Result<(i64, String)> {
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

/// `inbox_process` inside an open transaction: inbox row first, then the
/// payment (inside `apply_in`), then its poll job. With the outcome,
/// whether an event that is not a status change was written (a
/// `payment.amounts` or a flag's): the feed's sequencer has work.
pub(crate) async fn inbox_process_in<C: Conn>(
    conn: &mut C,
    ev: &InboxEvent,
    now: Timestamp,
) -> Result<(InboxOutcome, bool)> {
    let mut noticed = false;
    let out = process_in(conn, ev, now, &mut noticed).await?;
    Ok((out, noticed))
}

async fn process_in<C: Conn>(
    conn: &mut C,
    ev: &InboxEvent,
    now: Timestamp,
    noticed: &mut bool,
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
    // Only within the event's own scope: another account's payment with
    // the same reference is never found, so never changed.
    let scope = ev.scope();
    let payment = match &ev.provider_ref {
        Some(r) => by_ref::by_provider_ref(conn, &scope, r).await?,
        None => None,
    };
    let payment = match (payment, &ev.merchant_ref) {
        (Some(id), _) => Some(id),
        (None, Some(m)) => {
            let attempt = crate::amounts::refused_attempt(ev);
            match adopt_by_merchant_ref(conn, &scope, m, ev.provider_ref.as_deref(), attempt)
                .await?
            {
                ByMerchantRef::Found(id) => Some(id),
                ByMerchantRef::None => None,
                ByMerchantRef::Attempt(id) => {
                    let (_, _, moved) =
                        crate::amounts::count_in(conn, &id, &ev.reported.pieces, Status::Failed)
                            .await?;
                    if moved {
                        amounts_moved(conn, &id, now).await?;
                        *noticed = true;
                    }
                    let why = crate::amounts::attempt_note(ev, &id, m);
                    set_inbox_state(conn, ev.id, InboxState::Ignored, Some(&why), now).await?;
                    return Ok(InboxOutcome::Ignored { reason: why });
                }
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
        let why = crate::inbox::decide::orphaned(ev);
        set_inbox_state(conn, ev.id, InboxState::Orphaned, Some(&why), now).await?;
        return Ok(InboxOutcome::Orphaned);
    };
    let Some(status) = ev.observed else {
        let why = unknown_status(ev);
        set_inbox_state(conn, ev.id, InboxState::Review, Some(&why), now).await?;
        return Ok(InboxOutcome::Review { reason: why });
    };
    // Counted pieces first: the status they say is the one applied.
    let (counted, registration, moved) = if crate::amounts::counts(ev) {
        crate::amounts::count_in(conn, &payment_id, &ev.reported.pieces, status).await?
    } else {
        (None, None, false)
    };
    let (status, review, noted) = crate::amounts::outcome(status, counted.as_ref());
    // The registration is read only when there is money to compare (and
    // only once: counting read it already).
    let (amount, currency) = match registration {
        _ if ev.reported.is_empty() || !finality_core::reported::is_checked(status) => {
            (0, String::new())
        }
        Some(r) => r,
        None => registered_money(conn, &payment_id).await?,
    };
    let (mut report, mut mismatch) = checked_report(
        ev,
        &payment_id,
        status,
        amount,
        &currency,
        counted.is_some(),
    );
    crate::amounts::annotate(&mut report, &mut mismatch, review, noted);
    let applied = apply_in(conn, &report, now).await?;
    let mismatch =
        mismatch.or_else(|| crate::amounts::held_after_reversal(counted.as_ref(), &applied, moved));
    if moved && !matches!(applied, ApplyOutcome::Applied { .. }) {
        // The money moved and the status stayed (a partial refund): the
        // ledger hears of it all the same.
        amounts_moved(conn, &payment_id, now).await?;
        *noticed = true;
    }
    *noticed |= crate::flags::sql::settle_in(conn, &payment_id, ev, now).await?;
    let applied_then = applied.clone();
    let id = payment_id.clone();
    let (state, reason, out) = verdict(ev, status, payment_id, applied, mismatch);
    if let Some(f) = crate::flags::raised(ev, &id, &applied_then, state, reason.as_deref()) {
        crate::flags::sql::raise_in(conn, &f, now).await?;
        *noticed = true;
    }
    set_inbox_state(conn, ev.id, state, reason.as_deref(), now).await?;
    Ok(out)
}

/// A `payment.amounts` event for `payment_id`, whose counters moved while
/// its status stayed.
async fn amounts_moved<C: Conn>(conn: &mut C, payment_id: &str, now: Timestamp) -> Result<()> {
    crate::feed::notice::notice_in(
        conn,
        payment_id,
        crate::feed::notice::Notice::Amounts,
        finality_core::Source::Webhook,
        now,
    )
    .await
}

/// Payments found by `(scope, provider_ref)` and locked in the same
/// statement that took their webhooks: id, status, kind.
pub(crate) type Locked = std::collections::HashMap<(Scope, String), (String, Current)>;

/// What the inbox decides an event on: the payment's status and kind, and
/// the money it was registered for.
#[derive(Debug, Clone)]
pub(crate) struct Current {
    status: Status,
    kind: finality_core::Kind,
    amount: i64,
    currency: String,
}

impl Current {
    pub(crate) fn from_row(r: &impl Fields, prefix: &str) -> Result<Self> {
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
pub(crate) enum Fence {
    /// Claimed earlier with a lease: another processor may have taken
    /// them since (its lease bumped `attempts`).
    Check,
    /// Selected under lock in this very transaction.
    Held,
}

/// The lease fence, for a whole batch at once: an event whose row is no
/// longer ours (attempts moved on, or already processed) is `LeaseLost`.
pub(crate) async fn fence_all<C: Conn>(
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
pub(crate) async fn inbox_process_many_in<C: Conn>(
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
    // 2. Payments by the provider's id, per scope (found and locked
    // already when the events were taken with them).
    let mut by_ref: HashMap<(Scope, String), String> = HashMap::new();
    let mut current: HashMap<String, Current> = HashMap::new();
    if let Some(locked) = locked {
        for (key, (id, cur)) in locked {
            by_ref.insert(key.clone(), id.clone());
            current.insert(id.clone(), cur.clone());
        }
    } else {
        let mut scopes: HashMap<Scope, Vec<&str>> = HashMap::new();
        for (i, ev) in evs.iter().enumerate() {
            if let (None, Some(r), Some(_)) = (&out[i], ev.provider_ref.as_deref(), ev.observed) {
                scopes.entry(ev.scope()).or_default().push(r);
            }
        }
        for (scope, refs) in &scopes {
            for (r, id) in by_ref::by_provider_refs(conn, scope, refs).await? {
                by_ref.insert((scope.clone(), r), id);
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
        if crate::amounts::counts(ev) {
            // Counted one at a time, under the payment's lock (below).
            continue;
        }
        if let Some(id) = by_ref.get(&(ev.scope(), r.to_string())) {
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
                    checked_report(&evs[*i], id, *status, cur.amount, &cur.currency, false);
                Some((*i, cur, *status, report, mismatch))
            })
            .collect();
        let mut changes = Vec::new();
        let mut decided = Vec::new();
        for (i, cur, status, report, mismatch) in &reports {
            let (applied, change) =
                crate::payments::decide::decide_report(report, cur.kind, cur.status, now);
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
            let applied_then = applied.clone();
            let pid = id.clone();
            let (state, reason, o) = verdict(&evs[i], status, id, applied, mismatch);
            let flag = crate::flags::raised(&evs[i], &pid, &applied_then, state, reason.as_deref());
            if let Some(f) = flag {
                // Rare (a fact beside a final payment): written at once.
                crate::flags::sql::raise_in(conn, &f, now).await?;
                pending.noticed = true;
            }
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
            let (o, noticed) = inbox_process_in(conn, ev, now).await?;
            pending.noticed |= noticed;
            out[i] = Some(o);
        }
    }
    Ok((out.into_iter().flatten().collect(), pending))
}

/// Outcomes of a batch's webhook rows not yet written: `(state, reason)`
/// to the rows' ids.
pub(crate) type Marks = std::collections::HashMap<(InboxState, Option<String>), Vec<i64>>;

/// What a batch left to its caller to write: its status changes (unless
/// written already, for events processed one at a time after them) and
/// its rows' outcomes. So the inbox processor writes them in the one
/// statement that also numbers the batch's events (PostgreSQL).
#[derive(Default)]
pub(crate) struct Pending {
    writes: crate::driver::Writes,
    marks: Marks,
    /// An event that is not a status change was written (a flag's, a
    /// `payment.amounts`): it needs a feed position like the changes'.
    pub(crate) noticed: bool,
}

impl Pending {
    /// Write it all; with `number`, give the transaction's events their
    /// feed positions too, and return them.
    pub(crate) async fn write<C: Conn + InboxRows>(
        self,
        conn: &mut C,
        now: Timestamp,
        number: Option<(u32, &str)>,
    ) -> Result<Option<crate::feed::rows::Numbered>> {
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
                NumberedWrite::Numbered(rows) => {
                    let w = &self.writes;
                    let notes: crate::feed::rows::Notes<'_> = w
                        .out_event
                        .iter()
                        .zip(w.step_reason.iter().zip(&w.step_actor))
                        .filter(|(_, (r, a))| r.is_some() || a.is_some())
                        .map(|(e, (r, a))| (e.as_str(), (r.as_deref(), a.as_deref())))
                        .collect();
                    return crate::feed::rows::Numbered::with_details(&rows, &notes).map(Some);
                }
                NumberedWrite::Unnumbered => {
                    let (limit, origin) = number;
                    return crate::feed::sql::number_in(conn, limit, origin)
                        .await
                        .map(Some);
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
/// feed positions (see [`crate::feed::sql::number_in`]).
pub(crate) async fn write_marks<C: Conn>(
    conn: &mut C,
    marks: &Marks,
    now: Timestamp,
    number: Option<(u32, &str)>,
) -> Result<Option<crate::feed::rows::Numbered>> {
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
        Some((limit, origin)) => crate::feed::sql::number_in(conn, limit, origin)
            .await
            .map(Some),
        None => Ok(None),
    }
}
