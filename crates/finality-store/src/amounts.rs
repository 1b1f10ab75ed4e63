//! A payment's amounts as the store keeps them: the provider's sub-objects
//! ([`finality_core::amounts::Piece`]) a webhook names are taken into the
//! payment's ledger under the payment's lock, and the status the counters
//! then say replaces the adapter's word where money moved
//! ([`finality_core::amounts::decided`]). The rules are the core's; this
//! module only reads and writes them, in SQL and in memory alike.

use crate::driver::{stmt, Conn, Fields};
use crate::error::{Result, StoreError};
use crate::model::InboxEvent;
use finality_core::amounts::{decided, derive, Ledger, Piece, PieceKind, PieceState, Taken};
use finality_core::{Kind, Status};

/// The sub-objects as a column holds them: a JSON list, `None` for none.
pub(crate) fn to_text(pieces: &[Piece]) -> Option<String> {
    if pieces.is_empty() {
        return None;
    }
    serde_json::to_string(pieces).ok()
}

/// The sub-objects of a column `table.pieces`-like value.
pub(crate) fn from_text(text: Option<&str>, table: &'static str) -> Result<Vec<Piece>> {
    match text {
        None | Some("") => Ok(Vec::new()),
        Some(t) => serde_json::from_str(t).map_err(|e| StoreError::Corrupt {
            table,
            detail: format!("pieces `{t}` do not read: {e}"),
        }),
    }
}

/// What counting an event's sub-objects decided, for a payment (other
/// operations are not counted: their money is compared with the
/// registration as before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Counted {
    /// Apply this status (the adapter's, or the counters' where money
    /// moved), with what the counters say when they decided it or the
    /// money is not the registration's (`captured 500 of 1130 EUR`).
    Status(Status, Option<String>),
    /// Not applied: a person decides, for this reason (another currency,
    /// an amount changed, more returned than captured), both values named.
    Review(String),
}

/// Whether `ev` is decided with its payment's counters: it names pieces,
/// or it would end a payment as "no money moved" (an expiry or a
/// cancellation after a partial capture is not that).
pub(crate) fn counts(ev: &InboxEvent) -> bool {
    !ev.reported.pieces.is_empty() || ev.observed == Some(Status::Cancelled)
}

/// Take `pieces` into the ledger of a payment of `kind` registered for
/// `amount` of `currency` holding `stored`: what to apply instead of
/// `said` (`None`: not a payment, nothing counted), and the new stored
/// list when it changed. A refused piece (another currency, another amount
/// for an id already counted, a state going back) counts for nothing and
/// sends the event to review; the event's other pieces are still counted
/// (nothing the provider reported consistently is lost). The first report
/// of a piece stands: a later contradicting one is the one reviewed.
pub(crate) fn count(
    kind: Kind,
    amount: i64,
    currency: &str,
    stored: Vec<Piece>,
    pieces: &[Piece],
    said: Status,
) -> Tally {
    let (counted, kept, moved) = count_parts(kind, amount, currency, stored, pieces, said);
    Tally {
        counted,
        kept,
        moved,
    }
}

/// What [`count`] did: what to apply (`None`: not a payment), the new
/// stored list when it changed, and whether a counter moved (then the
/// ledger hears of it: with the status event, or with a
/// `payment.amounts` event when the status stays).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tally {
    pub counted: Option<Counted>,
    pub kept: Option<Vec<Piece>>,
    pub moved: bool,
}

fn count_parts(
    kind: Kind,
    amount: i64,
    currency: &str,
    stored: Vec<Piece>,
    pieces: &[Piece],
    said: Status,
) -> (Option<Counted>, Option<Vec<Piece>>, bool) {
    if kind != Kind::Payment {
        return (None, None, false);
    }
    let mut ledger = Ledger::of(currency, stored);
    let before = ledger.counters();
    let mut changed = false;
    let mut refused = Vec::new();
    for p in pieces {
        match ledger.take(p.clone()) {
            Taken::New | Taken::Moved { .. } => changed = true,
            Taken::Duplicate => {}
            Taken::Refused(why) => refused.push(why),
        }
    }
    let kept = changed.then(|| ledger.pieces().cloned().collect());
    let c = ledger.counters();
    let moved = c != before;
    if !refused.is_empty() {
        return (Some(Counted::Review(refused.join("; "))), kept, moved);
    }
    let d = derive(kind, amount, &c);
    if let Some(why) = d.review {
        return (Some(Counted::Review(why)), kept, moved);
    }
    let status = decided(said, &d);
    let note = (d.status.is_some() && (status != said || c.captured != amount)).then(|| {
        let mut n = format!(
            "counted: captured {} of {amount} {}",
            c.captured,
            ledger.currency()
        );
        if c.returned() > 0 {
            n.push_str(&format!(", {} returned", c.returned()));
        }
        n
    });
    (Some(Counted::Status(status, note)), kept, moved)
}

