//! Run-time accounts on SQL.

use super::{AccountPut, AccountRow, Accounts};
use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use finality_core::Timestamp;
use serde_json::Value;

const TABLE: &str = "provider_accounts";

#[async_trait::async_trait]
impl<B: Backend> Accounts for B {
    async fn accounts(&self) -> Result<Vec<AccountRow>> {
        let mut conn = self.read().await?;
        conn.all(stmt(
            "SELECT provider, account, spec, disabled_at, created_at, updated_at, updated_by \
             FROM provider_accounts ORDER BY provider, account",
            "reading accounts",
        ))
        .await?
        .iter()
        .map(|r| {
            Ok(AccountRow {
                provider: r.text("provider", TABLE)?,
                account: r.text("account", TABLE)?,
                spec: r.json("spec", TABLE)?,
                disabled_at: r.opt_int("disabled_at", TABLE)?.map(Timestamp),
                created_at: Timestamp(r.int("created_at", TABLE)?),
                updated_at: Timestamp(r.int("updated_at", TABLE)?),
                updated_by: r.text("updated_by", TABLE)?,
            })
        })
        .collect()
    }

    async fn account_put(
        &self,
        provider: &str,
        account: &str,
        spec: &Value,
        by: &str,
        now: Timestamp,
    ) -> Result<AccountPut> {
        let mut tx = self.begin_write().await?;
        let conn: &mut B::Conn = &mut tx;
        let updated = conn
            .run(
                stmt(
                    "UPDATE provider_accounts SET spec = $3, disabled_at = NULL, updated_at = $4, \
                     updated_by = $5 WHERE provider = $1 AND account = $2",
                    "updating an account",
                )
                .text(provider)
                .text(account)
                .json(spec)
                .int(now.0)
                .text(by),
            )
            .await?;
        if updated == 0 {
            conn.run(
                stmt(
                    "INSERT INTO provider_accounts (provider, account, spec, disabled_at, \
                     created_at, updated_at, updated_by) VALUES ($1, $2, $3, NULL, $4, $4, $5)",
                    "adding an account",
                )
                .text(provider)
                .text(account)
                .json(spec)
                .int(now.0)
                .text(by),
            )
            .await?;
        }
        tx.commit().await.op("committing an account")?;
        Ok(if updated == 0 {
            AccountPut::Created
        } else {
            AccountPut::Updated
        })
    }

    async fn account_disable(
        &self,
        provider: &str,
        account: &str,
        by: &str,
        now: Timestamp,
    ) -> Result<bool> {
        let mut conn = self.read().await?;
        let n = conn
            .run(
                stmt(
                    "UPDATE provider_accounts SET disabled_at = COALESCE(disabled_at, $3), \
                     updated_at = $3, updated_by = $4 WHERE provider = $1 AND account = $2",
                    "disabling an account",
                )
                .text(provider)
                .text(account)
                .int(now.0)
                .text(by),
            )
            .await?;
        Ok(n == 1)
    }
}
