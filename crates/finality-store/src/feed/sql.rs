//! The event feed on SQL: positions in commit order (the sequencer),
//! reads by cursor, destinations and their deliveries.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields, Stmt};
use crate::error::{DbContext, Result};
use crate::feed::replay::{self, destination_from_row, ADVANCE, DESTINATION_COLUMNS};
use crate::feed::rows::{FinalFact, Numbered};
use crate::feed::{delivered_in_two, event_from_row};
use crate::model::*;
use crate::EventFeed;
use finality_core::Timestamp;

/// The `INSERT` of `n` delivery attempts, placeholders from `$from`.
pub(crate) fn insert_deliveries_sql(from: usize, n: usize) -> String {
    let rows: Vec<String> = (0..n)
        .map(|i| format!("({})", crate::driver::placeholders(from + 7 * i, 7)))
        .collect();
    format!(
        "INSERT INTO delivery_attempts (destination, event_id, feed_seq, at, status_code, \
         latency_ms, error) VALUES {}",
        rows.join(", ")
    )
}

pub(crate) fn bind_deliveries<'a>(mut q: Stmt<'a>, attempts: &'a [DeliveryAttempt]) -> Stmt<'a> {
    for a in attempts {
        q = q
            .text(&a.destination)
            .text(&a.event_id)
            .int(a.feed_seq)
            .int(a.at.0)
            .opt_int4(a.status_code.map(i32::from))
            .int(a.latency_ms)
            .opt_text(a.error.as_deref());
    }
    q
}

/// One sequencer round statement by statement (SQLite, in process: no
/// other node to notify): the rows it numbered.
pub(crate) async fn sequence_by_statements<B: Backend>(b: &B, limit: u32) -> Result<Numbered> {
    // Nothing to sequence is the common case on a wake-up: a plain read,
    // instead of a write transaction.
    {
        let mut conn = b.read().await?;
        let waiting = conn
            .opt(stmt(
                "SELECT id FROM outbox WHERE feed_seq IS NULL LIMIT 1",
                "looking for events to sequence",
            ))
            .await?;
        if waiting.is_none() {
            return Ok(Numbered::default());
        }
    }
    let mut tx = b.begin_write().await?;
    let numbered = number_in(&mut *tx, limit, b.wakeups().origin()).await?;
    tx.commit().await.op("committing feed positions")?;
    Ok(numbered)
}

/// Give positions, inside the caller's transaction, to the unsequenced
/// outbox rows it sees (its own and others' committed ones, at most
/// `limit`), under the `feed_state` row lock, which holds until the
/// caller commits: so positions still follow commit order (a transaction
/// waiting for that lock gets it only once this one is visible), and a
/// reader paging by position never skips one. PostgreSQL announces the
/// position reached on `finality_feed` at the commit.
pub(crate) async fn number_in<C: Conn>(conn: &mut C, limit: u32, origin: &str) -> Result<Numbered> {
    if let Some(sql) = C::SQL.sequence_feed {
        let rows = conn
            .all(
                stmt(sql, "assigning feed positions")
                    .int(i64::from(limit))
                    .text(origin),
            )
            .await?;
        return Numbered::of(&rows);
    }
    let last = match conn
        .opt(stmt(C::SQL.lock_feed, "locking the feed sequencer"))
        .await?
    {
        Some(r) => r.int("last_seq", "feed_state")?,
        None => {
            return Err(crate::driver::corrupt(
                "feed_state",
                "the sequencer row is missing",
            ))
        }
    };
    let n = conn
        .run(
            stmt(C::SQL.number_outbox, "assigning feed positions")
                .int(last)
                .int(i64::from(limit)),
        )
        .await?;
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    if n == 0 {
        return Ok(Numbered::default());
    }
    conn.run(
        stmt(
            "UPDATE feed_state SET last_seq = last_seq + $1 WHERE id = 1",
            "advancing the feed",
        )
        .int(n),
    )
    .await?;
    let rows = conn
        .all(
            stmt(
                "SELECT o.feed_seq AS id, o.event_id, o.payment_id, o.type, o.status, \
                 o.previous_status, o.source, o.occurred_at, p.provider, p.created_at \
                 FROM outbox o LEFT JOIN payments p ON p.id = o.payment_id \
                 WHERE o.feed_seq > $1 AND o.feed_seq <= $2",
                "reading the events just numbered",
            )
            .int(last)
            .int(last + n),
        )
        .await?;
    Numbered::of(&rows)
}

