//! A payment's amounts under a generator that tries to break them: worlds
//! of one payment with one to three partial captures, failed capture
//! attempts, refunds (up to all of it) and a conflicting report, told by
//! events that name the pieces in any grouping, repeated and reordered,
//! stored and processed in batches of any size or one at a time. Whatever
//! the telling, the counters are the model's (each piece once) and the
//! status is the one the money says: `reversed` when everything captured
//! went back, else `succeeded`, unless refunds of everything captured so
//! far were told before a later capture: then the payment was reversed,
//! which is final, and the capture is a flag beside it (money held again),
//! never ignored. Two reports of one piece with different amounts: the first
//! processed stands, the other is kept for review, and the other pieces of
//! its event still count. And a ledger that reads only the event feed
//! ends with the payment's counters: every counter move is in an event
//! (the status event's, or a `payment.amounts`), never counted back.

use super::support::{inbox_event, register, LEASE_MS, T0};
use finality_core::amounts::{Piece, PieceKind, PieceState};
use finality_core::{Status, Timestamp};
use finality_store::model::*;
use finality_store::Store;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::sync::Arc;

pub const CASES: &[(&str, super::Case)] = cases!(
    amounts_are_each_piece_once_whatever_the_telling,
    flags_are_raised_beside_final_payments_and_closed_once
);

/// How many worlds each store is given.
const WORLDS: u32 = 64;

#[derive(Debug, Clone)]
struct World {
    /// Every successful capture (one to three: partial captures), summing
    /// to at most the registered 1250.
    captures: Vec<i64>,
    failed_attempts: usize,
    refunds: Vec<i64>,
    /// Each event names these pieces (indexes into [`World::pieces`]).
    events: Vec<Vec<usize>>,
    /// The claim sizes the inbox is drained with (0: one at a time).
    batches: Vec<usize>,
    /// A report of the capture again with another amount.
    conflict: bool,
}

impl World {
    fn pieces(&self) -> Vec<Piece> {
        let piece = |kind, id: String, state, amount| Piece {
            kind,
            id,
            state,
            amount,
            currency: "USD".into(),
        };
        let mut out: Vec<Piece> = self
            .captures
            .iter()
            .enumerate()
            .map(|(i, c)| {
                piece(
                    PieceKind::Capture,
                    format!("cap_ok_{i}"),
                    PieceState::Succeeded,
                    *c,
                )
            })
            .collect();
        for i in 0..self.failed_attempts {
            out.push(piece(
                PieceKind::Capture,
                format!("cap_failed_{i}"),
                PieceState::Failed,
                self.captures[0],
            ));
        }
        for (i, r) in self.refunds.iter().enumerate() {
            out.push(piece(
                PieceKind::Refund,
                format!("re_{i}"),
                PieceState::Succeeded,
                *r,
            ));
        }
        out
    }
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec(1i64..=600, 1..=3),
        0usize..=2,
        prop::collection::vec(1i64..=600, 0..=3),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(
            |(mut captures, failed_attempts, mut refunds, full, conflict)| {
                // Captures within the registered 1250 (and a conflicting
                // report's one more).
                let mut room = 1249;
                captures.retain_mut(|c| {
                    *c = (*c).min(room);
                    room -= *c;
                    *c > 0
                });
                let capture: i64 = captures.iter().sum();
                // Refunds never exceed the captures; sometimes they are all of it.
                let mut left = capture;
                refunds.retain_mut(|r| {
                    *r = (*r).min(left);
                    left -= *r;
                    *r > 0
                });
                if full && left > 0 {
                    refunds.push(left);
                }
                let n = captures.len() + failed_attempts + refunds.len();
                let events = prop::collection::vec(prop::collection::vec(0..n, 1..=3), 1..=8);
                let batches = prop::collection::vec(0usize..=4, 1..=4);
                (
                    Just(captures),
                    Just(failed_attempts),
                    Just(refunds),
                    events,
                    batches,
                    Just(conflict),
                )
            },
        )
        .prop_map(
            |(captures, failed_attempts, refunds, mut events, batches, conflict)| {
                // Every piece is told at least once.
                let n = captures.len() + failed_attempts + refunds.len();
                let told: Vec<usize> = events.iter().flatten().copied().collect();
                let missing: Vec<usize> = (0..n).filter(|i| !told.contains(i)).collect();
                if !missing.is_empty() {
                    events.push(missing);
                }
                World {
                    captures,
                    failed_attempts,
                    refunds,
                    events,
                    batches,
                    conflict,
                }
            },
        )
        .prop_shuffle_events()
}

/// Reordering the events is part of the world.
trait ShuffleEvents: Strategy<Value = World> + Sized {
    fn prop_shuffle_events(self) -> BoxedStrategy<World>
    where
        Self: 'static,
    {
        self.prop_flat_map(|w| {
            let events = Just(w.events.clone()).prop_shuffle();
            (Just(w), events).prop_map(|(mut w, events)| {
                w.events = events;
                w
            })
        })
        .boxed()
    }
}

