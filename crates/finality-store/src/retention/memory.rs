//! Retention in process memory, for simulations: the same contract as on SQL,
//! on `MemStore`'s maps.

use crate::error::Result;
use crate::memory::MemStore;
use finality_core::Timestamp;

/// Retention is not simulated: nothing in memory is old enough to archive,
/// and nothing was ever archived.
#[async_trait::async_trait]
impl crate::Lifecycle for MemStore {
    async fn life_page(
        &self,
        _kind: crate::retention::RowKind,
        _after: i64,
        _limit: u32,
    ) -> Result<Vec<crate::retention::LifeRow>> {
        Ok(Vec::new())
    }
    async fn life_remove(
        &self,
        _kind: crate::retention::RowKind,
        _rows: &[(i64, Option<String>)],
        _before: Timestamp,
        _now: Timestamp,
    ) -> Result<u64> {
        Ok(0)
    }
    async fn archivable_payments(
        &self,
        _before: Timestamp,
        _after: Option<(i64, String)>,
        _limit: u32,
    ) -> Result<Vec<crate::retention::PaymentBundle>> {
        Ok(Vec::new())
    }
    async fn archive_payments(
        &self,
        _payments: &[(&crate::retention::PaymentBundle, String)],
        _before: Timestamp,
        _now: Timestamp,
    ) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    async fn archived_payment(&self, _id: &str) -> Result<Option<crate::retention::Tombstone>> {
        Ok(None)
    }
    async fn archived_by_ref(
        &self,
        _provider: &str,
        _provider_ref: &str,
    ) -> Result<Option<crate::retention::Tombstone>> {
        Ok(None)
    }
    async fn restore_rows(
        &self,
        table: &crate::retention::TableSpec,
        _rows: &[serde_json::Value],
    ) -> Result<u64> {
        Err(crate::driver::corrupt(
            "archive",
            format!(
                "restoring {} into the in-memory store: it keeps no archive",
                table.name
            ),
        ))
    }
    async fn hold_day(&self, _kind: &str, _day: &str, _until: Timestamp) -> Result<()> {
        Ok(())
    }
    async fn held_days(&self, _kind: &str, _now: Timestamp) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    async fn reclaim_space(&self) -> Result<()> {
        Ok(())
    }
    async fn life_cursor(&self, _kind: crate::retention::RowKind) -> Result<i64> {
        Ok(0)
    }
    async fn life_cursor_move(
        &self,
        _kind: crate::retention::RowKind,
        _from: i64,
        _to: i64,
    ) -> Result<bool> {
        Ok(true)
    }
    async fn life_cursor_rewind(&self, _kind: crate::retention::RowKind, _to: i64) -> Result<()> {
        Ok(())
    }
}

/// Nothing is partitioned in memory.
impl crate::Partitions for MemStore {}
