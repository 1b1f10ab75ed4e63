//! Money counted, not judged: a payment's amounts are the sums of the
//! provider's own sub-objects (each authorisation attempt, capture,
//! refund and dispute it names by an id), so real payments that move money
//! in pieces (partial and multiple captures, partial refunds, disputes, a
//! shopper retrying under one order reference) are decided by what moved,
//! not by the last word an event carried.
//!
//! The rules, each one the only place it is written:
//!
//! - [`Ledger::take`]: a sub-object is counted once by its `(kind, id)`,
//!   however often and in whatever order it arrives; its state only moves
//!   forward (pending → succeeded or failed; a failed one that the
//!   provider later completes, such as Adyen's re-capture, → succeeded),
//!   never back, so every counter only grows. A sub-object in another
//!   currency than the payment's, or one whose amount changes, is refused
//!   with both values: never silently summed.
//! - [`derive`]: the status the counters say, for a payment: money captured
//!   is `succeeded` for what was captured, whatever the rest of the
//!   authorisation did (a partial capture whose remainder expired is
//!   `succeeded`, not `cancelled`); `reversed` once refunds and disputes
//!   lost give the payer back all that was captured; more refunded than
//!   captured is a review reason naming both.
//!
//! Nothing here does IO: the store keeps the sub-objects and calls these.

use crate::status::{Kind, Status};
use std::collections::BTreeMap;

/// What a sub-object is.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PieceKind {
    /// One authorisation attempt (Adyen `AUTHORISATION` by its
    /// `pspReference`): money reserved, not yet taken.
    Authorisation,
    /// Money taken (Adyen `CAPTURE`, PayPal's `captures[]`, Stripe's
    /// `amount_received`).
    Capture,
    /// Money given back at the merchant's request.
    Refund,
    /// Money taken back by the payer's bank (a chargeback).
    Dispute,
    /// A dispute won: the money comes back to the merchant.
    DisputeReversal,
}

impl PieceKind {
    pub const ALL: [PieceKind; 5] = [
        PieceKind::Authorisation,
        PieceKind::Capture,
        PieceKind::Refund,
        PieceKind::Dispute,
        PieceKind::DisputeReversal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PieceKind::Authorisation => "authorisation",
            PieceKind::Capture => "capture",
            PieceKind::Refund => "refund",
            PieceKind::Dispute => "dispute",
            PieceKind::DisputeReversal => "dispute_reversal",
        }
    }
}

/// A stored sub-object kind this build does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a sub-object kind (authorisation, capture, refund, dispute, dispute_reversal)"
)]
pub struct UnknownPieceKind(pub String);

impl std::str::FromStr for PieceKind {
    type Err = UnknownPieceKind;
    fn from_str(s: &str) -> Result<Self, UnknownPieceKind> {
        PieceKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownPieceKind(s.to_string()))
    }
}

/// Where a sub-object stands.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PieceState {
    Pending,
    Succeeded,
    Failed,
}

impl PieceState {
    pub fn as_str(self) -> &'static str {
        match self {
            PieceState::Pending => "pending",
            PieceState::Succeeded => "succeeded",
            PieceState::Failed => "failed",
        }
    }

    /// Whether a sub-object may go from `self` to `to`: forward only, and
    /// a failure the provider later completes (a re-capture) counts.
    fn may_become(self, to: PieceState) -> bool {
        matches!(
            (self, to),
            (PieceState::Pending, _) | (PieceState::Failed, PieceState::Succeeded)
        ) || self == to
    }
}

/// One sub-object as the provider reported it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Piece {
    pub kind: PieceKind,
    /// The provider's own id for it (a capture's `pspReference`, a refund
    /// id): what makes a duplicate a duplicate.
    pub id: String,
    pub state: PieceState,
    /// Minor units of `currency`, never negative.
    pub amount: i64,
    /// ISO 4217, upper case.
    pub currency: String,
}

/// The counters of one payment: each the sum of its succeeded
/// sub-objects of that kind.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
pub struct Counters {
    pub authorised: i64,
    pub captured: i64,
    pub refunded: i64,
    pub disputed: i64,
    pub dispute_reversed: i64,
}

impl Counters {
    /// What the payer has lost to disputes and not won back.
    pub fn disputed_net(&self) -> i64 {
        (self.disputed - self.dispute_reversed).max(0)
    }

    /// What went back to the payer, by refund or dispute.
    pub fn returned(&self) -> i64 {
        self.refunded + self.disputed_net()
    }

