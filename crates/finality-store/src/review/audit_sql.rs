//! Writing one audit record inside the caller's transaction: shared by
//! every audited change (resolutions, polls asked for, flags closed).

use crate::driver::{stmt, Conn, Fields};
use crate::error::Result;
use crate::review::NewAudit;

pub(crate) async fn insert_audit<C: Conn>(
    conn: &mut C,
    a: &NewAudit,
    outcome: &str,
) -> Result<i64> {
    let row = conn
        .opt(
            stmt(
                "INSERT INTO audit_log (at, actor, role, action, payment_id, detail, outcome, \
                 remote_addr) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                "recording a manual action",
            )
            .int(a.at.0)
            .text(&a.actor)
            .text(&a.role)
            .text(&a.action)
            .opt_text(a.payment_id.as_deref())
            .json(&a.detail)
            .text(outcome)
            .opt_text(a.remote_addr.as_deref()),
        )
        .await?;
    match row {
        Some(r) => r.int("id", "audit_log"),
        None => Ok(0),
    }
}
