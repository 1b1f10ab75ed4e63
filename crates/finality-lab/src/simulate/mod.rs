//! `finality simulate`: the real engine, schedules and apply code on
//! virtual time, against a settle-time model, one row per schedule: what
//! each schedule costs in provider calls and how fast it catches a payment
//! whose webhook was lost.
//!
//! # Layout
//! - `model`: settle-time models (the built-in `mixture`, the simulator's,
//!   or one from a TOML file) and their draws.
//! - `presets`: the schedules compared, finality's and common alternatives.
//! - `provider`: the in-process provider that answers from the draws.
//! - `report`: the table, the JSON rows and the SVG frontier.

pub mod model;
pub mod presets;
pub mod provider;
pub mod report;

use anyhow::{anyhow, Context};
use finality_core::money::{Amount, Currency, PaymentId, ProviderRef};
use finality_core::{Clock, Kind, Status, Timestamp, VirtualClock};
use finality_engine::catch_up::CatchUp;
use finality_engine::inbox::{InboxConfig, InboxProcessor};
use finality_engine::{Engine, EngineConfig, Health, ProviderEntry, Providers};
use finality_providers::config::ProviderConfig;
use finality_store::memory::MemStore;
use finality_store::prelude::*;
use finality_store::{InboxState, ListFilter, NewInboxEvent, NewPayment};
use model::{Draw, Model};
use presets::Preset;
use provider::ModelProvider;
use report::{Outcomes, Row};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `finality simulate` arguments.
#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// `mixture` (the convergence targets' model), `simulator` (finality
    /// sim's defaults), `slow_settle` (payments settling around 15 min), or
    /// a TOML file describing a mixture.
    #[arg(long, default_value = "mixture")]
    model: String,
    /// How many payments to draw.
    #[arg(long, default_value_t = 10_000)]
    payments: usize,
    /// Schedules to compare (comma-separated names; default: all).
    #[arg(long, value_delimiter = ',')]
    schedules: Vec<String>,
    /// A schedule of your own, as `NAME={ kind = "piecewise", every = "100s",
    /// until = "30m", factor = 2.0, cap = "1day" }` (any schedule of
    /// `finality.toml`; polls until the model's horizon). Repeatable.
    #[arg(long = "schedule", value_name = "NAME=SCHEDULE")]
    custom: Vec<String>,
    /// The provider's webhook sender is down over this stretch of the run
    /// (`FROM..UNTIL` from its start, e.g. `6h..8h`): webhooks due then are
    /// never sent.
    #[arg(long, value_name = "FROM..UNTIL")]
    webhook_outage: Option<model::Outage>,
    /// Payments settled by polls in a row, with no webhook between, that
    /// switch the provider to its outage schedule (0: never), as
    /// `webhook_outage_after` in `finality.toml`.
    #[arg(long, default_value_t = 5)]
    webhook_outage_after: u32,
    /// Seed of the draws (the same seed draws the same payments).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Write the rows as a JSON array here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the frontier (calls per payment against lost-webhook p95) here.
    #[arg(long)]
    svg: Option<PathBuf>,
}

/// The virtual-time step: whatever falls due within one tick runs together
/// (polls at most a tick late; detection times are off by < 1 s).
const TICK: Duration = Duration::from_secs(1);

/// Where virtual time starts (fixed, so runs are reproducible).
pub(crate) const T0: Timestamp = Timestamp(1_767_225_600_000);

