//! Token buckets on SQL, shared by every node.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::model::Bucket;
use crate::RateBuckets;
use finality_core::Timestamp;

#[async_trait::async_trait]
impl<B: Backend> RateBuckets for B {
    async fn take_tokens(
        &self,
        provider: &str,
        bucket: Bucket,
        want: u32,
        now: Timestamp,
    ) -> Result<(u32, f64)> {
        let mut tx = self.begin_write().await?;
        let conn: &mut B::Conn = &mut tx;
        let t = "rate_buckets";
        let lock =
            || stmt(<B::Conn as Conn>::SQL.lock_bucket, "locking a rate bucket").text(provider);
        // The bucket locked first: it exists but once per provider, so the
        // insert is run only then. Its conflict clause updates rather than
        // ignores, so it takes the row's write lock, not a shared one that
        // two creators would each hold and then both wait to upgrade
        // (InnoDB's deadlock on `INSERT IGNORE` then `FOR UPDATE`).
        let r = match conn.opt(lock()).await? {
            Some(r) => r,
            None => {
                conn.run(
                    stmt(
                        "INSERT INTO rate_buckets (provider, tokens, updated_at) VALUES ($1, $2, $3) \
                         ON CONFLICT (provider) DO UPDATE SET provider = excluded.provider",
                        "creating a rate bucket",
                    )
                    .text(provider)
                    .real(bucket.burst)
                    .int(now.0),
                )
                .await?;
                conn.opt(lock()).await?.ok_or_else(|| {
                    crate::driver::corrupt(t, format!("bucket `{provider}` vanished"))
                })?
            }
        };
        let (tokens, updated_at) = (r.real("tokens", t)?, r.int("updated_at", t)?);
        let (granted, left) = bucket.take(tokens, Timestamp(updated_at), now, want);
        conn.run(
            stmt(
                "UPDATE rate_buckets SET tokens = $2, updated_at = $3 WHERE provider = $1",
                "taking rate tokens",
            )
            .text(provider)
            .real(left)
            .int(now.0.max(updated_at)),
        )
        .await?;
        tx.commit().await.op("committing rate tokens")?;
        Ok((granted, left))
    }
}
