//! `finality tune`: a schedule recommended from a provider's recorded
//! history. It fits the history (when payments settled, how webhooks
//! arrived, how many never settled), searches schedule families for the
//! fewest provider calls at a target lost-webhook p95 with the schedule code
//! alone, confirms the winner and the current schedule on the real engine
//! (as `finality simulate` runs it), and prints the TOML to paste.
//!
//! # Layout
//! - `fit`: reading and fitting a provider's history.
//! - `search`: evaluating schedules without the engine, and the search.

pub mod fit;
pub mod search;

use crate::simulate::{self, model::Model, presets::Preset, report::Row};
use anyhow::anyhow;
use finality_core::{Clock, RetryPolicy, Schedule, Timestamp};
use std::sync::Arc;
use std::time::Duration;

/// `finality tune` arguments.
#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    /// The provider to tune (its name in finality.toml, as payments record
    /// it). Default: every provider with history in the window.
    #[arg(long)]
    provider: Option<String>,
    /// Payments registered in this last stretch of time.
    #[arg(long, default_value = "30days", value_parser = humantime::parse_duration)]
    window: Duration,
    /// The lost-webhook detection p95 to meet with the fewest calls.
    #[arg(long, default_value = "2m", value_parser = humantime::parse_duration)]
    target_p95: Duration,
    /// Also hold the lost-webhook detection p99 to this (`45m`): the tail
    /// of slow payments, which a `proportional` schedule bounds.
    #[arg(long, value_parser = humantime::parse_duration)]
    target_p99: Option<Duration>,
    /// Most payments read per provider (the newest by id are not preferred:
    /// they are read in id order).
    #[arg(long, default_value_t = 100_000)]
    max_payments: usize,
    /// Payments drawn from the fit for the search and the engine runs.
    #[arg(long, default_value_t = 20_000)]
    draws: usize,
    #[arg(long)]
    pub database_url: Option<String>,
    /// Print JSON instead of the table and TOML.
    #[arg(long)]
    json: bool,
}

/// One provider's recommendation.
#[derive(Debug, Clone)]
pub struct Tuned {
    pub fit: fit::Fit,
    pub current: RetryPolicy,
    pub recommended: Option<RetryPolicy>,
    /// Candidates evaluated by the search.
    pub tried: usize,
    /// The quantile held to the target (0.95 plus the history's margin).
    pub tail_q: f64,
    /// The p99 held to, when asked.
    pub target_p99: Option<Duration>,
    /// The engine's figures on draws from the fit.
    pub current_row: Row,
    pub recommended_row: Option<Row>,
}

/// Tune from `store`'s history; `policies` are the configured providers'
/// (a provider not named there is compared against the default).
pub async fn run(
    store: std::sync::Arc<dyn finality_store::Store>,
    policies: &std::collections::BTreeMap<String, RetryPolicy>,
    args: TuneArgs,
) -> anyhow::Result<()> {
    let now = finality_core::SystemClock.now();
    let since = Timestamp(now.0 - i64::try_from(args.window.as_millis()).unwrap_or(i64::MAX));
    let providers: Vec<String> = match &args.provider {
        Some(p) => vec![p.clone()],
        None => {
            let rows = store.stats_rows(since).await?;
            let mut names: Vec<String> = rows.into_iter().map(|r| r.provider).collect();
            names.sort();
            names.dedup();
            names
        }
    };
    if providers.is_empty() {
        return Err(anyhow!(
            "no payments registered in the last {} in the database: nothing to tune from",
            humantime::format_duration(args.window)
        ));
    }
    let mut out = Vec::new();
    for name in providers {
        let fit = fit::read(&*store, &name, since, args.max_payments).await?;
        if fit.payments == 0 {
            println!("{name}: no settled or reviewed payments in the window; skipped");
            continue;
        }
        let current = policies.get(&name).cloned().unwrap_or_else(default_policy);
        out.push(
            tune(
                fit,
                current,
                args.target_p95,
                args.target_p99,
                args.draws,
                42,
            )
            .await?,
        );
    }
    if args.json {
        let v: Vec<serde_json::Value> = out.iter().map(|t| to_json(t, args.target_p95)).collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for t in &out {
            print(t, args.target_p95);
        }
    }
    Ok(())
}

