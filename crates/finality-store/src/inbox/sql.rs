//! The webhook inbox on SQL: rows stored once by `(provider, event_id)`,
//! leased, processed and adopted.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields, InboxRows};
use crate::error::{DbContext, Result};
use crate::inbox::write::{
    inbox_from_row, inbox_process_in, inbox_process_many_in, Current, Fence, Locked, INBOX_COLUMNS,
};
use crate::model::*;
use crate::WebhookInbox;
use finality_core::Timestamp;

/// Feed positions given at most in one inbox transaction (the sequencer
/// takes any more).
pub(crate) const NUMBER_AT_MOST: u32 = 1000;

#[async_trait::async_trait]
impl<B: Backend> WebhookInbox for B {
    fn subscribe_inbox(&self) -> tokio::sync::watch::Receiver<u64> {
        self.start_listener();
        self.wakeups().subscribe_inbox()
    }

    async fn inbox_insert(&self, events: &[NewInboxEvent], now: Timestamp) -> Result<Vec<bool>> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        // No NOTIFY: the node that stored a webhook applies it (its own
        // processor is woken in process below); other nodes' processors
        // look every `idle_check`. A NOTIFY here would make every webhook
        // commit wait on PostgreSQL's one notification queue lock.
        let fresh = if <B::Conn as InboxRows>::ONE_STATEMENT {
            // A connection kept from the last batch when there is one: no
            // pool round trips per batch (see `driver::held`).
            let mut conn = match self.held() {
                Some(held) => held.take(self.pool()).await?,
                None => self.read().await?,
            };
            // Failed: the connection goes back to the pool (and its test).
            let fresh = conn.insert_inbox(events, now).await?;
            if let Some(held) = self.held() {
                held.keep(conn);
            }
            fresh
        } else {
            let mut tx = self.begin_write().await?;
            let fresh = tx.insert_inbox(events, now).await?;
            tx.commit().await.op("committing webhooks")?;
            fresh
        };
        if fresh.iter().any(|f| *f) {
            self.wakeups().bump_inbox();
        }
        Ok(fresh)
    }

    async fn inbox_claim(
        &self,
        now: Timestamp,
        limit: u32,
        lease_until: Timestamp,
    ) -> Result<Vec<InboxEvent>> {
        let mut conn = self.read().await?;
        conn.all(
            stmt(
                <B::Conn as Conn>::SQL.inbox_claim,
                "claiming webhooks to process",
            )
            .int(now.0)
            .int(i64::from(limit))
            .int(lease_until.0),
        )
        .await?
        .iter()
        .map(inbox_from_row)
        .collect()
    }

    async fn inbox_process(&self, ev: &InboxEvent, now: Timestamp) -> Result<InboxOutcome> {
        let mut tx = self.begin_write().await?;
        let (out, noticed) = inbox_process_in(&mut *tx, ev, now).await?;
        tx.commit().await.op("committing a webhook's effect")?;
        if noticed || matches!(out, InboxOutcome::Applied { .. }) {
            self.wakeups().bump_transitions();
        }
        Ok(out)
    }

    async fn inbox_process_batch(
        &self,
        evs: &[InboxEvent],
        now: Timestamp,
    ) -> Result<Vec<InboxOutcome>> {
        let mut tx = self.begin_write().await?;
        let (out, pending) = inbox_process_many_in(&mut *tx, evs, now, Fence::Check, None).await?;
        let noticed = pending.noticed;
        pending.write(&mut *tx, now, None).await?;
        tx.commit().await.op("committing webhooks' effects")?;
        if noticed
            || out
                .iter()
                .any(|o| matches!(o, InboxOutcome::Applied { .. }))
        {
            self.wakeups().bump_transitions();
        }
        Ok(out)
    }

    async fn inbox_take_and_process(
        &self,
        now: Timestamp,
        limit: u32,
        _lease_until: Timestamp,
    ) -> Result<Vec<(InboxEvent, InboxOutcome)>> {
        // Nothing due is the common case of a wake-up: a read, not a write
        // transaction. Unless webhooks were just stored here: then rows
        // are due (or taken by another node: an empty transaction).
        let due = if self.wakeups().webhooks_stored_since_last_look() {
            Some(())
        } else {
            let mut conn = self.read().await?;
            conn.opt(
                stmt(
                    "SELECT id FROM webhook_inbox WHERE state IN ('received', 'failed') \
                     AND next_attempt_at <= $1 LIMIT 1",
                    "looking for webhooks to apply",
                )
                .int(now.0),
            )
            .await?
            .map(|_| ())
        };
        if due.is_none() {
            return Ok(Vec::new());
        }
        let mut tx = self.begin_write().await?;
        // The due events and, in the same statement, the payments they
        // name by the provider's id, locked in id order as every writer
        // locks them (a payment a poller holds is waited for, briefly).
        let sql = format!(
            "WITH taken AS MATERIALIZED ( \
               SELECT {INBOX_COLUMNS}, next_attempt_at AS due FROM webhook_inbox \
               WHERE state IN ('received', 'failed') AND next_attempt_at <= $1 \
               ORDER BY next_attempt_at, id LIMIT $2{skip}), \
             locked AS MATERIALIZED ( \
               SELECT p.id AS pay_id, p.provider AS pay_provider, p.account AS pay_account, \
                 p.provider_ref AS pay_ref, p.status AS pay_status, p.kind AS pay_kind, \
                 p.amount AS pay_amount, p.currency AS pay_currency \
               FROM payments p WHERE EXISTS (SELECT 1 FROM taken t \
                 WHERE t.provider = p.provider AND t.account = p.account \
                 AND t.provider_ref = p.provider_ref AND t.observed_status IS NOT NULL) \
               ORDER BY p.id{lock}) \
             SELECT taken.*, locked.* FROM taken LEFT JOIN locked \
               ON locked.pay_provider = taken.provider AND locked.pay_account = taken.account \
               AND locked.pay_ref = taken.provider_ref \
             ORDER BY taken.due, taken.id",
            skip = <B::Conn as Conn>::SQL.skip_locked,
            lock = <B::Conn as Conn>::SQL.row_lock,
        );
        let rows = tx
            .all(
                stmt(&sql, "taking webhooks to apply")
                    .int(now.0)
                    .int(i64::from(limit)),
            )
            .await?;
        // One row per event: `(provider, account, provider_ref)` is unique
        // in `payments`, so the join matches at most one, and only in the
        // event's own scope.
        let mut evs: Vec<InboxEvent> = Vec::with_capacity(rows.len());
        let mut locked = Locked::new();
        for r in &rows {
            let ev = inbox_from_row(r)?;
            if let (Some(id), Some(r_ref)) = (
                r.opt_text("pay_id", "payments")?,
                r.opt_text("pay_ref", "payments")?,
            ) {
                locked.insert((ev.scope(), r_ref), (id, Current::from_row(r, "pay_")?));
            }
            evs.push(ev);
        }
        if evs.is_empty() {
            return Ok(Vec::new());
        }
        // Taken under lock in this transaction: nobody else can hold them.
        let (out, pending) =
            inbox_process_many_in(&mut *tx, &evs, now, Fence::Held, Some(&locked)).await?;
        // The status changes get their feed positions in this transaction
        // too, in the statement that writes the changes and records the
        // rows' outcomes (PostgreSQL): the event is in the feed at this
        // commit, instead of one sequencer round (a statement and a
        // commit) later. The `feed_state` lock this takes is held
        // only from here to the commit.
        let applied = pending.noticed
            || out
                .iter()
                .any(|o| matches!(o, InboxOutcome::Applied { .. }));
        let epoch = self.wakeups().feed_epoch();
        let number = applied.then_some((NUMBER_AT_MOST, self.wakeups().origin()));
        let numbered = pending.write(&mut *tx, now, number).await?;
        if let Err(e) = tx.commit().await.op("committing webhooks' effects") {
            if numbered.is_some() {
                // It may have committed: readers ask the database.
                self.wakeups().feed_grew_unknown();
            }
            return Err(e);
        }
        if let Some(numbered) = numbered {
            let n = crate::feed::sql::numbered_committed(self.wakeups(), numbered, epoch);
            if n >= u64::from(NUMBER_AT_MOST) {
                // More may wait unnumbered: the sequencer takes them.
                self.wakeups().bump_transitions();
            } else {
                self.wakeups().bump_work();
            }
        }
        Ok(evs.into_iter().zip(out).collect())
    }

    async fn inbox_fail(&self, ev: &InboxEvent, error: &str, retry_at: Timestamp) -> Result<()> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "UPDATE webhook_inbox SET state = 'failed', reason = $3, next_attempt_at = $4 \
                 WHERE id = $1 AND attempts = $2 AND state IN ('received', 'failed')",
                "recording a webhook failure",
            )
            .int(ev.id)
            .int4(i32::try_from(ev.attempts).unwrap_or(i32::MAX))
            .text(error)
            .int(retry_at.0),
        )
        .await?;
        Ok(())
    }

    async fn inbox_adopt_orphans(&self, now: Timestamp) -> Result<u64> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "UPDATE webhook_inbox SET state = 'received', next_attempt_at = $1 \
                 WHERE state = 'orphaned' AND EXISTS (SELECT 1 FROM payments p \
                   WHERE p.provider = webhook_inbox.provider \
                   AND p.account = webhook_inbox.account \
                   AND (p.provider_ref = webhook_inbox.provider_ref \
                        OR p.merchant_ref = webhook_inbox.merchant_ref))",
                "adopting orphaned webhooks",
            )
            .int(now.0),
        )
        .await
    }

    async fn inbox_unpark(&self, scope: &finality_core::Scope, now: Timestamp) -> Result<u64> {
        let mut conn = self.read().await?;
        let n = conn
            .run(
                stmt(
                    "UPDATE webhook_inbox SET state = 'received', next_attempt_at = $3, \
                     reason = NULL WHERE state = 'parked' AND provider = $1 AND account = $2",
                    "sending an account's parked webhooks to processing",
                )
                .text(scope.provider())
                .text(scope.account_key())
                .int(now.0),
            )
            .await?;
        if n > 0 {
            self.wakeups().bump_inbox();
        }
        Ok(n)
    }

    async fn inbox_parked_scopes(&self, limit: u32) -> Result<Vec<finality_core::Scope>> {
        let mut conn = self.read().await?;
        // The partial index `webhook_inbox_parked` holds exactly these
        // rows: nothing is read when nothing is parked.
        let rows = conn
            .all(
                stmt(
                    "SELECT DISTINCT provider, account FROM webhook_inbox \
                     WHERE state = 'parked' ORDER BY provider, account LIMIT $1",
                    "listing the accounts with parked webhooks",
                )
                .int(i64::from(limit)),
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(finality_core::Scope::new(
                    r.text("provider", "webhook_inbox")?,
                    r.account("account", "webhook_inbox")?.as_deref(),
                ))
            })
            .collect()
    }

    async fn inbox_get(&self, provider: &str, event_id: &str) -> Result<Option<InboxEvent>> {
        let sql = format!(
            "SELECT {INBOX_COLUMNS} FROM webhook_inbox WHERE provider = $1 AND event_id = $2 \
             ORDER BY id LIMIT 1"
        );
        let mut conn = self.read().await?;
        conn.opt(
            stmt(&sql, "reading a webhook")
                .text(provider)
                .text(event_id),
        )
        .await?
        .as_ref()
        .map(inbox_from_row)
        .transpose()
    }

    async fn inbox_next_due(&self) -> Result<Option<Timestamp>> {
        let mut conn = self.read().await?;
        let r = conn
            .opt(stmt(
                "SELECT MIN(next_attempt_at) AS due FROM webhook_inbox \
                 WHERE state IN ('received', 'failed')",
                "finding the next webhook to process",
            ))
            .await?;
        Ok(r.map(|r| r.opt_int("due", "webhook_inbox"))
            .transpose()?
            .flatten()
            .map(Timestamp))
    }

    async fn inbox_counts(&self) -> Result<Vec<(InboxState, i64)>> {
        let mut conn = self.read().await?;
        conn.all(stmt(
            "SELECT state, COUNT(*) AS n FROM webhook_inbox GROUP BY state ORDER BY state",
            "counting webhooks by state",
        ))
        .await?
        .iter()
        .map(|r| {
            Ok((
                r.parsed("state", "webhook_inbox")?,
                r.int("n", "webhook_inbox")?,
            ))
        })
        .collect()
    }
}
