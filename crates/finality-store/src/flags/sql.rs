//! Flags on SQL.

use crate::driver::Backend;
use crate::driver::{stmt, Conn, Fields};
use crate::error::{DbContext, Result};
use crate::feed::notice::{notice_in, Notice};
use crate::flags::{Flag, FlagResolve, Flags, NewFlag};
use crate::model::InboxEvent;
use crate::review::NewAudit;
use finality_core::{Source, Timestamp};

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

/// Raise `f` inside the caller's transaction, with its `payment.flagged`
/// event.
pub(crate) async fn raise_in<C: Conn>(conn: &mut C, f: &NewFlag, now: Timestamp) -> Result<()> {
    let row = conn
        .opt(
            stmt(
                "INSERT INTO payment_flags (payment_id, reason, event_id, provider_status, \
                 piece_key, opened_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
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
    let id = match row {
        Some(r) => r.int("id", "payment_flags")?,
        None => {
            return Err(crate::driver::corrupt(
                "payment_flags",
                "no id for a new flag",
            ))
        }
    };
    let flag = Flag {
        id,
        payment_id: f.payment_id.clone(),
        reason: f.reason.clone(),
        event_id: Some(f.event_id.clone()),
        provider_status: f.provider_status.clone(),
        piece_key: f.piece_key.clone(),
        opened_at: now,
        closed_at: None,
        closed_by: None,
        resolution: None,
    };
    notice_in(
        conn,
        &f.payment_id,
        Notice::Flagged(&flag),
        Source::Webhook,
        now,
    )
    .await
}

/// Close the open flags of `payment_id` about the pieces `ev` reports
/// succeeded, inside the caller's transaction, each with its
/// `payment.flag_resolved` event; whether any was.
pub(crate) async fn settle_in<C: Conn>(
    conn: &mut C,
    payment_id: &str,
    ev: &InboxEvent,
    now: Timestamp,
) -> Result<bool> {
    let keys = super::settled_keys(ev);
    if keys.is_empty() {
        return Ok(false);
    }
    let resolution = super::settled_by(ev);
    let open: Vec<Flag> = flags_of_in(conn, payment_id)
        .await?
        .into_iter()
        .filter(|f| f.closed_at.is_none() && f.piece_key.as_ref().is_some_and(|k| keys.contains(k)))
        .collect();
    for mut f in open.iter().cloned() {
        conn.run(
            stmt(
                "UPDATE payment_flags SET closed_at = $2, closed_by = 'provider', resolution = $3 \
                 WHERE id = $1",
                "closing a flag the provider settled",
            )
            .int(f.id)
            .int(now.0)
            .text(&resolution),
        )
        .await?;
        f.closed_at = Some(now);
        f.closed_by = Some("provider".into());
        f.resolution = Some(resolution.clone());
        notice_in(
            conn,
            payment_id,
            Notice::FlagResolved(&f),
            Source::Webhook,
            now,
        )
        .await?;
    }
    Ok(!open.is_empty())
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
                notice_in(
                    &mut *tx,
                    payment_id,
                    Notice::FlagResolved(&f),
                    Source::Manual,
                    now,
                )
                .await?;
                FlagResolve::Resolved(f)
            }
        };
        crate::review::audit_sql::insert_audit(&mut *tx, audit, out.outcome()).await?;
        tx.commit().await.op("committing a flag's resolution")?;
        if matches!(out, FlagResolve::Resolved(_)) {
            // Its event waits for the sequencer.
            self.wakeups().bump_transitions();
        }
        Ok(out)
    }
}
