//! The store conformance suite on both backends (and the in-memory store),
//! plus the transactional enqueue paths that are backend-specific by nature.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod archive_columns;
mod claim_plan;
mod enqueue;
mod feed_order;
mod feed_tail;
mod hostile_statement_timeout;
mod partitions;
mod upgrade;

use finality_testkit::conformance;

/// The whole conformance suite, every case on a fresh database: a case
/// added to the suite runs here without being listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_on_postgres() {
    conformance::exercise(finality_testkit::Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_on_sqlite() {
    conformance::exercise(finality_testkit::Backend::Sqlite).await;
}

/// The in-memory store that simulations run on keeps the same contract.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_in_memory() {
    conformance::exercise_each("memory", || {
        std::sync::Arc::new(finality_store::memory::MemStore::new())
    })
    .await;
}
