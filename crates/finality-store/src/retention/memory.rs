//! Retention in process memory: simulations keep no archive and run no
//! retention, so what would read, archive, delete or hold rows is refused
//! ([`StoreError::NotKept`]) rather than answered with an empty success;
//! what is truly so is answered (nothing was ever archived, no day is
//! held, memory needs no space given back). Nothing is partitioned.

use crate::error::{Result, StoreError};
use crate::memory::MemStore;
use crate::retention::{LifeRow, PaymentBundle, RowKind, TableSpec, Tombstone};
use finality_core::Timestamp;

fn not_kept<T>(op: &'static str) -> Result<T> {
    Err(StoreError::NotKept {
        what: "retention",
        op,
    })
}

#[async_trait::async_trait]
impl crate::Lifecycle for MemStore {
    async fn life_page(&self, _kind: RowKind, _after: i64, _limit: u32) -> Result<Vec<LifeRow>> {
        not_kept("reading rows for retention")
    }
    async fn life_remove(
        &self,
        _kind: RowKind,
        _rows: &[(i64, Option<String>)],
        _before: Timestamp,
        _now: Timestamp,
    ) -> Result<u64> {
        not_kept("deleting rows")
    }
    async fn archivable_payments(
        &self,
        _before: Timestamp,
        _after: Option<(i64, String)>,
        _limit: u32,
    ) -> Result<Vec<PaymentBundle>> {
        not_kept("reading payments to archive")
    }
    async fn archive_payments(
        &self,
        _payments: &[(&PaymentBundle, String)],
        _before: Timestamp,
        _now: Timestamp,
    ) -> Result<Vec<String>> {
        not_kept("archiving payments")
    }
    /// Nothing was ever archived here.
    async fn archived_payment(&self, _id: &str) -> Result<Option<Tombstone>> {
        Ok(None)
    }
    /// Nothing was ever archived here.
    async fn archived_by_ref(
        &self,
        _scope: &finality_core::Scope,
        _provider_ref: &str,
    ) -> Result<Option<Tombstone>> {
        Ok(None)
    }
    async fn restore_rows(&self, _table: &TableSpec, _rows: &[serde_json::Value]) -> Result<u64> {
        not_kept("restoring archived rows")
    }
    async fn hold_day(&self, _kind: &str, _day: &str, _until: Timestamp) -> Result<()> {
        not_kept("holding a day")
    }
    /// No day can be held here.
    async fn held_days(&self, _kind: &str, _now: Timestamp) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    /// Memory freed is given back by the allocator: nothing to do.
    async fn reclaim_space(&self) -> Result<()> {
        Ok(())
    }
    async fn life_cursor(&self, _kind: RowKind) -> Result<i64> {
        not_kept("reading a retention cursor")
    }
    async fn life_cursor_move(&self, _kind: RowKind, _from: i64, _to: i64) -> Result<bool> {
        not_kept("moving a retention cursor")
    }
    async fn life_cursor_rewind(&self, _kind: RowKind, _to: i64) -> Result<()> {
        not_kept("rewinding a retention cursor")
    }
}

/// Nothing is partitioned in memory (as on SQLite): the trait's answers
/// for an unpartitioned store are the true ones here.
impl crate::Partitions for MemStore {}
