//! Token buckets in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::memory::MemStore;
use crate::model::*;
use crate::RateBuckets;
use finality_core::Timestamp;

#[async_trait::async_trait]
impl RateBuckets for MemStore {
    async fn take_tokens(
        &self,
        provider: &str,
        bucket: Bucket,
        want: u32,
        now: Timestamp,
    ) -> Result<(u32, f64)> {
        let mut s = self.state.lock().await;
        let (tokens, updated_at) = *s
            .buckets
            .entry(provider.to_string())
            .or_insert((bucket.burst, now.0));
        let (granted, left) = bucket.take(tokens, Timestamp(updated_at), now, want);
        s.buckets
            .insert(provider.to_string(), (left, now.0.max(updated_at)));
        Ok((granted, left))
    }
}
