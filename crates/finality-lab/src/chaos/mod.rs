//! `finality chaos`: several real `finality serve` processes on one private
//! PostgreSQL (or MariaDB, `--database mariadb`; or one process on its
//! embedded SQLite file, `--database sqlite`), the simulator as provider (webhooks lost, delayed,
//! duplicated, reordered; 429s, 5xx and timeouts), payments registered
//! through random nodes while nodes are killed and restarted, one is paused
//! past its lease, and the database is restarted as after a crash and
//! stopped for a while. Then the faults stop, everything settles, and every
//! payment is checked (`check`). One table; a non-zero exit on any
//! violation.
//!
//! # Layout
//! - `nodes`: the `finality serve` child processes.
//! - `check`: the invariants, over the database and the provider's truth.
//! - `db`: the private PostgreSQL or MariaDB and the checker's reads.

mod check;
mod db;
mod nodes;
mod tenants;

use anyhow::{anyhow, Context};
use db::{lit, Database, Pool, Server};
use finality_core::{Clock, SystemClock};
use finality_sim::webhooks::WebhookTarget;
use finality_sim::{SimConfig, Simulator};
use nodes::Nodes;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// `finality chaos` arguments.
#[derive(clap::Args, Debug)]
pub struct ChaosArgs {
    /// `finality serve` processes sharing the database.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Payments registered, evenly over the fault phase.
    #[arg(long, default_value_t = 1000)]
    payments: usize,
    /// How long faults are injected (registrations run over it too).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// A random node is killed (SIGKILL) this often, and restarted.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    kill_every: Duration,
    /// Longest wait for every payment to settle once the faults stop.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    settle_timeout: Duration,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Without the provider's own faults (429s, 5xx, hangs): nodes, the
    /// database and webhooks still misbehave. Separates what a node's
    /// death costs from what the provider's backoff (pauses, open
    /// breakers) adds.
    #[arg(long)]
    no_provider_faults: bool,
    /// The database the nodes share: a private server of the run's own,
    /// killed and stopped during the fault phase.
    #[arg(long, value_enum, default_value = "postgres")]
    database: Database,
    /// Merchants that collide: this many accounts of the provider, each
    /// with its own webhook endpoint and secret, their merchant references
    /// shared, one added mid-run and one disabled for a while, and forged
    /// webhooks across accounts and in test mode (0: the provider's own
    /// payments only). The check then proves no fact of one account
    /// changed another's payment.
    #[arg(long, default_value_t = 0)]
    tenants: usize,
}

/// What the fault phase did.
#[derive(Debug, Default, Clone)]
pub struct Faults {
    pub kills: u32,
    pub restarts: u32,
    pub pauses: u32,
    pub db_restarts: u32,
    pub db_stops: u32,
    /// Per kill: when (ms) and the polls the victim held then.
    pub killed_leases: Vec<(i64, Vec<String>)>,
    /// When (ms) the database was unreachable: restarts and stops.
    pub db_down: Vec<(i64, i64)>,
    /// Per kill that held polls: seconds until no poll was leased to the
    /// victim any more (its death noticed, its leases released), and how
    /// far behind the cluster's queue was then (seconds since the oldest
    /// unleased due poll fell due): released polls queue behind that.
    pub released_after: Vec<(f64, f64)>,
}

fn now_ms() -> i64 {
    finality_core::SystemClock.now().0
}

/// The webhook secret the simulator signs with and the nodes verify.
const WEBHOOK_SECRET: &str = "whsec_Y2hhb3MtcnVuLXdlYmhvb2stc2VjcmV0LTAxMjM0NTY3";
pub(crate) const TOKEN: &str = "chaos-run-api-token-0123456789";

