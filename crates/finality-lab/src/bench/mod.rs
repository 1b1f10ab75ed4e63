//! `finality bench`: measures the poll engine against a real PostgreSQL and a
//! real SQLite file with an in-process provider that answers instantly
//! (pending K−1 times, then succeeded), next to the database's ceiling
//! measured in the same run (`pgbench` single-row UPDATE and INSERT
//! transactions on the same server). Every figure is the median of `--runs`
//! runs with min and max; `--json` keeps them all for the plots
//! (`scripts/plot_bench.py`). `--smoke` runs seconds-long versions of every
//! measurement with no thresholds, so the command never rots. Method and
//! results: `docs/PERFORMANCE.md`.
//!
//! # Layout
//! - `ceiling`: pgbench.
//! - `node`: the instant provider and `finality bench-node` (child engines).
//! - `scratch`: throw-away schemas and files, bulk seeding.
//! - `workloads`: executions/s, lateness, claim latency, engine memory.
//! - `ingest`: the webhook load generator.
//! - `publish`: events out per channel against the feed's own rate.
//! - `fairness`: one account's poll lateness beside another's backlog, and
//!   what sharing the claim costs.
//! - `lifecycle`: retention at size (only with `--only lifecycle` or `--smoke`).
//! - `replica`: a streaming standby's lag under the poll load, and the share
//!   of API reads it served (only with `--only replica`).
//! - `cpu`: a webhook's CPU in the server's threads and PostgreSQL's
//!   backends, durable against the no-database peer.

mod ceiling;
mod cpu;
mod e2e;
mod fairness;
mod ingest;
mod lifecycle;
mod mysql;
pub mod node;
mod publish;
mod reconcile;
mod replica;
mod scratch;
mod workloads;

use serde_json::{json, Value};
use std::path::PathBuf;

const SECTIONS: &[&str] = &[
    "ceiling",
    "throughput",
    "processes",
    "lateness",
    "claim",
    "memory",
    "churn",
    "ingest",
    "e2e",
    "publish",
    "fairness",
    "reconcile",
    "lifecycle",
    "mysql",
    "replica",
    "cpu",
];

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Seconds-long runs of every measurement, no thresholds (CI).
    #[arg(long)]
    smoke: bool,
    /// PostgreSQL server to measure (scratch schemas are made and dropped).
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    database_url: String,
    /// MariaDB or MySQL server for the `mysql` section (run only when
    /// named in `--only`; scratch databases are made and dropped).
    #[arg(long, default_value = "mysql://root@127.0.0.1:3306")]
    mysql_url: String,
    /// Runs per figure (median, min and max are reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Only these sections (comma-separated): ceiling, throughput,
    /// processes, lateness, claim, memory, churn, ingest, e2e, publish,
    /// fairness, reconcile, lifecycle (run when named or with `--smoke`),
    /// mysql (run only when named, on `--mysql-url`), replica (run only
    /// when named, on a private primary and standby it starts), cpu (the
    /// webhook's CPU by server and PostgreSQL; when named or with `--smoke`).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Concurrent senders for the ingest section (a provider's burst
    /// arrives on many connections at once).
    #[arg(long, value_delimiter = ',', default_value = "32,256")]
    ingest_connections: Vec<usize>,
    /// Webhooks per second for the end-to-end section (each for 10 s).
    #[arg(long, value_delimiter = ',', default_value = "1000")]
    e2e_rates: Vec<f64>,
    /// Backlog sizes for the claim latency (pending poll jobs, 1,000 due).
    #[arg(long, value_delimiter = ',', default_value = "10000,1000000,10000000")]
    claim_sizes: Vec<usize>,
    /// Events per run for the publish section (each channel drains them all).
    #[arg(long, default_value_t = 20_000)]
    publish_events: usize,
    /// Due polls of the backlogged account in the fairness section.
    #[arg(long, default_value_t = 1_000_000)]
    fairness_backlog: usize,
    /// Payments per settlement report for the reconcile section (each
    /// report has about 1.006 lines per payment).
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000")]
    reconcile_sizes: Vec<usize>,
    /// Provider-call rows and final payments seeded for the lifecycle
    /// section (run only when named in `--only`, or with `--smoke`).
    #[arg(long, default_value_t = 10_000_000)]
    lifecycle_calls: usize,
    #[arg(long, default_value_t = 1_000_000)]
    lifecycle_payments: usize,
    /// Write every figure (and the lateness distributions) here as JSON;
    /// sections not run keep what the file already holds.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Median, min, max.
fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn summary(v: &[f64]) -> Value {
    let (m, lo, hi) = stats(v);
    json!({"median": m, "min": lo, "max": hi, "runs": v})
}

/// The value at fraction `f` of a sorted sample, in ms from µs.
fn quantile_ms(sorted_us: &[i64], f: f64) -> f64 {
    if sorted_us.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted_us.len() as f64 * f) as usize).min(sorted_us.len() - 1);
    sorted_us[i] as f64 / 1e3
}

pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let runs = if args.smoke { 1 } else { args.runs.max(1) };
    let want = |s: &str| args.only.is_empty() || args.only.iter().any(|o| o == s);
    for o in &args.only {
        if !SECTIONS.contains(&o.as_str()) {
            anyhow::bail!(
                "--only: unknown section `{o}` (one of {})",
                SECTIONS.join(", ")
            );
        }
    }
    let url = &args.database_url;
    let mut out = serde_json::Map::new();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "finality bench{} · {runs} run(s) per figure: median (min–max) · {cores} cores",
        if args.smoke { " --smoke" } else { "" },
    );
    out.insert("cores".into(), json!(cores));
    out.insert("smoke".into(), json!(args.smoke));

    let mut update_tps = f64::NAN;
    let mut insert_tps = f64::NAN;
    if want("ceiling") {
        let bench_db = ceiling::pgbench_url(url).await?;
        ceiling::prepare(&bench_db).await?;
        let secs = if args.smoke { 2 } else { 10 };
        let (mut up, mut ins) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            up.push(ceiling::pgbench_tps(
                &bench_db,
                "update",
                ceiling::UPDATE,
                secs,
            )?);
            ins.push(ceiling::pgbench_tps(
                &bench_db,
                "insert",
                ceiling::INSERT,
                secs,
            )?);
        }
        let (m, lo, hi) = stats(&up);
        update_tps = m;
        println!("\nceiling, pgbench 8 clients, {secs} s:");
        println!("  pgbench single-row UPDATE: {m:>8.0} tps ({lo:.0}–{hi:.0})");
        let (m, lo, hi) = stats(&ins);
        insert_tps = m;
        println!("  pgbench one-row INSERT:    {m:>8.0} tps ({lo:.0}–{hi:.0})");
        out.insert(
            "ceiling".into(),
            json!({"update_tps": summary(&up), "insert_tps": summary(&ins)}),
        );
    }

    let worker_counts: &[usize] = if args.smoke { &[1, 8] } else { &[1, 8, 64] };
    if want("throughput") || want("processes") {
        println!("\npoll executions/s (claim → provider → complete), payments × 3 polls each:");
        println!(
            "  {:<10} {:>9} {:>8} {:>8} {:>16} {:>10}",
            "store", "processes", "workers", "median", "min–max", "vs UPDATE"
        );
    }
    let mut tp = Vec::new();
    let mut cases: Vec<(&str, usize)> = Vec::new();
    if want("throughput") {
        for kind in ["postgres", "sqlite"] {
            for &w in worker_counts {
                cases.push((kind, w));
            }
        }
    }
    for (kind, w) in cases {
        let mut v = Vec::new();
        for _ in 0..runs {
            v.push(workloads::throughput(kind, url, payments_for(args.smoke, w), w, true).await?);
        }
        print_rate(kind, 1, w, &v, update_tps);
        tp.push(
            json!({"store": kind, "processes": 1, "workers": w, "executions_per_s": summary(&v)}),
        );
    }
    if want("processes") {
        let counts: &[usize] = if args.smoke { &[8] } else { &[1, 8, 64] };
        for &w in counts {
            let mut v = Vec::new();
            for _ in 0..runs {
                v.push(workloads::three_processes(url, payments_for(args.smoke, w), w).await?);
            }
            print_rate("postgres", 3, w, &v, update_tps);
            tp.push(json!({"store": "postgres", "processes": 3, "workers": w, "executions_per_s": summary(&v)}));
        }
    }
    if !tp.is_empty() {
        out.insert("throughput".into(), Value::Array(tp));
    }

    if want("lateness") {
        let secs = if args.smoke { 1 } else { 10 };
        let cases: &[(&str, usize, bool)] = if args.smoke {
            &[("postgres", 1_000, true), ("sqlite", 1_000, true)]
        } else {
            &[
                ("postgres", 1_000, true),
                ("postgres", 10_000, true),
                ("postgres", 1_000, false),
                ("sqlite", 1_000, true),
                ("sqlite", 10_000, true),
            ]
        };
        println!("\nlateness (provider call start − next_poll_at), 64 workers, {secs} s of polls:");
        println!(
            "  {:<10} {:>8} {:>6} {:>22} {:>22} {:>22}",
            "store", "polls/s", "timer", "p50 ms", "p99 ms", "max ms"
        );
        let mut all = Vec::new();
        for &(kind, rate, timer) in cases {
            let (mut p50, mut p99, mut max) = (Vec::new(), Vec::new(), Vec::new());
            let mut samples = Vec::new();
            for _ in 0..runs {
                let late = workloads::lateness(kind, url, rate, secs, timer).await?;
                p50.push(quantile_ms(&late, 0.50));
                p99.push(quantile_ms(&late, 0.99));
                max.push(quantile_ms(&late, 1.0));
                samples.push(late);
            }
            let cell = |v: &[f64]| {
                let (m, lo, hi) = stats(v);
                format!("{m:.2} ({lo:.2}–{hi:.2})")
            };
            println!(
                "  {kind:<10} {rate:>8} {:>6} {:>22} {:>22} {:>22}",
                if timer { "on" } else { "off" },
                cell(&p50),
                cell(&p99),
                cell(&max)
            );
            // The distribution of the run whose p99 is the median one.
            let (m99, _, _) = stats(&p99);
            let pick = p99.iter().position(|v| *v == m99).unwrap_or(0);
            let cdf: Vec<[f64; 2]> = (0..=1000)
                .map(|i| {
                    let f = f64::from(i) / 1000.0;
                    [quantile_ms(&samples[pick], f), f]
                })
                .collect();
            all.push(json!({
                "store": kind, "rate": rate, "timer": timer, "seconds": secs,
                "p50_ms": summary(&p50), "p99_ms": summary(&p99), "max_ms": summary(&max),
                "cdf_ms": cdf,
            }));
        }
        out.insert("lateness".into(), Value::Array(all));
    }

    if want("claim") || want("memory") {
        let sizes: Vec<usize> = if args.smoke {
            vec![10_000]
        } else {
            args.claim_sizes.clone()
        };
        println!("\nby backlog (PostgreSQL; pending poll jobs, 1,000 of them due):");
        println!(
            "  {:>10} {:>24} {:>8} {:>22} {:>8} {:>12}",
            "pending",
            "claim of 100, ms",
            "vs 10k",
            "engine peak RSS, MiB",
            "vs 10k",
            "poll_jobs MiB"
        );
        let mut rows = Vec::new();
        let (mut base_claim, mut base_mem) = (None, None);
        for &pending in &sizes {
            let b = workloads::Backlog::new(url, pending).await?;
            let (size, _) = b.poll_jobs_size().await?;
            let mut claims = Vec::new();
            if want("claim") {
                for _ in 0..runs {
                    claims.push(b.claim_round().await?.as_secs_f64() * 1e3);
                }
            }
            let mut mem = Vec::new();
            // The engine never loads the backlog, so two sizes show it.
            if want("memory") && (pending <= 1_000_000 || sizes.len() == 1) {
                for r in 0..runs {
                    mem.push(b.engine_memory(r).await? as f64 / 1024.0);
                }
            }
            b.drop_it().await?;
            let (cm, clo, chi) = stats(&claims);
            let (mm, mlo, mhi) = stats(&mem);
            let cb = *base_claim.get_or_insert(cm);
            let mb = if mem.is_empty() {
                None
            } else {
                Some(*base_mem.get_or_insert(mm))
            };
            println!(
                "  {pending:>10} {:>24} {:>8} {:>22} {:>8} {:>12.0}",
                if claims.is_empty() {
                    "-".into()
                } else {
                    format!("{cm:.3} ({clo:.3}–{chi:.3})")
                },
                if claims.is_empty() {
                    "-".into()
                } else {
                    format!("{:.2}×", cm / cb)
                },
                if mem.is_empty() {
                    "-".into()
                } else {
                    format!("{mm:.1} ({mlo:.1}–{mhi:.1})")
                },
                mb.map_or("-".into(), |b| format!("{:.2}×", mm / b)),
                size as f64 / 1048576.0
            );
            rows.push(json!({
                "pending": pending, "claim_ms": summary(&claims), "engine_peak_rss_mib": summary(&mem),
                "poll_jobs_bytes": size,
            }));
        }
        out.insert("backlog".into(), Value::Array(rows));
    }

    if want("churn") {
        let (jobs, phase) = if args.smoke {
            (1_000, 1.0)
        } else {
            (10_000, 20.0)
        };
        println!(
            "\nthe hot table under churn (PostgreSQL): {jobs} jobs re-polled continuously, \
             VACUUM after {phase} s:"
        );
        println!(
            "  {:>6} {:>14} {:>12} {:>10}",
            "t, s", "poll_jobs MiB", "dead rows", "polls"
        );
        let samples = workloads::churn(url, jobs, phase).await?;
        let mut rows = Vec::new();
        for c in &samples {
            println!(
                "  {:>6.1} {:>14.1} {:>12} {:>10}",
                c.at_s,
                c.bytes as f64 / 1048576.0,
                c.dead,
                c.polls
            );
            rows.push(json!({"at_s": c.at_s, "bytes": c.bytes, "dead": c.dead, "polls": c.polls}));
        }
        out.insert(
            "churn".into(),
            json!({"jobs": jobs, "phase_s": phase, "samples": rows}),
        );
    }

    if want("ingest") {
        let (conn_list, secs) = if args.smoke {
            (vec![8], 1.0)
        } else {
            (args.ingest_connections.clone(), 10.0)
        };
        let mut section = serde_json::Map::new();
        println!("\nverified-webhook ingest, durable inbox (group commit), {secs} s:");
        for &conns in &conn_list {
            let mut per = serde_json::Map::new();
            for kind in ["postgres", "sqlite", "no database"] {
                let (mut rps, mut p50, mut p99, mut max) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for _ in 0..runs {
                    let r = if kind == "no database" {
                        ingest::http_only(conns, secs).await?
                    } else {
                        ingest::ingest(kind, url, conns, secs).await?
                    };
                    rps.push(r.rps);
                    p50.push(r.p50_ms);
                    p99.push(r.p99_ms);
                    max.push(r.max_ms);
                }
                let (m, lo, hi) = stats(&rps);
                let (a, _, _) = stats(&p50);
                let (b, blo, bhi) = stats(&p99);
                let ratio = if insert_tps.is_finite() {
                    format!(" = {:.2}× pgbench INSERT", m / insert_tps)
                } else {
                    String::new()
                };
                println!("  {conns:>4} connections  {kind:<11} {m:>6.0} requests/s ({lo:.0}–{hi:.0}){ratio}; ack p50 {a:.2} ms, p99 {b:.2} ms ({blo:.2}–{bhi:.2})");
                per.insert(
                    kind.replace(' ', "_"),
                    json!({"connections": conns, "seconds": secs, "requests_per_s": summary(&rps),
                           "p50_ms": summary(&p50), "p99_ms": summary(&p99), "max_ms": summary(&max)}),
                );
            }
            section.insert(conns.to_string(), Value::Object(per));
        }
        out.insert("ingest".into(), Value::Object(section));
    }

    if want("e2e") {
        let secs = if args.smoke { 1.0 } else { 10.0 };
        let mut rows = Vec::new();
        println!("\nwebhook to event on PostgreSQL, {secs} s per rate: latency from the send, ms, p50 / p99 / max (median of runs by p99)");
        println!(
            "  {:>7} {:>7}  {:>22}  {:>22}  {:>22}  {:>22}",
            "rate", "sent/s", "2xx", "status changed", "event pushed", "feed reader"
        );
        for rate in &args.e2e_rates {
            let mut all = Vec::new();
            for _ in 0..runs {
                all.push(e2e::e2e(url, *rate, secs).await?);
            }
            // The run whose pushed p99 is the median stands for the rate.
            all.sort_by(|a, b| a.pushed.p99.total_cmp(&b.pushed.p99));
            let r = &all[all.len() / 2];
            let l = |x: &e2e::Latency| format!("{:.1} / {:.1} / {:.1}", x.p50, x.p99, x.max);
            println!(
                "  {rate:>7.0} {:>7.0}  {:>22}  {:>22}  {:>22}  {:>22}",
                r.sent_per_s,
                l(&r.ack),
                l(&r.applied),
                l(&r.pushed),
                l(&r.read)
            );
            rows.push(json!({"rate": rate, "median_run": r, "runs": all}));
        }
        out.insert("e2e".into(), json!(rows));
    }

    if want("publish") {
        let n = if args.smoke { 300 } else { args.publish_events };
        println!("\nevents out on PostgreSQL, {n} complete events drained from position 0 per channel (machine's brokers on loopback): events/s median (min–max); delivery start → consumer, ms p50 / p99 / max (median run by p99)");
        let mut by: std::collections::BTreeMap<String, Vec<publish::PublishRow>> =
            Default::default();
        let mut order = Vec::new();
        for _ in 0..runs {
            for r in publish::run(url, n).await? {
                match r {
                    Ok(r) => {
                        if !order.contains(&r.channel) {
                            order.push(r.channel.clone());
                        }
                        by.entry(r.channel.clone()).or_default().push(r);
                    }
                    Err(why) => println!("  skipped: {why:#}"),
                }
            }
        }
        let feed = by
            .get("feed (no send)")
            .map(|v| stats(&v.iter().map(|r| r.events_per_s).collect::<Vec<_>>()).0)
            .unwrap_or(f64::NAN);
        let mut rows = Vec::new();
        for ch in order {
            let mut v = by.remove(&ch).unwrap_or_default();
            let rates: Vec<f64> = v.iter().map(|r| r.events_per_s).collect();
            let (m, lo, hi) = stats(&rates);
            v.sort_by(|a, b| a.p99_ms.total_cmp(&b.p99_ms));
            let mid = &v[v.len() / 2];
            println!(
                "  {ch:<22} ×{:<3} {m:>8.0} events/s ({lo:.0}–{hi:.0})  {:>5.1}% of the feed   {:.2} / {:.2} / {:.2} ms",
                mid.concurrency,
                100.0 * m / feed,
                mid.p50_ms,
                mid.p99_ms,
                mid.max_ms
            );
            rows.push(json!({"channel": ch, "events_per_s": summary(&rates), "vs_feed": m / feed, "median_run": mid, "runs": v}));
        }
        out.insert("publish".into(), json!(rows));
    }

    if want("reconcile") {
        let sizes = if args.smoke {
            vec![2_000]
        } else {
            args.reconcile_sizes.clone()
        };
        println!("\nsettlement report on PostgreSQL (Adyen layout, 1 provider, with a period): one import per run, median (min–max)");
        println!(
            "  {:>9} {:>9}  {:>18}  {:>18}  {:>12}  {:>12}",
            "payments", "lines", "seconds", "lines/s", "peak RSS MiB", "growth MiB"
        );
        let mut rows = Vec::new();
        for n in sizes {
            let mut all = Vec::new();
            for _ in 0..runs {
                all.push(reconcile::run(url, n).await?);
            }
            let secs: Vec<f64> = all.iter().map(|r| r.seconds).collect();
            let rate: Vec<f64> = all.iter().map(|r| r.lines_per_s).collect();
            let (sm, slo, shi) = stats(&secs);
            let (rm, rlo, rhi) = stats(&rate);
            let peak = all.iter().map(|r| r.peak_rss_mib).fold(0.0, f64::max);
            let growth = all.iter().map(|r| r.growth_mib).fold(0.0, f64::max);
            println!(
                "  {n:>9} {:>9}  {:>18}  {:>18}  {peak:>12.1}  {growth:>12.1}",
                all[0].lines,
                format!("{sm:.1} ({slo:.1}–{shi:.1})"),
                format!("{rm:.0} ({rlo:.0}–{rhi:.0})"),
            );
            println!("  {:>9} outcomes: {:?}", "", all[0].counts);
            rows.push(
                json!({"payments": n, "lines": all[0].lines, "seconds": summary(&secs),
                "lines_per_s": summary(&rate), "peak_rss_mib_max": peak, "growth_mib_max": growth,
                "counts": all[0].counts}),
            );
        }
        out.insert("reconcile".into(), json!(rows));
    }

    // Long (it seeds tens of millions of rows): only when asked for.
    if args.smoke || args.only.iter().any(|o| o == "lifecycle") {
        let (calls, payments, window) = if args.smoke {
            (20_000, 2_000, 5)
        } else {
            // Polls beside retention for as long as its run may take
            // (a day of rows archived: about a minute per 5 million).
            (
                args.lifecycle_calls,
                args.lifecycle_payments,
                60 + args.lifecycle_calls / 500_000,
            )
        };
        println!("\nretention at size on PostgreSQL: {calls} provider-call rows over 60 days (day partitions), {payments} final payments over 700 days and as many webhooks over 90; one run takes the days past retention, polls due at 1,000/s beside it");
        let mut rows = Vec::new();
        for _ in 0..runs {
            let r = lifecycle::run(url, calls, payments, window).await?;
            println!(
                "  seeded in {:.0} s ({:.1} GiB); retention {:.1} s: {} calls + {} payments removed ({:.0} rows/s), {:.1} MiB archived; lateness meanwhile p50 {:.2} / p99 {:.2} / max {:.2} ms; polls/s seeded {:.0} vs fresh {:.0} (in turn: {})",
                r.seed_s,
                r.table_bytes as f64 / (1u64 << 30) as f64,
                r.retention_s,
                r.calls_removed,
                r.payments_removed,
                (r.calls_removed + 2 * r.payments_removed) as f64 / r.retention_s,
                r.archive_bytes as f64 / (1u64 << 20) as f64,
                r.lateness_p50_ms,
                r.lateness_p99_ms,
                r.lateness_max_ms,
                r.seeded_polls_per_s,
                r.fresh_polls_per_s,
                ratios(&r.polls_ratios),
            );
            println!(
                "    {} day partitions dropped; the largest ({} rows): detach {:.1} ms + drop = {:.1} ms (archive written between: {:.1} s); webhooks/s seeded {:.0} vs fresh {:.0} (in turn: {})",
                r.days_dropped,
                r.day_rows,
                r.day_detach_ms,
                r.day_drop_ms,
                r.day_export_s,
                r.seeded_ingest_per_s,
                r.fresh_ingest_per_s,
                ratios(&r.ingest_ratios),
            );
            rows.push(json!(r));
        }
        let (days, per_day) = if args.smoke {
            (3, 2_000)
        } else {
            (10, 200_000)
        };
        println!("\nSQLite file at a steady {per_day} provider calls a day, 2 days kept, retention run daily (virtual days):");
        let file = lifecycle::sqlite_file(days, per_day).await?;
        for d in &file {
            println!(
                "  day {:>2}: {:>9} rows, file {:.1} MiB",
                d.day, d.rows, d.file_mib
            );
        }
        out.insert(
            "lifecycle".into(),
            json!({"runs": rows, "sqlite_file": file}),
        );
    }

    if want("fairness") {
        let v = fairness::section(url, runs, args.smoke, args.fairness_backlog).await?;
        out.insert("fairness".into(), v);
    }

    if args.only.iter().any(|o| o == "cpu") || args.smoke {
        let conns = if args.smoke {
            vec![8]
        } else {
            args.ingest_connections.clone()
        };
        out.insert(
            "cpu".into(),
            cpu::section(url, &conns, runs, args.smoke).await?,
        );
    }

    // On private servers of its own: run only when asked for by name.
    if args.only.iter().any(|o| o == "replica") {
        out.insert("replica".into(), replica::section(runs, args.smoke).await?);
    }

    // On a second server: run only when asked for by name.
    if args.only.iter().any(|o| o == "mysql") {
        out.insert(
            "mysql".into(),
            mysql::section(&args.mysql_url, runs, args.smoke).await?,
        );
    }

    if let Some(path) = &args.json {
        // Sections not run this time keep their figures from the file.
        let mut all = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Map<String, Value>>(&t).ok())
            .unwrap_or_default();
        all.extend(out);
        std::fs::write(path, serde_json::to_string_pretty(&Value::Object(all))?)?;
        println!("\nwrote {}", path.display());
    }
    Ok(())
}

/// Payments per throughput run: enough for several seconds of work at each
/// worker count (1,000 at 1 worker, 4,000 at 8, 20,000 at 64).
fn payments_for(smoke: bool, workers: usize) -> usize {
    if smoke {
        300
    } else {
        (workers * 500).clamp(1_000, 20_000)
    }
}

fn print_rate(kind: &str, processes: usize, workers: usize, v: &[f64], update_tps: f64) {
    let (m, lo, hi) = stats(v);
    let ratio = if kind == "postgres" && update_tps.is_finite() {
        format!("{:.2}×", m / update_tps)
    } else {
        "-".into()
    };
    println!(
        "  {kind:<10} {processes:>9} {workers:>8} {m:>8.0} {:>16} {ratio:>10}",
        format!("{lo:.0}–{hi:.0}")
    );
}

/// `0.97×, 1.02×, …`
fn ratios(v: &[f64]) -> String {
    v.iter()
        .map(|r| format!("{r:.2}×"))
        .collect::<Vec<_>>()
        .join(", ")
}
