//! The engine measurements: executions per second (one process and three),
//! lateness of polls scheduled ahead, claim latency by backlog size, and
//! the engine's resident memory by backlog size.

use super::node::{self, InstantProvider};
use super::scratch::Scratch;
use anyhow::{bail, Context};
use finality_core::{Clock, Status, SystemClock, Timestamp};
use finality_store::ClaimRequest;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const K: u32 = 3;

/// Executions per second: `n` payments due now, each answered pending,
/// pending, succeeded, by one engine of `workers` in this process, with
/// fair claiming on (the default) or off (`fair`, to measure its cost).
pub async fn throughput(
    kind: &str,
    url: &str,
    n: usize,
    workers: usize,
    fair: bool,
) -> anyhow::Result<f64> {
    let s = Scratch::new(kind, url, &format!("tp_{kind}_{workers}"), 16).await?;
    let now = SystemClock.now().0;
    s.seed("p", n, now, &now.to_string()).await?;
    let adapter = Arc::new(InstantProvider::new(K, false));
    let mut cfg = node::config(workers, "tp");
    cfg.fair_claiming = fair;
    let e = node::engine(s.store.clone(), adapter.clone(), cfg);
    let started = Instant::now();
    e.run_until_idle(CancellationToken::new()).await;
    let elapsed = started.elapsed().as_secs_f64();
    let calls = adapter.calls.load(Ordering::Relaxed);
    let done = s.store.status_counts().await?;
    if done != vec![(Status::Succeeded, n as i64)] || calls != (n as u64) * u64::from(K) {
        bail!("run did not settle every payment exactly: {done:?}, {calls} calls");
    }
    s.drop_it().await?;
    Ok(calls as f64 / elapsed)
}

