//! The read replica section: a private primary and a streaming standby
//! made from it (`pg_basebackup -R`), the engine's poll load on the
//! primary, and API readers on a node whose `read_url` is the standby. It
//! measures how far the replica falls behind under that load (sampled
//! every 100 ms the way the node measures it) and the share of the API's
//! reads the replica served.

use super::ingest::{webhook_state, TOKEN};
use super::node::{self, InstantProvider};
use super::scratch::Scratch;
use super::{quantile_ms, stats, summary};
use anyhow::{bail, Context};
use finality_core::{Clock, Status, SystemClock};
use finality_private_pg::PrivatePg;
use finality_server::replica::{Condition, Replica};
use rand::Rng;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Concurrent API readers (each a loop of `GET /v1/payments/{id}`).
const READERS: usize = 4;

struct Run {
    executions_per_s: f64,
    lag_p50_ms: f64,
    lag_p99_ms: f64,
    lag_max_ms: f64,
    reads_per_s: f64,
    replica_share: f64,
}

async fn one(
    primary: &PrivatePg,
    standby: &PrivatePg,
    n: usize,
    workers: usize,
) -> anyhow::Result<Run> {
    let s = Scratch::new(
        "postgres",
        &primary.url(),
        &format!("replica_{workers}"),
        16,
    )
    .await?;
    let schema = s.schema().unwrap_or_default().to_string();
    let now = SystemClock.now().0;
    s.seed("p", n, now, &now.to_string()).await?;
    let read_url = format!("{}?options=-c%20search_path%3D{schema}", standby.url());
    let replica = Replica::connect(
        &primary.url(),
        &read_url,
        8,
        Duration::from_secs(30),
        finality_server::replica::DEFAULT_MAX_LAG,
    )?;
    // Wait until the standby has replayed the seed and serves.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        replica.check().await;
        if matches!(replica.condition(), Condition::Serving(l) if l.is_zero()) {
            break;
        }
        if Instant::now() > deadline {
            bail!("the standby never caught up: {:?}", replica.condition());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A node serving the API with the replica (no engine of its own).
    let mut state = webhook_state(s.store.clone())?;
    state.replica = Some(replica.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let stop = CancellationToken::new();
    let server = tokio::spawn(finality_server::run(
        state,
        finality_server::Background::default(),
        listener,
        stop.clone(),
    ));

    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    for _ in 0..READERS {
        let (done, reads, base) = (done.clone(), reads.clone(), base.clone());
        readers.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            while !done.load(Ordering::Relaxed) {
                let id = format!("p{}", rand::thread_rng().gen_range(1..=n));
                let r = http
                    .get(format!("{base}/v1/payments/{id}"))
                    .bearer_auth(TOKEN)
                    .send()
                    .await?;
                if !r.status().is_success() {
                    bail!("GET /v1/payments/{id}: {}", r.status());
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        }));
    }
    let sampler = {
        let (done, replica) = (done.clone(), replica.clone());
        tokio::spawn(async move {
            let mut lags = Vec::new();
            while !done.load(Ordering::Relaxed) {
                replica.check().await;
                match replica.condition() {
                    Condition::Serving(l) | Condition::Lagging(l) => {
                        lags.push(i64::try_from(l.as_micros()).unwrap_or(i64::MAX))
                    }
                    other => return Err(anyhow::anyhow!("replica {other:?}")),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(lags)
        })
    };

    let (served_before, primary_before) = replica.reads_served();
    let adapter = Arc::new(InstantProvider::new(3, false));
    let e = node::engine(
        s.store.clone(),
        adapter.clone(),
        node::config(workers, "replica"),
    );
    let started = Instant::now();
    e.run_until_idle(CancellationToken::new()).await;
    let elapsed = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let mut lags = sampler.await??;
    for r in readers {
        r.await??;
    }
    let (served, primary_served) = replica.reads_served();
    stop.cancel();
    server.await?.context("the API node")?;
    let calls = adapter.calls.load(Ordering::Relaxed);
    let states = s.store.status_counts().await?;
    if states != vec![(Status::Succeeded, n as i64)] || calls != 3 * n as u64 {
        bail!("the run did not settle every payment exactly: {states:?}, {calls} calls");
    }
    s.drop_it().await?;
    lags.sort_unstable();
    let (on_replica, on_primary) = (served - served_before, primary_served - primary_before);
    Ok(Run {
        executions_per_s: calls as f64 / elapsed,
        lag_p50_ms: quantile_ms(&lags, 0.50),
        lag_p99_ms: quantile_ms(&lags, 0.99),
        lag_max_ms: quantile_ms(&lags, 1.0),
        reads_per_s: reads.load(Ordering::Relaxed) as f64 / elapsed,
        replica_share: on_replica as f64 / (on_replica + on_primary).max(1) as f64,
    })
}

/// The section: `runs` runs of 20,000 payments (3 polls each) at 64
/// workers with 4 API readers, on a private primary and its standby.
pub async fn section(runs: usize, smoke: bool) -> anyhow::Result<Value> {
    let primary = tokio::task::spawn_blocking(PrivatePg::start).await?;
    let primary = Arc::new(primary);
    let p = primary.clone();
    let standby = tokio::task::spawn_blocking(move || p.replica()).await?;
    let (n, workers) = if smoke { (1_000, 8) } else { (20_000, 64) };
    let mut all = Vec::new();
    for _ in 0..runs {
        all.push(one(&primary, &standby, n, workers).await?);
    }
    let pick = |f: fn(&Run) -> f64| all.iter().map(f).collect::<Vec<_>>();
    let (ex, lag50, lag99, lagmax, rps, share) = (
        pick(|r| r.executions_per_s),
        pick(|r| r.lag_p50_ms),
        pick(|r| r.lag_p99_ms),
        pick(|r| r.lag_max_ms),
        pick(|r| r.reads_per_s),
        pick(|r| r.replica_share),
    );
    println!(
        "\nRead replica (private primary + pg_basebackup standby), {n} payments × 3 polls, {workers} workers, {READERS} API readers:"
    );
    let line = |what: &str, v: &[f64], unit: &str| {
        let (m, lo, hi) = stats(v);
        println!("  {what:<28} {m:>9.1} {unit} ({lo:.1}–{hi:.1})");
    };
    line("poll executions/s", &ex, "");
    line("replica lag p50", &lag50, "ms");
    line("replica lag p99", &lag99, "ms");
    line("replica lag max", &lagmax, "ms");
    line("API reads/s", &rps, "");
    line(
        "reads served by the replica",
        &share.iter().map(|s| s * 100.0).collect::<Vec<_>>(),
        "%",
    );
    Ok(json!({
        "payments": n, "workers": workers, "readers": READERS,
        "executions_per_s": summary(&ex),
        "lag_p50_ms": summary(&lag50), "lag_p99_ms": summary(&lag99), "lag_max_ms": summary(&lagmax),
        "api_reads_per_s": summary(&rps), "replica_share": summary(&share),
    }))
}
