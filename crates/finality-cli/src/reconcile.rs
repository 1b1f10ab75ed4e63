//! `finality reconcile PROVIDER FILE`: check a settlement report line by
//! line against finality's records (docs/RECONCILIATION.md).

use crate::config::Config;
use anyhow::anyhow;
use finality_core::{Clock, SystemClock};
use finality_providers::settlement::FormatSpec;
use std::path::PathBuf;

/// A settlement report: Adyen's Settlement details report, Stripe's
/// itemized reports, PayPal's Settlement Report (STL), or any CSV whose
/// columns are named here.
#[derive(clap::Args)]
pub struct ReconcileArgs {
    /// The provider the report is from (a name in finality.toml).
    provider: String,
    /// The report (CSV).
    file: PathBuf,
    /// `adyen-settlement-details`, `stripe-itemized`, `paypal-stl`,
    /// `wechat-trade-bill`, `alipay-trade-bill`, or `csv` with the columns
    /// named below.
    #[arg(long, default_value = "csv")]
    format: String,
    /// Column holding the provider's payment id (`csv`).
    #[arg(long)]
    reference: Option<String>,
    /// Column holding the gross amount (`csv`).
    #[arg(long)]
    amount: Option<String>,
    /// Column holding the currency, ISO 4217 (`csv`).
    #[arg(long)]
    currency: Option<String>,
    /// Column saying what each line is; without it every line is a charge.
    #[arg(long)]
    kind: Option<String>,
    /// What the values of `--kind` mean: `Settled=charge,Refunded=refund,…`
    /// (charge, refund, chargeback, fee, payout, other).
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<String>,
    /// Column holding the fee, if any.
    #[arg(long)]
    fee: Option<String>,
    /// Column holding the merchant's reference, if any.
    #[arg(long)]
    merchant_ref: Option<String>,
    /// Amounts are decimals (`12.50`), not integers of minor units.
    #[arg(long)]
    decimal: bool,
    /// The report's period, `FROM..UNTIL` (dates, midnight UTC, or RFC 3339
    /// times with their offset: a Beijing-time bill's day is
    /// `2026-11-30T00:00:00+08:00..2026-12-01T00:00:00+08:00`): payments that succeeded here
    /// within it and that the report does not list are reported as
    /// `missing_from_report`. Without it they are not looked for.
    #[arg(long, value_name = "FROM..UNTIL")]
    period: Option<finality_engine::reconcile::Period>,
    /// Database URL (default: from the configuration).
    #[arg(long)]
    database_url: Option<String>,
}

pub async fn run(config: Config, args: ReconcileArgs) -> anyhow::Result<()> {
    if !config.providers.contains_key(&args.provider) {
        let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
        return Err(anyhow!(
            "unknown provider `{}` (configured: {})",
            args.provider,
            known.join(", ")
        ));
    }
    let spec = FormatSpec {
        format: args.format,
        reference: args.reference,
        amount: args.amount,
        currency: args.currency,
        kind: args.kind,
        kinds: args.kinds,
        fee: args.fee,
        merchant_ref: args.merchant_ref,
        decimal: args.decimal,
    };
    let format = spec
        .build()
        .map_err(|e| anyhow!("--{}: {}", e.field.replace('_', "-"), e.message))?;
    let store = crate::commands::open(&config, args.database_url.clone()).await?;
    let name = args.file.file_name().map_or_else(
        || args.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let import = finality_engine::reconcile::Import {
        provider: &args.provider,
        name: &name,
        format: &format,
        period: args.period,
    };
    let out =
        finality_engine::reconcile::reconcile(&*store, &import, &args.file, SystemClock.now())
            .await?;
    if out.already_imported {
        println!(
            "{}: already imported as run {}; nothing changed",
            args.file.display(),
            out.run_id
        );
    } else {
        println!(
            "{}: run {}, {} lines",
            args.file.display(),
            out.run_id,
            out.lines
        );
    }
    for (outcome, n) in &out.counts {
        println!("  {outcome:<16} {n:>8}");
    }
    let kept = store.recon_lines(out.run_id, 20).await?;
    if !kept.is_empty() {
        println!("lines that did not simply match (first {}):", kept.len());
        for l in kept {
            let line = l.line.map_or_else(|| "—".to_string(), |n| n.to_string());
            println!(
                "  line {line:>6}  {:<19} {:<10} {}",
                l.outcome, l.kind, l.reason
            );
        }
    }
    Ok(())
}
