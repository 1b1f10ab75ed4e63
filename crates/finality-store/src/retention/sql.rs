//! The retention role on SQL: each method is in `delete` or `archive`.

use super::{archive, delete};
use crate::retention::{LifeRow, PaymentBundle, RowKind, TableSpec, Tombstone};
use crate::Lifecycle;

use crate::driver::Backend;
use crate::error::Result;
use finality_core::Timestamp;
use serde_json::Value;

#[async_trait::async_trait]
impl<B: Backend> Lifecycle for B {
    async fn life_page(&self, kind: RowKind, after: i64, limit: u32) -> Result<Vec<LifeRow>> {
        delete::life_page(self, kind, after, limit).await
    }

    async fn life_remove(
        &self,
        kind: RowKind,
        rows: &[(i64, Option<String>)],
        before: Timestamp,
        now: Timestamp,
    ) -> Result<u64> {
        delete::life_remove(self, kind, rows, before, now).await
    }

    async fn archivable_payments(
        &self,
        before: Timestamp,
        after: Option<(i64, String)>,
        limit: u32,
    ) -> Result<Vec<PaymentBundle>> {
        archive::archivable_payments(self, before, after, limit).await
    }

    async fn archive_payments(
        &self,
        payments: &[(&PaymentBundle, String)],
        before: Timestamp,
        now: Timestamp,
    ) -> Result<Vec<String>> {
        archive::archive_payments(self, payments, before, now).await
    }

    async fn archived_payment(&self, id: &str) -> Result<Option<Tombstone>> {
        archive::archived_payment(self, id).await
    }

    async fn archived_by_ref(
        &self,
        scope: &finality_core::Scope,
        provider_ref: &str,
    ) -> Result<Option<Tombstone>> {
        archive::archived_by_ref(self, scope, provider_ref).await
    }

    async fn restore_rows(&self, table: &TableSpec, rows: &[Value]) -> Result<u64> {
        archive::restore_rows(self, table, rows).await
    }

    async fn hold_day(&self, kind: &str, day: &str, until: Timestamp) -> Result<()> {
        delete::hold_day(self, kind, day, until).await
    }

    async fn held_days(&self, kind: &str, now: Timestamp) -> Result<Vec<String>> {
        delete::held_days(self, kind, now).await
    }

    async fn life_cursor(&self, kind: RowKind) -> Result<i64> {
        delete::life_cursor(self, kind).await
    }

    async fn life_cursor_move(&self, kind: RowKind, from: i64, to: i64) -> Result<bool> {
        delete::life_cursor_move(self, kind, from, to).await
    }

    async fn life_cursor_rewind(&self, kind: RowKind, to: i64) -> Result<()> {
        delete::life_cursor_rewind(self, kind, to).await
    }

    async fn reclaim_space(&self) -> Result<()> {
        delete::reclaim_space(self).await
    }
}