pub async fn run(args: ChaosArgs) -> anyhow::Result<()> {
    if args.database == Database::Sqlite && args.nodes != 1 {
        return Err(anyhow!(
            "--nodes: SQLite is embedded in one process (one writer): run --database sqlite with \
             --nodes 1; its kills are the database's crashes too"
        ));
    }
    if args.nodes < 2 && args.database != Database::Sqlite {
        return Err(anyhow!(
            "--nodes: at least 2 (a killed node's work must go somewhere)"
        ));
    }
    let started = Instant::now();
    println!(
        "finality chaos · {} nodes · {} payments · faults for {} · seed {}{}",
        args.nodes,
        args.payments,
        humantime::format_duration(args.duration),
        args.seed,
        if args.no_provider_faults {
            " · no provider faults"
        } else {
            ""
        }
    );
    let which = args.database;
    let pg = Arc::new(
        tokio::task::spawn_blocking(move || Server::start(which))
            .await
            .context("starting a private database server")??,
    );
    let url = pg.url();
    finality_store::open(&url, 4)
        .await
        .context("migrating the private database")?;
    let stop = CancellationToken::new();

    // The provider: every misbehaviour on, real time.
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut sim_cfg = SimConfig {
        settle: finality_sim::config::SettleTime::LogNormal {
            median: Duration::from_secs(3),
            sigma: 1.0,
        },
        ..SimConfig::default()
    };
    sim_cfg.outcomes.succeeded = 0.85;
    sim_cfg.outcomes.failed = 0.10;
    sim_cfg.outcomes.cancelled = 0.05;
    sim_cfg.webhooks.lost = 0.1;
    sim_cfg.webhooks.delayed = 0.1;
    sim_cfg.webhooks.duplicated = 0.1;
    sim_cfg.webhooks.reordered = 0.1;
    sim_cfg.faults.rate_limited = 0.02;
    sim_cfg.faults.retry_after = Duration::from_secs(1);
    sim_cfg.faults.server_error = 0.03;
    sim_cfg.faults.timeout = 0.01;
    sim_cfg.faults.hang = Duration::from_secs(3);
    sim_cfg.latency = Duration::from_millis(20);
    if args.no_provider_faults {
        sim_cfg.faults.rate_limited = 0.0;
        sim_cfg.faults.server_error = 0.0;
        sim_cfg.faults.timeout = 0.0;
    }
    let sim = Simulator::new(sim_cfg, clock.clone(), args.seed);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let sim_url = format!("http://{}", l.local_addr()?);
    tokio::spawn(finality_sim::server::serve(sim.clone(), l, stop.clone()));

    let tenancy = (args.tenants > 0).then(|| tenants::Tenancy::new(args.tenants));
    let extra = tenancy.as_ref().map(|t| t.config()).unwrap_or_default();
    let mut nodes = Nodes::start(args.nodes, &url, &sim_url, WEBHOOK_SECRET, TOKEN, extra).await?;
    if let Some(t) = &tenancy {
        t.route(&sim)?;
    }
    // Webhooks go to the first node (the simulator has one target): its
    // kills are webhook outages, which the simulator retries.
    sim.set_webhook_target(WebhookTarget::standard(
        format!("{}/webhooks/sim", nodes.base(0)),
        finality_providers::webhook::standard::decode_secret(WEBHOOK_SECRET)
            .map_err(|e| anyhow!(e))?,
    ));
    sim.spawn_webhook_sender(stop.clone());

    // Registrations through random nodes, evenly over the fault phase.
    let known = Arc::new(std::sync::Mutex::new(Vec::new()));
    let registrar = {
        let (sim, bases, n, dur, seed) = (
            sim.clone(),
            nodes.bases(),
            args.payments,
            args.duration,
            args.seed,
        );
        let (t, known) = (tenancy.clone(), known.clone());
        tokio::spawn(
            async move { register_all(&sim, &bases, n, dur, seed, t.as_deref(), &known).await },
        )
    };
    // The tenants' account changes and forgers, over the fault phase.
    let tenant_tasks = tenancy.as_ref().map(|t| {
        let changes = tokio::spawn(tenants::change_accounts(
            t.clone(),
            nodes.bases(),
            args.duration,
        ));
        let forger = tokio::spawn(tenants::forge(
            t.clone(),
            nodes.base(1 % nodes.len()),
            known.clone(),
            WEBHOOK_SECRET.to_string(),
            args.duration,
            args.seed,
        ));
        (changes, forger)
    });

    let watch = Pool::connect(&url, 4).await.ok();
    let faults = inject(&mut nodes, &pg, watch.as_ref(), &args).await?;
    let last_fault = Instant::now();
    let registered = registrar.await.context("the registrar stopped")??;
    let forged = match tenant_tasks {
        Some((changes, forger)) => {
            changes.await.context("the account changes stopped")??;
            Some(forger.await.context("the forgers stopped")?)
        }
        None => None,
    };
    println!(
        "faults over: {} kills, {} restarts, {} pauses, {} restarted {} and stopped {} times; {} payments registered",
        faults.kills, faults.restarts, faults.pauses, pg.name(), faults.db_restarts, faults.db_stops, registered.len()
    );

    let pool = Pool::connect(&url, 2)
        .await
        .context("connecting to check")?;
    check::wait_settled(&pool, args.settle_timeout).await?;
    let settled_in = last_fault.elapsed();
    let report = check::check(&pool, &sim, &registered, &faults, settled_in).await?;
    let tenancy_check = match (&tenancy, forged) {
        (Some(t), Some(f)) => Some(tenants::check(&pool, t, f).await?),
        _ => None,
    };
    nodes.stop_all().await;
    stop.cancel();
    report.print();
    let mut violations = report.violations();
    if let Some(tc) = &tenancy_check {
        for (what, v) in tc.rows() {
            println!("  {what:<60} {v}");
        }
        println!("  {:<60} {}", "tenant violations", tc.violations());
        violations += tc.violations();
    }
    println!("  ({:.1} s in all)", started.elapsed().as_secs_f64());
    if violations > 0 {
        return Err(anyhow!("{violations} violations"));
    }
    Ok(())
}

