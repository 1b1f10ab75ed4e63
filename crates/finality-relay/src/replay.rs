//! What an admin does to a destination (the API, the console and the CLI
//! all call these, so each refuses the same things the same way): rewind
//! it to a feed position or a time, redeliver one event, pause and resume
//! it. A rewind only moves the cursor back: the pusher then sends
//! everything after it again, in feed order, so a payment's events are
//! never reordered and none is skipped. A rewind that would need events
//! retention already deleted is refused, naming the oldest one kept.

use finality_core::Timestamp;
use finality_store::{DestinationState, EventFeed, FeedBounds, Redelivery, StoreError};

/// Where to rewind to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindTo {
    /// Send every event after this feed position again.
    Seq(i64),
    /// Send every event from the first one that occurred at or after this
    /// time.
    Time(Timestamp),
}

impl RewindTo {
    /// The field of the request that says where (named in a refusal).
    pub fn field(&self) -> &'static str {
        match self {
            RewindTo::Seq(_) => "to_seq",
            RewindTo::Time(_) => "to_time",
        }
    }

    /// What was asked, for the audit trail.
    pub fn asked(&self, destination: &str) -> serde_json::Value {
        match self {
            RewindTo::Seq(s) => serde_json::json!({"destination": destination, "to_seq": s}),
            RewindTo::Time(t) => {
                serde_json::json!({"destination": destination, "to_time": t.to_rfc3339()})
            }
        }
    }
}

/// The audit trail's action and outcome of an admin's action on a
/// destination, accepted or refused: the API, the console and the CLI
/// record the same words.
pub fn audited<T>(
    action: Action,
    result: &Result<T, ReplayError>,
    done: impl FnOnce(&T) -> String,
) -> (&'static str, String) {
    let outcome = match result {
        Ok(v) => done(v),
        Err(e) => format!("refused: {e}"),
    };
    (action.as_str(), outcome)
}

/// An admin's action on a destination, as the audit trail names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Rewind,
    Redeliver,
    Pause,
    Resume,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Rewind => "events_rewind",
            Action::Redeliver => "events_redeliver",
            Action::Pause => "events_pause",
            Action::Resume => "events_resume",
        }
    }
}

impl Rewound {
    /// `rewound from 6 to 2: 4 events to send again`.
    pub fn outcome(&self) -> String {
        format!(
            "rewound from {} to {}: {} events to send again",
            self.from_seq, self.to_seq, self.replays
        )
    }
}

/// `paused at position 12` / `resumed at position 12`.
pub fn pause_outcome(paused: bool, d: &DestinationState) -> String {
    let done = if paused { "paused" } else { "resumed" };
    format!("{done} at position {}", d.delivered_seq)
}

/// What a rewind did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewound {
    pub destination: String,
    /// The cursor before.
    pub from_seq: i64,
    /// The cursor now: events after it are sent again.
    pub to_seq: i64,
    /// How many events that is (the feed head minus the new cursor).
    pub replays: i64,
}

/// Why an admin action was refused.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("no event destination named `{0}` (a destination has a cursor once its pusher ran)")]
    UnknownDestination(String),
    #[error("no event `{0}` in the feed (unknown, not yet sequenced, or pruned by retention)")]
    UnknownEvent(String),
    #[error("position {to} is not in the feed (its head is {head})")]
    OutOfRange { to: i64, head: i64 },
    /// A rewind only ever moves back: one to a position after what the
    /// destination has delivered would skip its backlog.
    #[error(
        "{field} means position {to}, after position {cursor} the destination has delivered: a \
         rewind only moves back (it would skip {} waiting event(s))",
        to - cursor
    )]
    Forward {
        field: &'static str,
        to: i64,
        cursor: i64,
    },
    #[error(
        "events before position {oldest_seq} (which occurred at {oldest_at}) were deleted by \
         retention: rewind to position {keep} or to {oldest_at} or later"
    )]
    Pruned {
        oldest_seq: i64,
        oldest_at: String,
        keep: i64,
    },
    #[error("the feed holds no event (all were delivered and deleted by retention)")]
    Empty,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The lowest cursor a rewind may set: the position before the oldest
/// event kept (0 while nothing was pruned).
fn floor(b: &FeedBounds) -> Result<i64, ReplayError> {
    match b.oldest {
        Some((seq, _)) => Ok(seq - 1),
        None if b.head == 0 => Ok(0),
        None => Err(ReplayError::Empty),
    }
}

