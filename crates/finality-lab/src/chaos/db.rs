//! The chaos run's database, PostgreSQL or MariaDB, each a private server
//! of the run's own that the fault phase kills and stops; and the checker's
//! reads of it, the same SQL on either.

use anyhow::Context;
use finality_private_pg::{PrivateMaria, PrivatePg};
use sqlx::Row;

/// Which server a run uses (`--database`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Database {
    Postgres,
    Mariadb,
}

/// A private server of the run's own.
pub enum Server {
    Pg(PrivatePg),
    Maria(PrivateMaria),
}

impl Server {
    pub fn start(which: Database) -> Server {
        match which {
            Database::Postgres => Server::Pg(PrivatePg::start()),
            Database::Mariadb => Server::Maria(PrivateMaria::start()),
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Server::Pg(_) => "PostgreSQL",
            Server::Maria(_) => "MariaDB",
        }
    }
    pub fn url(&self) -> String {
        match self {
            Server::Pg(p) => p.url(),
            Server::Maria(m) => m.url(),
        }
    }
    /// Killed (PostgreSQL's immediate mode, MariaDB's SIGKILL) and started.
    pub fn restart_immediate(&self) {
        match self {
            Server::Pg(p) => p.restart_immediate(),
            Server::Maria(m) => m.restart_immediate(),
        }
    }
    /// A clean shutdown.
    pub fn stop(&self) {
        match self {
            Server::Pg(p) => p.stop(false),
            Server::Maria(m) => m.stop(false),
        }
    }
    pub fn start_again(&self) {
        match self {
            Server::Pg(p) => p.start_again(),
            Server::Maria(m) => m.start_again(),
        }
    }
}

/// The checker's connections.
#[derive(Clone)]
pub enum Pool {
    Pg(sqlx::PgPool),
    My(sqlx::MySqlPool),
}

/// `'text'`, quoted for SQL (the run's own worker names only).
pub fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl Pool {
    pub async fn connect(url: &str, max: u32) -> anyhow::Result<Pool> {
        Ok(if url.starts_with("mysql:") {
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
