//! Run-time accounts in process memory, for simulations: the same contract
//! as on SQL, on `MemStore`'s maps.

use super::{AccountPut, AccountRow, Accounts};
use crate::error::Result;
use crate::memory::MemStore;
use finality_core::Timestamp;
use serde_json::Value;

#[async_trait::async_trait]
impl Accounts for MemStore {
    async fn accounts(&self) -> Result<Vec<AccountRow>> {
        let s = self.state.lock().await;
        // A BTreeMap keyed by (provider, account): already in order.
        Ok(s.accounts.values().cloned().collect())
    }

    async fn account_put(
        &self,
        provider: &str,
        account: &str,
        spec: &Value,
        by: &str,
        now: Timestamp,
    ) -> Result<AccountPut> {
        let mut s = self.state.lock().await;
        let key = (provider.to_string(), account.to_string());
        if let Some(row) = s.accounts.get_mut(&key) {
            row.spec = spec.clone();
            row.disabled_at = None;
            row.updated_at = now;
            row.updated_by = by.to_string();
            return Ok(AccountPut::Updated);
        }
        s.accounts.insert(
            key,
            AccountRow {
                provider: provider.to_string(),
                account: account.to_string(),
                spec: spec.clone(),
                disabled_at: None,
                created_at: now,
                updated_at: now,
                updated_by: by.to_string(),
            },
        );
        Ok(AccountPut::Created)
    }

    async fn account_disable(
        &self,
        provider: &str,
        account: &str,
        by: &str,
        now: Timestamp,
    ) -> Result<bool> {
        let mut s = self.state.lock().await;
        match s
            .accounts
            .get_mut(&(provider.to_string(), account.to_string()))
        {
            Some(row) => {
                row.disabled_at.get_or_insert(now);
                row.updated_at = now;
                row.updated_by = by.to_string();
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
