//! The feed's newest events, as this node numbered them (its sequencer,
//! or its inbox processor in the transaction applying webhooks), kept in
//! memory once that transaction committed, so a pusher or a long-polling
//! reader at the head takes them without reading the outbox again: one
//! round trip fewer between a status change and the merchant, and one
//! statement fewer per reader per event.
//!
//! Why this is safe: feed positions are gapless (each numbering gives
//! `last + 1 ..= last + n` under the `feed_state` lock, held to its
//! commit), so a run of contiguous positions held here is exactly what the
//! outbox holds for them. Positions another node gave are not here: the
//! next numbering on this node then starts past a gap, and the tail starts
//! over from it (as when this node's sequencer and inbox processor hand
//! over their rows in the other order). A
//! reader is answered from here only when its cursor falls inside the run;
//! anything else (behind it, past it, the tail empty) reads the database.
//! Entries older than [`MAX_AGE`] are not served, and a prune by this store
//! clears the tail; a prune by another process with a retention under a
//! minute can leave an event here that the database let go (already
//! delivered, read once more: never a gap).
//!
//! An event numbered by the inbox processor on PostgreSQL is held with its
//! details (its payment's registered fields, the transition's reason and
//! actor), which its numbering statement returned: a pusher or reader at
//! the head then reads nothing to send it. Those fields do not change after
//! registration, so they are what a read would find.

use crate::model::{EventDetails, OutboxEvent};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most events held: a few seconds of a busy node's feed.
const MAX_EVENTS: usize = 8192;

/// Oldest entry served: readers further behind read the database.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(60);

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct FeedTail {
    events: Mutex<VecDeque<Held>>,
}

/// One event held: when, the event, its details if known.
type Held = (Instant, OutboxEvent, Option<EventDetails>);

impl FeedTail {
    /// Events just given positions by this node, in position order.
    #[cfg(test)]
    pub(crate) fn append(&self, events: Vec<OutboxEvent>) {
        self.append_with(events, Vec::new())
    }

    /// As [`FeedTail::append`], with each event's details when known
    /// (`details` one per event, or fewer: the rest have none).
    pub(crate) fn append_with(&self, events: Vec<OutboxEvent>, details: Vec<Option<EventDetails>>) {
        let Some(first) = events.first().map(|e| e.seq) else {
            return;
        };
        let contiguous = events.windows(2).all(|w| w[1].seq == w[0].seq + 1);
        let now = Instant::now();
        let Ok(mut tail) = self.events.lock() else {
            return;
        };
        // A round not contiguous in itself is not kept at all; one not
        // contiguous with what is held (another node numbered the
        // positions between) starts the tail over.
        if !contiguous {
            tail.clear();
            return;
        }
        if tail.back().is_some_and(|(_, e, _)| e.seq + 1 != first) {
            tail.clear();
        }
        let mut details = details.into_iter();
        tail.extend(
            events
                .into_iter()
                .map(|e| (now, e, details.next().flatten())),
        );
        while tail.len() > MAX_EVENTS {
            tail.pop_front();
        }
    }

    /// Forget what is held if any of it is past `head`, the feed's head as
    /// the database has it now: a failover or restore took the feed back,
    /// and those positions will be given to other events.
    pub(crate) fn drop_past(&self, head: i64) {
        let Ok(mut tail) = self.events.lock() else {
            return;
        };
        if tail.back().is_some_and(|(_, e, _)| e.seq > head) {
            tail.clear();
        }
    }

    /// Forget everything held (events were pruned from the outbox).
    pub(crate) fn clear(&self) {
        if let Ok(mut tail) = self.events.lock() {
            tail.clear();
        }
    }

    /// Events after `cursor` (at most `limit`), if this tail holds the
    /// position right after it and either fills the page or reaches `head`
    /// (the newest position this process knows was given): a page is never
    /// cut short here while the database holds more that this node heard
    /// of. `None`: read the database.
    pub(crate) fn after(
        &self,
        cursor: i64,
        limit: u32,
        head: Option<i64>,
    ) -> Option<Vec<OutboxEvent>> {
        let tail = self.events.lock().ok()?;
        let (_, first, _) = tail.front()?;
        let (_, last, _) = tail.back()?;
        // At or past the last held, the database may hold another node's
        // positions; before the first, older ones.
        if cursor < first.seq - 1 || cursor >= last.seq {
            return None;
        }
        let start = usize::try_from(cursor + 1 - first.seq).ok()?;
        let (at, _, _) = tail.get(start)?;
        if at.elapsed() > MAX_AGE {
            return None;
        }
        let full = tail.len() - start >= limit as usize;
        if !full && head.is_none_or(|h| h > last.seq) {
            return None;
        }
        Some(
            tail.range(start..)
                .take(limit as usize)
                .map(|(_, e, _)| e.clone())
                .collect(),
        )
    }