    /// Whether every counter of `self` is at least `earlier`'s.
    pub fn covers(&self, earlier: &Counters) -> bool {
        self.authorised >= earlier.authorised
            && self.captured >= earlier.captured
            && self.refunded >= earlier.refunded
            && self.disputed >= earlier.disputed
            && self.dispute_reversed >= earlier.dispute_reversed
    }
}

/// What taking a sub-object did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// Not seen before: counted (when succeeded).
    New,
    /// Seen before, in this state: nothing changes.
    Duplicate,
    /// Seen before, now further on (pending → succeeded, a re-capture).
    Moved { from: PieceState },
    /// Not counted, for the reason given (both values named): another
    /// currency, another amount for the same id, or a state going back
    /// (a capture reported failed after it succeeded: for a person).
    Refused(String),
}

/// A payment's sub-objects, by `(kind, id)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ledger {
    currency: String,
    pieces: BTreeMap<(PieceKind, String), Piece>,
}

impl Ledger {
    /// An empty ledger of a payment registered in `currency`.
    pub fn new(currency: &str) -> Self {
        Ledger {
            currency: currency.to_ascii_uppercase(),
            pieces: BTreeMap::new(),
        }
    }

    /// Take in `p` (see the module's rules).
    pub fn take(&mut self, p: Piece) -> Taken {
        if !p.currency.eq_ignore_ascii_case(&self.currency) {
            return Taken::Refused(format!(
                "currency_mismatch: the provider reports {} `{}` of {} {}, the payment is in {}",
                p.kind.as_str(),
                p.id,
                p.amount,
                p.currency.to_ascii_uppercase(),
                self.currency
            ));
        }
        if p.amount < 0 {
            return Taken::Refused(format!(
                "amount_mismatch: the provider reports {} `{}` of {} (negative)",
                p.kind.as_str(),
                p.id,
                p.amount
            ));
        }
        let key = (p.kind, p.id.clone());
        let Some(known) = self.pieces.get_mut(&key) else {
            self.pieces.insert(key, p);
            return Taken::New;
        };
        if known.amount != p.amount {
            return Taken::Refused(format!(
                "amount_mismatch: the provider reports {} `{}` as {}, earlier as {}",
                p.kind.as_str(),
                p.id,
                p.amount,
                known.amount
            ));
        }
        if known.state == p.state {
            return Taken::Duplicate;
        }
        if !known.state.may_become(p.state) {
            return Taken::Refused(format!(
                "the provider reports {} `{}` {} after it {}",
                p.kind.as_str(),
                p.id,
                p.state.as_str(),
                known.state.as_str()
            ));
        }
        let from = known.state;
        known.state = p.state;
        Taken::Moved { from }
    }

    /// The sums of the succeeded sub-objects.
    pub fn counters(&self) -> Counters {
        let mut c = Counters::default();
        for p in self.pieces.values() {
            if p.state != PieceState::Succeeded {
                continue;
            }
            let slot = match p.kind {
                PieceKind::Authorisation => &mut c.authorised,
                PieceKind::Capture => &mut c.captured,
                PieceKind::Refund => &mut c.refunded,
                PieceKind::Dispute => &mut c.disputed,
                PieceKind::DisputeReversal => &mut c.dispute_reversed,
            };
            *slot += p.amount;
        }
        c
    }

    /// The ledger of a payment in `currency` holding `stored`, as kept
    /// (each taken in turn, so a stored list is read by the same rules).
    pub fn of(currency: &str, stored: Vec<Piece>) -> Self {
        let mut l = Ledger::new(currency);
        for p in stored {
            l.take(p);
        }
        l
    }

    /// Every sub-object, by kind then id.
    pub fn pieces(&self) -> impl Iterator<Item = &Piece> {
        self.pieces.values()
    }

    pub fn currency(&self) -> &str {
        &self.currency
    }
}

/// What the counters say about a payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    /// `None`: the counters say nothing (no money moved, none reserved).
    pub status: Option<Status>,
    /// A person must look (more returned than captured), both amounts
    /// named; the status is not applied then.
    pub review: Option<String>,
}

