//! Provider rate limits shared by every node: one token bucket per provider.

mod memory;
pub(crate) mod sql;

use crate::error::Result;
use crate::model::Bucket;
use finality_core::Timestamp;

/// Token buckets in the database, so several nodes share one budget.
#[async_trait::async_trait]
pub trait RateBuckets: Send + Sync {
    /// Take up to `want` tokens from `provider`'s shared bucket, which
    /// refills at `bucket.per_second` and holds at most `bucket.burst`.
    /// Returns how many were granted and the tokens left (fractional), from
    /// which the caller knows when the next one accrues.
    async fn take_tokens(
        &self,
        provider: &str,
        bucket: Bucket,
        want: u32,
        now: Timestamp,
    ) -> Result<(u32, f64)>;
}
