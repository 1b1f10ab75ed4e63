//! Limits on what one caller can make the server do by failing: failed
//! authentication per source address and per token name, and report
//! uploads in progress at once.
//!
//! A source over its limit gets `429` (with `Retry-After`) for every
//! credential that fails, and one log line per window instead of one per
//! attempt. A valid credential is always let through: finality usually
//! sits behind a proxy, where every client shares one source address, and
//! a throttle that refused valid tokens too would let anyone lock every
//! client (or, by forging a person's session cookies, that person) out of
//! the API. Guessing a token is made hopeless by its length
//! ([`crate::identity::MIN_SECRET`] bytes), not by the throttle; the
//! throttle keeps a flood of failures from flooding the log and says who
//! is failing (`finality_auth_throttled_total`).
//!
//! Written by hand: the rate limiters on crates.io (governor, tower's)
//! limit requests, not failures of a request whose outcome is only known
//! after it ran, and none keys by two things at once.

use std::collections::HashMap;
use std::sync::Mutex;

/// Failures a source address (or a token name) may have in a window
/// before its failures are answered `429`.
pub const AUTH_FAILURES_PER_MINUTE: u32 = 20;
const WINDOW_MS: i64 = 60_000;
/// Addresses tracked at most; past it, windows that have ended are
/// dropped, and if none has, the addresses' counts start over (the token
/// names', bounded by the configuration, are kept).
const MAX_KEYS: usize = 10_000;
/// Report uploads streamed to disk at once (each may be 2 GiB).
pub const CONCURRENT_UPLOADS: usize = 2;
/// Feed reads waiting at once (`GET /v1/events?wait=…`) per token: a
/// reader needs one (a few, with several consumers under one token);
/// thousands cost the server's CPU for nothing (7,600 waiters of one
/// token took 1.4 of 2 cores before the bound).
pub const LONG_POLLS_PER_TOKEN: usize = 64;

/// What the server keeps about failing callers (one per process).
#[derive(Debug)]
pub struct Throttle {
    per_minute: u32,
    failures: Mutex<HashMap<String, Window>>,
    /// Permits for report uploads in progress.
    pub uploads: tokio::sync::Semaphore,
    /// Feed reads waiting, per token name.
    long_polls: std::sync::Arc<Mutex<HashMap<String, usize>>>,
    long_polls_per_token: usize,
    /// The longest one upload may take, however steadily it trickles.
    pub upload_deadline: std::time::Duration,
}

/// The longest a report upload may take by default: 2 GiB at 1.2 MB/s.
/// A client trickling a byte every few seconds would otherwise hold one of
/// the [`CONCURRENT_UPLOADS`] slots for good.
pub const UPLOAD_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// One waiting feed read of a token; its count goes down when dropped.
#[derive(Debug)]
pub struct LongPoll {
    all: std::sync::Arc<Mutex<HashMap<String, usize>>>,
    token: String,
}

impl Drop for LongPoll {
    fn drop(&mut self) {
        let mut map = self.all.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(&self.token) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.token);
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: i64,
    failures: u32,
    warned: bool,
}

/// What a failed authentication is answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Under the limit: the usual 401, logged.
    Refuse,
    /// Over it: 429, retry after this many seconds; `first` for the first
    /// failure over the limit in this window (the one that is logged).
    Throttled { retry_after: u64, first: bool },
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new(AUTH_FAILURES_PER_MINUTE)
    }
}

impl Throttle {
    /// At most `per_minute` failures a minute per source and per name (0:
    /// no limit).
    pub fn new(per_minute: u32) -> Self {
        Throttle {
            per_minute,
            failures: Mutex::new(HashMap::new()),
            uploads: tokio::sync::Semaphore::new(CONCURRENT_UPLOADS),
            long_polls: Default::default(),
            long_polls_per_token: LONG_POLLS_PER_TOKEN,
            upload_deadline: UPLOAD_DEADLINE,
        }
    }

    /// With uploads cut off after `d`.
    pub fn with_upload_deadline(mut self, d: std::time::Duration) -> Self {
        self.upload_deadline = d;
        self
    }

    /// With at most `n` feed reads waiting per token.
    pub fn with_long_polls_per_token(mut self, n: usize) -> Self {
        self.long_polls_per_token = n.max(1);
        self
    }

    /// A waiting feed read for `token`, or `None` when it has as many
    /// waiting as it may (the read is then answered at once, 429).
    pub fn long_poll(&self, token: &str) -> Option<LongPoll> {
        let mut map = self.long_polls.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry(token.to_string()).or_default();
        if *n >= self.long_polls_per_token {
            return None;
        }
        *n += 1;
        Some(LongPoll {
            all: self.long_polls.clone(),
            token: token.to_string(),
        })
    }

