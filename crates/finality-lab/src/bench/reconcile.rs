//! The settlement-report section: a PostgreSQL schema seeded with N
//! payments of one provider (99 % succeeded within the report's period,
//! 1 % still pending here), the simulator's report writer turning them into
//! an Adyen Settlement details report with seeded discrepancies (0.1 % left
//! out, 0.1 % with a wrong amount, 0.5 % refunded, 0.1 % lines for payments
//! nobody registered), then one `reconcile` of the whole file with the
//! period, timed, with the process's peak resident memory over the import.
//! The outcome counts are checked against what was injected, so a fast
//! wrong answer fails the benchmark.

use super::scratch::Scratch;
use finality_core::Timestamp;
use finality_engine::reconcile::{reconcile, Import, Period};
use finality_providers::settlement::Format;
use finality_sim::settlement::{write_adyen_report, Inject, Settled};
use std::collections::BTreeMap;
use std::time::Instant;

/// One import's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReconRun {
    pub payments: usize,
    pub lines: i64,
    pub seconds: f64,
    pub lines_per_s: f64,
    /// Peak resident memory of the whole process during the import, and
    /// its growth over the resident memory just before it.
    pub peak_rss_mib: f64,
    pub growth_mib: f64,
    pub counts: BTreeMap<String, i64>,
}

const PERIOD_START: i64 = 1_767_225_600_000;

fn amount(x: usize) -> i64 {
    1000 + (x % 9000) as i64
}

/// Whether payment `x` is still pending here (the report settles it).
fn open_here(x: usize) -> bool {
    x.is_multiple_of(100)
}

fn kib(field: &str) -> f64 {
    super::node::proc_status_kib(field).unwrap_or(0) as f64
}

/// Reset the kernel's peak-RSS mark for this process, so VmHWM afterwards
/// is the peak of what follows.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

pub async fn run(url: &str, payments: usize) -> anyhow::Result<ReconRun> {
    let s = Scratch::new("postgres", url, "recon", 4).await?;
    let now = PERIOD_START + 3_600_000;
    let fin = format!("{PERIOD_START} + (x % 3000000)");
    s.exec(&format!(
        "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, \
         status_source, created_at, updated_at, finalized_at) \
         SELECT 'rp' || x, 'bench', 'psp' || lpad(x::text, 12, '0'), 'payment', 1000 + (x % 9000), \
         'EUR', CASE WHEN x % 100 = 0 THEN 'pending' ELSE 'succeeded' END, \
         CASE WHEN x % 100 = 0 THEN NULL ELSE 'webhook' END, {PERIOD_START}, {now}, \
         CASE WHEN x % 100 = 0 THEN NULL ELSE {fin} END \
         FROM generate_series(1, {payments}) AS g(x); \
         INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, next_poll_at) \
         SELECT 'rp' || x, 'bench', 'psp' || lpad(x::text, 12, '0'), 'payment', {PERIOD_START}, {now} + 86400000 \
         FROM generate_series(100, {payments}, 100) AS g(x); \
         ANALYZE payments; ANALYZE poll_jobs"
    ))
    .await?;
    let inject = Inject {
        missing: 0.001,
        wrong_amount: 0.001,
        refunded: 0.005,
        unknown: 0.001,
        seed: 5,
    };
    let settled = (1..=payments).map(|x| Settled {
        psp_reference: format!("psp{x:012}"),
        merchant_reference: None,
        amount: amount(x),
        currency: "EUR".into(),
        at: Timestamp(PERIOD_START + (x % 3_000_000) as i64),
    });
    let path = std::env::temp_dir().join(format!("finality-bench-recon-{payments}.csv"));
    let file = std::io::BufWriter::new(std::fs::File::create(&path)?);
    let injected = write_adyen_report(settled, &inject, 1, file)?;

    // What the import must find.
    let mut want: BTreeMap<String, i64> = BTreeMap::new();
    let mut add = |k: &str, n: i64| *want.entry(k.to_string()).or_default() += n;
    let x_of = |r: &str| r[3..].parse::<usize>().unwrap_or(0);
    let missing_final = injected
        .missing
        .iter()
        .filter(|r| !open_here(x_of(r)))
        .count() as i64;
    add("missing_from_report", missing_final);
    add("amount_mismatch", injected.wrong_amount.len() as i64);
    add("reversed", injected.refunded.len() as i64);
    add("unknown_here", injected.unknown.len() as i64);
    add("ignored", injected.batch_lines as i64);
    let left_out: std::collections::HashSet<&str> = injected
        .missing
        .iter()
        .chain(&injected.wrong_amount)
        .map(String::as_str)
        .collect();
    let applied = (100..=payments)
        .step_by(100)
        .filter(|x| !left_out.contains(format!("psp{x:012}").as_str()))
        .count() as i64;
    add("applied", applied);
    add("matched", injected.settled as i64 - applied);
    want.retain(|_, n| *n != 0);

    let format = Format::AdyenSettlementDetails;
    let import = Import {
        provider: "bench",
        owner: Default::default(),
        name: "settlement_detail_report_batch_1.csv",
        format: &format,
        period: Some(Period {
            from: Timestamp(PERIOD_START),
            until: Timestamp(now),
        }),
    };
    let before = kib("VmRSS:");
    reset_peak();
    let t = Instant::now();
    let out = reconcile(&*s.store, &import, &path, Timestamp(now)).await?;
    let seconds = t.elapsed().as_secs_f64();
    let peak = kib("VmHWM:");
    let _ = std::fs::remove_file(&path);
    s.drop_it().await?;
    if out.counts != want {
        anyhow::bail!(
            "reconcile of {payments} payments classified {:?}, the injections say {want:?}",
            out.counts
        );
    }
    Ok(ReconRun {
        payments,
        lines: out.lines,
        seconds,
        lines_per_s: out.lines as f64 / seconds,
        peak_rss_mib: peak / 1024.0,
        growth_mib: (peak - before).max(0.0) / 1024.0,
        counts: out.counts,
    })
}
