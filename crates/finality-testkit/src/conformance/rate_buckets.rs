//! Shared token buckets: [`finality_store::RateBuckets`].

use super::support::*;
use super::Case;
use finality_core::Timestamp;
use finality_store::model::*;
use finality_store::Store;
use std::sync::Arc;

/// The shared token bucket: never more than the burst at once, refilled by
/// time, and concurrent takers (several nodes) never share a token.
pub async fn rate_bucket_grants_each_token_once(db: Arc<dyn Store>) {
    let b = Bucket {
        per_second: 50.0,
        burst: 10.0,
    };
    let (n, left) = db.take_tokens("p", b, 20, T0).await.unwrap();
    assert_eq!((n, left), (10, 0.0), "a full bucket gives its burst");
    assert_eq!(db.take_tokens("p", b, 5, T0).await.unwrap().0, 0);
    let t1 = Timestamp(T0.0 + 100);
    assert_eq!(
        db.take_tokens("p", b, 10, t1).await.unwrap().0,
        5,
        "50/s × 0.1 s"
    );
    let t2 = Timestamp(T0.0 + 10_000);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            db.take_tokens("p", b, 5, t2).await.unwrap().0
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 10, "eight takers share one burst");
    assert_eq!(
        db.take_tokens("other", b, 3, t2).await.unwrap().0,
        3,
        "buckets are per provider"
    );
}

/// This role's cases, each run on a fresh store.
pub const CASES: &[(&str, Case)] = cases![rate_bucket_grants_each_token_once,];
