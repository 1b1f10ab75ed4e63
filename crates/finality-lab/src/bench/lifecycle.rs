//! Retention at size, on PostgreSQL: a schema seeded with `calls`
//! provider-call rows spread evenly over 60 days (in their day partitions,
//! as a deployment running for 60 days has them), `payments` final
//! payments (one history row each) made final evenly over 700 days, and one
//! settled webhook per payment over the last 90 days. Then, with an engine
//! polling at a steady 1,000/s beside it, one retention run takes the days
//! of provider calls past a 59-day retention (partitions detached,
//! archived, dropped) and the day of payments past a 699-day one (archive
//! files written, then the rows deleted): its wall time, what dropping a
//! day took, and the polls' lateness while it ran. Poll executions per
//! second and verified-webhook ingest on the seeded schema are measured
//! against a fresh schema in the same run (fresh before and after).

use super::node::{self, InstantProvider};
use super::scratch::Scratch;
use anyhow::bail;
use finality_core::{Clock, SystemClock, Timestamp};
use finality_engine::lifecycle::{Archiver, RetentionConfig};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const DAY_MS: i64 = 86_400_000;

#[derive(Debug, Clone, serde::Serialize)]
pub struct LifecycleRun {
    pub calls: usize,
    pub payments: usize,
    pub seed_s: f64,
    /// `poll_attempts` and `payments` + `status_history` with indexes.
    pub table_bytes: i64,
    pub calls_removed: u64,
    pub payments_removed: u64,
    pub retention_s: f64,
    pub archive_bytes: u64,
    /// Polls due while the run went (1,000/s): lateness, ms.
    pub lateness_p50_ms: f64,
    pub lateness_p99_ms: f64,
    pub lateness_max_ms: f64,
    /// Poll executions/s (8 workers) on this schema, and on a fresh one
    /// (medians of runs taken in turn).
    pub seeded_polls_per_s: f64,
    pub fresh_polls_per_s: f64,
    /// Verified webhooks/s (32 connections) into the seeded inbox, and
    /// into a fresh one (mean of before and after).
    pub seeded_ingest_per_s: f64,
    pub fresh_ingest_per_s: f64,
    /// Each seeded figure over the mean of the fresh ones around it.
    pub polls_ratios: Vec<f64>,
    pub ingest_ratios: Vec<f64>,
    /// Day partitions with rows dropped by the run, the rows of the
    /// largest, and the longest detach + drop of one (ms): the table is
    /// locked only while detaching; writing the archive comes between.
    pub days_dropped: usize,
    pub day_rows: u64,
    pub day_drop_ms: f64,
    pub day_detach_ms: f64,
    pub day_export_s: f64,
}

