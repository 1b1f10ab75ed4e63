//! What the cluster's state gauges are computed from: a handful of counts
//! over the whole database, read on a timer by one node (never per scrape;
//! see `finality-server`'s `metrics`). Each is an index range read or a
//! count over the open part of a table, not over its history.

mod memory;
pub(crate) mod sql;

use crate::error::Result;
use finality_core::Timestamp;

/// The cluster's state at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterGauges {
    /// Open payments (pending, processing, in review) by provider and status.
    pub open: Vec<(String, String, i64)>,
    /// Payments in review by the reason they went there (free text).
    pub review: Vec<(Option<String>, i64)>,
    /// Poll jobs due now (a lease that expired counts as due).
    pub polls_due: i64,
    /// Of those, due for longer than the overdue threshold.
    pub polls_overdue: i64,
    /// When the oldest due poll fell due.
    pub oldest_due_at: Option<Timestamp>,
    /// Webhooks in the inbox waiting or in trouble, by state (received,
    /// failed, orphaned).
    pub inbox: Vec<(String, i64)>,
    /// Committed transitions not yet given a feed position.
    pub unsequenced: i64,
    /// Per event destination: events not yet delivered, and when the
    /// oldest of them occurred.
    pub destinations: Vec<(String, i64, Option<Timestamp>)>,
    /// Nodes whose heartbeat is newer than the cutoff.
    pub nodes: i64,
}

#[async_trait::async_trait]
pub trait Gauges: Send + Sync {
    /// Read the cluster's state at `now`: polls due since before
    /// `overdue_before` are overdue; nodes beating since `live_since` live.
    async fn cluster_gauges(
        &self,
        now: Timestamp,
        overdue_before: Timestamp,
        live_since: Timestamp,
    ) -> Result<ClusterGauges>;
}
