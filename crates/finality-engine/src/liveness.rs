//! When this node may call another node dead.
//!
//! A node is dead when its heartbeat is older than `dead_after`. But a
//! stale heartbeat only means silence if the other node *could* have
//! written one: while the database is down or unreachable, every node's
//! heartbeat goes stale together. Judging the moment the database comes
//! back would take a live node for dead, release the leases it is still
//! polling on, and let this node call the provider for the same payments
//! at the same time (chaos on MariaDB found three such overlapping calls
//! after a database stop). So this node judges only after its own
//! heartbeats have been written promptly for `dead_after` without a
//! break: by then every live node has had the same window to beat. A
//! beat that failed, that took longer than the beat interval (the pool
//! waiting for a database that is not there), or that came late (this
//! process paused or starved) breaks the run.

use std::time::{Duration, Instant};

/// This node's own heartbeat record, kept on the wall clock (silence is
/// real time, never virtual).
#[derive(Debug)]
pub(crate) struct Liveness {
    every: Duration,
    dead_after: Duration,
    beating_since: Option<Instant>,
    last_written: Option<Instant>,
}

impl Liveness {
    pub(crate) fn new(every: Duration, dead_after: Duration) -> Liveness {
        Liveness {
            every,
            dead_after,
            beating_since: None,
            last_written: None,
        }
    }

    /// Record a heartbeat begun at `started` and ended at `ended`, and
    /// whether it was `written`; returns whether this node may now judge
    /// other nodes by theirs.
    pub(crate) fn beat(&mut self, written: bool, started: Instant, ended: Instant) -> bool {
        if !written {
            self.beating_since = None;
            self.last_written = None;
            return false;
        }
        let slow = ended.duration_since(started) > self.every;
        let late = self
            .last_written
            .is_some_and(|last| started.duration_since(last) > self.every * 2);
        if slow || late {
            self.beating_since = None;
        }
        self.last_written = Some(ended);
        let since = *self.beating_since.get_or_insert(ended);
        ended.duration_since(since) >= self.dead_after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    /// Beats every second, each taking 10 ms, from `from` to `to` seconds.
    fn beats(l: &mut Liveness, t0: Instant, from: u32, to: u32) -> Vec<bool> {
        (from..=to)
            .map(|i| l.beat(true, t0 + i * S, t0 + i * S + 10 * MS))
            .collect()
    }

    #[test]
    fn judges_only_after_dead_after_of_unbroken_beats() {
        let t0 = Instant::now();
        let mut l = Liveness::new(S, 5 * S);
        let may = beats(&mut l, t0, 0, 6);
        assert_eq!(may, [false, false, false, false, false, true, true]);
    }

    #[test]
    fn a_failed_beat_starts_the_window_again() {
        let t0 = Instant::now();
        let mut l = Liveness::new(S, 5 * S);
        assert!(beats(&mut l, t0, 0, 6)[6]);
        // The database goes away for 20 s: every node's heartbeat is now
        // stale, this one's too.
        assert!(!l.beat(false, t0 + 7 * S, t0 + 7 * S + MS));
        assert!(!l.beat(false, t0 + 26 * S, t0 + 26 * S + MS));
        // Back: the others have not yet had a chance to beat.
        let may = beats(&mut l, t0, 27, 32);
        assert_eq!(may, [false, false, false, false, false, true]);
    }

    /// The pool waits for a stopped database and the beat goes through
    /// when it is back: no failure, but the others could not beat either.
    #[test]
    fn a_beat_that_waited_starts_the_window_again() {
        let t0 = Instant::now();
        let mut l = Liveness::new(S, 5 * S);
        assert!(beats(&mut l, t0, 0, 6)[6]);
        assert!(!l.beat(true, t0 + 7 * S, t0 + 12 * S));
        let may = beats(&mut l, t0, 13, 17);
        assert_eq!(may, [false, false, false, false, true]);
    }

    /// This process was stopped (SIGSTOP) or starved between two beats.
    #[test]
    fn a_late_beat_starts_the_window_again() {
        let t0 = Instant::now();
        let mut l = Liveness::new(S, 5 * S);
        assert!(beats(&mut l, t0, 0, 6)[6]);
        let may = beats(&mut l, t0, 20, 25);
        assert_eq!(may, [false, false, false, false, false, true]);
    }
}
