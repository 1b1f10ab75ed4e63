//! `finality events …`: read the feed, and what an admin does to a push
//! destination (rewind, redeliver, pause, resume), straight on the
//! database, through the same functions as the API and the console, each
//! recorded in the audit trail (role `cli`, with the system user).

use crate::commands::open;
use crate::config::Config;
use anyhow::bail;
use clap::Subcommand;
use finality_core::{Clock, SystemClock, Timestamp};
use finality_relay::event::{complete, Encoding, Schema};
use finality_relay::replay::{self, Action, RewindTo};
use finality_server::cancel_on_signal;
use finality_store::Store;
use tokio_util::sync::CancellationToken;

#[derive(Subcommand)]
pub enum EventsCommand {
    /// Print the event feed as JSON lines, from a cursor.
    Tail {
        /// Start after this feed position (0: from the oldest kept).
        #[arg(long, default_value_t = 0)]
        after: i64,
        /// Keep waiting for new events.
        #[arg(long)]
        follow: bool,
        /// 3 (complete events with their money, the default), 2 (without the
        /// money and without the events that are not a status change) or 1
        /// (the thin shape of earlier versions).
        #[arg(long, default_value_t = 3)]
        schema: u8,
    },
    /// Every push destination: cursor, backlog, failing or paused.
    Destinations,
    /// Send a destination every event after a position, or since a time, again.
    Rewind {
        /// The destination (`http:<name>`, `nats`, `rabbitmq`, `redis`).
        destination: String,
        /// Send again every event after this feed position.
        #[arg(long, conflicts_with = "to_time", required_unless_present = "to_time")]
        to_seq: Option<i64>,
        /// Send again every event from the first at or after this RFC 3339 time.
        #[arg(long)]
        to_time: Option<String>,
        /// Your name, for the audit trail.
        #[arg(long)]
        actor: String,
    },
    /// Send one event to a destination again, once.
    Redeliver {
        destination: String,
        #[arg(long)]
        event_id: String,
        #[arg(long)]
        actor: String,
    },
    /// Stop sending to a destination without alerting; its backlog waits.
    Pause {
        destination: String,
        #[arg(long)]
        actor: String,
    },
    /// Send to a paused destination again, from where it stopped.
    Resume {
        destination: String,
        #[arg(long)]
        actor: String,
    },
}

pub async fn events(config: Config, url: Option<String>, cmd: EventsCommand) -> anyhow::Result<()> {
    let store = open(&config, url).await?;
    let now = SystemClock.now();
    match cmd {
        EventsCommand::Tail {
            after,
            follow,
            schema,
        } => tail(&*store, after, follow, schema).await,
        EventsCommand::Destinations => {
            let o = replay::overview(&*store).await?;
            let oldest = o.bounds.oldest.map_or("none kept".to_string(), |(s, t)| {
                format!("{s} ({})", t.to_rfc3339())
            });
            println!("feed head {} · oldest kept {oldest}", o.bounds.head);
            println!(
                "{:<24} {:>10} {:>8} {:>8}  state",
                "destination", "delivered", "backlog", "tries"
            );
            for (d, backlog) in o.destinations {
                let state = match (d.condition(), &d.paused_by, &d.last_error) {
                    ("paused", Some(by), _) => format!("paused by {by}"),
                    ("failing", _, Some(e)) => format!("failing: {e}"),
                    (word, _, _) => word.to_string(),
                };
                println!(
                    "{:<24} {:>10} {:>8} {:>8}  {state}",
                    d.name, d.delivered_seq, backlog, d.attempts
                );
            }
            Ok(())
        }
        EventsCommand::Rewind {
            destination,
            to_seq,
            to_time,
            actor,
        } => {
            let to = match (to_seq, to_time) {
                (Some(s), _) => RewindTo::Seq(s),
                (None, Some(t)) => match Timestamp::parse_rfc3339(&t) {
                    Ok(t) => RewindTo::Time(t),
                    Err(e) => bail!(
                        "--to-time: `{t}` is not an RFC 3339 time (e.g. 2026-12-01T09:30:00Z): {e}"
                    ),
                },
                (None, None) => bail!("give --to-seq or --to-time"),
            };
            let result = replay::rewind(&*store, &destination, to).await;
            let (action, outcome) =
                replay::audited(Action::Rewind, &result, replay::Rewound::outcome);
            audit(
                &*store,
                &actor,
                action,
                to.asked(&destination),
                &outcome,
                now,
            )
            .await?;
            result?;
            println!("{destination}: {outcome}");
            Ok(())
        }
        EventsCommand::Redeliver {
            destination,
            event_id,
            actor,
        } => {
            let result = replay::redeliver(&*store, &destination, &event_id, now, &actor).await;
            let (action, outcome) = replay::audited(Action::Redeliver, &result, |id| {
                format!("redelivery {id} queued")
            });
            let asked = serde_json::json!({"destination": destination, "event_id": event_id});
            audit(&*store, &actor, action, asked, &outcome, now).await?;
            result?;
            println!("{destination}: {outcome} (its pusher sends it within a second)");
            Ok(())
        }
        EventsCommand::Pause { destination, actor } => {
            pause(&*store, &destination, &actor, true, now).await
        }
        EventsCommand::Resume { destination, actor } => {
            pause(&*store, &destination, &actor, false, now).await
        }
    }
}