/// The policy of a provider the configuration does not name: finality's
/// default with webhooks.
fn default_policy() -> RetryPolicy {
    RetryPolicy {
        schedule: Schedule::default_webhooks_first(),
        ..RetryPolicy::default()
    }
}

/// The model a fit stands for: its history resampled, registrations spread
/// over a day, polling until the current policy gives up.
pub fn model_of(fit: &fit::Fit, current: &RetryPolicy) -> Model {
    let mut m = Model::mixture();
    m.name = format!("history of {}", fit.provider);
    m.components.clear();
    m.webhook_loss = fit.webhook_loss();
    m.horizon = current.give_up_after;
    m.empirical = Some(Arc::new(fit.empirical.clone()));
    m
}

/// Search and confirm for one provider's fit.
pub async fn tune(
    fit: fit::Fit,
    current: RetryPolicy,
    target_p95: Duration,
    target_p99: Option<Duration>,
    draws: usize,
    seed: u64,
) -> anyhow::Result<Tuned> {
    let model = model_of(&fit, &current);
    let drawn = Arc::new(model.draw(draws.max(1), simulate::T0, seed));
    let tail_q = search::tail_quantile(fit.by_webhook + fit.by_poll);
    let (found, tried) = search::search(
        &current,
        &search::fates(&drawn),
        target_p95,
        target_p99,
        tail_q,
        seed,
    );
    let recommended = found.map(|f| f.policy(&current));
    let preset = |name: &str, policy: &RetryPolicy| Preset {
        name: name.into(),
        what: String::new(),
        policy: policy.clone(),
        catch_up: None,
        webhook_wait: None,
    };
    let current_row = simulate::simulate(&model, &drawn, &preset("current", &current), 0).await?;
    let recommended_row = match &recommended {
        Some(p) => Some(simulate::simulate(&model, &drawn, &preset("recommended", p), 0).await?),
        None => None,
    };
    Ok(Tuned {
        fit,
        current,
        recommended,
        tried,
        tail_q,
        target_p99,
        current_row,
        recommended_row,
    })
}

