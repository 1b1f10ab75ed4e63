//! Fair claiming, measured on PostgreSQL: one account (`big`) holds a
//! backlog of due polls that never ends (each is answered pending and due
//! again at once), while another (`small`) registers 10 payments a second,
//! each settled by its first poll, due a second after registering. The
//! figure is `small`'s poll lateness (call start − `next_poll_at`): alone, beside the backlog in a lane of
//! its own (what fair claiming does), and in the backlog's lane (what one
//! shared first-due-first queue does, the baseline). Beside it, what the
//! share costs: executions/s of one account with fair claiming on and off,
//! interleaved in the same run.

use super::node;
use super::scratch::Scratch;
use super::workloads;
use anyhow::bail;
use async_trait::async_trait;
use finality_core::money::{Amount, Currency, PaymentId, ProviderRef};
use finality_core::{Clock, Kind, Status, SystemClock};
use finality_engine::accounts::ProviderAccounts;
use finality_providers::{Observation, PollTarget, Provider, ProviderError};
use finality_store::NewPayment;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// `big`'s payments (ids `b…`) stay pending forever; `small`'s (`s…`)
/// succeed at their first poll, whose lateness is recorded.
#[derive(Default)]
struct TwoAccounts {
    big_calls: AtomicU64,
    small_late_us: Mutex<Vec<i64>>,
}

#[async_trait]
impl Provider for TwoAccounts {
    async fn query_status(&self, t: &PollTarget<'_>) -> Result<Observation, ProviderError> {
        if t.payment_id.starts_with('s') {
            let now_us = SystemClock.now().0 * 1000;
            let late = now_us - t.due_at.0 * 1000;
            self.small_late_us
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(late);
            return Ok(Observation::new(Some(Status::Succeeded), "succeeded"));
        }
        self.big_calls.fetch_add(1, Ordering::Relaxed);
        Ok(Observation::new(Some(Status::Pending), "pending"))
    }
}

/// How long after its registration a `small` payment's first poll is due.
const FIRST_POLL: Duration = Duration::from_secs(1);

/// Where `small`'s payments go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// No backlog at all.
    Alone,
    /// Beside the backlog, in a lane of their own.
    OwnLane,
    /// In the backlog's lane: first due first behind it.
    SameLane,
}

/// One run: `small`'s lateness (µs, sorted), how many of its payments
/// were polled within the run, and `big`'s polls per second meanwhile.
struct Run {
    late_us: Vec<i64>,
    registered: usize,
    big_per_s: f64,
}

