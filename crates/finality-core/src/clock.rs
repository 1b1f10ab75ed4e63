//! Time as finality sees it: one [`Clock`] for the whole engine.
//!
//! SQL never calls `now()`; every timestamp written comes from a `Clock`, so
//! the same code runs on wall time in production and on virtual time in the
//! demo, the simulator and the tests.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// Milliseconds since the Unix epoch. Stored as `BIGINT` in both databases so
/// that comparisons in SQL are plain integer range scans on either backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    /// `self + d`, saturating instead of overflowing on absurd durations.
    pub fn plus(self, d: Duration) -> Timestamp {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Timestamp(self.0.saturating_add(ms))
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0))
    }

    /// An RFC 3339 time (any offset), as people type it into a form or a flag.
    pub fn parse_rfc3339(text: &str) -> Result<Timestamp, chrono::ParseError> {
        chrono::DateTime::parse_from_rfc3339(text.trim()).map(|d| Timestamp(d.timestamp_millis()))
    }

    /// RFC 3339 in UTC with milliseconds, the form every API response uses.
    pub fn to_rfc3339(self) -> String {
        match chrono::DateTime::from_timestamp_millis(self.0) {
            Some(dt) => dt.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            None => format!("@{}ms", self.0),
        }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// The one source of "now". Implementations must be monotone enough for
/// scheduling: a virtual clock never goes backwards.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;

    /// A virtual clock, if this is one. An idle engine on a virtual clock
    /// jumps time to the next due poll instead of sleeping.
    fn as_virtual(&self) -> Option<&VirtualClock> {
        None
    }
}

/// Wall-clock time.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp(chrono::Utc::now().timestamp_millis())
    }
}

/// Time that moves only when told to. Shared (behind an `Arc`) by the engine,
/// the simulator and the test or demo driving them.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now_ms: AtomicI64,
}

impl VirtualClock {
    pub fn new(start: Timestamp) -> Self {
        VirtualClock {
            now_ms: AtomicI64::new(start.0),
        }
    }

    /// Move time forward to `t`; a `t` in the past changes nothing.
    pub fn advance_to(&self, t: Timestamp) {
        self.now_ms.fetch_max(t.0, Ordering::SeqCst);
    }

    pub fn advance(&self, d: Duration) {
        let now = self.now();
        self.advance_to(now.plus(d));
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.now_ms.load(Ordering::SeqCst))
    }

    fn as_virtual(&self) -> Option<&VirtualClock> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_never_goes_back() {
        let c = VirtualClock::new(Timestamp(1_000));
        c.advance_to(Timestamp(500));
        assert_eq!(c.now(), Timestamp(1_000));
        c.advance(Duration::from_secs(2));
        assert_eq!(c.now(), Timestamp(3_000));
    }

    #[test]
    fn formats_rfc3339_millis() {
        assert_eq!(Timestamp(1_500).to_rfc3339(), "1970-01-01T00:00:01.500Z");
        assert_eq!(Timestamp(5_000).since(Timestamp(7_000)), Duration::ZERO);
    }
}
