//! The invariants of a chaos run, checked for every payment once all have
//! settled: final or in review; final status equal to the provider's
//! truth; a history in which each status is entered at most once and each
//! step is in the transition table; exactly one feed event per transition,
//! no event id twice; no overlapping provider calls beyond the paused
//! node's allowance; every acknowledged webhook stored.

use super::db::Pool;
use super::Faults;
use anyhow::Context;
use finality_core::{transition, Kind, Status, Timestamp};
use finality_sim::Simulator;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

const OPEN: &str = "SELECT count(*) FROM payments \
    WHERE status NOT IN ('succeeded', 'failed', 'cancelled', 'reversed', 'needs_review')";

/// Wait until no payment is open (or `timeout`); how long it took.
pub async fn wait_settled(pool: &Pool, timeout: Duration) -> anyhow::Result<Duration> {
    let start = Instant::now();
    loop {
        // The database may still be coming back from the last fault.
        if let Ok(Some(open)) = pool.number(OPEN).await {
            if open == 0 {
                return Ok(start.elapsed());
            }
        }
        if start.elapsed() > timeout {
            return Ok(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The figures of a run.
#[derive(Debug, Default)]
pub struct Report {
    pub faults: Faults,
    pub registered: usize,
    pub lost: usize,
    pub open: usize,
    pub review: usize,
    pub wrong: usize,
    /// A status entered twice by one payment.
    pub regressed: usize,
    /// A step the transition table does not allow.
    pub disallowed: usize,
    /// Transitions without exactly one feed event.
    pub events_missing: usize,
    pub event_ids_twice: usize,
    pub overlapping_calls: u64,
    pub webhooks_acknowledged: usize,
    pub webhooks_not_stored: usize,
    pub settled_in: Duration,
    /// From a SIGKILL to the next call for each poll the victim held.
    pub rerun_after_kill: Option<Rerun>,
    /// From a SIGKILL to the victim's leases released: p50, max seconds.
    pub released_after_kill: Option<(f64, f64)>,
    /// How far behind the queue was at those releases: p50, max seconds.
    pub queue_lag_at_release: Option<(f64, f64)>,
}

/// How long a killed node's polls waited to be called again, seconds.
#[derive(Debug, Clone, Copy)]
pub struct Rerun {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub measured: usize,
    /// Over the 10 s target…
    pub over_10s: usize,
    /// …of which the database was down between the kill and 10 s after it
    /// (nobody can release or claim while it is).
    pub over_10s_db_down: usize,
}

impl Rerun {
    /// `delays`: (kill time ms, seconds until called again).
    fn of(mut delays: Vec<(i64, f64)>, db_down: &[(i64, i64)]) -> Option<Self> {
        delays.sort_by(|a, b| a.1.total_cmp(&b.1));
        let n = delays.len();
        let max = delays.last()?.1;
        let at = |q: f64| delays[((n as f64 * q).ceil() as usize).clamp(1, n) - 1].1;
        let slow: Vec<&(i64, f64)> = delays.iter().filter(|d| d.1 > 10.0).collect();
        let near_db = slow
            .iter()
            .filter(|(killed, _)| {
                db_down
                    .iter()
                    .any(|(down, up)| *down <= killed + 10_000 && *up >= *killed)
            })
            .count();
        Some(Rerun {
            p50: at(0.5),
            p99: at(0.99),
            max,
            measured: n,
            over_10s: slow.len(),
            over_10s_db_down: near_db,
        })
    }
}

impl Report {
    /// Overlapping calls beyond one per pause are violations: a paused node
    /// may wake mid-call while its successor asks the same payment.
    pub fn violations(&self) -> usize {
        let overlap = self
            .overlapping_calls
            .saturating_sub(u64::from(self.faults.pauses)) as usize;
        self.lost
            + self.open
            + self.wrong
            + self.regressed
            + self.disallowed
            + self.events_missing
            + self.event_ids_twice
            + overlap
            + self.webhooks_not_stored
    }

    pub fn print(&self) {
        let f = &self.faults;
        let rows: [(&str, String); 20] = [
            ("payments registered", self.registered.to_string()),
            (
                "node kills (SIGKILL) / restarts",
                format!("{} / {}", f.kills, f.restarts),
            ),
            ("node pauses past the lease (SIGSTOP)", f.pauses.to_string()),
            (
                "database restarts (killed) / stops",
                format!("{} / {}", f.db_restarts, f.db_stops),
            ),
            ("lost (acknowledged, not stored)", self.lost.to_string()),
            ("still open", self.open.to_string()),
            ("in review", self.review.to_string()),
            ("wrong final status", self.wrong.to_string()),
            (
                "status entered twice (regressed, duplicated)",
                self.regressed.to_string(),
            ),
            (
                "steps outside the transition table",
                self.disallowed.to_string(),
            ),
            (
                "transitions without exactly one event",
                self.events_missing.to_string(),
            ),
            ("event ids twice", self.event_ids_twice.to_string()),
            (
                "overlapping calls for one payment",
                format!(
                    "{} ({} allowed: one per pause)",
                    self.overlapping_calls, f.pauses
                ),
            ),
            (
                "webhooks acknowledged",
                self.webhooks_acknowledged.to_string(),
            ),
            (
                "acknowledged webhooks not stored",
                self.webhooks_not_stored.to_string(),
            ),
            (
                "kill → the victim's polls called again (p50 / max)",
                self.rerun_after_kill.map_or("-".into(), |r| {
                    format!(
                        "{:.1} s / {:.1} s ({} polls; p99 {:.1} s)",
                        r.p50, r.max, r.measured, r.p99
                    )
                }),
            ),
            (
                "kill → the victim's leases released (p50 / max)",
                self.released_after_kill
                    .map_or("-".into(), |(p50, max)| format!("{p50:.1} s / {max:.1} s")),
            ),
            (
                "  the queue's lag then (oldest due poll, p50 / max)",
                self.queue_lag_at_release
                    .map_or("-".into(), |(p50, max)| format!("{p50:.1} s / {max:.1} s")),
            ),
            (
                "  calls again after over 10 s / database down then",
                self.rerun_after_kill.map_or("-".into(), |r| {
                    format!("{} / {}", r.over_10s, r.over_10s_db_down)
                }),
            ),
            (
                "time to settle after the last fault",
                format!("{:.1} s", self.settled_in.as_secs_f64()),
            ),
        ];
        println!();
        for (k, v) in rows {
            println!("  {k:<52} {v}");
        }
        println!("  {:<52} {}", "violations", self.violations());
    }
}

fn truth(word: &str) -> Option<Status> {
    match word {
        "succeeded" => Some(Status::Succeeded),
        "failed" => Some(Status::Failed),
        "canceled" => Some(Status::Cancelled),
        _ => None,
    }
}

pub async fn check(
    pool: &Pool,
    sim: &Simulator,
    registered: &[(String, String)],
    faults: &Faults,
    settled_in: Duration,
) -> anyhow::Result<Report> {
    let mut r = Report {
        faults: faults.clone(),
        registered: registered.len(),
        settled_in,
        ..Report::default()
    };
    let rows = pool
        .rows("SELECT id, provider_ref, status, kind FROM payments")
        .await
        .context("reading payments")?;
    let mut stored: HashMap<String, (String, Status, Kind)> = HashMap::new();
    for row in rows {
        let col = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let status: Status = col(2).parse()?;
        let kind: Kind = col(3).parse()?;
        stored.insert(col(0), (col(1), status, kind));
    }
    let now = sim.now();
    for (id, provider_ref) in registered {
        let Some((_, status, _)) = stored.get(id) else {
            r.lost += 1;
            continue;
        };
        if *status == Status::NeedsReview {
            r.review += 1;
        } else if !status.is_final() {
            r.open += 1;
        } else {
            let word = sim
                .plan(provider_ref)
                .map(|p| p.status_at(now))
                .unwrap_or("unknown");
            if truth(word) != Some(*status) {
                r.wrong += 1;
            }
        }
    }

    let history = pool
        .rows(
            "SELECT payment_id, from_status, to_status FROM status_history \
             ORDER BY payment_id, id",
        )
        .await
        .context("reading the history")?;
    let mut entered: HashSet<(String, String)> = HashSet::new();
    let mut per_payment: HashMap<String, i64> = HashMap::new();
    for row in &history {
        let id = row.first().cloned().flatten().unwrap_or_default();
        let from: Option<String> = row.get(1).cloned().flatten();
        let to = row.get(2).cloned().flatten().unwrap_or_default();
        *per_payment.entry(id.clone()).or_default() += 1;
        if !entered.insert((id.clone(), to.clone())) {
            r.regressed += 1;
        }
        let kind = stored.get(&id).map_or(Kind::Payment, |s| s.2);
        let allowed = match from {
            None => to == Status::Pending.as_str(),
            Some(from) => {
                let (from, to): (Status, Status) = (from.parse()?, to.parse()?);
                transition::table(kind).contains(&(from, to))
            }
        };
        if !allowed {
            r.disallowed += 1;
        }
    }
    let events = pool
        .rows("SELECT payment_id, count(*) AS n FROM outbox GROUP BY payment_id")
        .await
        .context("reading the feed")?;
    let mut events_per: HashMap<String, i64> = HashMap::new();
    for row in events {
        let n = row.get(1).cloned().flatten().unwrap_or_default().parse()?;
        events_per.insert(row.first().cloned().flatten().unwrap_or_default(), n);
    }
    for (id, n) in &per_payment {
        if events_per.get(id).copied().unwrap_or(0) != *n {
            r.events_missing += 1;
        }
    }
    r.event_ids_twice = pool
        .number(
            "SELECT count(*) FROM (SELECT event_id FROM outbox GROUP BY event_id \
             HAVING count(*) > 1) d",
        )
        .await?
        .unwrap_or(0) as usize;

    // The next call for each poll the victim held, as the provider saw it
    // arrive (a call whose caller was killed in turn before recording it
    // still counts).
    let refs: HashMap<&str, &str> = registered
        .iter()
        .map(|(id, r)| (id.as_str(), r.as_str()))
        .collect();
    let mut delays = Vec::new();
    for (killed_at, held) in &faults.killed_leases {
        for id in held {
            let next = refs
                .get(id.as_str())
                .and_then(|r| sim.first_call_since(r, Timestamp(*killed_at)));
            // Settled by a webhook meanwhile: nothing left to poll.
            if let Some(at) = next {
                delays.push((*killed_at, (at.0 - killed_at) as f64 / 1000.0));
            }
        }
    }
    r.rerun_after_kill = Rerun::of(delays, &faults.db_down);
    let p50_max = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.last().map(|max| (v[(v.len() - 1) / 2], *max))
    };
    r.released_after_kill = p50_max(faults.released_after.iter().map(|r| r.0).collect());
    r.queue_lag_at_release = p50_max(faults.released_after.iter().map(|r| r.1).collect());
    r.overlapping_calls = sim.stats().overlapping_calls;
    let acked = sim.acknowledged();
    r.webhooks_acknowledged = acked.len();
    let stored_events: HashSet<String> = pool
        .rows("SELECT event_id FROM webhook_inbox")
        .await?
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect();
    r.webhooks_not_stored = acked.iter().filter(|e| !stored_events.contains(*e)).count();
    Ok(r)
}
