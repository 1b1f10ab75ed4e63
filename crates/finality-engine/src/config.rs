//! Engine settings (`[engine]` in `finality.toml`).

use finality_core::ConfigError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

fn default_worker_id() -> String {
    format!("worker-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// Recorded as `locked_by` and on every attempt; unique per process.
    pub worker_id: String,
    /// Provider calls in flight at once (the size of the one worker pool).
    pub concurrency: usize,
    /// Most jobs claimed in one statement.
    pub batch_size: u32,
    /// How long a claim is leased. A crashed worker's jobs fall due again
    /// after this; it must comfortably exceed the providers' total timeout.
    #[serde(with = "humantime_serde")]
    pub lease: Duration,
    /// Longest the producer sleeps without checking the database, a backstop
    /// for wake-ups that never came (another process on SQLite).
    #[serde(with = "humantime_serde")]
    pub idle_check: Duration,
    /// Jobs due within this window are claimed ahead and held in memory
    /// until their time, so each poll starts within milliseconds of
    /// `next_poll_at`. Zero turns the timer off (claim only what is due).
    #[serde(with = "humantime_serde")]
    pub lookahead: Duration,
    /// Most claimed jobs held waiting (for their time or a free worker) on
    /// top of the `concurrency` executing.
    pub max_held: usize,
    /// How often this node records that it is alive.
    #[serde(with = "humantime_serde")]
    pub heartbeat_every: Duration,
    /// A node silent this long is taken to be dead: the others release its
    /// leases, so its polls run again within about this long of its death
    /// instead of after `lease`. At least `heartbeat_every` plus the
    /// providers' call time, or the dead node's last call may still be open
    /// at the provider when its successor asks about the same payment.
    #[serde(with = "humantime_serde")]
    pub dead_after: Duration,
    /// Share each claim round between the accounts (and providers) with
    /// due polls, so one account's backlog does not delay another's polls
    /// (docs/ACCOUNTS.md). `false`: first due first across all of them.
    pub fair_claiming: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            worker_id: default_worker_id(),
            concurrency: 32,
            batch_size: 64,
            lease: Duration::from_secs(60),
            idle_check: Duration::from_secs(1),
            lookahead: Duration::from_millis(500),
            max_held: 1024,
            heartbeat_every: Duration::from_secs(2),
            dead_after: Duration::from_secs(6),
            fair_claiming: true,
        }
    }
}

impl EngineConfig {
    /// Returns the offending field and why.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.concurrency == 0 || self.concurrency > 10_000 {
            return Err(ConfigError::new(
                "concurrency",
                "must be between 1 and 10000",
            ));
        }
        if self.batch_size == 0 {
            return Err(ConfigError::new("batch_size", "must be at least 1"));
        }
        if self.lease < Duration::from_secs(1) {
            return Err(ConfigError::new("lease", "must be at least 1s"));
        }
        if self.lookahead * 2 > self.lease {
            return Err(ConfigError::new(
                "lookahead",
                "must be at most half the lease",
            ));
        }
        if self.max_held > 1_000_000 {
            return Err(ConfigError::new("max_held", "must be at most 1000000"));
        }
        if self.heartbeat_every.is_zero() {
            return Err(ConfigError::new("heartbeat_every", "must be > 0"));
        }
        if self.dead_after < self.heartbeat_every * 2 {
            return Err(ConfigError::new(
                "dead_after",
                "must be at least twice heartbeat_every (one late heartbeat is not a death)",
            ));
        }
        if self.idle_check.is_zero() {
            return Err(ConfigError::new("idle_check", "must be > 0"));
        }
        Ok(())
    }
}
