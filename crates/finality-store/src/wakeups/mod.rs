//! The in-process wake-up signals a store shares with the tasks that use
//! it, and the feed's newest events. Below the roles and the driver: every
//! backend hands them out, no role owns them.

mod feed_tail;

pub(crate) use feed_tail::FeedTail;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// The wake-up signals shared by a store and the tasks that use it: work
/// (registrations, polls, status changes: the poll engine), the inbox
/// (webhooks stored, registrations: the inbox processor), transitions (to
/// sequence) and the feed (events with positions, for pushers and feed
/// readers), with the feed's head and newest events. Separate, so a burst
/// of webhooks does not wake every feed reader, nor an applied webhook the
/// processor that applied it.
#[derive(Debug, Clone)]
pub struct Wakeups {
    work: Arc<watch::Sender<u64>>,
    /// Webhooks to apply: [`Wakeups::bump`] and webhooks stored, not
    /// status changes.
    inbox: Arc<watch::Sender<u64>>,
    transitions: Arc<watch::Sender<u64>>,
    feed: Arc<watch::Sender<u64>>,
    /// See [`crate::EventFeed::feed_head`]; [`UNKNOWN_HEAD`] until a position is
    /// learned, and again whenever one may have been missed.
    feed_head: Arc<AtomicI64>,
    /// How many times the head was forgotten: a sequencer round that began
    /// before the last time does not make the head known again (another
    /// node's positions may have been missed meanwhile).
    feed_epoch: Arc<std::sync::atomic::AtomicU64>,
    /// The newest events this process numbered (its sequencer and its
    /// inbox processor).
    feed_tail: Arc<FeedTail>,
    /// This store handle's name in feed announcements, so its own are
    /// told from other nodes'.
    origin: Arc<str>,
    /// Webhooks stored by this process (raised with the `inbox` signal
    /// by [`Wakeups::bump_inbox`] only), and its value when the inbox
    /// processor last looked.
    inbox_stored: Arc<std::sync::atomic::AtomicU64>,
    inbox_seen: Arc<std::sync::atomic::AtomicU64>,
}

/// No feed position known: readers ask the database.
const UNKNOWN_HEAD: i64 = -1;

impl Wakeups {
    pub(crate) fn new() -> Self {
        Wakeups {
            work: Arc::new(watch::channel(0).0),
            inbox: Arc::new(watch::channel(0).0),
            transitions: Arc::new(watch::channel(0).0),
            feed: Arc::new(watch::channel(0).0),
            feed_head: Arc::new(AtomicI64::new(UNKNOWN_HEAD)),
            feed_epoch: Arc::default(),
            feed_tail: Arc::default(),
            origin: uuid::Uuid::new_v4().simple().to_string().into(),
            inbox_stored: Arc::default(),
            inbox_seen: Arc::default(),
        }
    }
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }
    pub(crate) fn feed_tail(&self) -> &FeedTail {
        &self.feed_tail
    }
    /// The feed reached position `head` (given here, or announced by
    /// another node): wakes readers only if that is news, so a node's own
    /// announcement, heard back, costs nobody a read.
    pub fn feed_grew_to(&self, head: i64) {
        if self.feed_head.fetch_max(head, Ordering::AcqRel) < head {
            self.bump_feed();
        }
    }
    /// The feed may have grown by an unknown amount (an announcement
    /// without a position, or a lost connection): forget the head and
    /// wake every reader.
    pub fn feed_grew_unknown(&self) {
        self.feed_epoch.fetch_add(1, Ordering::AcqRel);
        self.feed_head.store(UNKNOWN_HEAD, Ordering::Release);
        self.bump_feed();
    }
    /// Taken before a sequencer round, for [`Wakeups::feed_grew_to_since`].
    pub(crate) fn feed_epoch(&self) -> u64 {
        self.feed_epoch.load(Ordering::Acquire)
    }
    /// This process's sequencer reached `head` in a round that began at
    /// `epoch`: as [`Wakeups::feed_grew_to`], unless the head was forgotten
    /// meanwhile (a lost `LISTEN` connection may have hidden another node's
    /// positions past `head`); then readers are woken and the head stays
    /// unknown, so they ask the database rather than wait at a stale head.
    pub(crate) fn feed_grew_to_since(&self, head: i64, epoch: u64) {
        if self.feed_epoch() == epoch {
            self.feed_grew_to(head);
            if self.feed_epoch() == epoch {
                return;
            }
            self.feed_head.store(UNKNOWN_HEAD, Ordering::Release);
        }
        self.bump_feed();
    }
    pub(crate) fn feed_head(&self) -> Option<i64> {
        let h = self.feed_head.load(Ordering::Acquire);
        (h != UNKNOWN_HEAD).then_some(h)
    }
    /// Something may be due sooner (a registration, a "poll now", another
    /// node's announcement): wakes the poll engine and the inbox processor.
    pub fn bump(&self) {
        self.work.send_modify(|v| *v = v.wrapping_add(1));
        self.inbox.send_modify(|v| *v = v.wrapping_add(1));
    }
    /// Webhooks were stored: work for the inbox processor only.
    pub fn bump_inbox(&self) {
        self.inbox_stored.fetch_add(1, Ordering::AcqRel);
        self.inbox.send_modify(|v| *v = v.wrapping_add(1));
    }
    /// A status change committed here: work for the sequencer, and a
    /// wake-up for the poll producer (a poll may have moved), not for the
    /// inbox processor.
    pub fn bump_transitions(&self) {
        self.work.send_modify(|v| *v = v.wrapping_add(1));
        self.transitions.send_modify(|v| *v = v.wrapping_add(1));
    }
    /// A status change committed here with its feed positions already
    /// given (the inbox processor's transaction): a wake-up for the poll
    /// producer, none for the sequencer, which would find nothing.
    pub(crate) fn bump_work(&self) {
        self.work.send_modify(|v| *v = v.wrapping_add(1));
    }
    /// Webhooks were stored by this process since the last call: then the
    /// inbox processor takes rows at once instead of first asking whether
    /// any are due. (Its other wake-ups, a registration or another node's
    /// announcement, mostly find nothing: for those the read comes first.)
    pub(crate) fn webhooks_stored_since_last_look(&self) -> bool {
        let now = self.inbox_stored.load(Ordering::Acquire);
        self.inbox_seen.swap(now, Ordering::AcqRel) != now
    }
    pub(crate) fn subscribe_inbox(&self) -> watch::Receiver<u64> {
        self.inbox.subscribe()
    }
    pub(crate) fn subscribe_transitions(&self) -> watch::Receiver<u64> {
        self.transitions.subscribe()
    }
    pub fn bump_feed(&self) {
        self.feed.send_modify(|v| *v = v.wrapping_add(1));
    }
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.work.subscribe()
    }
    pub(crate) fn subscribe_feed(&self) -> watch::Receiver<u64> {
        self.feed.subscribe()
    }
    /// A handle for a listener task that must end with the store.
    pub(crate) fn downgrade(&self) -> WeakWakeups {
        WeakWakeups {
            work: Arc::downgrade(&self.work),
            inbox: Arc::downgrade(&self.inbox),
            feed: Arc::downgrade(&self.feed),
            transitions: Arc::downgrade(&self.transitions),
            feed_head: Arc::downgrade(&self.feed_head),
            feed_epoch: Arc::downgrade(&self.feed_epoch),
            feed_tail: Arc::downgrade(&self.feed_tail),
            origin: self.origin.clone(),
            inbox_stored: Arc::downgrade(&self.inbox_stored),
            inbox_seen: Arc::downgrade(&self.inbox_seen),
        }
    }
}

