//! Where a webhook's CPU goes: the server's own threads, PostgreSQL's
//! backends, and the load generator, measured apart in one process.
//!
//! The server runs on a Tokio runtime of its own whose threads are named
//! [`SERVER`], with its store's pool made on that runtime (so its socket
//! I/O is driven there too). The load generator is the bench's runtime. CPU
//! time is read from `/proc/self/task/*/stat` (the server's threads, by
//! name) and `/proc/<pid>/stat` of PostgreSQL's client backends and WAL
//! writer (by `pg_stat_activity`), before and after the load: per webhook
//! acknowledged. Written by hand: no crate reads per-thread CPU by name.
//! The no-database peer is a bare route answering after verification
//! alone (the peer); the in-memory row is the whole service (its
//! middleware, handler and group commit) with the inbox in memory, so
//! durable against it is what writing to PostgreSQL alone costs the
//! server, and in-memory against the bare route what the service's own
//! path costs.

use super::ingest::{self, webhook_state};
use super::scratch::{pg_options, Scratch};
use super::{stats, summary};
use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The server runtime's thread name (at most 15 bytes: the kernel's `comm`).
pub const SERVER: &str = "fin-server";

/// Clock ticks per second of `/proc`'s CPU times.
fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// `(comm, utime + stime in ticks)` of a `/proc/…/stat` file.
fn stat(path: &std::path::Path) -> Option<(String, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let comm = text.get(open + 1..close)?.to_string();
    // After `comm`: state is field 3, utime field 14, stime field 15.
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

/// CPU ticks of this process's threads named [`SERVER`].
fn server_ticks() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| stat(&t.path().join("stat")))
        .filter(|(comm, _)| comm.starts_with(SERVER))
        .map(|(_, t)| t)
        .sum()
}

/// PostgreSQL's client backends on `url`'s database and its WAL writer,
/// with their CPU ticks.
async fn backends(url: &str) -> anyhow::Result<HashMap<i32, u64>> {
    let mut conn: sqlx::PgConnection = sqlx::Connection::connect_with(&pg_options(url)?).await?;
    let pids: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE (datname = current_database() \
         AND backend_type = 'client backend' AND pid <> pg_backend_pid()) \
         OR backend_type = 'walwriter'",
    )
    .fetch_all(&mut conn)
    .await?;
    let _ = sqlx::Connection::close(conn).await;
    Ok(pids
        .into_iter()
        .filter_map(|p| {
            Some((
                p,
                stat(
                    &std::path::Path::new("/proc")
                        .join(p.to_string())
                        .join("stat"),
                )?
                .1,
            ))
        })
        .collect())
}

struct Measured {
    rps: f64,
    p99_ms: f64,
    server_us: f64,
    pg_us: f64,
}

/// What answers the load: the service storing in PostgreSQL, the same
/// service with its inbox in memory (every request passes the same
/// middleware, handler and group commit, but nothing is written to a
/// database), or a bare route that verifies and answers 200 (the issue's
/// no-database peer).
#[derive(Clone, Copy)]
enum Peer<'a> {
    Durable(&'a Scratch),
    InMemory,
    VerifyOnly,
}

/// What the server thread starts (owned: it crosses to that thread).
enum Serve {
    Durable { schema: String },
    InMemory,
    VerifyOnly,
}

