//! `finality bench`: measures the poll engine against a real database with an
//! in-process provider that answers instantly (pending K−1 times, then
//! succeeded), next to a ceiling measured in the same run (`pgbench`
//! single-row UPDATE transactions on the same server). `--smoke` runs
//! seconds-long versions of every measurement, with no thresholds, so the
//! command never rots. Method and results: `docs/PERFORMANCE.md`.

use anyhow::{bail, Context};
use async_trait::async_trait;
use finality_core::money::{Amount, Currency, PaymentId, ProviderRef};
use finality_core::{Clock, Kind, RetryPolicy, Schedule, Status, SystemClock, Timestamp};
use finality_engine::{Engine, EngineConfig, Health, ProviderEntry, Providers};
use finality_providers::{Observation, PollTarget, Provider, ProviderError};
use finality_store::{ClaimRequest, NewPayment, Store};
use sqlx::ConnectOptions;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Seconds-long runs of every measurement, no thresholds (CI).
    #[arg(long)]
    smoke: bool,
    /// PostgreSQL server to measure (a scratch schema is made and dropped).
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    database_url: String,
    /// Runs per figure (median, min and max are reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

/// Answers instantly: `pending` until the K-th query of a payment.
struct InstantProvider {
    k: u32,
    seen: Mutex<HashMap<String, u32>>,
}

#[async_trait]
impl Provider for InstantProvider {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        let n = {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            let n = seen.entry(t.provider_ref.to_string()).or_default();
            *n += 1;
            *n
        };
        let status = if n >= self.k {
            Status::Succeeded
        } else {
            Status::Pending
        };
        Ok(Observation {
            status: Some(status),
            provider_status: status.as_str().into(),
        })
    }
}

/// A fresh PostgreSQL schema (dropped by `drop_schema`) or SQLite file.
async fn scratch(
    kind: &str,
    url: &str,
    tag: &str,
) -> anyhow::Result<(Arc<dyn Store>, Option<String>)> {
    if kind == "sqlite" {
        let path = std::env::temp_dir().join(format!("finality-bench-{tag}.db"));
        let _ = std::fs::remove_file(&path);
        let store = finality_store::open(&format!("sqlite://{}", path.display()), 4).await?;
        return Ok((store, None));
    }
    let base: sqlx::postgres::PgConnectOptions = url.parse().context("invalid --database-url")?;
    let schema = format!("finality_bench_{tag}");
    let mut conn = base
        .connect()
        .await
        .context("cannot connect to PostgreSQL")?;
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .execute(&mut conn)
        .await?;
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&mut conn)
        .await?;
    let pg = finality_store::postgres::PgStore::connect_with(
        base.options([("search_path", schema.as_str())]),
        40,
    )
    .await?;
    pg.migrate().await?;
    Ok((Arc::new(pg), Some(schema)))
}

async fn drop_schema(url: &str, schema: Option<String>) -> anyhow::Result<()> {
    if let Some(s) = schema {
        let base: sqlx::postgres::PgConnectOptions = url.parse()?;
        let mut conn = base.connect().await?;
        sqlx::query(&format!("DROP SCHEMA {s} CASCADE"))
            .execute(&mut conn)
            .await?;
    }
    Ok(())
}

fn payment(i: usize) -> anyhow::Result<NewPayment> {
    Ok(NewPayment {
        id: PaymentId::parse(&format!("b{i:08}"))?,
        provider: "bench".into(),
        provider_ref: ProviderRef::parse(&format!("r{i:08}"))?,
        kind: Kind::Payment,
        amount: Amount::new(100, Currency::parse("USD")?)?,
        metadata: serde_json::json!({}),
    })
}

/// Poll executions per second: `n` payments all due now, each answered
/// pending, pending, succeeded (3 executions), by one engine of `workers`.
async fn throughput(kind: &str, url: &str, n: usize, workers: usize) -> anyhow::Result<f64> {
    let (store, schema) = scratch(kind, url, &format!("tp_{kind}_{workers}")).await?;
    let now = SystemClock.now();
    let mut batch = Vec::new();
    for i in 0..n {
        let store = store.clone();
        let p = payment(i)?;
        batch.push(tokio::spawn(
            async move { store.register(&p, now, now).await },
        ));
        if batch.len() == 64 {
            for t in batch.drain(..) {
                t.await??;
            }
        }
    }
    for t in batch {
        t.await??;
    }
    let k = 3;
    let mut providers = Providers::new();
    providers.insert(
        "bench".into(),
        ProviderEntry {
            adapter: Arc::new(InstantProvider {
                k,
                seen: Mutex::default(),
            }),
            policy: RetryPolicy {
                schedule: Schedule::Fixed {
                    delays: vec![Duration::ZERO],
                },
                give_up_after: Duration::from_secs(3600),
                max_attempts: 100,
            },
            pause_on_permanent_error: Duration::from_secs(60),
            nudges_per_minute: 0,
        },
    );
    let engine = Engine::new(
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(providers),
        EngineConfig {
            worker_id: "bench".into(),
            concurrency: workers,
            batch_size: 64.max(workers as u32),
            ..EngineConfig::default()
        },
        Arc::new(Health::new()),
    );
    let started = Instant::now();
    engine.run_until_idle(CancellationToken::new()).await;
    let elapsed = started.elapsed().as_secs_f64();
    let done = store.status_counts().await?;
    if done != vec![(Status::Succeeded, n as i64)] {
        bail!("benchmark run did not settle every payment: {done:?}");
    }
    drop(store);
    drop_schema(url, schema).await?;
    Ok((n * k as usize) as f64 / elapsed)
}