/// [`Wakeups`] that do not keep the store alive.
pub(crate) struct WeakWakeups {
    work: std::sync::Weak<watch::Sender<u64>>,
    inbox: std::sync::Weak<watch::Sender<u64>>,
    transitions: std::sync::Weak<watch::Sender<u64>>,
    feed: std::sync::Weak<watch::Sender<u64>>,
    feed_head: std::sync::Weak<AtomicI64>,
    feed_epoch: std::sync::Weak<std::sync::atomic::AtomicU64>,
    feed_tail: std::sync::Weak<FeedTail>,
    origin: Arc<str>,
    inbox_stored: std::sync::Weak<std::sync::atomic::AtomicU64>,
    inbox_seen: std::sync::Weak<std::sync::atomic::AtomicU64>,
}

impl WeakWakeups {
    /// The wake-ups again, while the store lives.
    pub(crate) fn upgrade(&self) -> Option<Wakeups> {
        Some(Wakeups {
            work: self.work.upgrade()?,
            inbox: self.inbox.upgrade()?,
            transitions: self.transitions.upgrade()?,
            feed: self.feed.upgrade()?,
            feed_head: self.feed_head.upgrade()?,
            feed_epoch: self.feed_epoch.upgrade()?,
            feed_tail: self.feed_tail.upgrade()?,
            origin: self.origin.clone(),
            inbox_stored: self.inbox_stored.upgrade()?,
            inbox_seen: self.inbox_seen.upgrade()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Wakeups;

    /// A sequencer round that began before the head was forgotten (a lost
    /// `LISTEN` connection) does not make a stale head known again.
    #[test]
    fn a_round_older_than_a_lost_connection_leaves_the_head_unknown() {
        let w = Wakeups::new();
        let mut feed = w.subscribe_feed();
        let epoch = w.feed_epoch();
        w.feed_grew_to_since(15, epoch);
        assert_eq!(w.feed_head(), Some(15));
        assert!(feed.has_changed().unwrap_or(false));
        feed.borrow_and_update();

        let epoch = w.feed_epoch();
        w.feed_grew_unknown();
        feed.borrow_and_update();
        w.feed_grew_to_since(20, epoch);
        assert_eq!(w.feed_head(), None, "readers ask the database");
        assert!(feed.has_changed().unwrap_or(false), "and are woken");

        let epoch = w.feed_epoch();
        w.feed_grew_to_since(21, epoch);
        assert_eq!(w.feed_head(), Some(21), "a round begun since counts");
    }
}