impl<S: Strategy<Value = World>> ShuffleEvents for S {}

/// The status an event's pieces make the adapter say: a succeeded capture
/// or a refund is a success report; failed attempts alone are a fact for
/// a person (as Adyen's CAPTURE_FAILED).
fn said(pieces: &[Piece]) -> Status {
    if pieces.iter().all(|p| p.state == PieceState::Failed) {
        Status::NeedsReview
    } else {
        Status::Succeeded
    }
}

/// The worlds, drawn before any await (the generator is not `Send`), from
/// a fixed seed: the same worlds on every store and every run.
fn worlds() -> Vec<World> {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = world();
    (0..WORLDS)
        .map(|w| {
            let mut world = strategy.new_tree(&mut runner).expect("a world").current();
            if w % 3 == 0 {
                world.tell_last_capture_last();
            }
            world
        })
        .collect()
}

impl World {
    /// A refund of all captured before the last capture, told (with the
    /// rest) before that capture (a partial capture delivered late): the
    /// payment is reversed before it arrives.
    fn tell_last_capture_last(&mut self) {
        if self.captures.len() < 2 {
            return;
        }
        let last = self.captures.len() - 1;
        self.refunds = vec![self.captures[..last].iter().sum()];
        let n = self.captures.len() + self.failed_attempts + self.refunds.len();
        self.events = (0..n).filter(|i| *i != last).map(|i| vec![i]).collect();
        self.events.push(vec![last]);
    }
}

/// What a ledger that reads only the feed learns of `id`: its events in
/// feed order (after `cursor`, moved past them) with what they kept.
async fn feed_of(db: &dyn Store, id: &str, cursor: &mut i64) -> Vec<(OutboxEvent, EventDetails)> {
    while db.sequence_feed(1000).await.unwrap() > 0 {}
    let events = db.feed_after(*cursor, 100_000).await.unwrap();
    if let Some(last) = events.last() {
        *cursor = last.seq;
    }
    let ours: Vec<OutboxEvent> = events.into_iter().filter(|e| e.payment_id == id).collect();
    let details = db.event_details(&ours).await.unwrap();
    ours.into_iter().zip(details).collect()
}

/// The ledger's side of the property: each event's counters cover the
/// previous one's (money is never counted back), a `payment.amounts` event
/// is one where they moved, and the last event's counters are the
/// payment's: whoever sums the feed never needs a GET.
fn check_ledger(w: usize, evs: &[(OutboxEvent, EventDetails)], payment: &PaymentView) {
    let counters =
        |d: &EventDetails| finality_core::amounts::Ledger::of("USD", d.pieces.clone()).counters();
    let mut last = finality_core::amounts::Counters::default();
    for (e, d) in evs {
        let c = counters(d);
        assert!(
            c.covers(&last),
            "world {w}: counted back at {e:?}: {last:?} → {c:?}"
        );
        if e.event_type == "payment.amounts" {
            assert_ne!(
                c, last,
                "world {w}: an amounts event that moved nothing: {e:?}"
            );
            assert_eq!(e.previous_status, Some(e.status), "world {w}: {e:?}");
        }
        last = c;
    }
    let want = finality_core::amounts::Ledger::of("USD", payment.pieces.clone()).counters();
    assert_eq!(
        last, want,
        "world {w}: the feed's last counters are not the payment's: {evs:#?}"
    );
    let status = evs
        .iter()
        .rev()
        .find(|(e, _)| !finality_store::is_notice(&e.event_type));
    assert_eq!(
        status.map(|(e, _)| e.status),
        Some(payment.payment.status),
        "world {w}: the last status event is not the payment's status"
    );
}