async fn pause(
    store: &dyn Store,
    destination: &str,
    actor: &str,
    paused: bool,
    now: Timestamp,
) -> anyhow::Result<()> {
    let result = replay::pause(store, destination, paused.then_some((now, actor))).await;
    let act = if paused {
        Action::Pause
    } else {
        Action::Resume
    };
    let (action, outcome) = replay::audited(act, &result, |d| replay::pause_outcome(paused, d));
    let asked = serde_json::json!({"destination": destination});
    audit(store, actor, action, asked, &outcome, now).await?;
    result?;
    println!("{destination}: {outcome}");
    Ok(())
}

/// The audit record of an action by CLI: whoever can run this can reach
/// the database itself, so the name is theirs to give; the record says it
/// came by CLI and which system user ran it.
pub(crate) async fn audit(
    store: &dyn Store,
    actor: &str,
    action: &str,
    mut asked: serde_json::Value,
    outcome: &str,
    now: Timestamp,
) -> anyhow::Result<()> {
    if actor.trim().is_empty() {
        bail!("--actor must not be empty");
    }
    asked["system_user"] = serde_json::json!(std::env::var("USER").ok());
    store
        .audit_append(&finality_store::review::NewAudit {
            at: now,
            actor: actor.to_string(),
            role: "cli".into(),
            action: action.into(),
            payment_id: None,
            detail: asked,
            outcome: outcome.to_string(),
            remote_addr: None,
        })
        .await?;
    Ok(())
}

async fn tail(store: &dyn Store, mut after: i64, follow: bool, schema: u8) -> anyhow::Result<()> {
    let encoding = Encoding {
        schema: match Schema::try_from(schema) {
            Ok(s) => s,
            Err(e) => bail!("--schema: {e}"),
        },
        ..Encoding::default()
    };
    let stop = CancellationToken::new();
    cancel_on_signal(stop.clone());
    loop {
        // Positions are normally given by the server; doing it here is safe
        // (one sequencer at a time) and makes the command work on its own.
        finality_relay::sequencer::sequence_all(store).await?;
        let page = store.feed_after(after, 500).await?;
        let full = page.len() == 500;
        for e in complete(store, page).await? {
            after = e.outbox.seq;
            if !encoding.schema.has_notices() && finality_store::is_notice(&e.outbox.event_type) {
                // Not in the shape asked for: the pushes skip it too.
                continue;
            }
            println!("{}", encoding.encode(&e));
        }
        if full {
            continue;
        }
        if !follow || stop.is_cancelled() {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(500)) => {}
            _ = stop.cancelled() => return Ok(()),
        }
    }
}
