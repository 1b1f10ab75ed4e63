//! The store conformance suite on both backends, plus the transactional
//! enqueue paths that are backend-specific by nature.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod claim_plan;
mod enqueue;
mod upgrade;

use finality_store::{conformance, testing};

macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod postgres {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let db = testing::postgres(10).await;
                conformance::$case(db.store.clone()).await;
            })*
        }
        mod sqlite {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let db = testing::sqlite().await;
                conformance::$case(db.store.clone()).await;
            })*
        }
    };
}

on_both_backends!(
    register_is_idempotent,
    expired_lease_is_fenced,
    apply_is_idempotent_and_monotone,
    reschedule_give_up_and_settle_later,
    claim_takes_only_due_jobs_in_order,
    concurrent_claims_never_overlap,
    list_filters_and_pages,
    concurrent_duplicate_reports_apply_once,
    inbox_dedupes_and_applies_once,
    inbox_out_of_order_is_ignored_with_reason,
    inbox_failure_after_success_is_kept_for_review,
    inbox_orphan_is_applied_on_registration,
    inbox_failures_are_retried,
    feed_destinations_and_pruning,
    complete_batch_fences_each_completion,
    reschedule_give_up_and_settle_later_batched,
    rate_bucket_grants_each_token_once,
    merchant_ref_registration_and_recording,
    merchant_ref_webhooks,
);