/// Whole seconds as a person writes them in finality.toml: `112s`, `30m`, `48h`.
fn secs(d: Duration) -> String {
    match d.as_secs() {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// The schedule as a `finality.toml` inline table.
pub fn toml_of(s: &Schedule) -> String {
    match s {
        Schedule::Piecewise {
            every,
            until,
            factor,
            cap,
            jitter,
        } => format!(
            "{{ kind = \"piecewise\", every = \"{}\", until = \"{}\", factor = {factor:?}, cap = \"{}\", jitter = {jitter:?} }}",
            secs(*every),
            secs(*until),
            secs(*cap)
        ),
        Schedule::Proportional {
            every,
            until,
            fraction,
            cap,
            jitter,
            later,
        } => {
            let steps: Vec<String> = later
                .iter()
                .map(|s| {
                    format!(
                        "{{ after = \"{}\", fraction = {:?} }}",
                        secs(s.after),
                        s.fraction
                    )
                })
                .collect();
            let late = if steps.is_empty() {
                String::new()
            } else {
                format!(", later = [{}]", steps.join(", "))
            };
            format!(
                "{{ kind = \"proportional\", every = \"{}\", until = \"{}\", fraction = {fraction:?}, cap = \"{}\", jitter = {jitter:?}{late} }}",
                secs(*every),
                secs(*until),
                secs(*cap)
            )
        }
        Schedule::Exponential {
            base,
            factor,
            cap,
            jitter,
        } => format!(
            "{{ kind = \"exponential\", base = \"{}\", factor = {factor:?}, cap = \"{}\", jitter = {jitter:?} }}",
            secs(*base),
            secs(*cap)
        ),
        other => format!("{other:?}"),
    }
}

fn fmt_s(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.0} s"))
}

fn print(t: &Tuned, target: Duration) {
    let f = &t.fit;
    println!(
        "\n{}: {} payments ({} open left out) · settle time p50 {} p90 {} p99 {} · never settled {:.1} %",
        f.provider,
        f.payments,
        f.open,
        fmt_s(f.settle_quantile(0.5)),
        fmt_s(f.settle_quantile(0.9)),
        fmt_s(f.settle_quantile(0.99)),
        100.0 * f.never as f64 / f.payments.max(1) as f64
    );
    println!(
        "  webhooks: {} carried the final status, polls {} (so at most {:.1} % lost) · delay p50 {} p99 {}",
        f.by_webhook,
        f.by_poll,
        100.0 * f.webhook_loss(),
        f.delay_quantile(0.5)
            .map_or_else(|| "-".into(), |x| format!("{x:.1} s")),
        f.delay_quantile(0.99)
            .map_or_else(|| "-".into(), |x| format!("{x:.1} s")),
    );
    let p99 = t
        .target_p99
        .map(|d| format!(" and p99 ≤ {}", secs(d)))
        .unwrap_or_default();
    println!(
        "  searched {} schedules for the fewest calls with lost-webhook p{:.1} ≤ {}{p99} (p95 plus this history's margin); on the engine ({} payments drawn from it):",
        t.tried,
        100.0 * t.tail_q,
        secs(target),
        t.current_row.payments
    );
    println!(
        "    {:<12} {:>8} {:>10} {:>10} {:>11}",
        "", "calls/p", "lost p95", "lost p99", "undetected"
    );
    for r in std::iter::once(&t.current_row).chain(t.recommended_row.as_ref()) {
        println!(
            "    {:<12} {:>8.2} {:>10} {:>10} {:>11}",
            r.schedule,
            r.calls_mean,
            fmt_s(r.detection_p95),
            fmt_s(r.detection_p99),
            r.undetected
        );
    }
    match &t.recommended {
        Some(p) => {
            println!("\n  [providers.{}]", f.provider);
            println!("  schedule = {}", toml_of(&p.schedule));
        }
        None => println!(
            "  no schedule in the searched families meets p95 ≤ {}{p99} with nothing \
             undetected; raise --target-p95{} or max_attempts",
            secs(target),
            if t.target_p99.is_some() {
                ", --target-p99"
            } else {
                ""
            }
        ),
    }
}

fn to_json(t: &Tuned, target: Duration) -> serde_json::Value {
    let f = &t.fit;
    serde_json::json!({
        "provider": f.provider,
        "target_p95_s": target.as_secs_f64(),
        "target_p99_s": t.target_p99.map(|d| d.as_secs_f64()),
        "fit": {
            "payments": f.payments, "open_left_out": f.open, "never": f.never,
            "by_webhook": f.by_webhook, "by_poll": f.by_poll,
            "webhook_loss_at_most": f.webhook_loss(),
            "settle_s": {"p50": f.settle_quantile(0.5), "p90": f.settle_quantile(0.9), "p99": f.settle_quantile(0.99)},
            "webhook_delay_s": {"p50": f.delay_quantile(0.5), "p99": f.delay_quantile(0.99)},
        },
        "candidates": t.tried,
        "quantile_held": t.tail_q,
        "current": {"schedule": toml_of(&t.current.schedule), "engine": t.current_row.to_json()},
        "recommended": t.recommended.as_ref().map(|p| serde_json::json!({
            "schedule": toml_of(&p.schedule),
            "engine": t.recommended_row.as_ref().map(Row::to_json),
        })),
    })
}

#[cfg(test)]
mod tests;
