//! A provider's rate limit, held across every node: tokens come from one
//! bucket in the database ([`finality_store::RateBuckets::take_tokens`]), leased a few at a time
//! and used at once, so several `finality serve` processes together stay
//! within `per_second` (plus `burst`) while each asks the database only
//! about ten times a second per provider.
//!
//! A poll waits (holding its worker permit) up to `max_wait` for a token;
//! if none comes, it is deferred to when one should, counting nothing.

use finality_core::{Clock, Timestamp};
use finality_store::{Bucket, RateBuckets};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long leased tokens stay usable. Short, so a node cannot sit on
/// tokens and spend them later on top of other nodes' (which would break
/// the limit over a window). A node leases only as many as it has polls
/// waiting, so they are normally spent within a millisecond.
const LEASE_VALIDITY: Duration = Duration::from_millis(50);

/// The share of the configured rate the bucket refills at. A call reaches
/// the provider a little after its token was granted, and that delay varies
/// by a few milliseconds; aiming 5 % under the limit keeps the provider's
/// own one-second windows under it too.
const HEADROOM: f64 = 0.95;

#[derive(Default)]
struct Local {
    tokens: u32,
    valid_until: Timestamp,
    /// No point asking the database before this (the bucket was empty).
    next_try: Timestamp,
}

struct Provider {
    bucket: Bucket,
    local: Mutex<Local>,
    /// One lease request at a time per provider on this node.
    leasing: tokio::sync::Mutex<()>,
    waiting: AtomicU32,
}

/// Every rate-limited provider's tokens on this node.
pub struct RateLimits {
    buckets: Arc<dyn RateBuckets>,
    clock: Arc<dyn Clock>,
    /// Grows when an account with a limit of its own is first polled.
    providers: std::sync::RwLock<HashMap<String, Arc<Provider>>>,
    max_wait: Duration,
}

fn limiter(bucket: Bucket) -> Provider {
    Provider {
        bucket: Bucket {
            per_second: bucket.per_second * HEADROOM,
            burst: bucket.burst,
        },
        local: Mutex::default(),
        leasing: tokio::sync::Mutex::new(()),
        waiting: AtomicU32::new(0),
    }
}

impl RateLimits {
    pub fn new(
        store: Arc<dyn RateBuckets>,
        clock: Arc<dyn Clock>,
        buckets: impl IntoIterator<Item = (String, Bucket)>,
        max_wait: Duration,
    ) -> Self {
        let providers = buckets
            .into_iter()
            .map(|(name, bucket)| (name, Arc::new(limiter(bucket))))
            .collect();
        RateLimits {
            buckets: store,
            clock,
            providers: std::sync::RwLock::new(providers),
            max_wait,
        }
    }

    /// Limit `name` (an account's scope) to `bucket` from now on, if it is
    /// not limited yet or its limit changed.
    pub fn ensure(&self, name: &str, bucket: Bucket) {
        let want = limiter(bucket).bucket;
        {
            let map = self.providers.read().unwrap_or_else(|p| p.into_inner());
            if map.get(name).is_some_and(|p| p.bucket == want) {
                return;
            }
        }
        self.providers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), Arc::new(limiter(bucket)));
    }

    /// Take one token for a call to `provider` (at once if it has no
    /// limit). `Err(t)`: none within `max_wait`; try again at `t`.
    pub async fn acquire(&self, provider: &str) -> Result<(), Timestamp> {
        let Some(p) = self
            .providers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(provider)
            .cloned()
        else {
            return Ok(());
        };
        p.waiting.fetch_add(1, Ordering::Relaxed);
        let out = self.acquire_from(provider, &p).await;
        p.waiting.fetch_sub(1, Ordering::Relaxed);
        out
    }

    fn take_local(&self, p: &Provider, now: Timestamp) -> Result<(), Timestamp> {
        let mut l = p.local.lock().unwrap_or_else(|e| e.into_inner());
        if l.tokens > 0 && now < l.valid_until {
            l.tokens -= 1;
            return Ok(());
        }
        l.tokens = 0;
        Err(l.next_try)
    }

    async fn acquire_from(&self, name: &str, p: &Provider) -> Result<(), Timestamp> {
        let deadline = self.clock.now().plus(self.max_wait);
        loop {
            let now = self.clock.now();
            let next_try = match self.take_local(p, now) {
                Ok(()) => return Ok(()),
                Err(t) => t,
            };
            if next_try <= now {
                let _one = p.leasing.lock().await;
                let now = self.clock.now();
                // Another task may have leased while this one waited.
                if self.take_local(p, now).is_ok() {
                    return Ok(());
                }
                let cap = (p.bucket.per_second / 10.0).ceil().max(1.0) as u32;
                let want = p.waiting.load(Ordering::Relaxed).clamp(1, cap);
                match self.buckets.take_tokens(name, p.bucket, want, now).await {
                    Ok((granted, left)) => {
                        let mut l = p.local.lock().unwrap_or_else(|e| e.into_inner());
                        if granted > 0 {
                            l.tokens = granted - 1;
                            l.valid_until = now.plus(LEASE_VALIDITY);
                            return Ok(());
                        }
                        let secs = ((1.0 - left) / p.bucket.per_second).max(0.001);
                        l.next_try = now.plus(Duration::from_secs_f64(secs));
                    }
                    Err(e) => {
                        tracing::warn!(provider = name, error = %e, "leasing rate tokens failed");
                        let mut l = p.local.lock().unwrap_or_else(|e| e.into_inner());
                        l.next_try = now.plus(Duration::from_millis(200));
                    }
                }
                continue;
            }
            if next_try > deadline {
                return Err(next_try);
            }
            let wait = next_try.since(now);
            if self.clock.as_virtual().is_some() {
                // Virtual time only moves when the engine is idle: defer.
                return Err(next_try);
            }
            tokio::time::sleep(wait).await;
        }
    }
}
