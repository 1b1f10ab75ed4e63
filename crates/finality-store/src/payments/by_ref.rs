//! Payments found by a reference, always within one [`Scope`].
//!
//! This module holds every statement of the SQL store that finds a payment
//! (or an archived one) by `provider_ref` or `merchant_ref`, and each takes
//! a `Scope`: a fact of one account cannot find another account's payment,
//! whatever references they share. `tests/layout.rs` (testkit) fails the
//! build's tests if such a statement appears anywhere else in the store.

use crate::driver::{placeholders, stmt, Conn, Fields};
use crate::error::Result;
use finality_core::Scope;

/// The payment of `scope` that tracks `provider_ref`.
pub(crate) async fn by_provider_ref<C: Conn>(
    conn: &mut C,
    scope: &Scope,
    provider_ref: &str,
) -> Result<Option<String>> {
    conn.opt(
        stmt(
            "SELECT id FROM payments WHERE provider = $1 AND account = $2 AND provider_ref = $3",
            "finding a payment by provider reference",
        )
        .text(scope.provider())
        .text(scope.account_key())
        .text(provider_ref),
    )
    .await?
    .map(|r| r.text("id", "payments"))
    .transpose()
}

/// The payments of `scope` that track these provider references:
/// `(provider_ref, id)` for each found.
pub(crate) async fn by_provider_refs<C: Conn>(
    conn: &mut C,
    scope: &Scope,
    refs: &[&str],
) -> Result<Vec<(String, String)>> {
    let sql = format!(
        "SELECT id, provider_ref FROM payments WHERE provider = $1 AND account = $2 \
         AND provider_ref IN ({})",
        placeholders(3, refs.len())
    );
    let mut q = stmt(&sql, "finding payments by provider reference")
        .text(scope.provider())
        .text(scope.account_key());
    for r in refs {
        q = q.text(r);
    }
    conn.all(q)
        .await?
        .iter()
        .map(|row| {
            Ok((
                row.text("provider_ref", "payments")?,
                row.text("id", "payments")?,
            ))
        })
        .collect()
}

/// The payment of `scope` registered with `merchant_ref`: its id and the
/// provider's id it has, if any.
pub(crate) async fn by_merchant_ref<C: Conn>(
    conn: &mut C,
    scope: &Scope,
    merchant_ref: &str,
) -> Result<Option<(String, Option<String>)>> {
    let row = conn
        .opt(
            stmt(
                "SELECT id, provider_ref FROM payments WHERE provider = $1 AND account = $2 \
                 AND merchant_ref = $3",
                "finding a payment by merchant reference",
            )
            .text(scope.provider())
            .text(scope.account_key())
            .text(merchant_ref),
        )
        .await?;
    row.map(|r| {
        Ok((
            r.text("id", "payments")?,
            r.opt_text("provider_ref", "payments")?,
        ))
    })
    .transpose()
}

/// The payment of `scope` holding either reference (a registration that
/// lost to it): its id and provider's id.
pub(crate) async fn holder<C: Conn>(
    conn: &mut C,
    scope: &Scope,
    provider_ref: Option<&str>,
    merchant_ref: Option<&str>,
) -> Result<Option<(String, Option<String>)>> {
    let row = conn
        .opt(
            stmt(
                "SELECT id, provider_ref FROM payments WHERE provider = $1 AND account = $2 \
                 AND (provider_ref = $3 OR merchant_ref = $4)",
                "finding the payment that holds a reference",
            )
            .text(scope.provider())
            .text(scope.account_key())
            .opt_text(provider_ref)
            .opt_text(merchant_ref),
        )
        .await?;
    row.map(|r| {
        Ok((
            r.text("id", "payments")?,
            r.opt_text("provider_ref", "payments")?,
        ))
    })
    .transpose()
}

/// The payment of `scope` whose provider's id, else merchant reference,
/// is `reference`.
pub(crate) async fn by_either_ref<C: Conn>(
    conn: &mut C,
    scope: &Scope,
    reference: &str,
) -> Result<Option<String>> {
    conn.opt(
        stmt(
            "SELECT id FROM payments WHERE provider = $1 AND account = $2 AND provider_ref = $3 \
             UNION ALL SELECT id FROM payments WHERE provider = $1 AND account = $2 \
             AND merchant_ref = $3",
            "finding a payment by reference",
        )
        .text(scope.provider())
        .text(scope.account_key())
        .text(reference),
    )
    .await?
    .map(|r| r.text("id", "payments"))
    .transpose()
}

/// The newest archived payment of `scope` with either reference: its id
/// and the archive file it went to.
pub(crate) async fn archived<C: Conn>(
    conn: &mut C,
    scope: &Scope,
    provider_ref: Option<&str>,
    merchant_ref: Option<&str>,
) -> Result<Option<(String, String)>> {
    let row = conn
        .opt(
            stmt(
                "SELECT id, archive FROM archived_payments WHERE provider = $1 AND account = $2 \
                 AND (provider_ref = $3 OR merchant_ref = $4) ORDER BY archived_at DESC LIMIT 1",
                "looking for an archived payment",
            )
            .text(scope.provider())
            .text(scope.account_key())
            .opt_text(provider_ref)
            .opt_text(merchant_ref),
        )
        .await?;
    row.map(|r| {
        Ok((
            r.text("id", "archived_payments")?,
            r.text("archive", "archived_payments")?,
        ))
    })
    .transpose()
}

/// The newest tombstone of `scope`'s archived payment with this provider
/// reference, as a row for `retention::archive::tombstone`.
pub(crate) async fn tombstone_row<C: Conn>(
    conn: &mut C,
    scope: &Scope,
    provider_ref: &str,
) -> Result<Option<C::Row>> {
    conn.opt(
        stmt(
            "SELECT id, provider, provider_ref, status, finalized_at, archived_at, archive \
             FROM archived_payments WHERE provider = $1 AND account = $2 AND provider_ref = $3 \
             ORDER BY archived_at DESC LIMIT 1",
            "reading an archived payment by reference",
        )
        .text(scope.provider())
        .text(scope.account_key())
        .text(provider_ref),
    )
    .await
}

/// The payments (`kind = 'payment'`) of `scope` whose provider or merchant
/// reference is one of `refs`, as rows of `columns`: a report page's
/// ledger, two index lookups in one statement (`UNION` drops a payment
/// found both ways).
pub(crate) async fn payment_rows<C: Conn>(
    conn: &mut C,
    scope: &Scope,
    columns: &str,
    refs: &[&str],
) -> Result<Vec<C::Row>> {
    let list = placeholders(3, refs.len());
    let sql = format!(
        "SELECT {columns} FROM payments WHERE provider = $1 AND account = $2 \
         AND kind = 'payment' AND provider_ref IN ({list}) \
         UNION SELECT {columns} FROM payments WHERE provider = $1 AND account = $2 \
         AND kind = 'payment' AND merchant_ref IN ({list})"
    );
    let mut q = stmt(&sql, "finding a report page's payments")
        .text(scope.provider())
        .text(scope.account_key());
    for r in refs {
        q = q.text(r);
    }
    conn.all(q).await
}