/// The status `c` says for an operation of `kind` registered for
/// `registered` minor units (see the module's rules). Only payments are
/// counted in pieces; for refunds and payouts the counters say nothing.
pub fn derive(kind: Kind, registered: i64, c: &Counters) -> Derived {
    let none = Derived {
        status: None,
        review: None,
    };
    if kind != Kind::Payment {
        return none;
    }
    if c.captured > 0 && c.returned() > c.captured {
        return Derived {
            status: None,
            review: Some(format!(
                "over_refund: refunded {} and lost to disputes {} of {} captured (registered {})",
                c.refunded,
                c.disputed_net(),
                c.captured,
                registered
            )),
        };
    }
    let status = if c.captured > 0 && c.returned() >= c.captured {
        Status::Reversed
    } else if c.captured > 0 {
        Status::Succeeded
    } else if c.authorised > 0 {
        Status::Processing
    } else {
        return none;
    };
    Derived {
        status: Some(status),
        review: None,
    }
}

/// The status a counted report applies: the adapter's word `said`, unless
/// the counters say money moved. Money captured is `succeeded` whatever
/// the authorisation's remainder did (expired, cancelled, a declined
/// second capture), and all of it back with the payer is `reversed`
/// whatever the last event said; counters that say only "authorised"
/// never replace the adapter's word (an automatic capture's
/// authorisation is itself the money). A fact the adapter sends to a
/// person (`needs_review`: a capture that failed after one succeeded)
/// stays that person's.
pub fn decided(said: Status, d: &Derived) -> Status {
    match (said, d.status) {
        (Status::NeedsReview, _) => said,
        (_, Some(s @ (Status::Reversed | Status::Succeeded))) => s,
        _ => said,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn piece(kind: PieceKind, id: &str, state: PieceState, amount: i64) -> Piece {
        Piece {
            kind,
            id: id.into(),
            state,
            amount,
            currency: "EUR".into(),
        }
    }

    use PieceKind::*;
    use PieceState::*;

    /// Adyen's partial capture (5.00 of 11.30, as in Adyen's own
    /// AUTHORISATION example's amount) whose remainder then expired: the
    /// payment is succeeded for what was captured, not cancelled.
    #[test]
    fn a_partial_capture_is_money_moved() {
        let mut l = Ledger::new("EUR");
        assert_eq!(
            l.take(piece(Authorisation, "7914073381342284", Succeeded, 1130)),
            Taken::New
        );
        assert_eq!(
            l.take(piece(Capture, "8825408195409505", Succeeded, 500)),
            Taken::New
        );
        let c = l.counters();
        assert_eq!((c.authorised, c.captured), (1130, 500));
        assert_eq!(
            derive(Kind::Payment, 1130, &c).status,
            Some(Status::Succeeded)
        );
    }

    #[test]
    fn a_duplicate_refund_counts_once_and_a_full_return_reverses() {
        let mut l = Ledger::new("EUR");
        l.take(piece(Capture, "c1", Succeeded, 1000));
        assert_eq!(l.take(piece(Refund, "r1", Succeeded, 400)), Taken::New);
        assert_eq!(
            l.take(piece(Refund, "r1", Succeeded, 400)),
            Taken::Duplicate
        );
        assert_eq!(l.counters().refunded, 400);
        assert_eq!(
            derive(Kind::Payment, 1000, &l.counters()).status,
            Some(Status::Succeeded)
        );
        l.take(piece(Refund, "r2", Succeeded, 600));
        assert_eq!(
            derive(Kind::Payment, 1000, &l.counters()).status,
            Some(Status::Reversed)
        );
    }

    #[test]
    fn over_refunds_and_other_currencies_are_named_never_summed() {
        let mut l = Ledger::new("EUR");
        l.take(piece(Capture, "c1", Succeeded, 1000));
        l.take(piece(Refund, "r1", Succeeded, 1200));
        let d = derive(Kind::Payment, 1000, &l.counters());
        assert_eq!(d.status, None);
        assert_eq!(
            d.review.as_deref(),
            Some("over_refund: refunded 1200 and lost to disputes 0 of 1000 captured (registered 1000)")
        );
        let mut usd = piece(Refund, "r2", Succeeded, 1000);
        usd.currency = "usd".into();
        assert_eq!(
            l.take(usd),
            Taken::Refused(
                "currency_mismatch: the provider reports refund `r2` of 1000 USD, the payment is in EUR"
                    .into()
            )
        );
        assert_eq!(l.counters().refunded, 1200);
    }

    /// PayPal: one capture COMPLETED, one DECLINED: money was captured.
    #[test]
    fn a_declined_capture_beside_a_completed_one_is_not_a_failure() {
        let mut l = Ledger::new("USD");
        let mut a = piece(Capture, "2GG279541U471931P", Succeeded, 600);
        a.currency = "USD".into();
        let mut b = piece(Capture, "3C679366HH908993F", Failed, 400);
        b.currency = "USD".into();
        l.take(a);
        l.take(b);
        assert_eq!(l.counters().captured, 600);
        assert_eq!(
            derive(Kind::Payment, 1000, &l.counters()).status,
            Some(Status::Succeeded)
        );
    }

    #[test]
    fn states_only_move_forward() {
        let mut l = Ledger::new("EUR");
        l.take(piece(Capture, "c1", Pending, 500));
        assert_eq!(l.counters().captured, 0);
        assert_eq!(
            l.take(piece(Capture, "c1", Succeeded, 500)),
            Taken::Moved { from: Pending }
        );
        assert!(matches!(
            l.take(piece(Capture, "c1", Failed, 500)),
            Taken::Refused(_)
        ));
        assert_eq!(l.counters().captured, 500);
        // Adyen: CAPTURE_FAILED, then the re-capture.
        let mut l = Ledger::new("EUR");
        l.take(piece(Capture, "c2", Failed, 500));
        assert_eq!(
            l.take(piece(Capture, "c2", Succeeded, 500)),
            Taken::Moved { from: Failed }
        );
        assert_eq!(l.counters().captured, 500);
    }

    fn any_piece() -> impl Strategy<Value = Piece> {
        (
            prop::sample::select(PieceKind::ALL.to_vec()),
            0u8..6,
            prop::sample::select(vec![Pending, Succeeded, Failed]),
            prop::bool::weighted(0.05),
        )
            .prop_map(|(kind, id, state, other)| Piece {
                kind,
                id: format!("p{id}"),
                state,
                // One amount per id (another amount is refused, tested above).
                amount: 100 * (i64::from(id) + 1),
                currency: if other { "USD".into() } else { "EUR".into() },
            })
    }

    proptest! {
        /// However the sub-objects arrive (any order, any number of
        /// duplicates), a counter never goes down, and the same set in
        /// another order gives the same counters whenever no state went
        /// back (which is refused, not counted).
        #[test]
        fn counters_only_grow_and_order_does_not_matter(
            pieces in prop::collection::vec(any_piece(), 0..40),
            seed in any::<u64>(),
        ) {
            let mut l = Ledger::new("EUR");
            let mut last = Counters::default();
            for p in &pieces {
                l.take(p.clone());
                let now = l.counters();
                prop_assert!(now.covers(&last), "{now:?} after {last:?}");
                last = now;
            }
            // The same pieces shuffled, each sent twice.
            let mut shuffled: Vec<Piece> = pieces.iter().chain(&pieces).cloned().collect();
            let mut s = seed;
            for i in (1..shuffled.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                shuffled.swap(i, (s >> 33) as usize % (i + 1));
            }
            let mut m = Ledger::new("EUR");
            for p in shuffled {
                m.take(p);
            }
            // States only move forward, and success overtakes a failure
            // (a re-capture): in any order, a sub-object ends succeeded
            // exactly when some report of it (in the payment's currency)
            // said so, so the counters are the same.
            let any_succeeded = |k: PieceKind, id: &str| pieces.iter().any(|p| {
                p.kind == k && p.id == id && p.state == Succeeded && p.currency == "EUR"
            });
            for p in m.pieces() {
                prop_assert_eq!(p.state == Succeeded, any_succeeded(p.kind, &p.id), "{:?}", p);
            }
            prop_assert_eq!(m.counters(), l.counters());
        }

        /// Money captured is never decided as failed or cancelled, and
        /// `reversed` only when everything captured went back.
        #[test]
        fn captured_money_is_never_a_failure(
            captured in 0i64..10_000, refunded in 0i64..10_000,
            disputed in 0i64..10_000, won in 0i64..10_000,
        ) {
            let c = Counters { authorised: captured, captured, refunded, disputed, dispute_reversed: won };
            let d = derive(Kind::Payment, captured.max(1), &c);
            if captured > 0 {
                prop_assert!(!matches!(d.status, Some(Status::Failed | Status::Cancelled)));
            }
            if d.status == Some(Status::Reversed) {
                prop_assert!(c.returned() >= c.captured);
            }
            if d.review.is_some() {
                prop_assert!(c.returned() > c.captured && d.status.is_none());
            }
        }
    }
}