    /// The details held for each of `events` (the same event at the same
    /// position), else `None`: those are read from the database.
    pub(crate) fn details(&self, events: &[OutboxEvent]) -> Vec<Option<EventDetails>> {
        let Ok(tail) = self.events.lock() else {
            return vec![None; events.len()];
        };
        let first = tail.front().map_or(0, |(_, e, _)| e.seq);
        events
            .iter()
            .map(|e| {
                let i = usize::try_from(e.seq - first).ok()?;
                let (at, held, details) = tail.get(i)?;
                (held.seq == e.seq && held.event_id == e.event_id && at.elapsed() <= MAX_AGE)
                    .then(|| details.clone())
                    .flatten()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use finality_core::{Source, Status, Timestamp};

    fn ev(seq: i64) -> OutboxEvent {
        OutboxEvent {
            seq,
            event_id: format!("e{seq}"),
            payment_id: format!("p{seq}"),
            event_type: "payment.succeeded".into(),
            status: Status::Succeeded,
            previous_status: Some(Status::Pending),
            source: Source::Webhook,
            occurred_at: Timestamp(0),
        }
    }

    /// The head as this process knows it: no newer position elsewhere.
    const H: Option<i64> = Some(i64::MIN);

    fn seqs(v: Option<Vec<OutboxEvent>>) -> Option<Vec<i64>> {
        v.map(|v| v.iter().map(|e| e.seq).collect())
    }

    #[test]
    fn serves_only_cursors_inside_a_contiguous_run() {
        let t = FeedTail::default();
        assert_eq!(seqs(t.after(0, 10, H)), None, "empty: read the database");
        t.append((5..=8).map(ev).collect());
        assert_eq!(seqs(t.after(4, 10, H)), Some(vec![5, 6, 7, 8]));
        assert_eq!(seqs(t.after(6, 1, H)), Some(vec![7]));
        assert_eq!(seqs(t.after(3, 10, H)), None, "behind the tail");
        assert_eq!(
            seqs(t.after(8, 10, H)),
            None,
            "at its end: ask (another node may have more)"
        );
        t.append((9..=10).map(ev).collect());
        assert_eq!(seqs(t.after(7, 10, H)), Some(vec![8, 9, 10]));
    }

    #[test]
    fn a_short_page_only_up_to_the_known_head() {
        let t = FeedTail::default();
        t.append((1..=3).map(ev).collect());
        assert_eq!(seqs(t.after(0, 10, Some(3))), Some(vec![1, 2, 3]));
        assert_eq!(
            seqs(t.after(0, 10, Some(5))),
            None,
            "4 and 5 were given elsewhere"
        );
        assert_eq!(seqs(t.after(0, 10, None)), None, "head unknown");
        assert_eq!(seqs(t.after(0, 2, None)), Some(vec![1, 2]), "a full page");
    }

    #[test]
    fn a_gap_starts_the_tail_over() {
        let t = FeedTail::default();
        t.append((1..=3).map(ev).collect());
        // Positions 4–6 were given by another node.
        t.append((7..=8).map(ev).collect());
        assert_eq!(seqs(t.after(2, 10, H)), None);
        assert_eq!(seqs(t.after(3, 10, H)), None, "4–6 are not here");
        assert_eq!(seqs(t.after(6, 10, H)), Some(vec![7, 8]));
        // A round that is not contiguous in itself is not kept at all.
        t.append(vec![ev(9), ev(11)]);
        assert_eq!(seqs(t.after(8, 10, H)), None);
    }

    #[test]
    fn details_only_for_the_same_event_held() {
        let t = FeedTail::default();
        let d = |r: &str| EventDetails {
            reason: Some(r.into()),
            ..EventDetails::default()
        };
        t.append_with(
            (5..=7).map(ev).collect(),
            vec![Some(d("a")), None, Some(d("c"))],
        );
        let mut other = ev(7);
        other.event_id = "another".into();
        let got = t.details(&[ev(4), ev(5), ev(6), other, ev(7), ev(8)]);
        assert_eq!(
            got,
            vec![None, Some(d("a")), None, None, Some(d("c")), None]
        );
        // Events held without details (the sequencer's) have none.
        t.append((8..=9).map(ev).collect());
        assert_eq!(t.details(&[ev(8)]), vec![None]);
    }

    #[test]
    fn holds_a_bounded_number() {
        let t = FeedTail::default();
        let n = MAX_EVENTS as i64 + 100;
        t.append((1..=n).map(ev).collect());
        assert_eq!(seqs(t.after(0, 10, H)), None, "the oldest were let go");
        assert_eq!(seqs(t.after(n - 2, 10, H)), Some(vec![n - 1, n]));
    }
}
