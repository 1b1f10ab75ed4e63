//! The `finality` binary: parses flags, loads `finality.toml`, and calls into
//! the library crates. No logic lives here that a test could not reach.
//!
//! # Layout
//! - `config`: the configuration file (in the crate's library, `lib.rs`).
//! - `commands`: `serve`, `migrate`, `payments …`, `events tail`, `stats`, `sim serve`.
//! - `demo`, `simulate`, `tune`, `chaos`, `bench`: in `finality-lab`, a
//!   library the binary calls (so no test code is linked here).
//! - `archive`: `finality archive` and `archive restore` (`docs/LIFECYCLE.md`).
#![forbid(unsafe_code)]

mod accounts;
mod archive;
mod commands;
use finality_cli::config;
mod config_check;
mod events;
mod reconcile;

/// mimalloc instead of glibc's malloc: the service allocates per request
/// (headers, bodies, JSON) from many threads, where glibc's arenas spent a
/// tenth of its CPU under webhook load (docs/PERFORMANCE.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "finality",
    version,
    about = "Drive every in-flight payment to its final state."
)]
struct Cli {
    /// Configuration file (default: ./finality.toml if present, else built-in defaults).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API and the poll engine.
    Serve,
    /// Apply the embedded database migrations and exit.
    Migrate {
        #[arg(long)]
        database_url: Option<String>,
    },
    /// Inspect and settle payments, straight from the database.
    Payments {
        #[command(subcommand)]
        command: commands::PaymentsCommand,
        #[arg(long, global = true)]
        database_url: Option<String>,
    },
    /// A provider's accounts: list, add or change, disable (audited).
    Accounts {
        #[command(subcommand)]
        command: accounts::AccountsCommand,
        #[arg(long, global = true)]
        database_url: Option<String>,
    },
    /// Read the event feed.
    Events {
        #[command(subcommand)]
        command: events::EventsCommand,
        #[arg(long, global = true)]
        database_url: Option<String>,
    },
    /// Per-provider statistics: queries and time until final, how final
    /// statuses arrived, review, error classes.
    Stats {
        /// Payments registered in this last stretch of time.
        #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
        window: std::time::Duration,
        /// Print JSON (the same as `GET /v1/stats/providers`).
        #[arg(long)]
        json: bool,
        /// `provider`, or `account`: each account of a provider apart
        /// (queries until final per institution).
        #[arg(long, default_value = "provider", value_parser = ["provider", "account"])]
        by: String,
        #[arg(long)]
        database_url: Option<String>,
    },
    /// Check the configured providers' credentials.
    Providers {
        #[command(subcommand)]
        command: commands::ProvidersCommand,
    },
    /// The provider simulator.
    Sim {
        #[command(subcommand)]
        command: commands::SimCommand,
    },
    /// Simulate N payments end to end on virtual time and print a summary.
    Demo(finality_lab::demo::DemoArgs),
    /// Compare retry schedules on the real engine, on virtual time: provider
    /// calls per payment against how fast a lost webhook is caught.
    Simulate(finality_lab::simulate::SimulateArgs),
    /// Several nodes on one private PostgreSQL under faults (kills, pauses,
    /// database restarts), then every payment checked (docs/RELIABILITY.md).
    Chaos(finality_lab::chaos::ChaosArgs),
    /// Recommend a retry schedule from a provider's recorded history: the
    /// fewest calls at a target lost-webhook p95, with the TOML to paste.
    Tune(finality_lab::tune::TuneArgs),
    /// Measure the engine against the database's own ceiling (docs/PERFORMANCE.md).
    Bench(finality_lab::bench::BenchArgs),
    /// Check the configuration: parse, validate, resolve the environment
    /// variables it names, print the effective configuration (secrets
    /// masked). Exits 1 naming the file, line and field at fault.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Check a provider's settlement report line by line against finality's
    /// records: settle what it settled, reverse what it refunded, keep the
    /// rest for a person (docs/RECONCILIATION.md).
    Reconcile(reconcile::ReconcileArgs),
    /// Archive what `[retention]` says is old enough, then delete it from
    /// the database; `archive restore FILE` brings a day back
    /// (docs/LIFECYCLE.md).
    Archive(archive::ArchiveArgs),
    /// One engine process for `finality bench` (three-process and memory runs).
    #[command(hide = true)]
    BenchNode(finality_lab::bench::node::NodeArgs),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate and print the effective configuration.
    Check,
}