pub async fn run(
    url: &str,
    calls: usize,
    payments: usize,
    window_s: usize,
) -> anyhow::Result<LifecycleRun> {
    let s = Scratch::new("postgres", url, "lifecycle", 16).await?;
    let now = SystemClock.now().0;
    let started = Instant::now();
    // The day partitions a deployment running for 60 days has.
    s.store
        .partitions_ahead(Timestamp(now - 61 * DAY_MS), 61 + 7)
        .await?;
    // Provider calls, id order = time order, over the last 60 days.
    let chunk = 1_000_000usize;
    let mut from = 1usize;
    while from <= calls {
        let to = (from + chunk - 1).min(calls);
        s.exec(&format!(
            "INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, \
             outcome, provider_status) SELECT 'c' || (x % 100000), 'bench', 'w', \
             {start} + (x * {span}) / {calls}, 5, 'pending', 'requires_action' \
             FROM generate_series({from}, {to}) AS g(x)",
            start = now - 60 * DAY_MS,
            span = 60 * DAY_MS,
        ))
        .await?;
        from = to + 1;
    }
    // Final payments over the last 700 days, each with its history row.
    let fin = format!(
        "{} + (x * {}) / {payments}",
        now - 700 * DAY_MS,
        700 * DAY_MS
    );
    s.exec(&format!(
        "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, \
         status_source, created_at, updated_at, finalized_at) SELECT 'f' || x, 'bench', \
         'rf' || x, 'payment', 100, 'USD', 'succeeded', 'webhook', {fin} - 60000, {fin}, {fin} \
         FROM generate_series(1, {payments}) AS g(x); \
         INSERT INTO status_history (payment_id, from_status, to_status, source, observed_at, at) \
         SELECT 'f' || x, 'pending', 'succeeded', 'webhook', {fin}, {fin} \
         FROM generate_series(1, {payments}) AS g(x); \
         INSERT INTO webhook_inbox (provider, event_id, provider_ref, observed_status, \
         provider_status, occurred_at, raw_body, headers, received_at, state, attempts, processed_at) \
         SELECT 'bench', 'evt_f' || x, 'rf' || x, 'succeeded', 'succeeded', {hook}, \
         convert_to('{{\"id\":\"evt_f' || x || '\",\"type\":\"payment.succeeded\",\"email\":\"customer@example.com\"}}', 'UTF8'), \
         '{{}}', {hook}, 'applied', 1, {hook} FROM generate_series(1, {payments}) AS g(x); \
         VACUUM ANALYZE poll_attempts; VACUUM ANALYZE payments; VACUUM ANALYZE status_history; \
         VACUUM ANALYZE webhook_inbox; CHECKPOINT",
        hook = format!("{} + (x * {}) / {payments}", now - 90 * DAY_MS, 90 * DAY_MS),
    ))
    .await?;
    let seed_s = started.elapsed().as_secs_f64();
    // Gigabytes just written are still being written back by the kernel:
    // let that settle before measuring (2 s per million calls seeded, up
    // to two minutes), so the measurements see the schema, not the disk.
    tokio::time::sleep(Duration::from_secs((calls as u64 / 500_000).min(120))).await;
    let table_bytes = s
        .scalar(
            "SELECT (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c \
               WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r')::BIGINT",
        )
        .await?;

    // Fresh and seeded in turn (fresh, seeded, fresh, …, fresh): each
    // seeded figure is set against the mean of the fresh ones on either
    // side, so neither order nor drift (a checkpoint, autovacuum after
    // the seeding) favours a side; the medians are reported.
    let smoke = window_s < 10;
    let (tp, rounds) = if smoke { (400, 1) } else { (12_000, 3) };
    let fresh = Scratch::new("postgres", url, "lifecycle_fresh", 16).await?;
    let mut polls = Alternating::default();
    polls.fresh.push(polls_per_s(&fresh, "t0_", tp).await?);
    for i in 0..rounds {
        polls
            .seeded
            .push(polls_per_s(&s, &format!("u{i}_"), tp).await?);
        polls
            .fresh
            .push(polls_per_s(&fresh, &format!("t{}_", i + 1), tp).await?);
    }
    // Verified webhooks into the seeded inbox (its unique key and the
    // payments beside it at size) against the fresh one, the same way.
    let secs = if smoke { 2.0 } else { 8.0 };
    let mut ingest = Alternating::default();
    ingest
        .fresh
        .push(super::ingest::ingest_on(&fresh, 32, secs).await?.rps);
    for _ in 0..rounds {
        ingest
            .seeded
            .push(super::ingest::ingest_on(&s, 32, secs).await?.rps);
        ingest
            .fresh
            .push(super::ingest::ingest_on(&fresh, 32, secs).await?.rps);
    }
    fresh.drop_it().await?;

    // Polls due at 1,000/s for `window_s` from 2 s ahead, and the engine.
    let rate = 1_000usize;
    let n = rate * window_s;
    let t0 = SystemClock.now().0 + 2_000;
    s.seed("l", n, t0, &format!("{t0} + ((x - 1) * 1000) / {rate}"))
        .await?;
    let adapter = Arc::new(InstantProvider::new(1, true));
    let engine = node::engine(
        s.store.clone(),
        adapter.clone(),
        node::config(64, "lifecycle"),
    );
    let stop = CancellationToken::new();
    let polling = tokio::spawn({
        let stop = stop.clone();
        async move { engine.run(stop).await }
    });
    tokio::time::sleep(Duration::from_millis(2_500)).await;

    let dir = std::env::temp_dir().join(format!("finality-bench-archive-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = RetentionConfig {
        provider_calls: Duration::from_secs(59 * 86_400),
        payments: Duration::from_secs(699 * 86_400),
        ..RetentionConfig::keep_everything(dir.clone())
    };
    let polls_before = adapter.calls.load(Ordering::Relaxed) as usize;
    let archiver = Archiver::new(
        s.store.clone(),
        Arc::new(SystemClock),
        cfg,
        "bench-lifecycle",
    );
    let t = Instant::now();
    let Some(report) = archiver.run_once(None).await? else {
        bail!("the retention lease was held");
    };
    let retention_s = t.elapsed().as_secs_f64();
    if retention_s + 3.0 > window_s as f64 {
        eprintln!(
            "warning: retention took {retention_s:.1} s, longer than the {window_s} s of polls \
             beside it: the lateness figure covers only part of the run"
        );
    }
    let polls_after = adapter.calls.load(Ordering::Relaxed) as usize;
    stop.cancel();
    let _ = polling.await;
    let archive_bytes = report.files.iter().map(|f| f.bytes).sum();
    let days: Vec<_> = report.partitions.iter().filter(|p| p.rows > 0).collect();
    let biggest = days.iter().max_by_key(|p| p.rows);
    let max_of = |f: fn(&&finality_engine::lifecycle::DroppedPartition) -> f64| {
        days.iter().map(f).fold(0.0, f64::max)
    };
    let _ = std::fs::remove_dir_all(&dir);
    // The lateness of the polls made while retention ran.
    let mut late: Vec<i64> = adapter
        .lateness_us
        .as_ref()
        .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()).clone())
        .unwrap_or_default()
        .into_iter()
        .skip(polls_before)
        .take(polls_after.saturating_sub(polls_before))
        .collect();
    late.sort_unstable();
    if late.is_empty() {
        bail!("no polls were made while retention ran");
    }
    let q = |f: f64| super::quantile_ms(&late, f);
    let out = LifecycleRun {
        calls,
        payments,
        seed_s,
        table_bytes,
        calls_removed: report.removed.get("provider_calls").copied().unwrap_or(0),
        payments_removed: report.removed.get("payments").copied().unwrap_or(0),
        retention_s,
        archive_bytes,
        lateness_p50_ms: q(0.5),
        lateness_p99_ms: q(0.99),
        lateness_max_ms: late.last().map_or(f64::NAN, |m| *m as f64 / 1e3),
        seeded_polls_per_s: median(&polls.seeded),
        fresh_polls_per_s: median(&polls.fresh),
        polls_ratios: polls.ratios(),
        seeded_ingest_per_s: median(&ingest.seeded),
        fresh_ingest_per_s: median(&ingest.fresh),
        ingest_ratios: ingest.ratios(),
        days_dropped: days.len(),
        day_rows: biggest.map_or(0, |p| p.rows),
        day_drop_ms: max_of(|p| p.detach_ms + p.drop_ms),
        day_detach_ms: max_of(|p| p.detach_ms),
        day_export_s: max_of(|p| p.export_ms / 1e3),
    };
    s.drop_it().await?;
    Ok(out)
}