async fn run(url: &str, mode: Mode, backlog: usize, seconds: usize) -> anyhow::Result<Run> {
    let s = Scratch::new(
        "postgres",
        url,
        &format!("fair_{mode:?}").to_lowercase(),
        16,
    )
    .await?;
    let now = SystemClock.now().0;
    if mode != Mode::Alone {
        s.exec(&format!(
            "INSERT INTO payments (id, provider, provider_ref, kind, amount, currency, status, \
             created_at, updated_at, account) SELECT 'b' || x, 'bench', 'rb' || x, 'payment', \
             100, 'USD', 'pending', {now}, {now}, 'big' FROM generate_series(1, {backlog}) AS g(x); \
             INSERT INTO poll_jobs (payment_id, provider, provider_ref, kind, registered_at, \
             next_poll_at, account) SELECT 'b' || x, 'bench', 'rb' || x, 'payment', {now}, {now}, \
             'big' FROM generate_series(1, {backlog}) AS g(x); ANALYZE poll_jobs"
        ))
        .await?;
    }
    let adapter = Arc::new(TwoAccounts::default());
    let as_provider: Arc<dyn Provider> = adapter.clone();
    let accounts = Arc::new(ProviderAccounts::with_adapters(vec![
        ("big".into(), as_provider.clone()),
        ("small".into(), as_provider.clone()),
    ]));
    let e = node::engine_with(
        s.store.clone(),
        as_provider,
        accounts,
        node::config(64, "fair"),
    );
    let stop = CancellationToken::new();
    let engine = tokio::spawn(e.run(stop.clone()));
    // Let the backlog take every worker first.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let big_before = adapter.big_calls.load(Ordering::Relaxed);
    let started = Instant::now();
    let n = seconds * 10;
    let account = match mode {
        Mode::SameLane => "big",
        Mode::Alone | Mode::OwnLane => "small",
    };
    for i in 0..n {
        let due = started + Duration::from_millis(100 * i as u64);
        tokio::time::sleep_until(due.into()).await;
        let at = SystemClock.now();
        let p = NewPayment {
            id: PaymentId::parse(&format!("s{i}"))?,
            provider: "bench".into(),
            provider_ref: Some(ProviderRef::parse(&format!("rs{i}"))?),
            merchant_ref: None,
            account: Some(account.into()),
            kind: Kind::Payment,
            amount: Amount::new(100, Currency::parse("USD")?)?,
            metadata: json!({}),
        };
        // Due a second after registering, as a first poll always is a
        // while after (100 s on the webhooks-first default): lateness is
        // the engine's, not the registration's commit under load.
        s.store.register(&p, at, at.plus(FIRST_POLL)).await?;
    }
    // Polled within the run, or not at all.
    let deadline = Instant::now() + FIRST_POLL + Duration::from_secs(10);
    while Instant::now() < deadline {
        let polled = adapter
            .small_late_us
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len();
        if polled >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let big_per_s = (adapter.big_calls.load(Ordering::Relaxed) - big_before) as f64 / elapsed;
    stop.cancel();
    let _ = engine.await;
    let mut late_us = std::mem::take(
        &mut *adapter
            .small_late_us
            .lock()
            .unwrap_or_else(|p| p.into_inner()),
    );
    late_us.sort_unstable();
    s.drop_it().await?;
    Ok(Run {
        late_us,
        registered: n,
        big_per_s,
    })
}

fn ms(sorted_us: &[i64], f: f64) -> f64 {
    super::quantile_ms(sorted_us, f)
}

/// The section: `runs` rounds of the three modes interleaved, then the
/// claim's cost on one account. Prints the table and returns its figures.
pub async fn section(url: &str, runs: usize, smoke: bool, backlog: usize) -> anyhow::Result<Value> {
    let (backlog, seconds) = if smoke { (5_000, 3) } else { (backlog, 20) };
    println!(
        "\nfair claiming: account `small` registers 10 payments/s for {seconds} s, each polled \
         1 s later; account `big` holds {backlog} due polls (answered pending, due again at \
         once); 64 workers, PostgreSQL:"
    );
    println!(
        "  {:<34} {:>8} {:>9} {:>9} {:>9} {:>12}",
        "small's polls", "polled", "p50 ms", "p99 ms", "max ms", "big polls/s"
    );
    let mut all = Vec::new();
    let mut p99 = std::collections::BTreeMap::<&str, Vec<f64>>::new();
    for _ in 0..runs {
        for (mode, label) in [
            (Mode::Alone, "alone"),
            (Mode::OwnLane, "beside the backlog (fair)"),
            (Mode::SameLane, "in the backlog's lane (FIFO)"),
        ] {
            let r = run(url, mode, backlog, seconds).await?;
            let (p50, q99, max) = (
                ms(&r.late_us, 0.5),
                ms(&r.late_us, 0.99),
                ms(&r.late_us, 1.0),
            );
            println!(
                "  {label:<34} {:>4}/{:<3} {p50:>9.1} {q99:>9.1} {max:>9.1} {:>12.0}",
                r.late_us.len(),
                r.registered,
                r.big_per_s
            );
            p99.entry(label).or_default().push(q99);
            all.push(
                json!({"mode": label, "polled": r.late_us.len(), "registered": r.registered,
                            "p50_ms": p50, "p99_ms": q99, "max_ms": max,
                            "big_polls_per_s": r.big_per_s}),
            );
        }
    }
    let med = |k: &str| super::stats(p99.get(k).map_or(&[][..], |v| &v[..])).0;
    let ratio = med("beside the backlog (fair)") / med("alone");
    println!("  small's p99 beside the backlog / alone (medians): {ratio:.2}×");

    println!(
        "\n  the share's cost, one account, executions/s (64 workers), on vs off interleaved:"
    );
    let mut cost = Vec::new();
    for kind in ["postgres", "sqlite"] {
        let (mut on, mut off) = (Vec::new(), Vec::new());
        let n = if smoke { 300 } else { 20_000 };
        for _ in 0..runs {
            off.push(workloads::throughput(kind, url, n, 64, false).await?);
            on.push(workloads::throughput(kind, url, n, 64, true).await?);
        }
        let (m_on, lo_on, hi_on) = super::stats(&on);
        let (m_off, lo_off, hi_off) = super::stats(&off);
        println!(
            "  {kind:<10} fair on {m_on:>8.0} ({lo_on:.0}–{hi_on:.0}) · off {m_off:>8.0} \
             ({lo_off:.0}–{hi_off:.0}) · on/off {:.2}×",
            m_on / m_off
        );
        cost.push(json!({"store": kind, "fair_on": super::summary(&on), "fair_off": super::summary(&off)}));
    }
    if !smoke && !ratio.is_finite() {
        bail!("the fairness runs polled none of small's payments");
    }
    Ok(json!({"backlog": backlog, "seconds": seconds, "runs": all,
              "p99_ratio_fair_vs_alone": ratio, "claim_cost": cost}))
}
