//! `finality demo`: the simulator and the real engine on a virtual clock,
//! N payments end to end, and a summary of what it cost and how fast it was.

use anyhow::Context;
use finality_core::money::{Amount, Currency, PaymentId, ProviderRef};
use finality_core::{Clock, Kind, Status, SystemClock, Timestamp, VirtualClock};
use finality_engine::inbox::{InboxConfig, InboxProcessor};
use finality_engine::{Engine, EngineConfig, Health, ProviderEntry, Providers};
use finality_providers::config::ProviderConfig;
use finality_providers::http::Timeouts;
use finality_providers::sim::SimAdapter;
use finality_providers::webhook::standard::{decode_secret, StandardWebhooks};
use finality_server::cancel_on_signal;
use finality_server::{AppState, Background};
use finality_sim::webhooks::WebhookTarget;
use finality_sim::{SimConfig, Simulator};
use finality_store::{ListFilter, NewPayment, Payment, PaymentStore, Store};
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Virtual-time resolution of the demo's steps.
const DEMO_TICK: Duration = Duration::from_millis(250);

#[derive(clap::Args)]
pub struct DemoArgs {
    /// How many payments to simulate.
    #[arg(long, default_value_t = 1000)]
    payments: u32,
    /// Run on this database instead of a fresh SQLite file (postgres://… gets
    /// a fresh schema of its own).
    #[arg(long)]
    database_url: Option<String>,
    /// Seed of the simulator's draws (settle times, outcomes, faults).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Provider calls in flight at once.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Keep the demo database afterwards (its location is printed).
    #[arg(long)]
    keep: bool,
    /// Afterwards, keep the demo's data and serve the console on `--listen`
    /// until Ctrl-C, with a sign-in token printed (implies `--keep`).
    #[arg(long)]
    console: bool,
    /// Where `--console` serves.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
}

/// The demo's time, carried on at wall-clock pace after the run: the
/// console then shows ages and times as they were in the simulated run.
struct AfterRun {
    offset_ms: i64,
}

impl Clock for AfterRun {
    fn now(&self) -> Timestamp {
        Timestamp(SystemClock.now().0 + self.offset_ms)
    }
}

/// Serve the console over the demo's data until Ctrl-C: an admin token
/// made for this run is printed, and is the actor of anything done there.
async fn serve_console(
    args: &DemoArgs,
    store: Arc<dyn Store>,
    providers: Arc<Providers>,
    end: Timestamp,
) -> anyhow::Result<()> {
    let secret: String = {
        use rand::Rng;
        let mut rng = rand::thread_rng();
        (0..32)
            .map(|_| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[rng.gen_range(0..36)]))
            .collect()
    };
    let tokens =
        finality_server::identity::Tokens::named(vec![finality_server::identity::ApiToken::new(
            "demo-admin",
            finality_server::identity::Role::Admin,
            secret.clone(),
        )])
        .map_err(anyhow::Error::msg)?;
    let state = AppState {
        store,
        clock: Arc::new(AfterRun {
            offset_ms: end.0 - SystemClock.now().0,
        }),
        providers,
        health: Arc::new(Health::new()),
        tokens: Arc::new(tokens),
        nudges: Arc::default(),
        throttle: Arc::default(),
        metrics: None,
        replica: None,
    };
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {} (--listen)", args.listen))?;
    println!();
    println!("console: http://{}/console", listener.local_addr()?);
    println!("sign in with the token: {secret}");
    println!("(Ctrl-C to stop; the data stays in the file named below)");
    let stop = CancellationToken::new();
    cancel_on_signal(stop.clone());
    finality_server::run(state, Background::default(), listener, stop).await?;
    Ok(())
}

/// Where the demo's data lives, and how to clean it up.
struct DemoDb {
    store: Arc<dyn Store>,
    label: String,
    sqlite_file: Option<std::path::PathBuf>,
    /// The PostgreSQL schema made for this run, dropped afterwards.
    pg_schema: Option<(sqlx::postgres::PgConnectOptions, String)>,
}

