//! Event ids derived from what the event says, never drawn at random: the
//! same fact about the same payment has the same id whenever and wherever
//! it is derived (another node, after a restart, a restore from backup, or
//! a database failover that lost the commit which first wrote it and the
//! provider's truth made it again), so a consumer that deduplicates by id
//! takes it once. Every outbox row's id is made here, from an
//! [`EventFact`]: there is no other way to name an event.
//!
//! Why two different events never share an id: a transition's id is a
//! function of the payment and the status it entered, and a payment enters
//! each status at most once, because every row of every transition table
//! moves strictly forward (`finality_core::transition`, tested there). A
//! notice's id is a function of the payment and the fact it reports (the
//! counters it shows, the webhook that raised a flag), and each such fact
//! is reported once. A payment id is the payment's for the database's
//! whole life: registering the id of an archived payment is refused.

use finality_core::amounts::Piece;
use finality_core::{Kind, Status};
use sha2::{Digest, Sha256};

/// What an outbox event says, as far as its identity goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum EventFact<'a> {
    /// The payment entered `to`.
    Transition { to: Status },
    /// The counters became `pieces` while the status stayed.
    Amounts { pieces: &'a [Piece] },
    /// A flag was raised by the provider's event `raised_by`, for `reason`.
    Flagged { raised_by: &'a str, reason: &'a str },
    /// That flag was closed.
    FlagResolved { raised_by: &'a str, reason: &'a str },
}

impl EventFact<'_> {
    fn word(&self) -> &'static str {
        match self {
            EventFact::Transition { .. } => "transition",
            EventFact::Amounts { .. } => "amounts",
            EventFact::Flagged { .. } => "flagged",
            EventFact::FlagResolved { .. } => "flag_resolved",
        }
    }
}

/// The id of the event stating `fact` about `payment_id` (an operation of
/// `kind`): `evt_` and 32 hex digits, the shape random ids had, so stored
/// ids and consumers' parsers read both alike.
pub(crate) fn event_id(payment_id: &str, kind: Kind, fact: EventFact<'_>) -> String {
    let mut h = Sha256::new();
    // Each part length-prefixed: no two different lists of parts hash the
    // same bytes.
    let mut part = |b: &[u8]| {
        h.update((b.len() as u64).to_be_bytes());
        h.update(b);
    };
    part(b"finality.event.v1");
    part(payment_id.as_bytes());
    part(kind.as_str().as_bytes());
    part(fact.word().as_bytes());
    match fact {
        EventFact::Transition { to } => part(to.as_str().as_bytes()),
        EventFact::Amounts { pieces } => {
            // The same counters whatever order the pieces arrived in.
            let mut each: Vec<String> = pieces
                .iter()
                .map(|p| serde_json::to_string(p).unwrap_or_default())
                .collect();
            each.sort_unstable();
            for p in &each {
                part(p.as_bytes());
            }
        }
        EventFact::Flagged { raised_by, reason }
        | EventFact::FlagResolved { raised_by, reason } => {
            part(raised_by.as_bytes());
            part(reason.as_bytes());
        }
    }
    let digest = h.finalize();
    let mut id = String::with_capacity(36);
    id.push_str("evt_");
    for b in &digest[..16] {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_fact_has_the_same_id_and_another_fact_another() {
        let t = |p: &str, to| event_id(p, Kind::Payment, EventFact::Transition { to });
        let a = t("pay_1", Status::Succeeded);
        assert_eq!(a, t("pay_1", Status::Succeeded));
        assert_eq!(a.len(), 36);
        assert!(a.starts_with("evt_") && a[4..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, t("pay_1", Status::Reversed));
        assert_ne!(a, t("pay_2", Status::Succeeded));
        assert_ne!(
            a,
            event_id(
                "pay_1",
                Kind::Refund,
                EventFact::Transition {
                    to: Status::Succeeded
                }
            )
        );
        // Length prefixes: moving a byte between parts changes the id.
        let f = |by: &str, reason: &str| {
            event_id(
                "pay_1",
                Kind::Payment,
                EventFact::Flagged {
                    raised_by: by,
                    reason,
                },
            )
        };
        assert_ne!(f("evt_ab", "c"), f("evt_a", "bc"));
        assert_ne!(
            f("evt_a", "r"),
            event_id(
                "pay_1",
                Kind::Payment,
                EventFact::FlagResolved {
                    raised_by: "evt_a",
                    reason: "r"
                }
            )
        );
    }
}
