//! `finality archive`: run retention now (archive, then delete), and
//! `finality archive restore FILE` to bring an archived day back
//! (docs/LIFECYCLE.md).

use crate::config::Config;
use finality_core::{Clock, SystemClock};
use finality_engine::lifecycle::{self, Archiver};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args)]
pub struct ArchiveArgs {
    #[command(subcommand)]
    command: Option<ArchiveCommand>,
    /// Where archive files go (default: `retention.archive_dir`).
    #[arg(long, global = true)]
    dir: Option<PathBuf>,
    /// Database URL (default: from the configuration).
    #[arg(long, global = true)]
    database_url: Option<String>,
    /// Print what the run did as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum ArchiveCommand {
    /// Put the rows of an archive file back (a payments file brings the
    /// day's history, provider calls and audit rows with it), after
    /// checking it against the manifest; retention then leaves that day
    /// alone for `--hold`.
    Restore {
        /// An archive file, as the manifest or a 410 answer names it
        /// (relative to the archive directory, or a path to it).
        file: PathBuf,
        /// How long retention leaves the restored day alone.
        #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
        hold: Duration,
    },
    /// PostgreSQL: the daily partitions of `poll_attempts` and
    /// `delivery_attempts`, and (with `--convert`) convert a table made
    /// before partitions, online, now.
    Partitions {
        /// Take every step of the online conversion now (an index built
        /// concurrently, a check validated while writes go on, a swap
        /// that locks the table for milliseconds).
        #[arg(long)]
        convert: bool,
    },
}

pub async fn run(config: Config, args: ArchiveArgs) -> anyhow::Result<()> {
    let mut cfg = config.retention.clone();
    if let Some(d) = args.dir {
        cfg.archive_dir = d;
    }
    let store = crate::commands::open(&config, args.database_url).await?;
    match args.command {
        None => {
            let holder = format!("archive-cli-{}", std::process::id());
            let dir = cfg.archive_dir.clone();
            let a = Archiver::new(store, Arc::new(SystemClock), cfg, holder);
            let Some(report) = a.run_once(None).await? else {
                anyhow::bail!(
                    "another node is running retention now (lease `{}`); try again when it is done",
                    lifecycle::LEASE_NAME
                );
            };
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
                return Ok(());
            }
            println!("archived to {}:", dir.display());
            if report.archived.values().all(|n| *n == 0) {
                println!("  nothing older than its retention");
            } else {
                for (kind, n) in &report.archived {
                    let removed = report.removed.get(kind).copied().unwrap_or(0);
                    println!("  {kind:<16} {n:>10} archived  {removed:>10} removed");
                }
            }
            if !report.partitions.is_empty() {
                let rows: u64 = report.partitions.iter().map(|p| p.rows).sum();
                let slowest = report
                    .partitions
                    .iter()
                    .map(|p| p.detach_ms + p.drop_ms)
                    .fold(0.0, f64::max);
                println!(
                    "  {} day partitions dropped whole ({rows} rows; detach + drop at most {slowest:.0} ms each)",
                    report.partitions.len()
                );
            }
            for step in &report.conversion {
                println!("  partitions: {step}");
            }
            println!(
                "{} files written (listed in manifest.jsonl)",
                report.files.len()
            );
            Ok(())
        }
        Some(ArchiveCommand::Partitions { convert }) => {
            partitions(&*store, convert, args.json).await
        }
        Some(ArchiveCommand::Restore { file, hold }) => {
            let path = if file.is_relative() && !file.exists() {
                cfg.archive_dir.join(&file)
            } else {
                file.clone()
            };
            let report =
                lifecycle::restore(&*store, &cfg.archive_dir, &path, hold, SystemClock.now())
                    .await?;
            println!(
                "restored {} of {} (held from retention until {}):",
                report.kind,
                report.day,
                report.held_until.to_rfc3339()
            );
            for (table, (rows, new)) in &report.tables {
                println!("  {table:<18} {rows:>10} rows in the archive  {new:>10} put back");
            }
            Ok(())
        }
    }
}

/// `finality archive partitions [--convert]`.
async fn partitions(
    store: &dyn finality_store::Store,
    convert: bool,
    json: bool,
) -> anyhow::Result<()> {
    use finality_store::retention::partitions::{Conversion, DAILY};
    let mut out = Vec::new();
    for t in &DAILY {
        if convert {
            loop {
                match store.convert_step(t.kind, SystemClock.now()).await? {
                    Conversion::Pending(step) => eprintln!("{}: {step}", t.table),
                    Conversion::Partitioned => {
                        store
                            .partitions_ahead(
                                SystemClock.now(),
                                finality_store::retention::partitions::DAYS_AHEAD,
                            )
                            .await?;
                        break;
                    }
                    Conversion::Busy(why) => {
                        eprintln!("{}: {why}; waiting 10 s", t.table);
                        tokio::time::sleep(std::time::Duration::from_secs(10)).await;
                    }
                    Conversion::NotApplicable => break,
                }
            }
        }
        let partitioned = store.partitioned(t.kind).await?;
        let parts = store.partitions(t.kind).await?;
        if !json {
            println!(
                "{}: {}",
                t.table,
                if partitioned {
                    "partitioned by day"
                } else {
                    "one table (SQLite, or not converted: `finality archive partitions --convert`)"
                }
            );
            for p in &parts {
                let range = match (p.default, p.attached, p.from, p.to) {
                    (true, ..) => "default (rows outside every day)".to_string(),
                    (_, false, ..) => "detached (the next run archives and drops it)".into(),
                    (_, _, None, Some(to)) => format!("everything before {}", iso(to)),
                    (_, _, Some(from), Some(to)) => format!("{} to {}", iso(from), iso(to)),
                    _ => String::new(),
                };
                println!("  {:<34} ~{:>10} rows  {range}", p.name, p.rows_estimate);
            }
        }
        out.push(serde_json::json!({
            "table": t.table, "partitioned": partitioned, "partitions": parts,
        }));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(())
}

fn iso(ms: i64) -> String {
    finality_core::Timestamp(ms).to_rfc3339()
}
