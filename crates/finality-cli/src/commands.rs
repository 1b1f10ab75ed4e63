//! The operational subcommands.

use crate::config::Config;
use anyhow::{anyhow, bail, Context};
use clap::Subcommand;
use finality_core::{Clock, Status, SystemClock};
use finality_engine::Health;
use finality_server::cancel_on_signal;
use finality_server::AppState;
use finality_sim::{SimConfig, Simulator};
use finality_store::manual::{ResolveError, Resolved};
use finality_store::{ListFilter, Store};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The configured database (or `url`), migrated, with the configured pool
/// size and statement timeout.
pub(crate) async fn open(config: &Config, url: Option<String>) -> anyhow::Result<Arc<dyn Store>> {
    let url = url.unwrap_or_else(|| config.database_url());
    finality_store::open_with(
        &url,
        config.database.max_connections,
        config.database.statement_timeout,
    )
    .await
    .context("cannot open the database")
}

pub async fn serve(config: Config) -> anyhow::Result<()> {
    let tokens = config
        .server
        .build_tokens()?
        .with_secure_cookies(config.server.secure_cookies);
    if tokens.is_shared() {
        tracing::warn!(
            "one shared API token: manual actions are recorded under the name the caller gives; \
             configure [[server.tokens]] to record who acted"
        );
    }
    let store = open(&config, None).await?;
    let replica = match config.read_url() {
        None => None,
        Some(read_url) => Some(
            finality_server::replica::Replica::connect(
                &config.database_url(),
                &read_url,
                config.database.max_connections,
                config.database.statement_timeout,
                config.database.read_max_lag,
            )
            .context("[database] read_url")?,
        ),
    };
    let providers = config.build_providers()?;
    let listener = tokio::net::TcpListener::bind(&config.server.listen)
        .await
        .with_context(|| format!("cannot listen on {} (server.listen)", config.server.listen))?;
    tracing::info!(listen = %config.server.listen, providers = ?providers.keys().collect::<Vec<_>>(), "finality serving");
    let state = AppState {
        store,
        clock: Arc::new(SystemClock),
        providers,
        health: Arc::new(Health::new()),
        tokens: Arc::new(tokens),
        nudges: Arc::default(),
        throttle: Arc::default(),
        metrics: finality_server::metrics::install(),
        replica,
    };
    let shutdown = CancellationToken::new();
    cancel_on_signal(shutdown.clone());
    let background = finality_server::Background {
        engine: Some(config.engine.clone()),
        inbox: Some(finality_engine::inbox::InboxConfig::default()),
        events: Some(config.events.clone()),
        sweep: config.sweep.enabled.then(|| config.sweep.clone()),
        retention: Some(config.retention.clone()),
        gauges: Some(config.metrics.clone()),
        shutdown_grace: Some(config.server.shutdown_grace),
        client_timeout: Some(config.server.client_timeout),
        max_connections: Some(config.server.max_connections),
        max_connections_per_address: config.server.max_connections_per_address,
        idle_timeout: Some(config.server.idle_timeout),
        accounts_refresh: None,
        settlement_dir: Some(config.retention.archive_dir.join("settlement")),
    };
    finality_server::run(state, background, listener, shutdown)
        .await
        .context("HTTP server failed")
}

pub async fn migrate(config: Config, url: Option<String>) -> anyhow::Result<()> {
    open(&config, url).await?;
    println!("migrations applied");
    Ok(())
}

#[derive(Subcommand)]
pub enum PaymentsCommand {
    /// Show one payment with its poll state and history (JSON).
    Get { id: String },
    /// List payments, optionally filtered.
    List {
        #[arg(long)]
        status: Option<Status>,
        #[arg(long)]
        provider: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Start after this payment id (the last id of the previous page).
        #[arg(long)]
        after: Option<String>,
    },
    /// Settle a payment by hand (from review or any non-final status).
    Resolve {
        id: String,
        #[arg(long)]
        status: Status,
        #[arg(long)]
        reason: String,
        #[arg(long)]
        actor: String,
    },
}

