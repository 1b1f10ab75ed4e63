//! Throw-away databases for the benchmark: a fresh PostgreSQL schema, a
//! fresh MariaDB database or a fresh SQLite file per measurement, and bulk
//! seeding in plain SQL.

use anyhow::Context;
use finality_store::Store;
use sqlx::{ConnectOptions, Connection};
use std::path::PathBuf;
use std::sync::Arc;

pub enum Where {
    Postgres {
        url: String,
        schema: String,
    },
    Sqlite {
        path: PathBuf,
    },
    /// `url` is the server's (no database); `db` the scratch database.
    Mysql {
        url: String,
        db: String,
    },
}

/// A store in a fresh schema or file; `drop_it` removes it.
pub struct Scratch {
    pub store: Arc<dyn Store>,
    pub at: Where,
}

impl Scratch {
    /// `kind` is `postgres`, `sqlite` or `mysql`; `url` the server's
    /// (PostgreSQL's or, for `mysql`, MariaDB's).
    pub async fn new(kind: &str, url: &str, tag: &str, pool: u32) -> anyhow::Result<Self> {
        if kind == "mysql" {
            let db = format!("finality_bench_{tag}");
            let url = url.trim_end_matches('/').to_string();
            let mut conn = my_conn(&url).await?;
            sqlx::raw_sql(&format!(
                "DROP DATABASE IF EXISTS {db}; \
                 CREATE DATABASE {db} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            ))
            .execute(&mut *conn)
            .await?;
            let store = finality_store::open(&format!("{url}/{db}"), pool).await?;
            return Ok(Scratch {
                store,
                at: Where::Mysql { url, db },
            });
        }
        if kind == "sqlite" {
            let path = std::env::temp_dir().join(format!("finality-bench-{tag}.db"));
            remove_sqlite(&path);
            let store = finality_store::open(&format!("sqlite://{}", path.display()), 4).await?;
            return Ok(Scratch {
                store,
                at: Where::Sqlite { path },
            });
        }
        let schema = format!("finality_bench_{tag}");
        let mut conn = pg_options(url)?
            .connect()
            .await
            .context("cannot connect to PostgreSQL")?;
        sqlx::raw_sql(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .execute(&mut conn)
        .await?;
        let pg = finality_store::postgres::PgStore::connect_with(
            pg_options(url)?.options([("search_path", schema.as_str())]),
            pool,
        )
        .await?;
        pg.migrate().await?;
        Ok(Scratch {
            store: Arc::new(pg),
            at: Where::Postgres {
                url: url.to_string(),
                schema,
            },
        })
    }

    pub fn schema(&self) -> Option<&str> {
        match &self.at {
            Where::Postgres { schema, .. } => Some(schema),
            Where::Sqlite { .. } | Where::Mysql { .. } => None,
        }
    }

    /// Run SQL on a connection of its own: `;`-separated statements, each
    /// in its own transaction (VACUUM cannot run inside one). Only for the
    /// benchmark's own text, which has no `;` inside literals.
    pub async fn exec(&self, sql: &str) -> anyhow::Result<()> {
        for stmt in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            self.exec_one(stmt).await?;
        }
        Ok(())
    }

    async fn exec_one(&self, sql: &str) -> anyhow::Result<()> {
        match &self.at {
            Where::Postgres { url, schema } => {
                sqlx::raw_sql(sql)
                    .execute(&mut pg_conn(url, schema).await?)
                    .await?;
            }
            Where::Sqlite { path } => {
                sqlx::raw_sql(sql)
                    .execute(&mut lite_conn(path).await?)
                    .await?;
            }
            Where::Mysql { url, db } => {
                sqlx::raw_sql(sql)
                    .execute(&mut *my_conn(&format!("{url}/{db}")).await?)
                    .await?;
            }
        }
        Ok(())
    }

    /// A single number from SQL.
    pub async fn scalar(&self, sql: &str) -> anyhow::Result<i64> {
        Ok(match &self.at {
            Where::Postgres { url, schema } => {
                sqlx::query_scalar(sql)
                    .fetch_one(&mut pg_conn(url, schema).await?)
                    .await?
            }
            Where::Sqlite { path } => {
                sqlx::query_scalar(sql)
                    .fetch_one(&mut lite_conn(path).await?)
                    .await?
            }
            Where::Mysql { url, db } => {
                sqlx::query_scalar(sql)
                    .fetch_one(&mut *my_conn(&format!("{url}/{db}")).await?)
                    .await?
            }
        })
    }

    /// Rows of (text, number) from SQL.
    pub async fn rows_i64(&self, sql: &str) -> anyhow::Result<Vec<(String, i64)>> {
        Ok(match &self.at {
            Where::Postgres { url, schema } => {
                sqlx::query_as(sql)
                    .fetch_all(&mut pg_conn(url, schema).await?)
                    .await?
            }
            Where::Sqlite { path } => {
                sqlx::query_as(sql)
                    .fetch_all(&mut lite_conn(path).await?)
                    .await?
            }
            Where::Mysql { .. } => anyhow::bail!("rows_i64 is not measured on MariaDB"),
        })
    }

    /// `n` pending payments of provider `bench` with ids `{prefix}1..n`,
    /// each with a poll job whose `next_poll_at` is the SQL expression
    /// `next_poll` over `x` (1..=n).
    pub async fn seed(
        &self,
        prefix: &str,
        n: usize,
        now_ms: i64,
        next_poll: &str,
    ) -> anyhow::Result<()> {
        let gen = match self.at {
            Where::Postgres { .. } => format!("SELECT x FROM generate_series(1, {n}) AS g(x)"),
            // MariaDB's sequence tables (its recursion stops at 1,000 rows).
            Where::Mysql { .. } => format!("SELECT seq AS x FROM seq_1_to_{n}"),
            Where::Sqlite { .. } => format!(
                "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < {n}) \
                 SELECT x FROM g"
            ),
        };
        self.exec(&format!(
            "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, \
             created_at, updated_at) SELECT '{prefix}' || x, 'bench', 'r{prefix}' || x, 'payment', \
             100, 'USD', 'pending', {now_ms}, {now_ms} FROM ({gen}) AS s; \
             INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, \
             next_poll_at) SELECT '{prefix}' || x, 'bench', 'r{prefix}' || x, 'payment', {now_ms}, \
             {next_poll} FROM ({gen}) AS s;"
        ))
        .await
    }

    pub async fn drop_it(self) -> anyhow::Result<()> {
        let Scratch { store, at } = self;
        drop(store);
        match at {
            Where::Postgres { url, schema } => {
                let mut c = pg_options(&url)?.connect().await?;
                sqlx::raw_sql(&format!("DROP SCHEMA {schema} CASCADE"))
                    .execute(&mut c)
                    .await?;
            }
            Where::Sqlite { path } => remove_sqlite(&path),
            Where::Mysql { url, db } => {
                sqlx::raw_sql(&format!("DROP DATABASE {db}"))
                    .execute(&mut *my_conn(&url).await?)
                    .await?;
            }
        }
        Ok(())
    }
}

fn remove_sqlite(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// A connection of its own to the scratch schema.
async fn pg_conn(url: &str, schema: &str) -> anyhow::Result<sqlx::PgConnection> {
    Ok(pg_options(url)?
        .options([("search_path", schema)])
        .connect()
        .await?)
}

/// A connection of its own to the scratch file.
async fn lite_conn(path: &std::path::Path) -> anyhow::Result<sqlx::SqliteConnection> {
    Ok(sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await?)
}

/// A connection of its own to MariaDB at `url`, with the store's session
/// settings (`||` concatenates, ANSI quotes).
pub async fn my_conn(url: &str) -> anyhow::Result<sqlx::pool::PoolConnection<sqlx::MySql>> {
    let pool = finality_store::mysql::pool_options(1)
        .connect(url)
        .await
        .with_context(|| format!("cannot connect to MariaDB at {url}"))?;
    Ok(pool.acquire().await?)
}

pub fn pg_options(url: &str) -> anyhow::Result<sqlx::postgres::PgConnectOptions> {
    url.parse().context("invalid --database-url")
}
