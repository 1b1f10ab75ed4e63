//! The database's own ceiling, measured in the same run on the same server:
//! `pgbench` with single-row UPDATE transactions and with plain one-row
//! INSERT transactions, 8 clients, in a database of its own
//! (`finality_bench`) so the user's database is left alone.

use super::scratch::pg_options;
use anyhow::{bail, Context};
use sqlx::ConnectOptions;

/// The URL of the `finality_bench` database on the server, created if absent.
pub async fn pgbench_url(url: &str) -> anyhow::Result<String> {
    let mut conn = pg_options(url)?
        .connect()
        .await
        .context("cannot connect to PostgreSQL")?;
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'finality_bench')",
    )
    .fetch_one(&mut conn)
    .await?;
    if !exists {
        sqlx::query("CREATE DATABASE finality_bench")
            .execute(&mut conn)
            .await?;
    }
    let head = url.split('?').next().unwrap_or(url);
    let head = head.rsplit_once('/').map_or(head, |(h, _)| h);
    Ok(format!("{head}/finality_bench"))
}

/// Initialise pgbench's tables (scale 10) and the INSERT target.
pub async fn prepare(bench_url: &str) -> anyhow::Result<()> {
    let init = std::process::Command::new("pgbench")
        .args(["-i", "-q", "-s", "10", bench_url])
        .output()
        .context("pgbench not found (Debian package postgresql-client)")?;
    if !init.status.success() {
        bail!(
            "pgbench -i failed: {}",
            String::from_utf8_lossy(&init.stderr)
        );
    }
    let mut conn = pg_options(bench_url)?.connect().await?;
    sqlx::raw_sql(
        "DROP TABLE IF EXISTS finality_insert; \
         CREATE TABLE finality_insert (id BIGSERIAL PRIMARY KEY, aid INT NOT NULL, v BIGINT NOT NULL)",
    )
    .execute(&mut conn)
    .await?;
    Ok(())
}

pub const UPDATE: &str =
    "\\set aid random(1, 1000000)\nUPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n";
pub const INSERT: &str =
    "\\set aid random(1, 1000000)\nINSERT INTO finality_insert (aid, v) VALUES (:aid, 1);\n";

/// TPS of `script`, 8 clients, 2 threads, `seconds` long.
pub fn pgbench_tps(bench_url: &str, name: &str, script: &str, seconds: u32) -> anyhow::Result<f64> {
    let path = std::env::temp_dir().join(format!("finality-bench-{name}.sql"));
    std::fs::write(&path, script)?;
    let out = std::process::Command::new("pgbench")
        .args(["-c", "8", "-j", "2", "-T", &seconds.to_string(), "-n", "-f"])
        .arg(&path)
        .arg(bench_url)
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .with_context(|| {
            format!(
                "no tps in pgbench output: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}
