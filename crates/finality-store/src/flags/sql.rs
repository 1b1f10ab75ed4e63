//! Flags on SQL.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::flags::{Flag, FlagResolve, Flags, NewFlag};
use crate::model::InboxEvent;
use crate::review::NewAudit;
use finality_core::Timestamp;

const COLUMNS: &str = "id, payment_id, reason, event_id, provider_status, piece_key, opened_at, \
     closed_at, closed_by, resolution";

fn flag_from_row(r: &impl Fields) -> Result<Flag> {
    let t = "payment_flags";
    Ok(Flag {
        id: r.int("id", t)?,
        payment_id: r.text("payment_id", t)?,
        reason: r.text("reason", t)?,
        event_id: r.opt_text("event_id", t)?,
        provider_status: r.opt_text("provider_status", t)?,
        piece_key: r.opt_text("piece_key", t)?,
        opened_at: Timestamp(r.int("opened_at", t)?),
        closed_at: r.opt_int("closed_at", t)?.map(Timestamp),
        closed_by: r.opt_text("closed_by", t)?,
        resolution: r.opt_text("resolution", t)?,
    })
}

/// Raise `f` inside the caller's transaction.
pub(crate) async fn raise_in<C: Conn>(conn: &mut C, f: &NewFlag, now: Timestamp) -> Result<()> {
    conn.run(
        stmt(
            "INSERT INTO payment_flags (payment_id, reason, event_id, provider_status, \
             piece_key, opened_at) VALUES ($1, $2, $3, $4, $5, $6)",
            "raising a flag",
        )
        .text(&f.payment_id)
        .text(&f.reason)
        .text(&f.event_id)
        .opt_text(f.provider_status.as_deref())
        .opt_text(f.piece_key.as_deref())
        .int(now.0),
    )
    .await?;
    Ok(())
}

/// Close the open flags of `payment_id` about the pieces `ev` reports
/// succeeded, inside the caller's transaction.
pub(crate) async fn settle_in<C: Conn>(
    conn: &mut C,
    payment_id: &str,
    ev: &InboxEvent,
    now: Timestamp,
) -> Result<()> {
    let resolution = super::settled_by(ev);
    for key in super::settled_keys(ev) {
        conn.run(
            stmt(
                "UPDATE payment_flags SET closed_at = $3, closed_by = 'provider', resolution = $4 \
                 WHERE payment_id = $1 AND piece_key = $2 AND closed_at IS NULL",
                "closing flags the provider settled",
            )
            .text(payment_id)
            .text(&key)
            .int(now.0)
            .text(&resolution),
        )
        .await?;
    }
    Ok(())
}

pub(crate) async fn flags_of_in<C: Conn>(conn: &mut C, payment_id: &str) -> Result<Vec<Flag>> {
    let sql = format!("SELECT {COLUMNS} FROM payment_flags WHERE payment_id = $1 ORDER BY id");
    conn.all(stmt(&sql, "reading a payment's flags").text(payment_id))
        .await?
        .iter()
        .map(flag_from_row)
        .collect()
}

#[async_trait::async_trait]
impl<B: Backend> Flags for B {
    async fn flags_of(&self, payment_id: &str) -> Result<Vec<Flag>> {
        let mut conn = self.read().await?;
        flags_of_in(&mut *conn, payment_id).await
    }

    async fn flags_open(&self, after: i64, limit: u32) -> Result<Vec<Flag>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM payment_flags WHERE closed_at IS NULL AND id > $1 \
             ORDER BY id LIMIT $2"
        );
        let mut conn = self.read().await?;
        conn.all(
            stmt(&sql, "listing open flags")
                .int(after)
                .int(i64::from(limit)),
        )
        .await?
        .iter()
        .map(flag_from_row)
        .collect()
    }

    async fn flag_resolve(
        &self,
        payment_id: &str,
        id: i64,
        resolution: &str,
        audit: &NewAudit,
        now: Timestamp,
    ) -> Result<FlagResolve> {
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "SELECT {COLUMNS} FROM payment_flags WHERE id = $1 AND payment_id = $2{}",
            B::Conn::SQL.row_lock
        );
        let found = tx
            .opt(stmt(&sql, "locking a flag").int(id).text(payment_id))
            .await?
            .as_ref()
            .map(flag_from_row)
            .transpose()?;
        let out = match found {
            None => FlagResolve::NotFound,
            Some(f) if f.closed_at.is_some() => FlagResolve::AlreadyClosed(f),
            Some(mut f) => {
                tx.run(
                    stmt(
                        "UPDATE payment_flags SET closed_at = $2, closed_by = $3, \
                         resolution = $4 WHERE id = $1",
                        "resolving a flag",
                    )
                    .int(id)
                    .int(now.0)
                    .text(&audit.actor)
                    .text(resolution),
                )
                .await?;
                f.closed_at = Some(now);
                f.closed_by = Some(audit.actor.clone());
                f.resolution = Some(resolution.to_string());
                FlagResolve::Resolved(f)
            }
        };
        crate::review::audit_sql::insert_audit(&mut *tx, audit, out.outcome()).await?;
        tx.commit().await.op("committing a flag's resolution")?;
        Ok(out)
    }
}