/// The same with three `finality bench-node` processes on one PostgreSQL,
/// `workers` each; the clock runs from spawning them until no job is left.
pub async fn three_processes(url: &str, n: usize, workers: usize) -> anyhow::Result<f64> {
    let s = Scratch::new("postgres", url, &format!("tp3_{workers}"), 4).await?;
    let now = SystemClock.now().0;
    s.seed("p", n, now, &now.to_string()).await?;
    let schema = s.schema().unwrap_or_default().to_string();
    let exe = std::env::current_exe()?;
    let started = Instant::now();
    let children: Vec<_> = (0..3)
        .map(|_| {
            tokio::process::Command::new(&exe)
                .args(["bench-node", "--database-url", url, "--schema", &schema])
                .args(["--workers", &workers.to_string()])
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
        })
        .collect::<Result<_, _>>()
        .context("cannot start bench-node processes")?;
    loop {
        if s.scalar("SELECT count(*) FROM poll_jobs").await? == 0 {
            break;
        }
        if started.elapsed() > Duration::from_secs(600) {
            bail!("three processes did not finish in 10 minutes");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut calls = 0;
    for c in children {
        let out = c.wait_with_output().await?;
        let line: serde_json::Value = serde_json::from_slice(&out.stdout).with_context(|| {
            format!("bench-node said: {}", String::from_utf8_lossy(&out.stdout))
        })?;
        calls += line["calls"].as_u64().unwrap_or(0);
    }
    let done = s.store.status_counts().await?;
    if done != vec![(Status::Succeeded, n as i64)] || calls != (n as u64) * u64::from(K) {
        bail!("three processes did not settle every payment exactly: {done:?}, {calls} calls");
    }
    s.drop_it().await?;
    Ok(calls as f64 / elapsed)
}

/// Lateness (µs, call start − `next_poll_at`) of `rate × seconds` polls
/// scheduled at a steady `rate` per second, starting a few seconds ahead;
/// one engine of 64 workers with the look-ahead timer (or without it).
pub async fn lateness(
    kind: &str,
    url: &str,
    rate: usize,
    seconds: usize,
    timer: bool,
) -> anyhow::Result<Vec<i64>> {
    let s = Scratch::new(kind, url, &format!("late_{kind}_{rate}"), 16).await?;
    let n = rate * seconds;
    let now = SystemClock.now().0;
    let start = now + 2_000 + (n as i64) / 50;
    s.seed("p", n, now, &format!("{start} + ((x - 1) * 1000) / {rate}"))
        .await?;
    if SystemClock.now().0 > start - 500 {
        bail!("seeding {n} jobs took too long to measure lateness from {start}");
    }
    let adapter = Arc::new(InstantProvider::new(1, true));
    let mut cfg = node::config(64, "late");
    if !timer {
        cfg.lookahead = Duration::ZERO;
    }
    let e = node::engine(s.store.clone(), adapter.clone(), cfg);
    e.run_until_idle(CancellationToken::new()).await;
    let mut late = adapter
        .lateness_us
        .as_ref()
        .map(|m| std::mem::take(&mut *m.lock().unwrap_or_else(|p| p.into_inner())))
        .unwrap_or_default();
    if late.len() != n {
        bail!("lateness run made {} calls for {n} polls", late.len());
    }
    late.sort_unstable();
    s.drop_it().await?;
    Ok(late)
}

/// One backlog size for the claim and memory measurements: `pending` poll
/// jobs of which 1,000 are due.
pub struct Backlog {
    scratch: Scratch,
    now: i64,
    url: String,
}

impl Backlog {
    pub async fn new(url: &str, pending: usize) -> anyhow::Result<Self> {
        let scratch = Scratch::new("postgres", url, &format!("cl_{pending}"), 4).await?;
        let now = SystemClock.now().0;
        scratch
            .seed(
                "p",
                pending,
                now,
                &format!(
                    "CASE WHEN x <= 1000 THEN {now} - x ELSE {now} + x * CAST(1000 AS BIGINT) END"
                ),
            )
            .await?;
        scratch
            .exec("VACUUM ANALYZE payments; VACUUM ANALYZE poll_jobs; CHECKPOINT")
            .await?;
        Ok(Backlog {
            scratch,
            now,
            url: url.to_string(),
        })
    }

    /// Median of 10 claims of 100 (all 1,000 due ones), then put them back.
    pub async fn claim_round(&self) -> anyhow::Result<Duration> {
        let mut times = Vec::new();
        for _ in 0..10 {
            let t = Instant::now();
            let got = self
                .scratch
                .store
                .claim(&ClaimRequest {
                    now: Timestamp(self.now),
                    limit: 100,
                    lease_until: Timestamp(self.now + 60_000),
                    worker: "bench-claim".into(),
                    weights: Default::default(),
                    fair: true,
                })
                .await?;
            times.push(t.elapsed());
            if got.len() != 100 {
                bail!("claim returned {} rows, expected 100", got.len());
            }
        }
        self.scratch
            .exec(
                "UPDATE poll_jobs SET next_poll_at = due_at, due_at = NULL, locked_by = NULL, \
                 locked_until = NULL, lock_token = NULL WHERE locked_by = 'bench-claim'; \
                 VACUUM poll_jobs; CHECKPOINT",
            )
            .await?;
        times.sort();
        Ok(times[times.len() / 2])
    }

    /// Peak resident memory (KiB) of a `bench-node` process running the
    /// engine for 3 s over this backlog, with 1,000 fresh due payments.
    pub async fn engine_memory(&self, round: usize) -> anyhow::Result<u64> {
        let now = SystemClock.now().0;
        self.scratch
            .seed(&format!("m{round}_"), 1000, now, &now.to_string())
            .await?;
        let exe = std::env::current_exe()?;
        let out = tokio::process::Command::new(exe)
            .args(["bench-node", "--database-url", &self.url])
            .args(["--schema", self.scratch.schema().unwrap_or_default()])
            .args(["--workers", "64", "--seconds", "3"])
            .kill_on_drop(true)
            .output()
            .await?;
        let line: serde_json::Value = serde_json::from_slice(&out.stdout).with_context(|| {
            format!(
                "bench-node said: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        if line["calls"].as_u64().unwrap_or(0) < 3000 {
            bail!(
                "memory run polled {} times, expected at least 3000",
                line["calls"]
            );
        }
        line["vm_hwm_kib"]
            .as_u64()
            .context("bench-node reported no VmHWM")
    }

    /// Size of the hot table and its indexes, and its dead rows.
    pub async fn poll_jobs_size(&self) -> anyhow::Result<(i64, i64)> {
        let size = self
            .scratch
            .scalar("SELECT pg_total_relation_size('poll_jobs')")
            .await?;
        let dead = self
            .scratch
            .scalar("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'poll_jobs' AND schemaname = current_schema()")
            .await?;
        Ok((size, dead))
    }

    pub async fn drop_it(self) -> anyhow::Result<()> {
        self.scratch.drop_it().await
    }
}

/// One sample of the hot table under churn.
pub struct ChurnSample {
    pub at_s: f64,
    pub bytes: i64,
    pub dead: i64,
    pub polls: u64,
}

/// `jobs` poll jobs re-polled continuously (the provider never settles
/// them, each reschedules at once) by one engine of 64 workers for
/// `2 × phase` seconds, sampling the hot table's size every 5 s, with a
/// plain `VACUUM poll_jobs` (run beside the engine) between the phases.
pub async fn churn(url: &str, jobs: usize, phase: f64) -> anyhow::Result<Vec<ChurnSample>> {
    let s = Scratch::new("postgres", url, "churn", 16).await?;
    let now = SystemClock.now().0;
    s.seed("p", jobs, now, &now.to_string()).await?;
    s.exec("VACUUM ANALYZE poll_jobs").await?;
    let adapter = Arc::new(InstantProvider::new(u32::MAX, false));
    let e = node::engine(s.store.clone(), adapter.clone(), node::config(64, "churn"));
    let stop = CancellationToken::new();
    let run = tokio::spawn(e.run(stop.clone()));
    let started = Instant::now();
    let mut samples = Vec::new();
    samples.push(sample(&s, started, adapter.calls.load(Ordering::Relaxed)).await?);
    let step = Duration::from_secs_f64((phase / 4.0).max(0.25));
    for half in 0..2 {
        let end = started + Duration::from_secs_f64(phase * f64::from(half + 1));
        while Instant::now() < end {
            tokio::time::sleep(step.min(end.saturating_duration_since(Instant::now()))).await;
            samples.push(sample(&s, started, adapter.calls.load(Ordering::Relaxed)).await?);
        }
        if half == 0 {
            s.exec("VACUUM poll_jobs").await?;
            samples.push(sample(&s, started, adapter.calls.load(Ordering::Relaxed)).await?);
        }
    }
    stop.cancel();
    run.await?;
    let gave_up = s
        .scalar("SELECT count(*) FROM poll_jobs WHERE next_poll_at IS NULL")
        .await?;
    if gave_up != 0 {
        bail!("{gave_up} churn jobs ran out of attempts; shorten the run");
    }
    s.drop_it().await?;
    Ok(samples)
}

async fn sample(s: &Scratch, started: Instant, polls: u64) -> anyhow::Result<ChurnSample> {
    Ok(ChurnSample {
        at_s: started.elapsed().as_secs_f64(),
        bytes: s
            .scalar("SELECT pg_total_relation_size('poll_jobs')")
            .await?,
        dead: s
            .scalar(
                "SELECT n_dead_tup FROM pg_stat_user_tables \
                 WHERE relname = 'poll_jobs' AND schemaname = current_schema()",
            )
            .await?,
        polls,
    })
}
