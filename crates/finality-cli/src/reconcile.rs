//! `finality reconcile PROVIDER FILE`: check a settlement report line by
//! line against finality's records (docs/RECONCILIATION.md).

use crate::config::Config;
use anyhow::anyhow;
use finality_core::{Clock, SystemClock};
use finality_providers::settlement::FormatSpec;
use std::path::PathBuf;
use std::sync::Arc;

/// A settlement report: Adyen's Settlement details report, Stripe's
/// itemized reports, PayPal's Settlement Report (STL), or any CSV whose
/// columns are named here.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ReconcileArgs {
    #[command(subcommand)]
    command: Option<ReconcileCommand>,
    /// The provider the report is from (a name in finality.toml).
    #[arg(required = true)]
    provider: Option<String>,
    /// The report (CSV).
    #[arg(required = true)]
    file: Option<PathBuf>,
    /// The account whose report it is (default: the provider's own): its
    /// lines reach only that account's payments, or those of the account a
    /// line names (Adyen's `Merchant Account`).
    #[arg(long)]
    account: Option<String>,
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

/// `finality reconcile fetch`: reports fetched from the provider.
#[derive(clap::Subcommand)]
enum ReconcileCommand {
    /// Fetch and import each day's settlement report from `--from` to
    /// `--until` (both included, in the provider's own days) not imported
    /// yet, as the scheduled fetcher does (`[providers.NAME.settlement]`).
    Fetch {
        /// The provider (a name in finality.toml with a settlement table).
        provider: String,
        /// The first day, YYYY-MM-DD.
        #[arg(long)]
        from: chrono::NaiveDate,
        /// The last day, YYYY-MM-DD (default: the newest day ready now).
        #[arg(long)]
        until: Option<chrono::NaiveDate>,
        /// Where the files go (default: `retention.archive_dir`/settlement).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Database URL (default: from the configuration).
        #[arg(long)]
        database_url: Option<String>,
    },
}

/// Fetch and import `provider`'s days `from..=until`, printing each day.
async fn fetch(
    config: &Config,
    provider: &str,
    from: chrono::NaiveDate,
    until: Option<chrono::NaiveDate>,
    dir: Option<PathBuf>,
    database_url: Option<String>,
) -> anyhow::Result<()> {
    use finality_engine::settlement::{DayOutcome, Fetcher};
    let providers = config.build_providers()?;
    let entry = providers
        .get(provider)
        .ok_or_else(|| anyhow!("unknown provider `{provider}`"))?;
    let schedule = entry.settlement.clone().ok_or_else(|| {
        anyhow!(
            "provider `{provider}` has no [providers.{provider}.settlement] table: nothing says \
             how to fetch its reports"
        )
    })?;
    let now = SystemClock.now();
    let until = until.unwrap_or_else(|| schedule.newest_ready(now));
    if until < from {
        return Err(anyhow!("--until {until} is before --from {from}"));
    }
    let store = crate::commands::open(config, database_url).await?;
    let dir = dir.unwrap_or_else(|| config.retention.archive_dir.join("settlement"));
    let holder = format!("cli-{}", std::process::id());
    let fetcher = Fetcher::new(store, Arc::new(SystemClock), &providers, &holder, &dir)
        .ok_or_else(|| anyhow!("no provider fetches settlement reports"))?;
    let days = fetcher.backfill(provider, from, until).await?;
    let mut failed = 0;
    for (account, date, outcome) in &days {
        // An account's days after the provider's own, each named.
        let day = match account {
            Some(a) => format!("{date} account {a}"),
            None => date.to_string(),
        };
        match outcome {
            DayOutcome::Imported {
                run_id,
                already,
                counts,
                checked,
            } => {
                let what = if *already {
                    "already imported"
                } else {
                    "imported"
                };
                let counts: Vec<String> = counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
                println!(
                    "{day}: {what} as run {run_id} ({checked}): {}",
                    counts.join(", ")
                );
            }
            DayOutcome::Skipped => println!("{day}: imported before; not fetched again"),
            DayOutcome::NotReady(why) => println!("{day}: not ready: {why}"),
            DayOutcome::Refused(why) => {
                failed += 1;
                println!("{day}: REFUSED, nothing imported: {why}");
            }
            DayOutcome::Failed(why) => {
                failed += 1;
                println!("{day}: failed: {why}");
            }
        }
    }
    if failed > 0 {
        return Err(anyhow!("{failed} of {} days were not imported", days.len()));
    }
    Ok(())
}

pub async fn run(config: Config, args: ReconcileArgs) -> anyhow::Result<()> {
    if let Some(ReconcileCommand::Fetch {
        provider,
        from,
        until,
        dir,
        database_url,
    }) = args.command
    {
        return fetch(&config, &provider, from, until, dir, database_url).await;
    }
    let (Some(provider), Some(file)) = (args.provider, args.file) else {
        return Err(anyhow!(
            "reconcile needs PROVIDER FILE, or `fetch PROVIDER --from DATE`"
        ));
    };
    if !config.providers.contains_key(&provider) {
        let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
        return Err(anyhow!(
            "unknown provider `{}` (configured: {})",
            provider,
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
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let cfg = &config.providers[&provider];
    let stored = store.accounts().await?;
    let has_accounts = !cfg.accounts.is_empty() || stored.iter().any(|a| a.provider == provider);
    if let Some(a) = &args.account {
        let known = cfg.accounts.iter().any(|s| &s.id == a)
            || stored
                .iter()
                .any(|s| s.provider == provider && &s.account == a);
        if !known {
            return Err(anyhow!(
                "--account: provider `{provider}` has no account `{a}`"
            ));
        }
    }
    let own_id = finality_engine::accounts::own_id_of(cfg);
    let import = finality_engine::reconcile::Import {
        provider: &provider,
        owner: finality_engine::reconcile::Owner {
            account: args.account.as_deref(),
            lines_name_accounts: has_accounts,
            own_id: own_id.as_deref(),
        },
        name: &name,
        format: &format,
        period: args.period,
    };
    let out =
        finality_engine::reconcile::reconcile(&*store, &import, &file, SystemClock.now()).await?;
    if out.already_imported {
        println!(
            "{}: already imported as run {}; nothing changed",
            file.display(),
            out.run_id
        );
    } else {
        println!(
            "{}: run {}, {} lines",
            file.display(),
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