/// After the transaction that numbered `numbered` committed (a round that
/// began at feed `epoch`): its events go to the feed tail, readers learn
/// the head, and the payments it made final are recorded in the
/// time-to-final histogram (each transition is numbered exactly once, on
/// one node: the one place to count it once). Returns how many were
/// numbered.
pub(crate) fn numbered_committed(wakeups: &crate::Wakeups, numbered: Numbered, epoch: u64) -> u64 {
    let Some(head) = numbered.events.last().map(|e| e.seq) else {
        return 0;
    };
    let n = numbered.events.len() as u64;
    wakeups
        .feed_tail()
        .append_with(numbered.events, numbered.details);
    wakeups.feed_grew_to_since(head, epoch);
    record_finals(&numbered.finals);
    n
}

/// The time-to-final histogram, fed where transitions get positions.
pub(crate) fn record_finals(finals: &[FinalFact]) {
    for f in finals {
        metrics::histogram!(
            "finality_time_to_final_seconds",
            "provider" => f.provider.clone(),
            "source" => f.source.as_str()
        )
        .record(f.after_ms.max(0) as f64 / 1000.0);
    }
}

#[async_trait::async_trait]
impl<B: Backend> EventFeed for B {
    fn subscribe_feed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.start_listener();
        self.wakeups().subscribe_feed()
    }

    fn subscribe_transitions(&self) -> tokio::sync::watch::Receiver<u64> {
        self.wakeups().subscribe_transitions()
    }

    fn feed_head(&self) -> Option<i64> {
        self.wakeups().feed_head()
    }

    async fn events_after(&self, seq: i64, limit: u32) -> Result<Vec<OutboxEvent>> {
        let mut conn = self.read().await?;
        conn.all(
            stmt(
                "SELECT id, event_id, payment_id, type, status, previous_status, source, \
                 occurred_at FROM outbox WHERE id > $1 ORDER BY id LIMIT $2",
                "reading the outbox",
            )
            .int(seq)
            .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(event_from_row)
        .collect()
    }

    async fn sequence_feed(&self, limit: u32) -> Result<u64> {
        let epoch = self.wakeups().feed_epoch();
        let numbered = match <B::Conn as Conn>::SQL.sequence_feed {
            // One statement, its own transaction (PostgreSQL): the rows
            // come back once it committed.
            Some(_) => {
                async {
                    let mut conn = self.read().await?;
                    number_in(&mut *conn, limit, self.wakeups().origin()).await
                }
                .await
            }
            None => sequence_by_statements(self, limit).await,
        };
        let numbered = match numbered {
            Ok(numbered) => numbered,
            Err(e) => {
                // It may have committed before failing here, and this
                // process ignores its own announcement (SQLite has none):
                // wake its readers to ask the database.
                self.wakeups().feed_grew_unknown();
                return Err(e);
            }
        };
        Ok(numbered_committed(self.wakeups(), numbered, epoch))
    }

    async fn feed_after(&self, cursor: i64, limit: u32) -> Result<Vec<OutboxEvent>> {
        let head = self.wakeups().feed_head();
        if let Some(events) = self.wakeups().feed_tail().after(cursor, limit, head) {
            return Ok(events);
        }
        let mut conn = self.read().await?;
        conn.all(
            stmt(
                "SELECT feed_seq AS id, event_id, payment_id, type, status, previous_status, \
                 source, occurred_at FROM outbox WHERE feed_seq > $1 ORDER BY feed_seq LIMIT $2",
                "reading the event feed",
            )
            .int(cursor)
            .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(event_from_row)
        .collect()
    }

    async fn destination(&self, name: &str) -> Result<DestinationState> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "INSERT INTO event_destinations (name) VALUES ($1) ON CONFLICT DO NOTHING",
                "creating a destination cursor",
            )
            .text(name),
        )
        .await?;
        let sql = format!("SELECT {DESTINATION_COLUMNS} FROM event_destinations WHERE name = $1");
        let r = conn
            .opt(stmt(&sql, "reading a destination cursor").text(name))
            .await?;
        match r {
            Some(r) => destination_from_row(&r),
            None => Err(crate::driver::corrupt(
                "event_destinations",
                format!("destination `{name}` vanished"),
            )),
        }
    }

    async fn destination_advance(&self, name: &str, from: i64, to: i64) -> Result<bool> {
        let mut conn = self.read().await?;
        let n = conn
            .run(
                stmt(ADVANCE, "advancing a destination cursor")
                    .text(name)
                    .int(from)
                    .int(to),
            )
            .await?;
        Ok(n == 1)
    }

    async fn destination_failed(&self, st: &DestinationState) -> Result<()> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "UPDATE event_destinations SET attempts = $3, failing_since = $4, \
                 next_attempt_at = $5, last_error = $6 WHERE name = $1 AND delivered_seq = $2",
                "recording a delivery failure",
            )
            .text(&st.name)
            .int(st.delivered_seq)
            .int4(i32::try_from(st.attempts).unwrap_or(i32::MAX))
            .opt_int(st.failing_since.map(|t| t.0))
            .opt_int(st.next_attempt_at.map(|t| t.0))
            .opt_text(st.last_error.as_deref()),
        )
        .await?;
        Ok(())
    }

    async fn record_deliveries(&self, attempts: &[DeliveryAttempt]) -> Result<()> {
        if attempts.is_empty() {
            return Ok(());
        }
        let sql = insert_deliveries_sql(1, attempts.len());
        let q = bind_deliveries(stmt(&sql, "recording delivery attempts"), attempts);
        let mut conn = self.read().await?;
        conn.run(q).await?;
        Ok(())
    }

    async fn destination_delivered(
        &self,
        name: &str,
        from: i64,
        to: i64,
        attempts: &[DeliveryAttempt],
    ) -> Result<bool> {
        if <B::Conn as Conn>::SQL.writable_cte && from != to && !attempts.is_empty() {
            let sql = format!(
                "WITH rec AS ({}), adv AS ({ADVANCE} RETURNING 1) SELECT count(*) AS n FROM adv",
                insert_deliveries_sql(4, attempts.len())
            );
            let q = stmt(
                &sql,
                "recording deliveries and advancing a destination cursor",
            )
            .text(name)
            .int(from)
            .int(to);
            let one = async {
                let mut conn = self.read().await?;
                conn.opt(bind_deliveries(q, attempts)).await
            };
            match one.await {
                Ok(r) => {
                    return Ok(r.map(|r| r.int("n", "event_destinations")).transpose()? == Some(1))
                }
                // Perhaps only the record failed (a partition missing at
                // midnight, say): each on its own, the cursor still moves.
                Err(e) => {
                    tracing::warn!(error = %e, "recording deliveries with the cursor failed; trying each alone")
                }
            }
        }
        delivered_in_two(self, name, from, to, attempts).await
    }

    async fn deliveries(&self, destination: &str, limit: u32) -> Result<Vec<DeliveryAttempt>> {
        let mut conn = self.read().await?;
        let t = "delivery_attempts";
        conn.all(
            stmt(
                "SELECT destination, event_id, feed_seq, at, status_code, latency_ms, error \
                 FROM delivery_attempts WHERE destination = $1 ORDER BY id LIMIT $2",
                "reading delivery attempts",
            )
            .text(destination)
            .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(|r| {
            Ok(DeliveryAttempt {
                destination: r.text("destination", t)?,
                event_id: r.text("event_id", t)?,
                feed_seq: r.int("feed_seq", t)?,
                at: Timestamp(r.int("at", t)?),
                status_code: r
                    .opt_int4("status_code", t)?
                    .and_then(|c| u16::try_from(c).ok()),
                latency_ms: r.int("latency_ms", t)?,
                error: r.opt_text("error", t)?,
            })
        })
        .collect()
    }

    async fn prune_events(&self, max_seq: i64, before: Timestamp) -> Result<u64> {
        let mut conn = self.read().await?;
        let n = conn
            .run(
                stmt(
                    "DELETE FROM outbox WHERE feed_seq <= $1 AND occurred_at < $2",
                    "pruning delivered events",
                )
                .int(max_seq)
                .int(before.0),
            )
            .await?;
        // What was pruned here is not served from this memory either.
        // Another process's tail may still hold events it pruned if the
        // retention is under the tail's minute: already delivered events,
        // served once more, never a gap.
        if n > 0 {
            self.wakeups().feed_tail().clear();
        }
        Ok(n)
    }

    async fn event_details(&self, events: &[OutboxEvent]) -> Result<Vec<EventDetails>> {
        replay::event_details(self, events).await
    }

    async fn destinations(&self) -> Result<Vec<DestinationState>> {
        replay::destinations(self).await
    }

    async fn feed_bounds(&self) -> Result<FeedBounds> {
        replay::feed_bounds(self).await
    }

    async fn feed_epoch(&self) -> Result<FeedEpoch> {
        let mut conn = self.read().await?;
        let now = epoch_in(&mut *conn).await?;
        self.wakeups().feed_tail().drop_past(now.head);
        Ok(now)
    }

    async fn feed_epoch_parted(&self, epoch: &str) -> Result<Option<i64>> {
        let mut conn = self.read().await?;
        let now = epoch_in(&mut *conn).await?;
        if now.epoch == epoch {
            return Ok(Some(now.head));
        }
        let t = "feed_epochs";
        let Some(r) = conn
            .opt(
                stmt(
                    "SELECT id FROM feed_epochs WHERE epoch = $1",
                    "looking for a feed epoch",
                )
                .text(epoch),
            )
            .await?
        else {
            return Ok(None);
        };
        let id = r.int("id", t)?;
        // Every later epoch began from a position both histories share:
        // the earliest of them is where the reader's history and this one
        // part.
        let parted = conn
            .opt(
                stmt(
                    "SELECT min(since_seq) AS parted FROM feed_epochs WHERE id > $1",
                    "reading where a feed epoch ended",
                )
                .int(id),
            )
            .await?
            .map(|r| r.opt_int("parted", t))
            .transpose()?
            .flatten();
        Ok(Some(parted.unwrap_or(now.since).min(now.since)))
    }

    async fn first_seq_since(&self, at: Timestamp) -> Result<Option<i64>> {
        replay::first_seq_since(self, at).await
    }

    async fn event_by_id(&self, event_id: &str) -> Result<Option<OutboxEvent>> {
        replay::event_by_id(self, event_id).await
    }

    async fn destination_rewind(&self, name: &str, to: i64) -> Result<Option<i64>> {
        replay::destination_rewind(self, name, to).await
    }

    async fn destination_pause(
        &self,
        name: &str,
        paused: Option<(Timestamp, &str)>,
    ) -> Result<bool> {
        replay::destination_pause(self, name, paused).await
    }

    async fn request_redelivery(
        &self,
        destination: &str,
        event_id: &str,
        at: Timestamp,
        by: &str,
    ) -> Result<i64> {
        replay::request_redelivery(self, destination, event_id, at, by).await
    }

    async fn pending_redeliveries(&self, destination: &str, limit: u32) -> Result<Vec<Redelivery>> {
        replay::pending_redeliveries(self, destination, limit).await
    }

    async fn redeliveries(&self, limit: u32) -> Result<Vec<Redelivery>> {
        replay::redeliveries(self, limit).await
    }

    async fn redelivery_done(&self, id: i64, at: Timestamp, outcome: &str) -> Result<()> {
        replay::redelivery_done(self, id, at, outcome).await
    }
}

/// The feed's epoch and head as `feed_state` holds them. A row written
/// before epochs existed (none: the migration fills it) reads as epoch `0`.
async fn epoch_in<C: Conn>(conn: &mut C) -> Result<FeedEpoch> {
    let t = "feed_state";
    let r = conn
        .opt(stmt(
            "SELECT epoch, epoch_since, last_seq FROM feed_state WHERE id = 1",
            "reading the feed's epoch",
        ))
        .await?
        .ok_or_else(|| crate::driver::corrupt(t, "the sequencer row is missing"))?;
    Ok(FeedEpoch {
        epoch: r.opt_text("epoch", t)?.unwrap_or_else(|| "0".into()),
        since: r.int("epoch_since", t)?,
        head: r.int("last_seq", t)?,
    })
}