async fn open_db(args: &DemoArgs, run: &str) -> anyhow::Result<DemoDb> {
    match &args.database_url {
        Some(url) if url.starts_with("postgres") => {
            use sqlx::ConnectOptions;
            let base: sqlx::postgres::PgConnectOptions =
                url.parse().context("invalid --database-url")?;
            let schema = format!("finality_demo_{run}");
            let mut conn = base
                .connect()
                .await
                .context("cannot connect to PostgreSQL")?;
            sqlx::query(&format!("CREATE SCHEMA {schema}"))
                .execute(&mut conn)
                .await?;
            let pg = finality_store::postgres::PgStore::connect_with(
                base.clone().options([("search_path", schema.as_str())]),
                20,
            )
            .await?;
            pg.migrate().await?;
            Ok(DemoDb {
                store: Arc::new(pg),
                label: format!("PostgreSQL, schema {schema}"),
                sqlite_file: None,
                pg_schema: Some((base, schema)),
            })
        }
        Some(url) => {
            let store = finality_store::open(url, 4).await?;
            Ok(DemoDb {
                store,
                label: url.clone(),
                sqlite_file: None,
                pg_schema: None,
            })
        }
        None => {
            let path = std::env::temp_dir().join(format!("finality-demo-{run}.db"));
            let url = format!("sqlite://{}", path.display());
            // The demo's data is throwaway: WAL + synchronous=NORMAL survives a
            // crash of the process, not a power cut. `serve` uses FULL.
            let lite = finality_store::sqlite::SqliteStore::connect_with_sync(
                &url,
                4,
                finality_store::sqlite::SqliteSynchronous::Normal,
            )
            .await?;
            lite.migrate().await?;
            Ok(DemoDb {
                store: Arc::new(lite),
                label: format!("SQLite {} (synchronous=NORMAL)", path.display()),
                sqlite_file: Some(path),
                pg_schema: None,
            })
        }
    }
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let run = format!("{:x}", SystemClock.now().millis() % 0xffff_ffff);
    let db = open_db(&args, &run).await?;
    let start = Timestamp(SystemClock.now().millis() / 1000 * 1000);
    let vclock = Arc::new(VirtualClock::new(start));
    let clock: Arc<dyn Clock> = vclock.clone();
    let stop = CancellationToken::new();
    cancel_on_signal(stop.clone());

    // The simulated provider, over real HTTP on loopback, on virtual time.
    let mut sim_cfg = SimConfig::default();
    sim_cfg.faults.rate_limited = 0.002;
    sim_cfg.faults.server_error = 0.01;
    let sim = Simulator::new(sim_cfg, clock.clone(), args.seed);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let sim_url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(finality_sim::server::serve(
        sim.clone(),
        listener,
        stop.clone(),
    ));

    // finality's own API on loopback, on the same virtual clock: the
    // simulator's signed webhooks arrive there over real HTTP.
    let secret = format!("whsec_{}", base64_secret(args.seed));
    let mut provider = ProviderConfig::sim(&sim_url);
    // Webhooks are configured for this provider (below), so the default
    // schedule for a provider with webhooks applies, as `serve` would pick
    // it from `webhook_secret_envs`.
    provider.schedule_override = Some(finality_core::Schedule::default_webhooks_first());
    let policy = provider.policy();
    let adapter = SimAdapter::new(
        &sim_url,
        None,
        Timeouts {
            connect: provider.connect_timeout,
            total: provider.timeout,
        },
    )?
    .with_webhooks(
        StandardWebhooks::new(std::slice::from_ref(&secret), provider.webhook_tolerance)
            .map_err(anyhow::Error::msg)?,
    );
    let mut providers = Providers::new();
    providers.insert(
        "sim".into(),
        ProviderEntry::from_config(Arc::new(adapter), &provider),
    );
    let providers = Arc::new(providers);
    let providers_for_console = providers.clone();
    let state = AppState {
        store: db.store.clone(),
        clock: clock.clone(),
        providers: providers.clone(),
        health: Arc::new(Health::new()),
        tokens: Arc::new(finality_server::identity::Tokens::shared(format!(
            "demo-{run}-{}",
            args.seed
        ))),
        nudges: Arc::default(),
        throttle: Arc::default(),
        metrics: finality_server::metrics::install(),
        replica: None,
    };
    let api = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let api_url = format!("http://{}/webhooks/sim", api.local_addr()?);
    tokio::spawn(finality_server::run(
        state,
        Background::default(),
        api,
        stop.clone(),
    ));
    sim.set_webhook_target(WebhookTarget::standard(
        api_url,
        decode_secret(&secret).map_err(anyhow::Error::msg)?,
    ));

    println!(
        "finality demo · {} payments · seed {} · {}",
        args.payments, args.seed, db.label
    );
    for i in 0..args.payments {
        // The provider holds the payment for the amount it is registered
        // for (finality compares them on every final answer).
        let amount = Amount::new(500 + i64::from(i % 97) * 100, Currency::parse("USD")?)?;
        let plan = sim.create_priced(
            Some(format!("sim_{run}_{i:06}")),
            None,
            amount.minor,
            amount.currency.as_str(),
        );
        let p = NewPayment {
            id: PaymentId::parse(&format!("demo_{run}_{i:06}"))?,
            provider: "sim".into(),
            provider_ref: Some(ProviderRef::parse(&plan.id)?),
            merchant_ref: None,
            account: None,
            kind: Kind::Payment,
            amount,
            metadata: serde_json::json!({"demo": run}),
        };
        db.store
            .register(&p, start, policy.first_poll_at(start))
            .await?;
    }

    let engine = Engine::new(
        db.store.clone(),
        clock.clone(),
        providers,
        EngineConfig {
            worker_id: "demo".into(),
            concurrency: args.concurrency.max(1),
            ..EngineConfig::default()
        },
        Arc::new(Health::new()),
    );
    let inbox = InboxProcessor::new(db.store.clone(), clock.clone(), InboxConfig::default());
    let wall = Instant::now();
    let bar = ProgressBar::new(u64::from(args.payments));
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} final or in review · {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // One step per instant of virtual time: webhooks due now are delivered
    // (and acknowledged), the inbox is applied, the polls due now run; then
    // time jumps to whatever is due next.
    let mut shown = Instant::now();
    while !stop.is_cancelled() {
        sim.deliver_due().await;
        inbox.process_due().await?;
        while engine.run_once().await? > 0 {}
        let next = [
            db.store.next_due_at().await?,
            sim.next_webhook_at(),
            db.store.inbox_next_due().await?,
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next else { break };
        // Whatever falls due within one tick runs together, up to a tick
        // late in virtual time: far fewer steps, figures off by < 1 tick.
        vclock.advance_to(next.plus(DEMO_TICK));
        if shown.elapsed() > Duration::from_millis(150) {
            shown = Instant::now();
            let done: i64 = db
                .store
                .status_counts()
                .await?
                .into_iter()
                .filter(|(s, _)| s.is_final() || *s == Status::NeedsReview)
                .map(|(_, n)| n)
                .sum();
            bar.set_position(u64::try_from(done).unwrap_or(0));
            bar.set_message(format!(
                "virtual time +{}",
                human(vclock.now().since(start))
            ));
        }
    }
    bar.finish_and_clear();

    let payments = all_payments(&*db.store).await?;
    summarize(&payments, &sim, start, vclock.now(), wall.elapsed());
    let stop_was_signal = stop.is_cancelled();
    if stop_was_signal {
        println!("(interrupted: the figures cover the run so far)");
    }
    stop.cancel();
    if args.console && !stop_was_signal {
        serve_console(&args, db.store.clone(), providers_for_console, vclock.now()).await?;
    }
    cleanup(db, args.keep || args.console).await
}

/// Remove the demo's database unless asked to keep it (then say where it is).
async fn cleanup(db: DemoDb, keep: bool) -> anyhow::Result<()> {
    use sqlx::ConnectOptions;
    if let Some(path) = &db.sqlite_file {
        if keep {
            println!(
                "kept: finality payments list --database-url sqlite://{}",
                path.display()
            );
        } else {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
    if let Some((opts, schema)) = db.pg_schema {
        if keep {
            println!("kept: schema {schema} (set search_path to it to look around)");
        } else {
            drop(db.store);
            let mut conn = opts.connect().await?;
            sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
                .execute(&mut conn)
                .await?;
        }
    }
    Ok(())
}

/// A webhook secret for this run (24 bytes, base64), derived from the seed.
fn base64_secret(seed: u64) -> String {
    use base64::Engine as _;
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed_cafe);
    let key: [u8; 24] = rng.gen();
    base64::engine::general_purpose::STANDARD.encode(key)
}

async fn all_payments(store: &dyn PaymentStore) -> anyhow::Result<Vec<Payment>> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list(&ListFilter {
                after_id: after.clone(),
                limit: 500,
                ..Default::default()
            })
            .await?;
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        out.extend(page);
    }
    Ok(out)
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{:.1}s", d.as_secs_f64()),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// The value at quantile `q` of an ascending slice (nearest rank).
fn quantile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

fn summarize(
    payments: &[Payment],
    sim: &Simulator,
    start: Timestamp,
    end: Timestamp,
    wall: Duration,
) {
    println!("\nEnded in:");
    for s in Status::ALL {
        let n = payments.iter().filter(|p| p.status == s).count();
        if n > 0 {
            println!("  {:<13} {n:>6}", s.as_str());
        }
    }
    let by = |src: Option<finality_core::Source>| {
        payments
            .iter()
            .filter(|p| p.status.is_final() && p.status_source == src)
            .count()
    };
    use finality_core::Source;
    println!(
        "\nSettled by webhook {} · by status query {} · by hand {} · went to review {}",
        by(Some(Source::Webhook)),
        by(Some(Source::StatusQuery)),
        by(Some(Source::Manual)),
        payments
            .iter()
            .filter(|p| p.status == Status::NeedsReview)
            .count()
    );
    let open = payments
        .iter()
        .filter(|p| !p.status.is_final() && p.status != Status::NeedsReview)
        .count();
    if open > 0 {
        println!("  (still open:  {open})");
    }

    let mut calls: Vec<u64> = payments
        .iter()
        .map(|p| sim.calls_for(p.provider_ref.as_deref().unwrap_or_default()))
        .collect();
    calls.sort_unstable();
    let total: u64 = calls.iter().sum();
    let mean = total as f64 / calls.len().max(1) as f64;
    println!(
        "\nProvider calls per payment: mean {mean:.1} · p50 {} · p99 {} · max {}  ({total} calls)",
        quantile(&calls, 0.5).unwrap_or(0),
        quantile(&calls, 0.99).unwrap_or(0),
        calls.last().copied().unwrap_or(0)
    );

    let mut lag: Vec<Duration> = payments
        .iter()
        .filter_map(|p| {
            let settled = sim.plan(p.provider_ref.as_deref()?)?.settles_at?;
            Some(p.finalized_at?.since(settled))
        })
        .collect();
    lag.sort_unstable();
    if let (Some(p50), Some(p99)) = (quantile(&lag, 0.5), quantile(&lag, 0.99)) {
        println!(
            "Settlement at provider → detected here: p50 {} · p99 {} (virtual time)",
            human(p50),
            human(p99)
        );
    }
    let review = payments
        .iter()
        .filter(|p| p.status == Status::NeedsReview)
        .count();
    let never = payments
        .iter()
        .filter(|p| {
            p.provider_ref
                .as_deref()
                .and_then(|r| sim.plan(r))
                .is_some_and(|pl| pl.settles_at.is_none())
        })
        .count();
    println!(
        "Sent to review: {review} ({never} never settle at the provider; unknown is not failed)"
    );
    let st = sim.stats();
    println!(
        "Simulator faults injected: {} rate limits, {} server errors; overlapping calls for one payment: {}",
        st.injected_rate_limits, st.injected_server_errors, st.overlapping_calls
    );
    let plans = sim.plans();
    let count = |f: fn(&finality_sim::PaymentPlan) -> bool| plans.iter().filter(|p| f(p)).count();
    println!(
        "Webhooks sent {} (lost {}, delayed {}, duplicated {}, reordered {})",
        st.webhooks_sent,
        count(|p| p.webhook_lost && p.settles_at.is_some()),
        count(|p| p.webhook_delayed && p.settles_at.is_some()),
        count(|p| p.webhook_duplicated && p.settles_at.is_some()),
        count(|p| p.webhook_reordered && p.settles_at.is_some()),
    );
    println!(
        "Virtual time covered: {} (in steps of {:?}) · wall time {:.1}s",
        human(end.since(start)),
        DEMO_TICK,
        wall.as_secs_f64()
    );
}