/// One run: `peer` on a runtime of its own, `connections` senders for
/// `seconds`.
async fn one(
    peer: Peer<'_>,
    url: &str,
    connections: usize,
    seconds: f64,
) -> anyhow::Result<Measured> {
    let (scratch, serve) = match peer {
        Peer::Durable(s) => {
            let schema = s.schema().context("the durable peer runs in a schema")?;
            (
                Some(s),
                Serve::Durable {
                    schema: schema.to_string(),
                },
            )
        }
        Peer::InMemory => (None, Serve::InMemory),
        Peer::VerifyOnly => (None, Serve::VerifyOnly),
    };
    let stop = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel::<anyhow::Result<String>>();
    let (stop2, url2) = (stop.clone(), url.to_string());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(SERVER)
        .enable_all()
        .build()?;
    let thread = std::thread::Builder::new()
        .name(SERVER.into())
        .spawn(move || {
            runtime.block_on(async move {
                let started = async {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                    let target = format!("http://{}/webhooks/bench", listener.local_addr()?);
                    let run = |store: Arc<dyn finality_store::Store>, listener| {
                        anyhow::Ok(tokio::spawn(finality_server::run(
                            webhook_state(store)?,
                            finality_server::Background::default(),
                            listener,
                            stop2.clone(),
                        )))
                    };
                    let serving = match serve {
                        Serve::Durable { schema } => {
                            let pg = finality_store::postgres::PgStore::connect_with(
                                pg_options(&url2)?.options([("search_path", schema.as_str())]),
                                16,
                            )
                            .await?;
                            run(Arc::new(pg), listener)?
                        }
                        Serve::InMemory => {
                            run(Arc::new(finality_store::memory::MemStore::new()), listener)?
                        }
                        Serve::VerifyOnly => {
                            let app = ingest::verify_only()?;
                            let s = stop2.clone();
                            tokio::spawn(async move {
                                axum::serve(listener, app)
                                    .with_graceful_shutdown(async move { s.cancelled().await })
                                    .await
                            })
                        }
                    };
                    anyhow::Ok((target, serving))
                };
                match started.await {
                    Ok((target, serving)) => {
                        let _ = tx.send(Ok(target));
                        stop2.cancelled().await;
                        let _ = serving.await;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })
        })?;
    let target = rx.await.context("the server thread ended")??;
    let before_pg = if scratch.is_some() {
        backends(url).await?
    } else {
        HashMap::new()
    };
    let before = server_ticks();
    let (all, elapsed) = ingest::load(&target, connections, seconds).await?;
    let server = server_ticks() - before;
    let after_pg = if scratch.is_some() {
        backends(url).await?
    } else {
        HashMap::new()
    };
    stop.cancel();
    tokio::task::spawn_blocking(move || thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the server thread panicked"))?;
    let pg: u64 = after_pg
        .iter()
        .map(|(pid, t)| t.saturating_sub(before_pg.get(pid).copied().unwrap_or(0)))
        .sum();
    if let Some(s) = scratch {
        let stored = s.scalar("SELECT count(*) FROM webhook_inbox").await?;
        if stored < all.len() as i64 {
            bail!("{} webhooks acknowledged, {stored} in the inbox", all.len());
        }
    }
    let n = all.len().max(1) as f64;
    let tick_us = 1e6 / ticks_per_second();
    let r = ingest::Ingest::of(all, elapsed);
    Ok(Measured {
        rps: r.rps,
        p99_ms: r.p99_ms,
        server_us: server as f64 * tick_us / n,
        pg_us: pg as f64 * tick_us / n,
    })
}

/// The section: at each of `connections`, `runs` runs each of the durable
/// server on PostgreSQL, the no-database peer and the same service with
/// its inbox in memory, interleaved.
pub async fn section(
    url: &str,
    connections: &[usize],
    runs: usize,
    smoke: bool,
) -> anyhow::Result<Value> {
    let secs = if smoke { 1.0 } else { 10.0 };
    println!("\nwebhook CPU, server on a runtime of its own ({SERVER}), {secs} s per run: median (min–max)");
    println!(
        "  {:>5} {:<11} {:>18} {:>9} {:>20} {:>20}",
        "conns", "server", "webhooks/s", "ack p99", "server µs/webhook", "PostgreSQL µs/webhook"
    );
    let mut rows = Vec::new();
    for &conns in connections {
        let scratch = Scratch::new("postgres", url, "cpu", 16).await?;
        let (mut d, mut p, mut m) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            d.push(one(Peer::Durable(&scratch), url, conns, secs).await?);
            p.push(one(Peer::VerifyOnly, url, conns, secs).await?);
            m.push(one(Peer::InMemory, url, conns, secs).await?);
        }
        scratch.drop_it().await?;
        let col = |v: &[Measured], f: fn(&Measured) -> f64| v.iter().map(f).collect::<Vec<_>>();
        let mut json_row = serde_json::Map::new();
        for (name, v) in [("durable", &d), ("no database", &p), ("in memory", &m)] {
            let (rps, p99, srv, pg) = (
                col(v, |m| m.rps),
                col(v, |m| m.p99_ms),
                col(v, |m| m.server_us),
                col(v, |m| m.pg_us),
            );
            let f = |x: &[f64]| {
                let (m, lo, hi) = stats(x);
                format!("{m:.1} ({lo:.1}–{hi:.1})")
            };
            println!(
                "  {conns:>5} {name:<11} {:>18} {:>9.2} {:>20} {:>20}",
                f(&rps),
                stats(&p99).0,
                f(&srv),
                f(&pg)
            );
            json_row.insert(
                name.replace(' ', "_"),
                json!({"webhooks_per_s": summary(&rps), "ack_p99_ms": summary(&p99),
                       "server_us_per_webhook": summary(&srv), "postgres_us_per_webhook": summary(&pg)}),
            );
        }
        let ratio = |of: &[Measured], to: &[Measured], f: fn(&Measured) -> f64| {
            stats(&col(of, f)).0 / stats(&col(to, f)).0
        };
        let (rate_ratio, cpu_ratio) = (ratio(&d, &p, |m| m.rps), ratio(&d, &p, |m| m.server_us));
        println!(
            "        durable / no database: {rate_ratio:.2}× the rate, {cpu_ratio:.2}× the server's CPU per webhook"
        );
        // What storing alone costs: the same service, its inbox in memory.
        let (mem_rate, mem_cpu) = (ratio(&d, &m, |m| m.rps), ratio(&d, &m, |m| m.server_us));
        println!(
            "        durable / the same service in memory: {mem_rate:.2}× the rate, {mem_cpu:.2}× the server's CPU per webhook"
        );
        json_row.insert("rate_ratio_in_memory".into(), json!(mem_rate));
        json_row.insert("server_cpu_ratio_in_memory".into(), json!(mem_cpu));
        json_row.insert("connections".into(), json!(conns));
        json_row.insert("rate_ratio".into(), json!(rate_ratio));
        json_row.insert("server_cpu_ratio".into(), json!(cpu_ratio));
        rows.push(Value::Object(json_row));
    }
    Ok(json!(rows))
}