/// Poll executions per second of `n` fresh payments due now (3 polls
/// each, 8 workers) in `s`.
async fn polls_per_s(s: &Scratch, prefix: &str, n: usize) -> anyhow::Result<f64> {
    let now = Timestamp(SystemClock.now().0);
    s.seed(prefix, n, now.0, &now.0.to_string()).await?;
    let adapter = Arc::new(InstantProvider::new(3, false));
    let e = node::engine(s.store.clone(), adapter.clone(), node::config(8, "lc"));
    let t = Instant::now();
    e.run_until_idle(CancellationToken::new()).await;
    let calls = adapter.calls.load(Ordering::Relaxed);
    if calls != 3 * n as u64 {
        bail!("{calls} calls for {n} payments × 3");
    }
    Ok(calls as f64 / t.elapsed().as_secs_f64())
}

/// One simulated day of the SQLite file's life.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileDay {
    pub day: usize,
    pub rows: i64,
    pub file_mib: f64,
}

/// SQLite at a steady rate: each simulated day (virtual time) writes
/// `per_day` provider-call rows, then retention (2 days of provider calls)
/// runs; the file's size after each day's run, checkpointed.
pub async fn sqlite_file(days: usize, per_day: usize) -> anyhow::Result<Vec<FileDay>> {
    let s = Scratch::new("sqlite", "", "lifecycle_file", 4).await?;
    let super::scratch::Where::Sqlite { path } = &s.at else {
        bail!("not a SQLite scratch file");
    };
    let path = path.clone();
    let dir = std::env::temp_dir().join(format!(
        "finality-bench-archive-lite-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let start = SystemClock.now().0 - (days as i64 + 1) * DAY_MS;
    let mut out = Vec::new();
    for day in 0..days {
        let from = start + day as i64 * DAY_MS;
        s.exec(&format!(
            "WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < {per_day}) \
             INSERT INTO poll_attempts (payment_id, provider, worker, started_at, latency_ms, \
             outcome, provider_status) SELECT 'c' || (x % 10000), 'bench', 'w', \
             {from} + (x * {DAY_MS}) / {per_day}, 5, 'pending', 'requires_action' FROM g"
        ))
        .await?;
        let clock = Arc::new(finality_core::VirtualClock::new(Timestamp(from + DAY_MS)));
        let cfg = RetentionConfig {
            provider_calls: Duration::from_secs(2 * 86_400),
            ..RetentionConfig::keep_everything(dir.clone())
        };
        Archiver::new(s.store.clone(), clock, cfg, "bench-lite")
            .run_once(None)
            .await?;
        s.exec("PRAGMA wal_checkpoint(TRUNCATE)").await?;
        let rows = s.scalar("SELECT count(*) FROM poll_attempts").await?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        out.push(FileDay {
            day: day + 1,
            rows,
            file_mib: bytes as f64 / (1u64 << 20) as f64,
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
    s.drop_it().await?;
    Ok(out)
}

/// Figures measured in turn on a fresh schema and the seeded one, fresh
/// first and last.
#[derive(Default)]
struct Alternating {
    fresh: Vec<f64>,
    seeded: Vec<f64>,
}

impl Alternating {
    /// Each seeded figure over the mean of the fresh ones before and after.
    fn ratios(&self) -> Vec<f64> {
        self.seeded
            .iter()
            .zip(self.fresh.windows(2))
            .map(|(s, f)| s / ((f[0] + f[1]) / 2.0))
            .collect()
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