    /// How many feed reads `token` may have waiting.
    pub fn long_polls_per_token(&self) -> usize {
        self.long_polls_per_token
    }

    /// Record a failed authentication from `source` (an address) naming
    /// `name` (a configured token's name, when the credential said whose it
    /// was), at `now_ms`. Throttled when either is over its limit.
    pub fn failed(&self, source: Option<&str>, name: Option<&str>, now_ms: i64) -> Verdict {
        if self.per_minute == 0 {
            return Verdict::Refuse;
        }
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_KEYS {
            map.retain(|_, w| now_ms - w.start < WINDOW_MS);
            if map.len() >= MAX_KEYS {
                map.retain(|k, _| k.starts_with("name "));
            }
        }
        let keys = [
            source.map(|s| format!("source {}", network(s))),
            name.map(|n| format!("name {n}")),
        ];
        let mut verdict = Verdict::Refuse;
        for key in keys.into_iter().flatten() {
            let w = map.entry(key).or_insert(Window {
                start: now_ms,
                failures: 0,
                warned: false,
            });
            if now_ms - w.start >= WINDOW_MS {
                *w = Window {
                    start: now_ms,
                    failures: 0,
                    warned: false,
                };
            }
            w.failures = w.failures.saturating_add(1);
            if w.failures > self.per_minute {
                let left = (w.start + WINDOW_MS - now_ms).max(1_000);
                let first = !w.warned;
                w.warned = true;
                let retry_after = u64::try_from(left).map_or(60, |l| l.div_ceil(1_000));
                verdict = match verdict {
                    Verdict::Throttled {
                        retry_after: r,
                        first: f,
                    } => Verdict::Throttled {
                        retry_after: r.max(retry_after),
                        first: f || first,
                    },
                    Verdict::Refuse => Verdict::Throttled { retry_after, first },
                };
            }
        }
        verdict
    }
}

/// The unit one party holds: an IPv4 address, or an IPv6 /64 (a host
/// is given a whole /64, and would otherwise have 2^64 sources).
fn network(source: &str) -> String {
    match source.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
        _ => source.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_the_limit_per_source_and_per_name_then_a_new_window() {
        let t = Throttle::new(3);
        for _ in 0..3 {
            assert_eq!(t.failed(Some("10.0.0.1"), None, 0), Verdict::Refuse);
        }
        assert_eq!(
            t.failed(Some("10.0.0.1"), None, 1_000),
            Verdict::Throttled {
                retry_after: 59,
                first: true
            }
        );
        assert_eq!(
            t.failed(Some("10.0.0.1"), None, 2_000),
            Verdict::Throttled {
                retry_after: 58,
                first: false
            }
        );
        // Another address is its own count; a name is counted across
        // addresses.
        assert_eq!(t.failed(Some("10.0.0.2"), None, 2_000), Verdict::Refuse);
        for i in 0..3 {
            let src = format!("10.1.0.{i}");
            assert_eq!(t.failed(Some(&src), Some("alice"), 2_000), Verdict::Refuse);
        }
        assert!(matches!(
            t.failed(Some("10.1.0.9"), Some("alice"), 2_000),
            Verdict::Throttled { .. }
        ));
        // The window ends.
        assert_eq!(t.failed(Some("10.0.0.1"), None, 60_000), Verdict::Refuse);
        assert_eq!(Throttle::new(0).failed(Some("x"), None, 0), Verdict::Refuse);
    }

    #[test]
    fn the_tracked_keys_are_bounded_and_names_survive() {
        let t = Throttle::new(1);
        t.failed(None, Some("alice"), 0);
        for i in 0..(MAX_KEYS + 10) {
            t.failed(Some(&i.to_string()), None, 0);
        }
        let n = t.failures.lock().map(|m| m.len()).unwrap_or(0);
        assert!(n <= MAX_KEYS, "{n}");
        assert!(matches!(
            t.failed(None, Some("alice"), 1),
            Verdict::Throttled { .. }
        ));
    }

    #[test]
    fn an_ipv6_host_is_its_64() {
        let t = Throttle::new(2);
        for host in ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::9"] {
            t.failed(Some(host), None, 0);
        }
        assert!(matches!(
            t.failed(Some("2001:db8:1:2::77"), None, 0),
            Verdict::Throttled { .. }
        ));
        assert_eq!(t.failed(Some("2001:db8:1:3::1"), None, 0), Verdict::Refuse);
        assert_eq!(network("::ffff:10.0.0.1"), "10.0.0.1");
    }
}
