//! Accounts of a provider added at run time (the admin API and `finality
//! accounts`): one row per (provider, account), holding only the names of
//! the environment variables and files its secrets are in. Every node reads
//! the whole (small) table every few seconds, so an account added on one
//! node is used by all without a restart.

mod memory;
pub(crate) mod sql;

use crate::error::Result;
use finality_core::Timestamp;
use serde_json::Value;

/// One stored account.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountRow {
    pub provider: String,
    /// The provider's own id for it (`acct_…`, a merchant account code, a
    /// `sub_mchid`, an app id).
    pub account: String,
    /// Its settings as the configuration file would give them (validated
    /// by whoever writes it; read again by every node).
    pub spec: Value,
    /// Set while the account is disabled: its payments are not polled and
    /// its webhooks are refused.
    pub disabled_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Who last changed it (the API key's name, `cli`).
    pub updated_by: String,
}

/// What [`Accounts::account_put`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountPut {
    Created,
    /// An existing account's settings replaced (and enabled again).
    Updated,
}

/// An account's state as its audit records show it (`before`, `after`):
/// its stored settings (secrets only by the names of their variables or
/// files) and whether it is disabled.
pub fn audit_state(spec: &Value, disabled: bool) -> Value {
    serde_json::json!({"spec": spec, "disabled": disabled})
}

/// The audit detail of an account change, the same from the API and the
/// CLI: what was asked, with the account before (`null`: not stored yet)
/// and after.
pub async fn change_detail<A: Accounts + ?Sized>(
    store: &A,
    provider: &str,
    account: &str,
    after: Value,
) -> Result<Value> {
    let before = store
        .accounts()
        .await?
        .into_iter()
        .find(|r| r.provider == provider && r.account == account)
        .map(|r| audit_state(&r.spec, r.disabled_at.is_some()));
    Ok(serde_json::json!({"provider": provider, "account": account,
        "before": before, "after": after}))
}

/// Accounts added at run time.
#[async_trait::async_trait]
pub trait Accounts: Send + Sync {
    /// Every stored account, disabled ones included, by provider then id.
    async fn accounts(&self) -> Result<Vec<AccountRow>>;

    /// Add an account, or replace an existing one's settings (enabling it).
    async fn account_put(
        &self,
        provider: &str,
        account: &str,
        spec: &Value,
        by: &str,
        now: Timestamp,
    ) -> Result<AccountPut>;

    /// Disable an account; `false` when there is none by that name.
    async fn account_disable(
        &self,
        provider: &str,
        account: &str,
        by: &str,
        now: Timestamp,
    ) -> Result<bool>;
}
