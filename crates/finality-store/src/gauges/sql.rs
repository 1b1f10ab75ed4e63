//! The cluster's gauges, read in one go on SQL.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::Result;
use crate::ClusterGauges;
use crate::Gauges;
use finality_core::Timestamp;

#[async_trait::async_trait]
impl<B: Backend> Gauges for B {
    async fn cluster_gauges(
        &self,
        now: Timestamp,
        overdue_before: Timestamp,
        live_since: Timestamp,
    ) -> Result<ClusterGauges> {
        let mut g = ClusterGauges {
            review: crate::Review::review_counts(self).await?,
            ..ClusterGauges::default()
        };
        let mut conn = self.read().await?;
        for r in conn
            .all(stmt(
                "SELECT provider, status, COUNT(*) AS n FROM payments \
                 WHERE status IN ('pending', 'processing', 'needs_review') \
                 GROUP BY provider, status ORDER BY provider, status",
                "counting open payments",
            ))
            .await?
        {
            g.open.push((
                r.text("provider", "payments")?,
                r.text("status", "payments")?,
                r.int("n", "payments")?,
            ));
        }
        if let Some(r) = conn
            .opt(
                stmt(
                    "SELECT COUNT(*) AS due, \
                     COALESCE(SUM(CASE WHEN next_poll_at < $2 THEN 1 ELSE 0 END), 0) AS overdue, \
                     MIN(next_poll_at) AS oldest FROM poll_jobs \
                     WHERE next_poll_at IS NOT NULL AND next_poll_at <= $1",
                    "counting due polls",
                )
                .int(now.0)
                .int(overdue_before.0),
            )
            .await?
        {
            g.polls_due = r.int("due", "poll_jobs")?;
            g.polls_overdue = r.int("overdue", "poll_jobs")?;
            g.oldest_due_at = r.opt_int("oldest", "poll_jobs")?.map(Timestamp);
        }
        // Applied and ignored rows are history (most of the table, raw
        // bodies included): each count's predicate is, word for word, that
        // of a partial index (`webhook_inbox_due`, `webhook_inbox_trouble`),
        // so neither database reads the history.
        let mut inbox: std::collections::BTreeMap<String, i64> = Default::default();
        for (sql, op) in [
            (
                "SELECT state, COUNT(*) AS n FROM webhook_inbox \
                 WHERE state IN ('received', 'failed') GROUP BY state",
                "counting webhooks waiting to be applied",
            ),
            (
                "SELECT state, COUNT(*) AS n FROM webhook_inbox \
                 WHERE state IN ('failed', 'orphaned') GROUP BY state",
                "counting failed and orphaned webhooks",
            ),
        ] {
            for r in conn.all(stmt(sql, op)).await? {
                inbox.insert(
                    r.text("state", "webhook_inbox")?,
                    r.int("n", "webhook_inbox")?,
                );
            }
        }
        g.inbox = inbox.into_iter().collect();
        if let Some(r) = conn
            .opt(stmt(
                "SELECT COUNT(*) AS n FROM outbox WHERE feed_seq IS NULL",
                "counting unsequenced events",
            ))
            .await?
        {
            g.unsequenced = r.int("n", "outbox")?;
        }
        for r in conn
            .all(stmt(
                "SELECT d.name, f.last_seq - d.delivered_seq AS behind, o.occurred_at \
                 FROM event_destinations d CROSS JOIN feed_state f \
                 LEFT JOIN outbox o ON o.feed_seq = d.delivered_seq + 1 ORDER BY d.name",
                "measuring event destinations' lag",
            ))
            .await?
        {
            g.destinations.push((
                r.text("name", "event_destinations")?,
                r.int("behind", "event_destinations")?.max(0),
                r.opt_int("occurred_at", "outbox")?.map(Timestamp),
            ));
        }
        if let Some(r) = conn
            .opt(
                stmt(
                    "SELECT COUNT(*) AS n FROM nodes WHERE heartbeat_at >= $1",
                    "counting live nodes",
                )
                .int(live_since.0),
            )
            .await?
        {
            g.nodes = r.int("n", "nodes")?;
        }
        Ok(g)
    }
}