fn pruned(b: &FeedBounds) -> ReplayError {
    match b.oldest {
        Some((seq, at)) => ReplayError::Pruned {
            oldest_seq: seq,
            oldest_at: at.to_rfc3339(),
            keep: seq - 1,
        },
        None => ReplayError::Empty,
    }
}

/// Rewind `name` (see the module's doc).
pub async fn rewind(
    feed: &dyn EventFeed,
    name: &str,
    to: RewindTo,
) -> Result<Rewound, ReplayError> {
    let bounds = feed.feed_bounds().await?;
    let lowest = floor(&bounds)?;
    let target = match to {
        RewindTo::Seq(seq) => {
            if seq < 0 || seq > bounds.head {
                return Err(ReplayError::OutOfRange {
                    to: seq,
                    head: bounds.head,
                });
            }
            if seq < lowest {
                return Err(pruned(&bounds));
            }
            seq
        }
        RewindTo::Time(at) => {
            // Something was pruned and the time is before the oldest kept:
            // events between them may be gone.
            if let Some((seq, oldest_at)) = bounds.oldest {
                if seq > 1 && at < oldest_at {
                    return Err(pruned(&bounds));
                }
            }
            match feed.first_seq_since(at).await? {
                Some(first) => first - 1,
                None => bounds.head,
            }
        }
    };
    // Pushers only move a cursor forward: a target at or below it now is
    // at or below it when the rewind is written.
    let cursor = known(feed, name).await?.delivered_seq;
    if target > cursor {
        return Err(ReplayError::Forward {
            field: to.field(),
            to: target,
            cursor,
        });
    }
    let from = feed
        .destination_rewind(name, target)
        .await?
        .ok_or_else(|| ReplayError::UnknownDestination(name.to_string()))?;
    tracing::warn!(
        destination = name,
        from,
        to = target,
        "event destination rewound"
    );
    Ok(Rewound {
        destination: name.to_string(),
        from_seq: from,
        to_seq: target,
        replays: (bounds.head - target).max(0),
    })
}

/// Ask for one event to be sent to `name` again; returns the request's id.
pub async fn redeliver(
    feed: &dyn EventFeed,
    name: &str,
    event_id: &str,
    at: Timestamp,
    by: &str,
) -> Result<i64, ReplayError> {
    known(feed, name).await?;
    if feed.event_by_id(event_id).await?.is_none() {
        return Err(ReplayError::UnknownEvent(event_id.to_string()));
    }
    Ok(feed.request_redelivery(name, event_id, at, by).await?)
}

/// Pause (`Some((when, who))`) or resume (`None`) `name`; its state after.
pub async fn pause(
    feed: &dyn EventFeed,
    name: &str,
    paused: Option<(Timestamp, &str)>,
) -> Result<DestinationState, ReplayError> {
    if !feed.destination_pause(name, paused).await? {
        return Err(ReplayError::UnknownDestination(name.to_string()));
    }
    tracing::warn!(
        destination = name,
        paused = paused.is_some(),
        "event destination paused or resumed"
    );
    known(feed, name).await
}

async fn known(feed: &dyn EventFeed, name: &str) -> Result<DestinationState, ReplayError> {
    feed.destinations()
        .await?
        .into_iter()
        .find(|d| d.name == name)
        .ok_or_else(|| ReplayError::UnknownDestination(name.to_string()))
}

/// Every destination with its backlog, the feed's bounds and the newest
/// redeliveries: what the console and `GET /v1/events/destinations` show.
#[derive(Debug, Clone)]
pub struct Overview {
    pub bounds: FeedBounds,
    /// Each destination and how many events wait for it (type filters
    /// aside: the feed head minus its cursor).
    pub destinations: Vec<(DestinationState, i64)>,
    pub redeliveries: Vec<Redelivery>,
}

pub async fn overview(feed: &dyn EventFeed) -> Result<Overview, StoreError> {
    let bounds = feed.feed_bounds().await?;
    let destinations = feed
        .destinations()
        .await?
        .into_iter()
        .map(|d| {
            let backlog = (bounds.head - d.delivered_seq).max(0);
            (d, backlog)
        })
        .collect();
    let redeliveries = feed.redeliveries(20).await?;
    Ok(Overview {
        bounds,
        destinations,
        redeliveries,
    })
}