pub async fn payments(
    config: Config,
    url: Option<String>,
    cmd: PaymentsCommand,
) -> anyhow::Result<()> {
    let store = open(&config, url).await?;
    match cmd {
        PaymentsCommand::Get { id } => {
            let Some(v) = store.get(&id).await? else {
                if let Some(t) = store.archived_payment(&id).await? {
                    return Err(anyhow!(
                        "payment `{id}` was {} and archived on {} by retention: \
                         `finality archive restore {}` brings its day back",
                        t.status,
                        t.archived_at.to_rfc3339(),
                        t.archive
                    ));
                }
                return Err(anyhow!("no payment with id `{id}`"));
            };
            let p = &v.payment;
            println!(
                "{} {} {} {} {} {}",
                p.id,
                p.status,
                p.provider,
                refs(p),
                p.amount,
                p.currency
            );
            println!(
                "  created {} updated {} finalized {}",
                p.created_at,
                p.updated_at,
                p.finalized_at.map_or("-".into(), |t| t.to_rfc3339())
            );
            match &v.poll {
                Some(poll) => println!(
                    "  poll: {} attempts, next {}{}",
                    poll.attempts,
                    poll.next_poll_at
                        .map_or("parked (needs review)".into(), |t| t.to_rfc3339()),
                    poll.last_error
                        .as_ref()
                        .map_or(String::new(), |e| format!(", last error: {e}"))
                ),
                None => println!("  poll: none"),
            }
            for h in &v.history {
                println!(
                    "  {} {} -> {} by {}{}{}",
                    h.at,
                    h.from.map_or("-", |s| s.as_str()),
                    h.to,
                    h.source.as_str(),
                    h.actor
                        .as_ref()
                        .map_or(String::new(), |a| format!(" ({a})")),
                    h.reason
                        .as_ref()
                        .map_or(String::new(), |r| format!(": {r}"))
                );
            }
        }
        PaymentsCommand::List {
            status,
            provider,
            limit,
            after,
        } => {
            let page = store
                .list(&ListFilter {
                    status,
                    provider,
                    after_id: after,
                    limit,
                })
                .await?;
            for p in &page {
                println!(
                    "{:<36} {:<13} {:<10} {:>12} {} {}",
                    p.id,
                    p.status.as_str(),
                    p.provider,
                    p.amount,
                    p.currency,
                    p.updated_at
                );
            }
            if page.len() as u32 == limit {
                if let Some(last) = page.last() {
                    println!("(more: --after {})", last.id);
                }
            }
        }
        PaymentsCommand::Resolve {
            id,
            status,
            reason,
            actor,
        } => {
            let now = SystemClock.now();
            // Whoever can run this can reach the database itself: the name
            // is theirs to give, and the audit record says it came by CLI
            // and which system user ran it.
            let audit = finality_store::review::NewAudit {
                at: now,
                actor: actor.clone(),
                role: "cli".into(),
                action: "resolve".into(),
                payment_id: Some(id.clone()),
                detail: serde_json::json!({
                    "status": status.as_str(),
                    "reason": reason,
                    "system_user": std::env::var("USER").ok(),
                }),
                outcome: String::new(),
                remote_addr: None,
            };
            match finality_store::manual::resolve(&*store, &id, status, &reason, &audit, now).await
            {
                Ok(Resolved::Changed { from, to }) => println!("{id}: {from} -> {to}"),
                Ok(Resolved::Already) => println!("{id}: already {status}"),
                Err(ResolveError::Store(e)) => return Err(e.into()),
                Err(ResolveError::Missing(field)) => bail!("--{field} must not be empty"),
                Err(e) => bail!("{e}"),
            }
        }
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum SimCommand {
    /// Serve the simulator's status API over HTTP on wall time.
    Serve {
        #[arg(long, default_value = "127.0.0.1:8090")]
        listen: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Send signed webhooks here (e.g. http://127.0.0.1:8080/webhooks/sim).
        #[arg(long, requires = "webhook_secret_env")]
        webhook_url: Option<String>,
        /// Environment variable holding the whsec_ secret to sign them with.
        #[arg(long)]
        webhook_secret_env: Option<String>,
        /// Settle every payment as succeeded this long after it is made
        /// (`1s`), instead of the default mix of outcomes and times: for
        /// tests that wait for final statuses (the clients' suites).
        #[arg(long, value_parser = humantime::parse_duration)]
        settle_after: Option<std::time::Duration>,
    },
}

pub async fn sim(cmd: SimCommand) -> anyhow::Result<()> {
    match cmd {
        SimCommand::Serve {
            listen,
            seed,
            webhook_url,
            webhook_secret_env,
            settle_after,
        } => {
            let clock: Arc<dyn Clock> = Arc::new(SystemClock);
            let config = settle_after.map_or_else(SimConfig::default, SimConfig::deterministic);
            let sim = Simulator::new(config, clock, seed);
            let stop = CancellationToken::new();
            if let (Some(url), Some(var)) = (webhook_url, webhook_secret_env) {
                let secret = finality_core::secret::Secret::from_env(&var, "--webhook-secret-env")?;
                let key = finality_providers::webhook::standard::decode_secret(secret.expose())
                    .map_err(|e| anyhow!("{var}: {e}"))?;
                sim.set_webhook_target(finality_sim::webhooks::WebhookTarget::standard(url, key));
                sim.spawn_webhook_sender(stop.clone());
            }
            let listener = tokio::net::TcpListener::bind(&listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            println!("simulator listening on http://{listen} (POST /v1/payments, GET /v1/payments/ID, GET /sim/stats)");
            cancel_on_signal(stop.clone());
            finality_sim::server::serve(sim, listener, stop).await?;
            Ok(())
        }
    }
}

#[derive(Subcommand)]
pub enum ProvidersCommand {
    /// Call each configured provider's authentication with one harmless
    /// read and say what works (exit 1 if anything does not).
    Check,
}

pub async fn providers(config: Config, cmd: ProvidersCommand) -> anyhow::Result<()> {
    let ProvidersCommand::Check = cmd;
    let mut failed = 0;
    println!(
        "{:<14} {:<8} {:<5} {:<9} {:<6} result",
        "provider", "adapter", "poll", "webhooks", "lookup"
    );
    for (name, cfg) in &config.providers {
        let adapter = format!("{:?}", cfg.adapter).to_lowercase();
        let built = match finality_providers::config::build(name, cfg) {
            Ok(a) => a,
            Err(e) => {
                failed += 1;
                println!(
                    "{name:<14} {adapter:<8} {:<5} {:<9} {:<6} FAILED  {e}",
                    "-", "-", "-"
                );
                continue;
            }
        };
        let caps = built.capabilities();
        let yes = |b: bool| if b { "yes" } else { "no" };
        let outcome = tokio::time::timeout(cfg.timeout + cfg.connect_timeout, built.check())
            .await
            .unwrap_or_else(|_| {
                Err(finality_providers::ProviderError::Transient {
                    message: "no answer in time".into(),
                })
            });
        let result = match outcome {
            Ok(detail) => format!("ok      {detail}"),
            Err(e) => {
                failed += 1;
                format!("FAILED  {e}")
            }
        };
        println!(
            "{name:<14} {adapter:<8} {:<5} {:<9} {:<6} {result}",
            yes(caps.poll),
            yes(caps.webhooks),
            yes(caps.lookup)
        );
    }
    if failed > 0 {
        bail!("{failed} provider(s) failed the check");
    }
    Ok(())
}

/// A payment's references as one word: the provider's id, and the
/// merchant's in brackets when there is one (`?` while the provider's id is
/// still being looked up).
fn refs(p: &finality_store::Payment) -> String {
    let provider = p.provider_ref.as_deref().unwrap_or("?");
    match &p.merchant_ref {
        Some(m) => format!("{provider}[{m}]"),
        None => provider.to_string(),
    }
}

/// `finality stats`: per-provider statistics over the payments registered
/// in the last `window`, straight from the database.
pub async fn stats(
    config: Config,
    url: Option<String>,
    window: std::time::Duration,
    json: bool,
    by: finality_store::stats::By,
) -> anyhow::Result<()> {
    let store = open(&config, url).await?;
    let now = finality_core::SystemClock.now();
    let since =
        finality_core::Timestamp(now.0 - i64::try_from(window.as_millis()).unwrap_or(i64::MAX));
    let rows = store.stats_rows(since).await?;
    let errors = store.error_counts(since).await?;
    let stats = finality_store::stats::compute(&rows, &errors, by);
    let window_text = humantime::format_duration(window).to_string();
    if json {
        let v =
            serde_json::json!({"window_s": window.as_secs(), "since": since.0, "providers": stats});
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    if stats.is_empty() {
        println!("no payments registered in the last {window_text}");
        return Ok(());
    }
    let q = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |x| format!("{x:.0}"));
    let per = match by {
        finality_store::stats::By::Provider => "provider",
        finality_store::stats::By::Account => "account",
    };
    println!("payments registered in the last {window_text}, per {per}:");
    for s in &stats {
        let name = match &s.account {
            Some(Some(a)) => format!("{} account {a}", s.provider),
            Some(None) => format!("{} (its own account)", s.provider),
            None => s.provider.clone(),
        };
        let by: Vec<String> = s.final_by.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let errors: Vec<String> = s.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!(
            "\n{}: {} payments · final by {} · in review {} · open {}",
            name,
            s.payments,
            if by.is_empty() {
                "-".to_string()
            } else {
                by.join(", ")
            },
            s.in_review,
            s.open
        );
        let (c, t) = (&s.queries_until_final, &s.time_to_final_s);
        println!(
            "  queries until final: p50 {} · p90 {} · p99 {} · max {}",
            q(c.p50),
            q(c.p90),
            q(c.p99),
            q(c.max)
        );
        println!(
            "  seconds to final:    p50 {} · p90 {} · p99 {} · max {}",
            q(t.p50),
            q(t.p90),
            q(t.p99),
            q(t.max)
        );
        println!(
            "  failed calls: {}",
            if errors.is_empty() {
                "none".to_string()
            } else {
                errors.join(", ")
            }
        );
    }
    Ok(())
}