/// The status to apply, the review reason and the counters' note, from
/// the adapter's `said` and what counting decided.
pub(crate) fn outcome(
    said: Status,
    counted: Option<&Counted>,
) -> (Status, Option<String>, Option<String>) {
    match counted {
        None => (said, None, None),
        Some(Counted::Status(s, note)) => (*s, None, note.clone()),
        Some(Counted::Review(why)) => (said, Some(why.clone()), None),
    }
}

/// Write what counting decided onto the report: a review (with its
/// reason, as a money mismatch is) or the counters' note beside the
/// provider's words.
pub(crate) fn annotate(
    report: &mut crate::model::Report,
    mismatch: &mut Option<String>,
    review: Option<String>,
    note: Option<String>,
) {
    if mismatch.is_some() {
        // The registration's own check said it first (and sent it to
        // review): its words stand.
        return;
    }
    if let Some(why) = review {
        crate::inbox::decide::to_review(report, &why);
        // The row's reason keeps the provider's words beside ours.
        *mismatch = report.reason.clone().or(Some(why));
    } else if let Some(n) = note {
        report.reason = Some(match report.reason.take() {
            Some(words) => format!("{words}; {n}"),
            None => n,
        });
    }
}

/// Money counted as held again by a payment already `reversed`: a capture
/// that arrived after refunds that returned everything captured before it
/// (several partial captures, told out of order). A final status cannot
/// move back, and "ignored: already final" would hide money the merchant
/// holds: a person decides (a review row, a flag beside the payment). Only
/// when this event moved the counters: a capture told again is not new
/// money.
pub(crate) fn held_after_reversal(
    counted: Option<&Counted>,
    applied: &crate::model::ApplyOutcome,
    moved: bool,
) -> Option<String> {
    let Some(Counted::Status(Status::Succeeded, note)) = counted else {
        return None;
    };
    let crate::model::ApplyOutcome::Ignored {
        current: Status::Reversed,
        ..
    } = applied
    else {
        return None;
    };
    moved.then(|| {
        format!(
            "money counted after the payment was reversed says it is held again ({}): a capture \
             after refunds that returned everything before it; not applied, kept for review",
            note.as_deref().unwrap_or("more captured than returned")
        )
    })
}

/// The amount and currency a payment was registered with.
pub(crate) type Registration = (i64, String);

/// [`count`] for a payment in SQL, inside the caller's transaction (the
/// payment row locked first, as every writer does), with the registration
/// it read on the way (so the money check need not read it again) and
/// whether a counter moved.
pub(crate) async fn count_in<C: Conn>(
    conn: &mut C,
    payment_id: &str,
    pieces: &[Piece],
    said: Status,
) -> Result<(Option<Counted>, Option<Registration>, bool)> {
    let t = "payments";
    let sql = format!(
        "SELECT kind, amount, currency, pieces FROM payments WHERE id = $1{}",
        C::SQL.row_lock
    );
    let Some(r) = conn
        .opt(stmt(&sql, "reading a payment's pieces").text(payment_id))
        .await?
    else {
        // Gone meanwhile: `apply` says so.
        return Ok((None, None, false));
    };
    let stored = from_text(r.opt_text("pieces", t)?.as_deref(), t)?;
    let registration = (r.int("amount", t)?, r.text("currency", t)?);
    let Tally {
        counted,
        kept,
        moved,
    } = count(
        r.parsed("kind", t)?,
        registration.0,
        &registration.1,
        stored,
        pieces,
        said,
    );
    if let Some(kept) = kept {
        let text = to_text(&kept);
        conn.run(
            stmt(
                "UPDATE payments SET pieces = $2 WHERE id = $1",
                "counting a payment's pieces",
            )
            .text(payment_id)
            .opt_text(text.as_deref()),
        )
        .await?;
    }
    Ok((counted, Some(registration), moved))
}

/// Whether `ev` is one refused authorisation attempt: under a merchant
/// reference the provider documents retries for (a shopper's second card),
/// so it is counted as an attempt and is not the payment's end.
pub(crate) fn refused_attempt(ev: &InboxEvent) -> bool {
    ev.observed == Some(Status::Failed)
        && ev
            .reported
            .pieces
            .iter()
            .any(|p| p.kind == PieceKind::Authorisation && p.state == PieceState::Failed)
}

/// Why a refused attempt did not end payment `id`.
pub(crate) fn attempt_note(ev: &InboxEvent, id: &str, merchant_ref: &str) -> String {
    format!(
        "a refused attempt (`{}`) under merchant reference `{merchant_ref}`: counted on payment \
         {id}, which stays open for the shopper's retry under that reference",
        ev.provider_ref.as_deref().unwrap_or("?")
    )
}
