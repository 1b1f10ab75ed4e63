//! The invariants of a chaos run, checked for every payment once all have
//! settled: final or in review; final status equal to the provider's
//! truth; a history in which each status is entered at most once and each
//! step is in the transition table; exactly one feed event per transition,
//! no event id twice; no overlapping provider calls beyond the paused
//! node's allowance; every acknowledged webhook stored.

use super::Faults;
use anyhow::Context;
use finality_core::{transition, Kind, Status};
use finality_sim::Simulator;
use sqlx::{PgPool, Row};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

const OPEN: &str = "SELECT count(*) FROM payments \
    WHERE status NOT IN ('succeeded', 'failed', 'cancelled', 'reversed', 'needs_review')";

/// Wait until no payment is open (or `timeout`); how long it took.
pub async fn wait_settled(pool: &PgPool, timeout: Duration) -> anyhow::Result<Duration> {
    let start = Instant::now();
    loop {
        // The database may still be coming back from the last fault.
        if let Ok(open) = sqlx::query_scalar::<_, i64>(OPEN).fetch_one(pool).await {
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
    /// From a SIGKILL to the next call for each poll the victim held: p50
    /// and max, seconds; how many were measured.
    pub rerun_after_kill: Option<(f64, f64, usize)>,
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
        let rows: [(&str, String); 17] = [
            ("payments registered", self.registered.to_string()),
            (
                "node kills (SIGKILL) / restarts",
                format!("{} / {}", f.kills, f.restarts),
            ),
            ("node pauses past the lease (SIGSTOP)", f.pauses.to_string()),
            (
                "PostgreSQL restarts (immediate) / stops",
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
                self.rerun_after_kill.map_or("-".into(), |(p50, max, n)| {
                    format!("{p50:.1} s / {max:.1} s ({n} polls)")
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
    pool: &PgPool,
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
    let rows = sqlx::query("SELECT id, provider_ref, status, kind FROM payments")
        .fetch_all(pool)
        .await
        .context("reading payments")?;
    let mut stored: HashMap<String, (String, Status, Kind)> = HashMap::new();
    for row in rows {
        let id: String = row.try_get("id")?;
        let status: Status = row.try_get::<String, _>("status")?.parse()?;
        let kind: Kind = row.try_get::<String, _>("kind")?.parse()?;
        stored.insert(id, (row.try_get("provider_ref")?, status, kind));
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

    let history = sqlx::query(
        "SELECT payment_id, from_status, to_status FROM status_history ORDER BY payment_id, id",
    )
    .fetch_all(pool)
    .await
    .context("reading the history")?;
    let mut entered: HashSet<(String, String)> = HashSet::new();
    let mut per_payment: HashMap<String, i64> = HashMap::new();
    for row in &history {
        let id: String = row.try_get("payment_id")?;
        let from: Option<String> = row.try_get("from_status")?;
        let to: String = row.try_get("to_status")?;
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
    let events = sqlx::query("SELECT payment_id, count(*) AS n FROM outbox GROUP BY payment_id")
        .fetch_all(pool)
        .await
        .context("reading the feed")?;
    let mut events_per: HashMap<String, i64> = HashMap::new();
    for row in events {
        events_per.insert(row.try_get("payment_id")?, row.try_get("n")?);
    }
    for (id, n) in &per_payment {
        if events_per.get(id).copied().unwrap_or(0) != *n {
            r.events_missing += 1;
        }
    }
    r.event_ids_twice = sqlx::query_scalar::<_, i64>(
        "SELECT count(*) FROM (SELECT event_id FROM outbox GROUP BY event_id HAVING count(*) > 1) d",
    )
    .fetch_one(pool)
    .await? as usize;

    let mut delays = Vec::new();
    for (killed_at, held) in &faults.killed_leases {
        for id in held {
            let next: Option<i64> = sqlx::query_scalar(
                "SELECT min(started_at) FROM poll_attempts WHERE payment_id = $1 AND started_at > $2",
            )
            .bind(id)
            .bind(killed_at)
            .fetch_one(pool)
            .await?;
            // Settled by a webhook meanwhile: nothing left to poll.
            if let Some(at) = next {
                delays.push((at - killed_at) as f64 / 1000.0);
            }
        }
    }
    delays.sort_by(f64::total_cmp);
    if let Some(max) = delays.last() {
        r.rerun_after_kill = Some((delays[(delays.len() - 1) / 2], *max, delays.len()));
    }
    r.overlapping_calls = sim.stats().overlapping_calls;
    let acked = sim.acknowledged();
    r.webhooks_acknowledged = acked.len();
    let stored_events: HashSet<String> =
        sqlx::query_scalar::<_, String>("SELECT event_id FROM webhook_inbox")
            .fetch_all(pool)
            .await?
            .into_iter()
            .collect();
    r.webhooks_not_stored = acked.iter().filter(|e| !stored_events.contains(*e)).count();
    Ok(r)
}
