//! A PostgreSQL streaming replica for the API's reads, and how far it is
//! behind its primary.
//!
//! The replica is a read-only [`PgStore`]: it never migrates, never LISTENs
//! (a standby refuses LISTEN; its long-polling readers are woken by the
//! primary's announcements and a short look), and connects lazily, so a
//! replica that is down when a node starts does not stop the node: reads
//! simply stay on the primary. How far behind it is, is measured in WAL
//! positions, which need no clock agreement between the two servers: the
//! caller samples the primary's position over time and asks which of those
//! the replica has replayed.

use super::postgres::{pool_options, sets_statement_timeout, PgStore};
use crate::error::{DbContext, Result, StoreError};
use sqlx::postgres::{PgConnectOptions, PgPool};
use std::str::FromStr;
use std::time::Duration;

/// The replica's read pool and a small pool on the primary to sample its
/// WAL position.
#[derive(Debug, Clone)]
pub struct ReplicaLink {
    primary: PgPool,
    replica: PgPool,
}

/// What the replica said about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replayed {
    /// A standby that has replayed the WAL up to this position.
    Upto(u64),
    /// Not in recovery: a primary (or a promoted standby), which must not
    /// be read as a replica of this one.
    NotAStandby,
}

fn parse_url(url: &str, which: &str) -> Result<PgConnectOptions> {
    PgConnectOptions::from_str(url).map_err(|e| StoreError::Url {
        url: format!("{which}: postgres://…"),
        detail: e.to_string(),
    })
}

/// `16/B374D848` as one number (high and low 32 bits).
pub fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?)
}

impl ReplicaLink {
    /// The replica at `read_url` (lazily: nothing is connected until the
    /// first use) and two connections to the primary at `primary_url`,
    /// both with statements bounded by `statement_timeout` (zero: none).
    /// Only PostgreSQL streams to replicas finality can read: another
    /// scheme is refused naming the setting.
    pub fn connect(
        primary_url: &str,
        read_url: &str,
        max_connections: u32,
        statement_timeout: Duration,
    ) -> Result<(PgStore, ReplicaLink)> {
        let is_pg = |u: &str| u.starts_with("postgres:") || u.starts_with("postgresql:");
        if !is_pg(read_url) || !is_pg(primary_url) {
            let scheme = read_url.split(':').next().unwrap_or_default();
            return Err(StoreError::Url {
                url: format!("read_url {scheme}:…"),
                detail: "a read replica is supported on PostgreSQL only: `url` and `read_url` must both be postgres://…".into(),
            });
        }
        // The store's own pool settings (a statement timeout in the URL's
        // options wins), waiting at most 2 s for a connection: a replica
        // that stops answering sends reads to the primary rather than
        // holding them.
        let pool = |url: &str, which: &str, max: u32| -> Result<PgPool> {
            let opts = parse_url(url, which)?;
            let timeout = (!statement_timeout.is_zero() && !sets_statement_timeout(&opts))
                .then_some(statement_timeout);
            Ok(pool_options(max.max(1), timeout)
                .acquire_timeout(Duration::from_secs(2))
                .connect_lazy_with(opts))
        };
        let replica = pool(read_url, "read_url", max_connections)?;
        let primary = pool(primary_url, "url", 2)?;
        Ok((
            PgStore::from_pool(replica.clone()),
            ReplicaLink { primary, replica },
        ))
    }

    /// The primary's current WAL write position.
    pub async fn primary_position(&self) -> Result<u64> {
        let text: String = sqlx::query_scalar("SELECT pg_current_wal_lsn()::text")
            .fetch_one(&self.primary)
            .await
            .op("reading the primary's WAL position")?;
        parse_lsn(&text).ok_or_else(|| StoreError::Corrupt {
            table: "pg_current_wal_lsn()",
            detail: format!("WAL position `{text}`"),
        })
    }

    /// How far the replica has replayed.
    pub async fn replayed(&self) -> Result<Replayed> {
        let (standby, text): (bool, Option<String>) =
            sqlx::query_as("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text")
                .fetch_one(&self.replica)
                .await
                .op("reading the replica's replayed WAL position")?;
        match (standby, text.as_deref().and_then(parse_lsn)) {
            (true, Some(lsn)) => Ok(Replayed::Upto(lsn)),
            // A standby that has replayed nothing yet is as far behind as
            // can be.
            (true, None) => Ok(Replayed::Upto(0)),
            (false, _) => Ok(Replayed::NotAStandby),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_compare_as_numbers() {
        assert_eq!(parse_lsn("0/0"), Some(0));
        assert_eq!(parse_lsn("16/B374D848"), Some((0x16 << 32) | 0xB374_D848));
        assert!(parse_lsn("1/FFFFFFFF") < parse_lsn("2/0"));
        assert_eq!(parse_lsn("nope"), None);
    }
}