pub async fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let mut model = load_model(&args.model)?;
    if let Some(o) = args.webhook_outage {
        model.webhook_outage = Some(o);
    }
    let outage_after = args.webhook_outage_after;
    let mut presets = if args.custom.is_empty() || !args.schedules.is_empty() {
        presets::pick(&args.schedules).map_err(|e| anyhow!(e))?
    } else {
        Vec::new()
    };
    for c in &args.custom {
        presets.push(presets::custom(c).map_err(|e| anyhow!("--schedule {c}: {e}"))?);
    }
    if args.payments == 0 {
        return Err(anyhow!("--payments: must be at least 1"));
    }
    let draws = Arc::new(model.draw(args.payments, T0, args.seed));
    println!(
        "finality simulate · model {} · {} payments · seed {} · {} schedules",
        model.name,
        args.payments,
        args.seed,
        presets.len()
    );
    let wall = Instant::now();
    let mut rows: Vec<Row> = Vec::with_capacity(presets.len());
    // Each schedule runs on its own thread with a single-threaded runtime
    // (a simulation is one sequence of steps; cross-thread wake-ups would
    // only cost), as many at once as there are cores.
    // The longest schedule (a cron rescan) decides the wall time: each
    // worker takes the next schedule as soon as it is free.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // Start the most expensive schedules first (a fixed short interval
    // polls the most), so the last to finish is not a long one started late.
    let mut order: Vec<usize> = (0..presets.len()).collect();
    order.sort_by(|a, b| {
        let interval = |i: usize| {
            presets[i]
                .policy
                .schedule
                .nominal_at(20, Duration::from_secs(3600))
        };
        interval(*a).cmp(&interval(*b))
    });
    let order = Arc::new(order);
    let presets = Arc::new(presets);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, anyhow::Result<Row>)>();
    for _ in 0..cores.min(presets.len()) {
        let (model, draws, presets, next, tx, outage_after, order) = (
            model.clone(),
            draws.clone(),
            presets.clone(),
            next.clone(),
            tx.clone(),
            outage_after,
            order.clone(),
        );
        std::thread::spawn(move || {
            while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                let preset = &presets[i];
                let row = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(anyhow::Error::from)
                    .and_then(|rt| rt.block_on(simulate(&model, &draws, preset, outage_after)));
                if tx.send((i, row)).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut done: Vec<Option<Row>> = vec![None; presets.len()];
    for (i, row) in rx {
        done[i] = Some(row?);
        // In table order, as soon as the rows before it are in.
        while let Some(row) = done.get_mut(rows.len()).and_then(Option::take) {
            report::print_row(&row, rows.is_empty());
            rows.push(row);
        }
    }
    if rows.len() < presets.len() {
        return Err(anyhow!(
            "a simulation thread stopped before its schedule was done"
        ));
    }
    println!(
        "  ({} schedules in {:.1} s)",
        rows.len(),
        wall.elapsed().as_secs_f64()
    );
    println!("{}", report::LEGEND);
    if let Some(path) = &args.json {
        std::fs::write(path, report::json(&rows)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, report::svg(&rows))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn load_model(name: &str) -> anyhow::Result<Model> {
    let model = match name {
        "mixture" => Model::mixture(),
        "simulator" => Model::simulator(),
        "slow_settle" => Model::slow_settle(),
        path => {
            let text = std::fs::read_to_string(path).with_context(|| {
                format!("--model: `{path}` is none of `mixture`, `simulator`, `slow_settle`, nor a readable file")
            })?;
            let mut m: Model = toml::from_str(&text).map_err(|e| {
                let line = e
                    .span()
                    .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
                    .unwrap_or(0);
                anyhow!("{path}:{line}: {}", e.message().trim())
            })?;
            if m.name.is_empty() {
                m.name = path.to_string();
            }
            m.validate()
                .map_err(|e| anyhow!("{path}: {}: {}", e.field, e.message))?;
            m
        }
    };
    Ok(model)
}

/// Run one schedule over every draw, on a fresh in-memory store.
pub(crate) async fn simulate(
    model: &Model,
    draws: &Arc<Vec<Draw>>,
    preset: &Preset,
    outage_after: u32,
) -> anyhow::Result<Row> {
    let store = Arc::new(MemStore::without_call_log());
    simulate_on(store, model, draws, preset, outage_after).await
}

/// [`simulate`] on `store` (one that keeps its call log leaves a history
/// `finality tune` can read).
pub(crate) async fn simulate_on(
    store: Arc<MemStore>,
    model: &Model,
    draws: &Arc<Vec<Draw>>,
    preset: &Preset,
    outage_after: u32,
) -> anyhow::Result<Row> {
    let wall = Instant::now();
    let vclock = Arc::new(VirtualClock::new(T0));
    let clock: Arc<dyn Clock> = vclock.clone();
    let dyn_store: Arc<dyn finality_store::Store> = store.clone();
    let adapter = Arc::new(ModelProvider::new(draws.clone(), clock.clone()));
    let mut cfg = ProviderConfig::sim("http://model.invalid");
    cfg.schedule_override = Some(preset.policy.schedule.clone());
    cfg.give_up_after = model.horizon.min(preset.policy.give_up_after);
    cfg.max_attempts = preset.policy.max_attempts;
    // The model's provider sends webhooks: watched for outages, as a
    // provider with `webhook_secret_envs` is.
    cfg.webhook_secret_envs = vec!["(simulated)".into()];
    cfg.webhook_outage_after = outage_after;
    cfg.catch_up = preset.catch_up;
    cfg.webhook_wait_quantile = preset.webhook_wait;
    let entry = ProviderEntry::from_config(adapter.clone(), &cfg);
    let mut providers = Providers::new();
    providers.insert("model".into(), entry.clone());
    let health = Arc::new(Health::new());
    let providers = Arc::new(providers);
    let engine = Engine::new(
        dyn_store.clone(),
        clock.clone(),
        providers.clone(),
        EngineConfig {
            worker_id: format!("simulate-{}", preset.name),
            concurrency: 2048,
            batch_size: 2048,
            ..EngineConfig::default()
        },
        health.clone(),
    );
    let inbox = InboxProcessor::learning(
        dyn_store.clone(),
        clock.clone(),
        InboxConfig {
            batch_size: 512,
            ..InboxConfig::default()
        },
        health.clone(),
        &providers,
    );
    let catch_up = CatchUp::new(dyn_store.clone(), clock.clone(), &providers, "simulate");
    let mut webhooks: Vec<(Timestamp, usize)> = draws
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.webhook_at.map(|t| (t, i)))
        .collect();
    webhooks.sort_unstable();
    let (mut next_reg, mut next_hook) = (0usize, 0usize);
    loop {
        let now = vclock.now();
        while next_reg < draws.len() && draws[next_reg].registered_at <= now {
            let d = &draws[next_reg];
            let first = entry.first_poll_at(&health, "model", d.registered_at);
            register(&store, first, next_reg, d).await?;
            next_reg += 1;
        }
        let mut due = Vec::new();
        while next_hook < webhooks.len() && webhooks[next_hook].0 <= now {
            due.push(webhook(
                webhooks[next_hook].1,
                &draws[webhooks[next_hook].1],
            ));
            next_hook += 1;
        }
        if !due.is_empty() {
            store.inbox_insert(&due, now).await?;
            // What the webhook endpoint does with a verified webhook.
            health.webhook_seen("model");
        }
        if let Some(c) = &catch_up {
            c.run_due().await;
        }
        inbox.process_due().await?;
        while engine.run_once().await? > 0 {}
        let work = [
            draws.get(next_reg).map(|d| d.registered_at),
            webhooks.get(next_hook).map(|w| w.0),
            store.next_due_at().await?,
            store.inbox_next_due().await?,
        ]
        .into_iter()
        .flatten()
        .min();
        // The list reader is always due again: it only sets the pace while
        // something else (an open payment, a registration) is left.
        let Some(work) = work else { break };
        let next = catch_up
            .as_ref()
            .and_then(|c| c.next_at())
            .map_or(work, |c| c.min(work));
        vclock.advance_to(next.max(now).plus(TICK));
    }
    let calls: Vec<u32> = adapter
        .calls
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .collect();
    let outcome = outcomes(&store, draws, model).await?;
    let mut row = Row::new(
        preset,
        draws.len(),
        &calls,
        adapter.total.load(Ordering::Relaxed),
        outcome,
        wall.elapsed(),
    );
    row.list_calls = adapter.lists.load(Ordering::Relaxed);
    Ok(row)
}

async fn register(
    store: &MemStore,
    first_poll_at: Timestamp,
    i: usize,
    d: &Draw,
) -> anyhow::Result<()> {
    let p = NewPayment {
        id: PaymentId::parse(&format!("p{i}"))?,
        provider: "model".into(),
        provider_ref: Some(ProviderRef::parse(&provider::provider_ref(i))?),
        merchant_ref: None,
        account: None,
        kind: Kind::Payment,
        amount: Amount::new(1000, Currency::parse("USD")?)?,
        metadata: serde_json::json!({}),
    };
    store.register(&p, d.registered_at, first_poll_at).await?;
    Ok(())
}

fn webhook(i: usize, d: &Draw) -> NewInboxEvent {
    NewInboxEvent {
        provider: "model".into(),
        account: None,
        event_id: provider::event_id(i),
        provider_ref: Some(provider::provider_ref(i)),
        merchant_ref: None,
        observed: Some(d.status),
        provider_status: Some(d.status.as_str().into()),
        occurred_at: d.settles_at,
        reported: Default::default(),
        raw_body: Vec::new(),
        headers: serde_json::json!({}),
        state: InboxState::Received,
        reason: None,
        source: finality_core::Source::Webhook,
    }
}

async fn outcomes(store: &MemStore, draws: &[Draw], model: &Model) -> anyhow::Result<Outcomes> {
    let mut out = Outcomes {
        lost_webhook_detection_s: Vec::new(),
        undetected: 0,
        review: 0,
    };
    let mut after = None;
    loop {
        let page = store
            .list(&ListFilter {
                after_id: after.clone(),
                limit: 10_000,
                ..Default::default()
            })
            .await?;
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        for p in &page {
            let Some(i) = p.id.strip_prefix('p').and_then(|n| n.parse::<usize>().ok()) else {
                continue;
            };
            let Some(d) = draws.get(i) else { continue };
            if p.status == Status::NeedsReview {
                out.review += 1;
            }
            let Some(settled) = d.settles_at else {
                continue;
            };
            let in_window = settled.0 - d.registered_at.0 <= model.horizon.as_millis() as i64;
            if in_window && !p.status.is_final() {
                out.undetected += 1;
            }
            if d.webhook_at.is_none() && p.status == d.status {
                if let Some(fin) = p.finalized_at {
                    out.lost_webhook_detection_s
                        .push((fin.0 - settled.0).max(0) as f64 / 1000.0);
                }
            }
        }
    }
    Ok(out)
}
