//! The chaos run's database, PostgreSQL or MariaDB, each a private server
//! of the run's own that the fault phase kills and stops, or SQLite, a file
//! of the run's own inside its one node (nothing to kill but the node); and
//! the checker's reads of it, the same SQL on each.

use anyhow::Context;
use finality_core::Clock;
use finality_private_pg::{PrivateMaria, PrivatePg};
use sqlx::Row;

/// Which server a run uses (`--database`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Database {
    Postgres,
    Mariadb,
    /// The embedded default: one node, whose kills are the database's
    /// crashes too (SQLite lives in the node's process).
    Sqlite,
}

/// A private server of the run's own, or SQLite's file.
pub enum Server {
    Pg(PrivatePg),
    Maria(PrivateMaria),
    /// The file, in a directory of the run's own, removed with it.
    Lite(LiteDir),
}

/// A directory of the run's own for SQLite's file (and its WAL), removed
/// when the run ends.
pub struct LiteDir(std::path::PathBuf);

impl Drop for LiteDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Server {
    pub fn start(which: Database) -> anyhow::Result<Server> {
        Ok(match which {
            Database::Postgres => Server::Pg(PrivatePg::start()),
            Database::Mariadb => Server::Maria(PrivateMaria::start()),
            Database::Sqlite => {
                let dir = std::env::temp_dir().join(format!(
                    "finality-chaos-{}-{}",
                    std::process::id(),
                    finality_core::SystemClock.now().0
                ));
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                Server::Lite(LiteDir(dir))
            }
        })
    }
    pub fn name(&self) -> &'static str {
        match self {
            Server::Pg(_) => "PostgreSQL",
            Server::Maria(_) => "MariaDB",
            Server::Lite(_) => "SQLite",
        }
    }
    pub fn url(&self) -> String {
        match self {
            Server::Pg(p) => p.url(),
            Server::Maria(m) => m.url(),
            Server::Lite(d) => format!("sqlite://{}?mode=rwc", d.0.join("chaos.db").display()),
        }
    }
    /// Whether it is a server the fault phase can kill and stop (SQLite
    /// crashes with its node).
    pub fn has_server(&self) -> bool {
        !matches!(self, Server::Lite(_))
    }
    /// Killed (PostgreSQL's immediate mode, MariaDB's SIGKILL) and started.
    pub fn restart_immediate(&self) {
        match self {
            Server::Pg(p) => p.restart_immediate(),
            Server::Maria(m) => m.restart_immediate(),
            Server::Lite(_) => {}
        }
    }
    /// A clean shutdown.
    pub fn stop(&self) {
        match self {
            Server::Pg(p) => p.stop(false),
            Server::Maria(m) => m.stop(false),
            Server::Lite(_) => {}
        }
    }
    pub fn start_again(&self) {
        match self {
            Server::Pg(p) => p.start_again(),
            Server::Maria(m) => m.start_again(),
            Server::Lite(_) => {}
        }
    }
}

/// The checker's connections.
#[derive(Clone)]
pub enum Pool {
    Pg(sqlx::PgPool),
    My(sqlx::MySqlPool),
    Lite(sqlx::SqlitePool),
}

/// `'text'`, quoted for SQL (the run's own worker names only).
pub fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl Pool {
    pub async fn connect(url: &str, max: u32) -> anyhow::Result<Pool> {
        Ok(if url.starts_with("sqlite:") {
            // A reader beside the node's writer: WAL lets both in.
            let opts = <sqlx::sqlite::SqliteConnectOptions as std::str::FromStr>::from_str(url)?
                .busy_timeout(std::time::Duration::from_secs(10));
            Pool::Lite(
                sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(max)
                    .connect_with(opts)
                    .await
                    .context("opening the SQLite file")?,
            )
        } else if url.starts_with("mysql:") {
            Pool::My(
                finality_store::mysql::pool_options(max)
                    .connect(url)
                    .await
                    .context("connecting to MariaDB")?,
            )
        } else {
            Pool::Pg(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(max)
                    .connect(url)
                    .await
                    .context("connecting to PostgreSQL")?,
            )
        })
    }

    /// Every row, each column as text (`None` for NULL): the statement
    /// is sent as text and answered as text on both servers, so one
    /// reading serves every column type.
    pub async fn rows(&self, sql: &str) -> anyhow::Result<Vec<Vec<Option<String>>>> {
        fn texts<R: Row>(r: &R) -> anyhow::Result<Vec<Option<String>>>
        where
            for<'a> Option<String>: sqlx::Decode<'a, R::Database>,
            usize: sqlx::ColumnIndex<R>,
        {
            (0..r.len())
                .map(|i| {
                    r.try_get_unchecked::<Option<String>, _>(i)
                        .map_err(Into::into)
                })
                .collect()
        }
        match self {
            Pool::Pg(p) => sqlx::raw_sql(sql)
                .fetch_all(p)
                .await?
                .iter()
                .map(texts)
                .collect(),
            Pool::My(p) => sqlx::raw_sql(sql)
                .fetch_all(p)
                .await?
                .iter()
                .map(texts)
                .collect(),
            Pool::Lite(p) => sqlx::raw_sql(sql)
                .fetch_all(p)
                .await?
                .iter()
                .map(texts)
                .collect(),
        }
    }

    /// The first column of the first row as a number (`None` for NULL).
    pub async fn number(&self, sql: &str) -> anyhow::Result<Option<i64>> {
        let rows = self.rows(sql).await?;
        let v = rows.first().and_then(|r| r.first().cloned().flatten());
        v.map(|s| s.parse::<i64>().with_context(|| format!("{sql}: {s:?}")))
            .transpose()
    }
}
