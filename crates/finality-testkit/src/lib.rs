//! What finality's tests share, kept out of the production crates: the
//! store conformance suite, a fresh database per test, ports, and the macro
//! that runs a test on both backends. Only ever a dev-dependency.
//!
//! # Layout
//! - [`conformance`]: the contract every `Store` adapter meets, one module of
//!   cases per role, and [`conformance::exercise_role`], which runs a role's.
//! - [`testing`]: a migrated store in a PostgreSQL schema or SQLite file of
//!   its own.
//! - [`private_pg`]: a PostgreSQL server of a test's own, to stop and restart.
//! - [`sshd`]: an OpenSSH server of a test's own (PayPal's SFTP reports).
#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod conformance;
/// A PostgreSQL server of a test's own (the crate `finality-private-pg`).
pub use finality_private_pg as private_pg;
pub mod sshd;
pub mod testing;

/// The backends every store-facing test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
    /// MariaDB (or MySQL) at `MYSQL_URL` or the machine's default.
    Mysql,
}

impl Backend {
    /// A migrated store of this backend in a database of its own.
    pub async fn open(self) -> testing::TestDb {
        match self {
            Backend::Postgres => testing::postgres(10).await,
            Backend::Sqlite => testing::sqlite().await,
            Backend::Mysql => testing::mysql(10).await,
        }
    }
}

/// A port free on loopback now (for a child process to bind).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("binding a port on loopback")
        .local_addr()
        .expect("a bound socket has an address")
        .port()
}

/// Define each named `async fn case(backend: Backend)` of the calling
/// module as three tests, `postgres::case`, `sqlite::case` and
/// `mysql::case`.
#[macro_export]
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case($crate::Backend::Postgres).await;
            })*
        }
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case($crate::Backend::Sqlite).await;
            })*
        }
        mod mysql {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case($crate::Backend::Mysql).await;
            })*
        }
    };
}
