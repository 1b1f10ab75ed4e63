//! The contract every [`Store`] adapter must meet, one module of cases per
//! role, and [`exercise`], which runs them against fresh stores of one
//! backend, so PostgreSQL, SQLite and the in-memory store are held to one
//! suite. A new case cannot be left off its role's list: a test checks that
//! each module's `CASES` names every case in it.

use finality_store::Store;
use std::sync::Arc;

/// One conformance case: a fresh store in, panics on a broken contract.
pub type Case = fn(Arc<dyn Store>) -> futures::future::BoxFuture<'static, ()>;

macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        &[$((stringify!($case), |db| Box::pin($case(db)))),*]
    };
}

pub mod accounts;
pub mod amounts;
pub mod cursors;
pub mod feed;
pub mod gauges;
pub mod inbox;
pub mod payments;
pub mod poll_queue;
pub mod rate_buckets;
pub mod reconciliations;
pub mod retention;
pub mod review;
pub mod scopes;
mod support;
pub mod sweep;

pub use support::{drain_inbox, inbox_event, merchant_payment, new_payment, register, T0};

/// Every role's cases, by role (its module's name).
pub const ROLES: &[(&str, &[(&str, Case)])] = &[
    ("payments", payments::CASES),
    ("poll_queue", poll_queue::CASES),
    ("inbox", inbox::CASES),
    ("feed", feed::CASES),
    ("review", review::CASES),
    ("rate_buckets", rate_buckets::CASES),
    ("cursors", cursors::CASES),
    ("sweep", sweep::CASES),
    ("reconciliations", reconciliations::CASES),
    ("gauges", gauges::CASES),
    ("retention", retention::CASES),
    ("accounts", accounts::CASES),
    ("scopes", scopes::CASES),
    ("amounts", amounts::CASES),
];

/// The cases of `role`.
///
/// # Panics
/// On a role [`ROLES`] does not name.
pub fn cases_of(role: &str) -> &'static [(&'static str, Case)] {
    ROLES
        .iter()
        .find(|(r, _)| *r == role)
        .map(|(_, c)| *c)
        .unwrap_or_else(|| panic!("no conformance role `{role}`"))
}

/// Run every case of `role` on a fresh database of `backend`.
pub async fn exercise_role(role: &str, backend: crate::Backend) {
    for (name, case) in cases_of(role) {
        eprintln!("conformance case {role}::{name} on {backend:?}");
        let db = backend.open().await;
        case(db.store.clone()).await;
    }
}

/// Run every case of every role on fresh databases of `backend`.
pub async fn exercise(backend: crate::Backend) {
    for (role, _) in ROLES {
        exercise_role(role, backend).await;
    }
}

/// The cases of `role` that the in-memory store simulations use keeps:
/// all of them, but for retention, which it does not keep and refuses
/// ([`retention::IN_MEMORY`] checks that it does).
pub fn in_memory_cases_of(role: &str) -> &'static [(&'static str, Case)] {
    match role {
        "retention" => retention::IN_MEMORY,
        _ => cases_of(role),
    }
}

/// Run every case of `role` the in-memory store keeps against a fresh one
/// from `open` each time.
pub async fn exercise_in_memory(role: &str, open: impl Fn() -> Arc<dyn Store>) {
    for (name, case) in in_memory_cases_of(role) {
        eprintln!("conformance case {role}::{name} in memory");
        case(open()).await;
    }
}

#[cfg(test)]
mod tests {
    /// Every `pub async fn …(db: Arc<dyn Store>)` of a role's module is in
    /// that module's `CASES`, every role has cases, and every module of
    /// cases is a role.
    #[test]
    fn every_case_is_exercised() {
        let sources = [
            ("payments", include_str!("payments.rs")),
            ("poll_queue", include_str!("poll_queue.rs")),
            ("inbox", include_str!("inbox.rs")),
            ("feed", include_str!("feed.rs")),
            ("review", include_str!("review.rs")),
            ("rate_buckets", include_str!("rate_buckets.rs")),
            ("cursors", include_str!("cursors.rs")),
            ("sweep", include_str!("sweep.rs")),
            ("reconciliations", include_str!("reconciliations.rs")),
            ("gauges", include_str!("gauges.rs")),
            ("retention", include_str!("retention.rs")),
            ("accounts", include_str!("accounts.rs")),
            ("scopes", include_str!("scopes.rs")),
            ("amounts", include_str!("amounts.rs")),
        ];
        assert_eq!(sources.len(), super::ROLES.len());
        let mut total = 0;
        for (role, source) in sources {
            let mut names: Vec<&str> = super::cases_of(role).iter().map(|c| c.0).collect();
            assert!(!names.is_empty(), "role `{role}` has no case");
            total += names.len();
            if role == "retention" {
                names.extend(super::retention::IN_MEMORY.iter().map(|c| c.0));
            }
            for line in source.lines() {
                let Some(rest) = line.strip_prefix("pub async fn ") else {
                    continue;
                };
                if let Some((name, args)) = rest.split_once('(') {
                    if args.starts_with("db: Arc<dyn Store>)") {
                        assert!(
                            names.contains(&name),
                            "conformance case `{name}` is not in {role}::CASES"
                        );
                    }
                }
            }
        }
        assert!(total >= 31, "{total} cases");
    }
}
