//! The store conformance suite per role on every backend and the in-memory store,
//! plus the transactional enqueue paths that are backend-specific by nature.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod archive_columns;
mod claim_plan;
mod enqueue;
mod event_ids;
mod feed_epochs;
mod feed_order;
mod feed_tail;
mod hostile_statement_timeout;
mod kept_connections;
mod partitions;
mod upgrade;

/// The conformance suite, one test per role and store: `conformance_suite::
/// <role>::on_postgres`, `on_sqlite`, `on_mysql` and `in_memory`, each running every case
/// of that role on a fresh store (a case added to a role's module runs here
/// without being listed).
macro_rules! conformance_by_role {
    ($($role:ident),* $(,)?) => {
        mod conformance_suite {
            $(mod $role {
                use finality_testkit::conformance;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn on_postgres() {
                    let role = stringify!($role);
                    conformance::exercise_role(role, finality_testkit::Backend::Postgres).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn on_sqlite() {
                    let role = stringify!($role);
                    conformance::exercise_role(role, finality_testkit::Backend::Sqlite).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn on_mysql() {
                    let role = stringify!($role);
                    conformance::exercise_role(role, finality_testkit::Backend::Mysql).await;
                }

                /// The in-memory store that simulations run on keeps the
                /// same contract.
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn in_memory() {
                    conformance::exercise_in_memory(stringify!($role), || {
                        std::sync::Arc::new(finality_store::memory::MemStore::new())
                    })
                    .await;
                }
            })*

            /// Every role of the suite has its tests here.
            #[test]
            fn every_role_is_run() {
                let here = [$(stringify!($role)),*];
                let roles: Vec<&str> = finality_testkit::conformance::ROLES.iter().map(|r| r.0).collect();
                assert_eq!(here.to_vec(), roles);
            }
        }
    };
}

conformance_by_role!(
    payments,
    poll_queue,
    inbox,
    feed,
    review,
    rate_buckets,
    cursors,
    sweep,
    reconciliations,
    gauges,
    retention,
    accounts,
    scopes,
    amounts
);