pub async fn amounts_are_each_piece_once_whatever_the_telling(db: Arc<dyn Store>) {
    let mut cursor = 0;
    // Worlds reversed before a later capture was told: the generator
    // must reach that case, or it proves nothing of it.
    let mut reversed_early = 0;
    for (w, world) in worlds().into_iter().enumerate() {
        let id = format!("pay_w{w}");
        register(&*db, &id, Timestamp(T0.0 + 3_600_000)).await;
        let all = world.pieces();
        let mut rows: Vec<NewInboxEvent> = world
            .events
            .iter()
            .enumerate()
            .map(|(i, named)| {
                let pieces: Vec<Piece> = named.iter().map(|j| all[*j].clone()).collect();
                let mut ev = inbox_event(
                    &format!("evt_w{w}_{i}"),
                    &format!("ref_{id}"),
                    said(&pieces),
                );
                ev.reported = finality_core::Reported {
                    pieces,
                    ..finality_core::Reported::money(1250, "USD")
                };
                ev
            })
            .collect();
        if world.conflict {
            let mut wrong = all[0].clone();
            wrong.amount += 1;
            let mut ev = inbox_event(
                &format!("evt_w{w}_conflict"),
                &format!("ref_{id}"),
                Status::Succeeded,
            );
            ev.reported.pieces = vec![wrong];
            // After the capture was first told (the first report of a
            // piece stands), anywhere among the rest.
            let first = world
                .events
                .iter()
                .position(|e| e.contains(&0))
                .unwrap_or(0);
            let at = first + 1 + (w % (rows.len() - first));
            rows.insert(at.min(rows.len()), ev);
        }
        db.inbox_insert(&rows, T0).await.unwrap();
        // Drained in the world's batch sizes, round and round.
        let mut sizes = world.batches.iter().cycle();
        loop {
            let size = *sizes.next().unwrap_or(&0);
            let evs = db
                .inbox_claim(T0, size.max(1) as u32, Timestamp(T0.0 + LEASE_MS))
                .await
                .unwrap();
            if evs.is_empty() {
                break;
            }
            if size == 0 {
                for ev in &evs {
                    db.inbox_process(ev, T0).await.unwrap();
                }
            } else {
                db.inbox_process_batch(&evs, T0).await.unwrap();
            }
        }
        let v = db.get(&id).await.unwrap().unwrap();
        let ledger = finality_core::amounts::Ledger::of("USD", v.pieces.clone());
        let c = ledger.counters();
        let refunded: i64 = world.refunds.iter().sum();
        // Two reports of the capture disagree: whichever was processed
        // first stands (the stores claim rows of one instant in any order),
        // the other is a review row, and only one of them is counted.
        let capture: i64 = world.captures.iter().sum();
        let captured_ok = c.captured == capture || (world.conflict && c.captured == capture + 1);
        assert!(captured_ok, "world {w}: {world:?}\n{v:?}");
        assert_eq!(c.refunded, refunded, "world {w}: {world:?}\n{v:?}");
        assert_eq!(
            v.pieces.len(),
            all.len(),
            "world {w}: every piece once: {world:?}"
        );
        if refunded >= c.captured {
            assert_eq!(
                v.payment.status,
                Status::Reversed,
                "world {w}: {world:?}\n{:?}",
                v.history
            );
        } else if v.payment.status == Status::Reversed {
            // Reversed before a later capture was told (refunds of all
            // that was captured then): final, so the capture that came
            // after is a flag beside it, never ignored.
            let flags = db.flags_of(&id).await.unwrap();
            assert!(
                flags.iter().any(|f| f.reason.contains("held again")),
                "world {w}: reversed with money held and no flag: {world:?}\n{flags:?}\n{:?}",
                v.history
            );
            reversed_early += 1;
        } else {
            assert_eq!(
                v.payment.status,
                Status::Succeeded,
                "world {w}: {world:?}\n{:?}",
                v.history
            );
        }
        check_ledger(w, &feed_of(&*db, &id, &mut cursor).await, &v);
        if world.conflict {
            let mut reviewed = Vec::new();
            for i in 0..=world.events.len() {
                let ev = match i {
                    0 => format!("evt_w{w}_conflict"),
                    _ => format!("evt_w{w}_{}", i - 1),
                };
                let row = db.inbox_get("sim", &ev).await.unwrap().unwrap();
                if row.state == InboxState::Review {
                    reviewed.push(row.reason.unwrap_or_default());
                }
            }
            assert!(
                reviewed.iter().any(|r| r.contains("earlier as")),
                "world {w}: the disagreement is kept for review: {reviewed:?}"
            );
        }
    }
    assert!(
        reversed_early > 0,
        "no world reversed a payment before its last capture was told"
    );
}

