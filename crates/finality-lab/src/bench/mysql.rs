//! The MariaDB (or MySQL) section: the server's own ceiling, one-row
//! UPDATE transactions from 8 clients, measured in the same run as poll
//! executions per second and lateness on it.
//!
//! The ceiling is a small load of our own rather than `mysqlslap`, which
//! cannot draw a random key per query: 8 connections, each running
//! autocommit `UPDATE … SET v = v + 1 WHERE id = ?` on a random one of
//! 100,000 rows for the whole window (the shape of `pgbench`'s
//! single-row UPDATE script, which the PostgreSQL figures are set against).

use super::scratch::my_conn;
use super::{quantile_ms, stats, summary, workloads};
use rand::Rng;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ROWS: i64 = 100_000;
const CLIENTS: usize = 8;

/// One-row UPDATE transactions per second on `url`'s server, `secs` long.
async fn ceiling(url: &str, secs: u64) -> anyhow::Result<f64> {
    let db = "finality_bench_ceiling";
    let mut admin = my_conn(url).await?;
    sqlx::raw_sql(&format!(
        "DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}; \
         CREATE TABLE {db}.accounts (id INT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB; \
         INSERT INTO {db}.accounts (id, v) SELECT seq, 0 FROM {db}.seq_1_to_{ROWS}"
    ))
    .execute(&mut *admin)
    .await?;
    let until = Instant::now() + Duration::from_secs(secs);
    let started = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let url = format!("{}/{db}", url.trim_end_matches('/'));
        clients.push(tokio::spawn(async move {
            let mut conn = my_conn(&url).await?;
            let mut n = 0u64;
            while Instant::now() < until {
                let id = rand::thread_rng().gen_range(1..=ROWS);
                sqlx::query("UPDATE accounts SET v = v + 1 WHERE id = ?")
                    .bind(id)
                    .execute(&mut *conn)
                    .await?;
                n += 1;
            }
            anyhow::Ok(n)
        }));
    }
    let mut total = 0;
    for c in clients {
        total += c.await??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    sqlx::raw_sql(&format!("DROP DATABASE {db}"))
        .execute(&mut *admin)
        .await?;
    Ok(total as f64 / elapsed)
}

/// The section: ceiling, executions/s at 8 and 64 workers, lateness at
/// 1,000 polls/s; printed and returned as JSON.
pub async fn section(url: &str, runs: usize, smoke: bool) -> anyhow::Result<Value> {
    // The server must be reachable before anything is measured.
    drop(my_conn(url).await?);
    let secs = if smoke { 2 } else { 10 };
    let mut up = Vec::new();
    for _ in 0..runs {
        up.push(ceiling(url, secs).await?);
    }
    let (update_tps, lo, hi) = stats(&up);
    println!("\nMariaDB ({url}), ceiling: {CLIENTS} clients, one-row UPDATE, {secs} s:");
    println!("  one-row UPDATE:            {update_tps:>8.0} tps ({lo:.0}–{hi:.0})");

    println!("  poll executions/s (claim → provider → complete), payments × 3 polls each:");
    let mut tp = Vec::new();
    let counts: &[usize] = if smoke { &[8] } else { &[8, 64] };
    for &w in counts {
        let n = if smoke { 500 } else { 5_000 };
        let mut v = Vec::new();
        for _ in 0..runs {
            v.push(workloads::throughput("mysql", url, n, w, true).await?);
        }
        let (m, lo, hi) = stats(&v);
        println!(
            "    {w:>3} workers {m:>8.0} ({lo:.0}–{hi:.0})   {:.2}× the UPDATE ceiling",
            m / update_tps
        );
        tp.push(
            json!({"workers": w, "executions_per_s": summary(&v), "vs_update": m / update_tps}),
        );
    }

    let rate = 1_000;
    let late_secs = if smoke { 1 } else { 10 };
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let late = workloads::lateness("mysql", url, rate, late_secs, true).await?;
        p50.push(quantile_ms(&late, 0.50));
        p99.push(quantile_ms(&late, 0.99));
    }
    let ((m50, lo50, hi50), (m99, lo99, hi99)) = (stats(&p50), stats(&p99));
    println!(
        "  lateness at {rate} polls/s, 64 workers, {late_secs} s: p50 {m50:.2} ms ({lo50:.2}–{hi50:.2}), p99 {m99:.2} ms ({lo99:.2}–{hi99:.2})"
    );
    Ok(json!({
        "ceiling": {"update_tps": summary(&up), "clients": CLIENTS, "seconds": secs},
        "throughput": tp,
        "lateness": {"rate": rate, "seconds": late_secs, "p50_ms": summary(&p50), "p99_ms": summary(&p99)},
    }))
}
