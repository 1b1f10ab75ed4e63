//! Fresh databases for tests: a PostgreSQL schema, a MariaDB database or a
//! SQLite file per test.
//!
//! PostgreSQL comes from `DATABASE_URL` or the local default
//! (`postgres://postgres@127.0.0.1:5432/postgres`); each test gets its own
//! schema inside a `finality_test` database, so tests run in parallel without
//! seeing each other's rows.

use finality_store::mysql::MySqlStore;
use finality_store::postgres::PgStore;
use finality_store::sqlite::SqliteStore;
use finality_store::Store;
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

/// The PostgreSQL server tests use when `DATABASE_URL` is not set.
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The backend-specific handle, for tests that need the raw pool.
#[derive(Debug, Clone)]
pub enum Backend {
    Postgres(PgStore),
    Sqlite(SqliteStore),
    Mysql(MySqlStore),
}

/// A migrated store in a database of its own; the SQLite file is removed
/// when this is dropped.
pub struct TestDb {
    pub store: Arc<dyn Store>,
    pub backend: Backend,
    /// A URL that opens this same database (for a second process or node).
    pub url: String,
    sqlite_path: Option<PathBuf>,
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some(p) = &self.sqlite_path {
            for suffix in ["", "-wal", "-shm"] {
                let mut f = p.clone().into_os_string();
                f.push(suffix);
                let _ = std::fs::remove_file(f);
            }
        }
    }
}

pub fn pg_base_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_string())
}

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// A fresh PostgreSQL schema, migrated. Panics with a clear message when the
/// server is not reachable: these tests need a real PostgreSQL.
pub async fn postgres(max_connections: u32) -> TestDb {
    let base = pg_base_url();
    let admin = PgConnectOptions::from_str(&base).expect("DATABASE_URL is a postgres:// URL");
    let mut conn = admin
        .connect()
        .await
        .unwrap_or_else(|e| panic!("tests need PostgreSQL at {base} (set DATABASE_URL): {e}"));
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'finality_test')",
    )
    .fetch_one(&mut conn)
    .await
    .expect("query pg_database");
    if !exists {
        // Parallel tests race to create it; losing the race is fine.
        let _ = sqlx::query("CREATE DATABASE finality_test")
            .execute(&mut conn)
            .await;
    }
    let _ = conn.close().await;

    let db_opts = admin.clone().database("finality_test");
    let schema = unique("t");
    let mut conn = db_opts.connect().await.expect("connect to finality_test");
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&mut conn)
        .await
        .expect("create test schema");
    let _ = conn.close().await;

    let opts = db_opts.options([("search_path", schema.as_str())]);
    let pg = PgStore::connect_with(opts, max_connections)
        .await
        .expect("connect test pool");
    pg.migrate().await.expect("migrate test schema");
    let head = base.split('?').next().unwrap_or_default();
    let head = head.rsplit_once('/').map_or(head, |(h, _)| h);
    let url = format!("{head}/finality_test?options=-c%20search_path%3D{schema}");
    TestDb {
        store: Arc::new(pg.clone()),
        backend: Backend::Postgres(pg),
        url,
        sqlite_path: None,
    }
}

/// The database at `url` (a private server's, say), migrated.
pub async fn postgres_at(url: &str, max_connections: u32) -> TestDb {
    let opts = PgConnectOptions::from_str(url).expect("a postgres:// URL");
    let pg = PgStore::connect_with(opts, max_connections)
        .await
        .expect("connect to the private server");
    pg.migrate().await.expect("migrate");
    TestDb {
        store: Arc::new(pg.clone()),
        backend: Backend::Postgres(pg),
        url: url.to_string(),
        sqlite_path: None,
    }
}

/// A store on a hot standby at `url`: read-only, so not migrated (it has
/// its primary's schema).
pub async fn postgres_at_standby(url: &str, max_connections: u32) -> TestDb {
    let opts = PgConnectOptions::from_str(url).expect("a postgres:// URL");
    let pg = PgStore::connect_with(opts, max_connections)
        .await
        .expect("connect to the private standby");
    TestDb {
        store: Arc::new(pg.clone()),
        backend: Backend::Postgres(pg),
        url: url.to_string(),
        sqlite_path: None,
    }
}

/// A fresh SQLite file, migrated, then reopened through a pool of
/// `max_connections` whose connection options `tune` changes: a page limit
/// that makes the disk "full", a read-only open. Those are per-connection
/// settings, so they cannot be applied to a store opened the usual way.
pub async fn sqlite_with(
    max_connections: u32,
    tune: impl FnOnce(SqliteConnectOptions) -> SqliteConnectOptions,
) -> TestDb {
    let mut first = sqlite().await;
    let path = first.sqlite_path.take().expect("a SQLite test database");
    let url = first.url.clone();
    if let Backend::Sqlite(lite) = &first.backend {
        lite.pool().close().await;
    }
    drop(first);
    let opts = SqliteConnectOptions::from_str(&url)
        .expect("a sqlite:// URL")
        .busy_timeout(std::time::Duration::from_secs(10))
        .foreign_keys(true);
    let pool = finality_store::sqlite::pool_options(max_connections)
        .connect_with(tune(opts))
        .await
        .expect("reopen test sqlite");
    let lite = SqliteStore::from_pool(pool);
    TestDb {
        store: Arc::new(lite.clone()),
        backend: Backend::Sqlite(lite),
        url,
        sqlite_path: Some(path),
    }
}

/// The MariaDB or MySQL server tests use when `MYSQL_URL` is not set.
pub const DEFAULT_MYSQL_URL: &str = "mysql://root@127.0.0.1:3306";

pub fn mysql_base_url() -> String {
    std::env::var("MYSQL_URL").unwrap_or_else(|_| DEFAULT_MYSQL_URL.to_string())
}

/// A fresh MariaDB/MySQL database (`finality_t_…`), migrated. Panics with
/// a clear message when the server is not reachable.
pub async fn mysql(max_connections: u32) -> TestDb {
    let base = mysql_base_url();
    let base = base.trim_end_matches('/');
    let name = unique("finality_t");
    let mut conn = sqlx::mysql::MySqlConnectOptions::from_str(base)
        .expect("MYSQL_URL is a mysql:// URL")
        .connect()
        .await
        .unwrap_or_else(|e| panic!("tests need MariaDB or MySQL at {base} (set MYSQL_URL): {e}"));
    sqlx::query(&format!(
        "CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    ))
    .execute(&mut conn)
    .await
    .expect("create the test database");
    let _ = conn.close().await;
    let url = format!("{base}/{name}");
    let my = MySqlStore::connect(&url, max_connections)
        .await
        .expect("connect test pool");
    my.migrate().await.expect("migrate the test database");
    TestDb {
        store: Arc::new(my.clone()),
        backend: Backend::Mysql(my),
        url,
        sqlite_path: None,
    }
}

/// A fresh SQLite file in the temp directory, migrated.
pub async fn sqlite() -> TestDb {
    let path = std::env::temp_dir().join(format!("{}.db", unique("finality_test")));
    let url = format!("sqlite://{}", path.display());
    let lite = SqliteStore::connect(&url, 4)
        .await
        .expect("open test sqlite");
    lite.migrate().await.expect("migrate test sqlite");
    TestDb {
        store: Arc::new(lite.clone()),
        backend: Backend::Sqlite(lite),
        url,
        sqlite_path: Some(path),
    }
}