/// A fact kept for review beside a final payment is a flag on it (not on an
/// open payment, whose status carries it): listed open, closed by the
/// provider's later report of the same piece succeeding, or by a person
/// (audited, once: a second resolution changes nothing).
pub async fn flags_are_raised_beside_final_payments_and_closed_once(db: Arc<dyn Store>) {
    use finality_store::flags::FlagResolve;
    use finality_store::review::{AuditFilter, NewAudit};
    let capture = |state| Piece {
        kind: PieceKind::Capture,
        id: "cap_1".into(),
        state,
        amount: 1250,
        currency: "USD".into(),
    };
    let told = |event: &str, status: Status, piece: Piece| {
        let mut ev = inbox_event(event, "ref_pay_f", status);
        ev.reported.pieces = vec![piece];
        ev
    };
    let drain = || async {
        loop {
            let evs = db
                .inbox_claim(T0, 10, Timestamp(T0.0 + LEASE_MS))
                .await
                .unwrap();
            if evs.is_empty() {
                break;
            }
            for ev in &evs {
                db.inbox_process(ev, T0).await.unwrap();
            }
        }
    };
    register(&*db, "pay_f", Timestamp(T0.0 + 3_600_000)).await;
    // Open payment: the failure is its status, not a flag.
    db.inbox_insert(
        &[told(
            "evt_f0",
            Status::NeedsReview,
            capture(PieceState::Failed),
        )],
        T0,
    )
    .await
    .unwrap();
    drain().await;
    assert_eq!(
        db.get("pay_f").await.unwrap().unwrap().payment.status,
        Status::NeedsReview
    );
    assert!(db.flags_of("pay_f").await.unwrap().is_empty());
    // Re-captured: succeeded.
    db.inbox_insert(
        &[told(
            "evt_f1",
            Status::Succeeded,
            capture(PieceState::Succeeded),
        )],
        T0,
    )
    .await
    .unwrap();
    drain().await;
    let v = db.get("pay_f").await.unwrap().unwrap();
    assert_eq!(v.payment.status, Status::Succeeded);
    // Failed again after it succeeded: a flag beside it.
    db.inbox_insert(
        &[told(
            "evt_f2",
            Status::NeedsReview,
            capture(PieceState::Failed),
        )],
        T0,
    )
    .await
    .unwrap();
    drain().await;
    let flags = db.flags_of("pay_f").await.unwrap();
    assert_eq!(flags.len(), 1, "{flags:?}");
    assert_eq!(flags[0].piece_key.as_deref(), Some("capture:cap_1"));
    assert_eq!(flags[0].event_id.as_deref(), Some("evt_f2"));
    assert_eq!(db.flags_open(0, 10).await.unwrap().len(), 1);
    assert_eq!(db.get("pay_f").await.unwrap().unwrap().flags, flags);
    // The provider's later success of the same capture closes it.
    db.inbox_insert(
        &[told(
            "evt_f3",
            Status::Succeeded,
            capture(PieceState::Succeeded),
        )],
        T0,
    )
    .await
    .unwrap();
    drain().await;
    let f = &db.flags_of("pay_f").await.unwrap()[0];
    assert_eq!(f.closed_by.as_deref(), Some("provider"), "{f:?}");
    assert!(
        f.resolution
            .as_deref()
            .unwrap_or_default()
            .contains("evt_f3"),
        "{f:?}"
    );
    assert!(db.flags_open(0, 10).await.unwrap().is_empty());
    // Another fact (a failure after success) is resolved by a person.
    db.inbox_insert(&[inbox_event("evt_f4", "ref_pay_f", Status::Failed)], T0)
        .await
        .unwrap();
    drain().await;
    let open = db.flags_open(0, 10).await.unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    let audit = NewAudit {
        at: T0,
        actor: "ana".into(),
        role: "reviewer".into(),
        action: "resolve_flag".into(),
        payment_id: Some("pay_f".into()),
        detail: serde_json::json!({"flag": open[0].id}),
        outcome: String::new(),
        remote_addr: None,
    };
    let r = db
        .flag_resolve("pay_f", open[0].id, "checked the bank", &audit, T0)
        .await
        .unwrap();
    let FlagResolve::Resolved(f) = r else {
        panic!("{r:?}")
    };
    assert_eq!(f.closed_by.as_deref(), Some("ana"));
    let again = db
        .flag_resolve("pay_f", open[0].id, "twice", &audit, T0)
        .await
        .unwrap();
    assert!(
        matches!(again, FlagResolve::AlreadyClosed(ref f) if f.resolution.as_deref() == Some("checked the bank")),
        "{again:?}"
    );
    assert_eq!(
        db.flag_resolve("pay_other", open[0].id, "x", &audit, T0)
            .await
            .unwrap(),
        FlagResolve::NotFound
    );
    let trail = db
        .audit_list(&AuditFilter {
            payment_id: Some("pay_f".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    // A success reported for a payment already cancelled: money may have
    // moved after "no money moved", so a flag, never "already final".
    register(&*db, "pay_g", Timestamp(T0.0 + 3_600_000)).await;
    db.inbox_insert(&[inbox_event("evt_g0", "ref_pay_g", Status::Cancelled)], T0)
        .await
        .unwrap();
    drain().await;
    db.inbox_insert(&[inbox_event("evt_g1", "ref_pay_g", Status::Succeeded)], T0)
        .await
        .unwrap();
    drain().await;
    let g = db.get("pay_g").await.unwrap().unwrap();
    assert_eq!(g.payment.status, Status::Cancelled);
    assert_eq!(g.flags.len(), 1, "{:?}", g.flags);
    assert!(
        g.flags[0].reason.contains("money may have moved"),
        "{:?}",
        g.flags
    );
    let outcomes: Vec<&str> = trail.iter().map(|a| a.entry.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        ["no such flag", "already closed", "resolved"],
        "{trail:?}"
    );
}