/// Known registered payments: id, provider reference, account.
pub(crate) type Known = std::sync::Mutex<Vec<(String, String, Option<String>)>>;

/// Register `n` payments (created at the simulator first), each through a
/// random node, trying the others while one is down. With tenants, each
/// payment is an account's (or the provider's own), merchant references
/// shared across accounts; a payment of an account that takes no
/// registrations now (not added yet, disabled) is registered once it
/// does. Returns the payment ids finality acknowledged, with their
/// provider reference.
async fn register_all(
    sim: &Simulator,
    bases: &[String],
    n: usize,
    over: Duration,
    seed: u64,
    tenancy: Option<&tenants::Tenancy>,
    known: &Known,
) -> anyhow::Result<Vec<(String, String)>> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let start = Instant::now();
    let mut done = Vec::with_capacity(n);
    let mut deferred: Vec<Waiting> = Vec::new();
    for i in 0..n {
        let due = over.mul_f64(i as f64 / n.max(1) as f64);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        let id = format!("chaos_{i:07}");
        let (account, merchant_ref) = match tenancy {
            Some(t) => {
                let (a, m) = t.of(i);
                (a.map(String::from), Some(m))
            }
            None => (None, None),
        };
        let plan = sim.create_with(None, merchant_ref.clone());
        if let Some(a) = &account {
            sim.assign_account(&plan.id, a);
        }
        let mut body = serde_json::json!({"id": id, "provider": "sim", "provider_ref": plan.id,
                                          "amount": 1000, "currency": "EUR"});
        if let Some(m) = &merchant_ref {
            body["merchant_ref"] = serde_json::json!(m);
        }
        if let Some(a) = &account {
            body["account"] = serde_json::json!(a);
        }
        deferred.push((id, plan.id, account, body));
        // Whatever may be registered now, this payment first.
        deferred.reverse();
        let first = rng.gen_range(0..bases.len());
        deferred =
            register_waiting(&http, bases, deferred, tenancy, first, known, &mut done).await?;
    }
    // What waited for its account: until it takes registrations.
    let until = Instant::now() + Duration::from_secs(120);
    while !deferred.is_empty() {
        if Instant::now() > until {
            return Err(anyhow!(
                "{} payments of accounts that never took registrations",
                deferred.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        deferred = register_waiting(&http, bases, deferred, tenancy, 0, known, &mut done).await?;
    }
    Ok(done)
}

/// A payment waiting to be registered: id, provider reference, account,
/// the registration's body.
type Waiting = (String, String, Option<String>, serde_json::Value);

/// Register each of `waiting` whose account takes registrations now; those
/// that still wait.
async fn register_waiting(
    http: &reqwest::Client,
    bases: &[String],
    waiting: Vec<Waiting>,
    tenancy: Option<&tenants::Tenancy>,
    first: usize,
    known: &Known,
    done: &mut Vec<(String, String)>,
) -> anyhow::Result<Vec<Waiting>> {
    let mut still = Vec::new();
    for (id, r, account, body) in waiting {
        if !tenancy.is_none_or(|t| t.is_open(account.as_deref())) {
            still.push((id, r, account, body));
            continue;
        }
        match register_one(http, bases, &body, first).await {
            Reg::Done => {
                let mut k = known.lock().unwrap_or_else(|p| p.into_inner());
                k.push((id.clone(), r.clone(), account));
                done.push((id, r));
            }
            Reg::Closed => still.push((id, r, account, body)),
            Reg::Failed => {
                return Err(anyhow!(
                    "payment {id} could not be registered through any node"
                ))
            }
        }
    }
    Ok(still)
}

enum Reg {
    Done,
    /// Refused for its account (not added yet, or disabled): later.
    Closed,
    Failed,
}

/// One registration: every node in turn, then again after a pause (a node
/// may be down, paused or without its database for a while).
async fn register_one(
    http: &reqwest::Client,
    bases: &[String],
    body: &serde_json::Value,
    first: usize,
) -> Reg {
    for round in 0..20 {
        let mut closed = false;
        for k in 0..bases.len() {
            let base = &bases[(first + k) % bases.len()];
            let r = http
                .post(format!("{base}/v1/payments"))
                .bearer_auth(TOKEN)
                .json(body)
                .send()
                .await;
            if let Ok(r) = r {
                if r.status().is_success() {
                    return Reg::Done;
                }
                closed |= r.status() == reqwest::StatusCode::UNPROCESSABLE_ENTITY;
            }
        }
        if closed {
            return Reg::Closed;
        }
        tokio::time::sleep(Duration::from_millis(250 * (round + 1))).await;
    }
    Reg::Failed
}

/// The fault phase: a kill every `kill_every`; at a third of the way
/// the database killed and restarted; halfway a node paused past its
/// lease; at two thirds the database stopped for 5 s.
async fn inject(
    nodes: &mut Nodes,
    pg: &Arc<Server>,
    pool: Option<&Pool>,
    args: &ChaosArgs,
) -> anyhow::Result<Faults> {
    let mut f = Faults::default();
    let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed ^ 0x5eed);
    let start = Instant::now();
    let (mut restarted_db, mut paused, mut stopped_db) = (false, false, false);
    let mut watchers = Vec::new();
    while start.elapsed() < args.duration {
        tokio::time::sleep(args.kill_every).await;
        let at = start.elapsed().as_secs_f64() / args.duration.as_secs_f64();
        if !restarted_db && at >= 1.0 / 3.0 && pg.has_server() {
            restarted_db = true;
            let down = now_ms();
            let p = pg.clone();
            tokio::task::spawn_blocking(move || p.restart_immediate()).await?;
            f.db_down.push((down, now_ms()));
            f.db_restarts += 1;
            continue;
        }
        if !paused && at >= 0.5 {
            paused = true;
            let i = rng.gen_range(0..nodes.len());
            nodes
                .pause(i, nodes::LEASE + Duration::from_secs(2))
                .await?;
            f.pauses += 1;
            continue;
        }
        if !stopped_db && at >= 2.0 / 3.0 && pg.has_server() {
            stopped_db = true;
            let down = now_ms();
            let p = pg.clone();
            tokio::task::spawn_blocking(move || p.stop()).await?;
            tokio::time::sleep(Duration::from_secs(5)).await;
            let p = pg.clone();
            tokio::task::spawn_blocking(move || p.start_again()).await?;
            f.db_down.push((down, now_ms()));
            f.db_stops += 1;
            continue;
        }
        let i = rng.gen_range(0..nodes.len());
        // What the victim holds as it dies: how long until each of these
        // is polled again is the figure of a node's death.
        let held = match pool {
            Some(pool) => pool
                .rows(&format!(
                    "SELECT payment_id FROM poll_jobs WHERE locked_by = {}",
                    lit(&nodes.worker(i))
                ))
                .await
                .unwrap_or_default()
                .into_iter()
                .filter_map(|r| r.into_iter().next().flatten())
                .collect(),
            None => Vec::new(),
        };
        let victim = nodes.worker(i);
        nodes.kill(i)?;
        let killed_at = now_ms();
        if let (Some(pool), false) = (pool, held.is_empty()) {
            watchers.push(tokio::spawn(watch_release(pool.clone(), victim)));
        }
        f.killed_leases.push((killed_at, held));
        f.kills += 1;
        tokio::time::sleep(Duration::from_secs(1)).await;
        nodes.restart(i).await?;
        f.restarts += 1;
    }
    // Each fault at least once, however short the run (SQLite has no
    // server: its crash is the node's).
    if !restarted_db && pg.has_server() {
        let down = now_ms();
        let p = pg.clone();
        tokio::task::spawn_blocking(move || p.restart_immediate()).await?;
        f.db_down.push((down, now_ms()));
        f.db_restarts += 1;
    }
    if !paused {
        let i = rng.gen_range(0..nodes.len());
        nodes
            .pause(i, nodes::LEASE + Duration::from_secs(2))
            .await?;
        f.pauses += 1;
    }
    if !stopped_db && pg.has_server() {
        let down = now_ms();
        let p = pg.clone();
        tokio::task::spawn_blocking(move || p.stop()).await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let p = pg.clone();
        tokio::task::spawn_blocking(move || p.start_again()).await?;
        f.db_down.push((down, now_ms()));
        f.db_stops += 1;
    }
    for w in watchers {
        if let Ok(Some(secs)) = w.await {
            f.released_after.push(secs);
        }
    }
    Ok(f)
}

/// Seconds from now until nothing is leased to `victim` (checked every
/// 100 ms, the database's outages waited out; `None` after two minutes),
/// and the queue's lag at that moment.
async fn watch_release(pool: Pool, victim: String) -> Option<(f64, f64)> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(120) {
        let held = pool
            .number(&format!(
                "SELECT count(*) FROM poll_jobs WHERE locked_by = {}",
                lit(&victim)
            ))
            .await;
        if let Ok(Some(0)) = held {
            let released = start.elapsed().as_secs_f64();
            let now = now_ms();
            let oldest: Option<i64> = pool
                .number(&format!(
                    "SELECT min(next_poll_at) FROM poll_jobs \
                     WHERE locked_by IS NULL AND next_poll_at <= {now}"
                ))
                .await
                .ok()
                .flatten();
            let lag = oldest.map_or(0.0, |t| (now - t) as f64 / 1000.0);
            return Some((released, lag));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}