/// Log lines to standard error: JSON lines (one object per line, the
/// span's fields — payment id, provider, request id — with each) when
/// asked or when standard error is not a terminal; text otherwise, with
/// colours only on a terminal. With an OTLP endpoint, spans also go to it
/// (the returned provider must be shut down at exit to send the last).
fn init_tracing(
    default: &str,
    format: config::LogFormat,
    traces: Option<&config::TracingSection>,
) -> Option<opentelemetry_sdk::trace::SdkTracerProvider> {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let terminal = std::io::stderr().is_terminal();
    let json = match format {
        config::LogFormat::Json => true,
        config::LogFormat::Text => false,
        config::LogFormat::Auto => !terminal,
    };
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt: Box<dyn Layer<_> + Send + Sync> = if json {
        Box::new(fmt.json().with_current_span(true).with_span_list(true))
    } else {
        Box::new(fmt.with_ansi(terminal))
    };
    let (otel, provider) = match traces.filter(|t| !t.otlp_endpoint.is_empty()) {
        Some(t) => match otlp(t) {
            Ok((layer, provider)) => (Some(layer), Some(provider)),
            Err(e) => {
                eprintln!("error: tracing.otlp_endpoint: {e}; continuing without traces");
                (None, None)
            }
        },
        None => (None, None),
    };
    // The OpenTelemetry layer sits on the registry itself (its type asks
    // for it); the filter, as a layer, filters globally.
    tracing_subscriber::registry()
        .with(otel)
        .with(filter)
        .with(fmt)
        .init();
    provider
}

type OtelLayer = tracing_opentelemetry::OpenTelemetryLayer<
    tracing_subscriber::Registry,
    opentelemetry_sdk::trace::Tracer,
>;

/// The OTLP exporter (HTTP/protobuf, batched on its own thread) and the
/// layer that turns tracing's spans into OpenTelemetry's; W3C trace
/// context for outgoing requests.
fn otlp(
    t: &config::TracingSection,
) -> anyhow::Result<(OtelLayer, opentelemetry_sdk::trace::SdkTracerProvider)> {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(&t.otlp_endpoint)
        .build()?;
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(t.service_name.clone())
                .build(),
        )
        .build();
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let tracer = provider.tracer("finality");
    Ok((tracing_opentelemetry::layer().with_tracer(tracer), provider))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Read before logging starts: the file says how to log. An error in it
    // is reported below, after logging is set up.
    let config = config::Config::load(cli.config.as_deref());
    if let Ok(c) = &config {
        // Before any secret is read.
        finality_core::secret::set_secret_dirs(c.server.secret_dirs.clone());
    }
    let format = config
        .as_ref()
        .map_or(config::LogFormat::Auto, |c| c.log.format);
    let traces = match (&cli.command, &config) {
        (Command::Serve, Ok(c)) => Some(c.tracing.clone()),
        _ => None,
    };
    let tracer = init_tracing(
        match cli.command {
            // A simulation's engine logs what a real one would (alerts of a
            // simulated outage); its own failures come back as errors.
            Command::Simulate(_) | Command::Tune(_) | Command::Chaos(_) => "off",
            Command::Demo(_)
            | Command::Bench(_)
            | Command::BenchNode(_)
            | Command::Payments { .. }
            | Command::Providers { .. }
            | Command::Events { .. }
            | Command::Accounts { .. }
            | Command::Stats { .. }
            | Command::Reconcile(_)
            | Command::Archive(_)
            | Command::Config { .. }
            | Command::Completions { .. } => "error",
            _ => "info",
        },
        format,
        traces.as_ref(),
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let config = config?;
        match cli.command {
            Command::Serve => commands::serve(config).await,
            Command::Migrate { database_url } => commands::migrate(config, database_url).await,
            Command::Payments {
                command,
                database_url,
            } => commands::payments(config, database_url, command).await,
            Command::Events {
                command,
                database_url,
            } => events::events(config, database_url, command).await,
            Command::Accounts {
                command,
                database_url,
            } => accounts::accounts(config, database_url, command).await,
            Command::Stats {
                window,
                json,
                by,
                database_url,
            } => {
                let by = match by.as_str() {
                    "account" => finality_store::stats::By::Account,
                    _ => finality_store::stats::By::Provider,
                };
                commands::stats(config, database_url, window, json, by).await
            }
            Command::Providers { command } => commands::providers(config, command).await,
            Command::Sim { command } => commands::sim(command).await,
            Command::Demo(args) => finality_lab::demo::run(args).await,
            Command::Simulate(args) => finality_lab::simulate::run(args).await,
            Command::Tune(args) => {
                let store = commands::open(&config, args.database_url.clone()).await?;
                let policies = config
                    .providers
                    .iter()
                    .map(|(name, p)| (name.clone(), p.policy()))
                    .collect();
                finality_lab::tune::run(store, &policies, args).await
            }
            Command::Chaos(args) => finality_lab::chaos::run(args).await,
            Command::Bench(args) => finality_lab::bench::run(args).await,
            Command::Reconcile(args) => reconcile::run(config, args).await,
            Command::Archive(args) => archive::run(config, args).await,
            Command::Config {
                command: ConfigCommand::Check,
            } => config_check::run(&config, cli.config.as_deref()),
            Command::Completions { shell } => {
                clap_complete::generate(
                    shell,
                    &mut <Cli as clap::CommandFactory>::command(),
                    "finality",
                    &mut std::io::stdout(),
                );
                Ok(())
            }
            Command::BenchNode(args) => finality_lab::bench::node::run_node(args).await,
        }
    });
    // Outside the runtime: the exporter's thread sends what it still holds.
    if let Some(t) = tracer {
        if let Err(e) = t.shutdown() {
            eprintln!("error: sending the last spans: {e}");
        }
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