/// Median latency of claiming 100 of 1,000 due jobs among `pending`.
async fn claim_latency(url: &str, pending: usize) -> anyhow::Result<Duration> {
    let (store, schema) = scratch("postgres", url, &format!("cl_{pending}")).await?;
    let base: sqlx::postgres::PgConnectOptions = url.parse()?;
    let schema_name = schema.clone().unwrap_or_default();
    let mut conn = base
        .options([("search_path", schema_name.as_str())])
        .connect()
        .await?;
    let now = SystemClock.now().millis();
    sqlx::query(
        "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, created_at, updated_at) \
         SELECT 'p' || g, 'bench', 'r' || g, 'payment', 100, 'USD', 'pending', $1, $1 FROM generate_series(1, $2) g",
    )
    .bind(now)
    .bind(pending as i64)
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, next_poll_at) \
         SELECT 'p' || g, 'bench', 'r' || g, 'payment', $1, CASE WHEN g <= 1000 THEN $1 - g ELSE $1 + g * 1000 END \
         FROM generate_series(1, $2) g",
    )
    .bind(now)
    .bind(pending as i64)
    .execute(&mut conn)
    .await?;
    sqlx::query("VACUUM ANALYZE poll_jobs")
        .execute(&mut conn)
        .await?;
    let mut times = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let got = store
            .claim(&ClaimRequest {
                now: Timestamp(now),
                limit: 100,
                lease_until: Timestamp(now + 60_000),
                worker: "bench".into(),
            })
            .await?;
        times.push(t.elapsed());
        if got.len() != 100 {
            bail!("claim returned {} rows, expected 100", got.len());
        }
    }
    times.sort();
    drop(store);
    drop_schema(url, schema).await?;
    Ok(times[times.len() / 2])
}

/// A database of its own for pgbench's tables (`finality_bench`), on the
/// same server, so the user's database is left alone.
async fn pgbench_url(url: &str) -> anyhow::Result<String> {
    let base: sqlx::postgres::PgConnectOptions = url.parse().context("invalid --database-url")?;
    let mut conn = base
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

/// `pgbench` TPS of single-row UPDATE transactions, 8 clients, on the server.
fn pgbench_update_tps(url: &str, seconds: u32) -> anyhow::Result<f64> {
    let init = std::process::Command::new("pgbench")
        .args(["-i", "-q", "-s", "10", url])
        .output()
        .context("pgbench not found (Debian package postgresql-client / postgresql)")?;
    if !init.status.success() {
        bail!(
            "pgbench -i failed: {}",
            String::from_utf8_lossy(&init.stderr)
        );
    }
    let script = std::env::temp_dir().join("finality-bench-update.sql");
    std::fs::write(
        &script,
        "\\set aid random(1, 1000000)\nUPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n",
    )?;
    let out = std::process::Command::new("pgbench")
        .args(["-c", "8", "-j", "2", "-T", &seconds.to_string(), "-n", "-f"])
        .arg(&script)
        .arg(url)
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let tps = text
        .lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .with_context(|| format!("no tps in pgbench output: {text}"))?;
    Ok(tps)
}

/// Resident memory of this process, from /proc (Linux).
fn rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn stats(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let runs = if args.smoke { 1 } else { args.runs.max(1) };
    let n = if args.smoke { 300 } else { 5_000 };
    let url = &args.database_url;
    println!(
        "finality bench{} · {} runs per figure · instant provider, K = 3",
        if args.smoke { " --smoke" } else { "" },
        runs
    );

    let bench_db = pgbench_url(url).await?;
    let mut ceiling = Vec::new();
    for _ in 0..runs {
        ceiling.push(pgbench_update_tps(
            &bench_db,
            if args.smoke { 2 } else { 10 },
        )?);
    }
    let (c_med, c_min, c_max) = stats(&mut ceiling);
    println!(
        "pgbench single-row UPDATE, 8 clients: {c_med:.0} tps (min {c_min:.0}, max {c_max:.0})"
    );

    println!("\npoll executions/s (claim → provider → complete), {n} payments × 3 polls:");
    println!(
        "{:<10} {:>8} {:>10} {:>10} {:>10} {:>12}",
        "store", "workers", "median", "min", "max", "vs pgbench"
    );
    for kind in ["postgres", "sqlite"] {
        for workers in [1, 8, 64] {
            let mut v = Vec::new();
            for _ in 0..runs {
                v.push(throughput(kind, url, n, workers).await?);
            }
            let (m, lo, hi) = stats(&mut v);
            let ratio = if kind == "postgres" {
                format!("{:.2}×", m / c_med)
            } else {
                "-".into()
            };
            println!("{kind:<10} {workers:>8} {m:>10.0} {lo:>10.0} {hi:>10.0} {ratio:>12}");
        }
    }

    println!("\nclaim of 100 among 1,000 due (PostgreSQL), median of 10:");
    let sizes: &[usize] = if args.smoke {
        &[10_000]
    } else {
        &[10_000, 1_000_000]
    };
    let mut base = None;
    for &pending in sizes {
        let d = claim_latency(url, pending).await?;
        let b = *base.get_or_insert(d);
        println!(
            "  {pending:>9} pending: {:>8.3} ms  ({:.2}× the 10k case)",
            d.as_secs_f64() * 1e3,
            d.as_secs_f64() / b.as_secs_f64()
        );
    }
    if let Some(kib) = rss_kib() {
        println!(
            "\nresident memory of this process at the end: {} MiB",
            kib / 1024
        );
    }
    Ok(())
}
