//! Data lifecycle: the reads and deletes retention needs, on every backend.
//! What to keep and for how long is decided by the caller
//! (`finality_engine::lifecycle`), which writes each row to an archive file
//! before asking for it to be deleted here; this module only makes sure a
//! delete never takes a row that stopped qualifying in between (a payment
//! reopened, a webhook sent back to processing).
//!
//! Rows cross the boundary as JSON objects, column by column ([`TableSpec`]),
//! so the same archive file restores into either backend.

use crate::driver::Backend;
use crate::driver::{placeholders, stmt, Arg, Conn, Fields, Stmt};
use crate::error::{DbContext, Result};
use base64::Engine as _;
use finality_core::Timestamp;
use serde_json::{Map, Value};

/// How a column is read into JSON and bound back from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Int,
    OptInt,
    Int4,
    OptInt4,
    Text,
    OptText,
    /// Bytes, as standard base64 in the archive.
    Bytes,
    Json,
}

/// A table's columns in archive order (the first is its key).
#[derive(Debug)]
pub struct TableSpec {
    pub name: &'static str,
    pub cols: &'static [(&'static str, Col)],
}

pub const POLL_ATTEMPTS: TableSpec = TableSpec {
    name: "poll_attempts",
    cols: &[
        ("id", Col::Int),
        ("payment_id", Col::Text),
        ("provider", Col::Text),
        ("worker", Col::Text),
        ("started_at", Col::Int),
        ("latency_ms", Col::Int),
        ("outcome", Col::Text),
        ("provider_status", Col::OptText),
        ("error_class", Col::OptText),
        ("error", Col::OptText),
    ],
};

pub const DELIVERY_ATTEMPTS: TableSpec = TableSpec {
    name: "delivery_attempts",
    cols: &[
        ("id", Col::Int),
        ("destination", Col::Text),
        ("event_id", Col::Text),
        ("feed_seq", Col::Int),
        ("at", Col::Int),
        ("status_code", Col::OptInt4),
        ("latency_ms", Col::Int),
        ("error", Col::OptText),
    ],
};

pub const WEBHOOK_INBOX: TableSpec = TableSpec {
    name: "webhook_inbox",
    cols: &[
        ("id", Col::Int),
        ("provider", Col::Text),
        ("event_id", Col::Text),
        ("provider_ref", Col::OptText),
        ("merchant_ref", Col::OptText),
        ("observed_status", Col::OptText),
        ("provider_status", Col::OptText),
        ("occurred_at", Col::OptInt),
        ("raw_body", Col::Bytes),
        ("headers", Col::Json),
        ("received_at", Col::Int),
        ("state", Col::Text),
        ("reason", Col::OptText),
        ("attempts", Col::Int4),
        ("next_attempt_at", Col::OptInt),
        ("processed_at", Col::OptInt),
        ("source", Col::Text),
        ("body_dropped_at", Col::OptInt),
        ("reported_amount", Col::OptInt),
        ("reported_currency", Col::OptText),
    ],
};

pub const PAYMENTS: TableSpec = TableSpec {
    name: "payments",
    cols: &[
        ("id", Col::Text),
        ("provider", Col::Text),
        ("provider_ref", Col::OptText),
        ("merchant_ref", Col::OptText),
        ("kind", Col::Text),
        ("amount", Col::Int),
        ("currency", Col::Text),
        ("metadata", Col::Json),
        ("status", Col::Text),
        ("status_source", Col::OptText),
        ("created_at", Col::Int),
        ("updated_at", Col::Int),
        ("finalized_at", Col::OptInt),
    ],
};

pub const STATUS_HISTORY: TableSpec = TableSpec {
    name: "status_history",
    cols: &[
        ("id", Col::Int),
        ("payment_id", Col::Text),
        ("from_status", Col::OptText),
        ("to_status", Col::Text),
        ("source", Col::Text),
        ("event_id", Col::OptText),
        ("reason", Col::OptText),
        ("actor", Col::OptText),
        ("observed_at", Col::Int),
        ("at", Col::Int),
    ],
};

pub const AUDIT_LOG: TableSpec = TableSpec {
    name: "audit_log",
    cols: &[
        ("id", Col::Int),
        ("at", Col::Int),
        ("actor", Col::Text),
        ("role", Col::Text),
        ("action", Col::Text),
        ("payment_id", Col::OptText),
        ("detail", Col::Json),
        ("outcome", Col::Text),
        ("remote_addr", Col::OptText),
    ],
};

/// Every table an archive file may hold, in the order a restore inserts
/// them (a payment before its history).
pub const TABLES: &[&TableSpec] = &[
    &PAYMENTS,
    &STATUS_HISTORY,
    &POLL_ATTEMPTS,
    &AUDIT_LOG,
    &WEBHOOK_INBOX,
    &DELIVERY_ATTEMPTS,
];

/// The table an archive names, if finality has it.
pub fn table(name: &str) -> Option<&'static TableSpec> {
    TABLES.iter().copied().find(|t| t.name == name)
}

/// What retention takes from the row tables, each by id order (ids are
/// handed out at insert, so id order is time order but for a few rows at
/// the edge, which the next run takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// `poll_attempts`: one row per provider call.
    ProviderCalls,
    /// `delivery_attempts`: one row per event push.
    Deliveries,
    /// `webhook_inbox` bodies and headers (the row stays).
    WebhookBodies,
    /// `webhook_inbox` rows (their dedup keys included).
    Webhooks,
}

/// Inbox rows retention may touch: settled ones. Rows still being
/// processed, failed (unparseable evidence included) or held for review
/// stay until a person or the processor settles them.
const SETTLED_INBOX: &str = "state IN ('applied', 'ignored', 'orphaned')";

impl RowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::ProviderCalls => "provider_calls",
            RowKind::Deliveries => "deliveries",
            RowKind::WebhookBodies => "webhook_bodies",
            RowKind::Webhooks => "webhooks",
        }
    }
    pub fn spec(self) -> &'static TableSpec {
        match self {
            RowKind::ProviderCalls => &POLL_ATTEMPTS,
            RowKind::Deliveries => &DELIVERY_ATTEMPTS,
            RowKind::WebhookBodies | RowKind::Webhooks => &WEBHOOK_INBOX,
        }
    }
    /// The column whose time retention compares.
    pub fn time_col(self) -> &'static str {
        match self {
            RowKind::ProviderCalls => "started_at",
            RowKind::Deliveries => "at",
            RowKind::WebhookBodies | RowKind::Webhooks => "received_at",
        }
    }
    /// Which rows qualify at all (besides their time).
    fn filter(self) -> &'static str {
        match self {
            RowKind::ProviderCalls | RowKind::Deliveries => "TRUE",
            // Every state but one being processed: review and failed rows
            // lose their bodies too (the archive keeps them), or a row held
            // for a person would keep customer data forever.
            RowKind::WebhookBodies => "body_dropped_at IS NULL",
            RowKind::Webhooks => SETTLED_INBOX,
        }
    }
}

/// One row as read for the archive.
#[derive(Debug, Clone, PartialEq)]
pub struct LifeRow {
    pub id: i64,
    /// Its time (ms), by [`RowKind::time_col`].
    pub at: i64,
    pub json: Value,
}

/// A final payment with everything stored about it, as archived.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentBundle {
    pub id: String,
    pub finalized_at: i64,
    /// As read: the delete goes ahead only if it is unchanged.
    pub updated_at: i64,
    pub payment: Value,
    pub history: Vec<Value>,
    pub attempts: Vec<Value>,
    pub audit: Vec<Value>,
}

impl PaymentBundle {
    /// Its rows of `table` as read (history, provider calls, audit).
    pub fn rows_of(&self, table: &TableSpec) -> &[Value] {
        match table.name {
            "status_history" => &self.history,
            "poll_attempts" => &self.attempts,
            "audit_log" => &self.audit,
            _ => &[],
        }
    }
}

/// What is left of an archived payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tombstone {
    pub id: String,
    pub provider: String,
    pub provider_ref: Option<String>,
    pub status: String,
    pub finalized_at: Timestamp,
    pub archived_at: Timestamp,
    /// The archive file, relative to the archive directory.
    pub archive: String,
}

/// A final payment retention may take: final (`Status::is_final`) before
/// `$1`, no poll job, no event left in the outbox (events are pruned
/// first, after delivery).
fn archivable() -> String {
    format!(
        "p.finalized_at IS NOT NULL AND p.finalized_at < $1 \
         AND p.status IN {} \
         AND NOT EXISTS (SELECT 1 FROM poll_jobs j WHERE j.payment_id = p.id) \
         AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payment_id = p.id)",
        finality_core::Status::FINAL_SQL
    )
}

/// Retention's reads and deletes.
#[async_trait::async_trait]
pub trait Lifecycle: Send + Sync {
    /// Rows of `kind` qualifying for it with id above `after`, in id order,
    /// at most `limit` (their time is not filtered: the caller stops at the
    /// first row inside retention).
    async fn life_page(&self, kind: RowKind, after: i64, limit: u32) -> Result<Vec<LifeRow>>;

    /// Delete rows of `kind` among `rows` (id, and for webhooks the state
    /// as read) that still qualify, are older than `before` and, for
    /// webhook rows, are still in the state read (a row adopted and
    /// applied since is not the row in the file); how many went.
    /// (`WebhookBodies`: drop bodies and headers instead, at `now`, of rows
    /// not being processed.)
    async fn life_remove(
        &self,
        kind: RowKind,
        rows: &[(i64, Option<String>)],
        before: Timestamp,
        now: Timestamp,
    ) -> Result<u64>;

    /// Final payments archivable before `before`, by (finalized_at, id)
    /// after `after`, with their history, provider calls and audit rows.
    async fn archivable_payments(
        &self,
        before: Timestamp,
        after: Option<(i64, String)>,
        limit: u32,
    ) -> Result<Vec<PaymentBundle>>;

    /// Delete each payment (as read, with the archive file holding it)
    /// that is unchanged and still archivable, with its history, provider
    /// calls and audit rows, leaving a [`Tombstone`]; the ids deleted. A
    /// payment whose row or any of whose rows changed since the read (a
    /// reversal, a new audit row) stays: only what is in the file goes.
    async fn archive_payments(
        &self,
        payments: &[(&PaymentBundle, String)],
        before: Timestamp,
        now: Timestamp,
    ) -> Result<Vec<String>>;

    /// The tombstone of an archived payment.
    async fn archived_payment(&self, id: &str) -> Result<Option<Tombstone>>;

    /// The tombstone of the archived payment a provider reference named.
    async fn archived_by_ref(
        &self,
        provider: &str,
        provider_ref: &str,
    ) -> Result<Option<Tombstone>>;

    /// Insert archived rows back (rows already present are kept as they
    /// are); a payment restored loses its tombstone. How many were new.
    async fn restore_rows(&self, table: &TableSpec, rows: &[Value]) -> Result<u64>;

    /// Keep a restored `day` of `kind` from retention until `until`.
    async fn hold_day(&self, kind: &str, day: &str, until: Timestamp) -> Result<()>;

    /// The days of `kind` held at `now`.
    async fn held_days(&self, kind: &str, now: Timestamp) -> Result<Vec<String>>;

    /// Give freed space back to the file system where the backend keeps
    /// it (SQLite's incremental vacuum); PostgreSQL reuses it in place.
    async fn reclaim_space(&self) -> Result<()>;

    /// Where the scan of `kind` has reached (0: the start).
    async fn life_cursor(&self, kind: RowKind) -> Result<i64>;

    /// Move the scan of `kind` from `from` to `to`, unless it was moved
    /// meanwhile (a restore rewound it): whether it moved.
    async fn life_cursor_move(&self, kind: RowKind, from: i64, to: i64) -> Result<bool>;

    /// Move the scan of `kind` back to `to` if it is past it (rows under
    /// it were restored and need the scan again).
    async fn life_cursor_rewind(&self, kind: RowKind, to: i64) -> Result<()>;
}

/// A column list for `SELECT`.
fn col_list(t: &TableSpec, prefix: &str) -> String {
    t.cols
        .iter()
        .map(|(c, _)| format!("{prefix}{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rows of `kind`'s table as retention reads them.
pub(crate) fn life_rows(rows: &[impl Fields], kind: RowKind) -> Result<Vec<LifeRow>> {
    let t = kind.spec();
    rows.iter()
        .map(|r| {
            Ok(LifeRow {
                id: r.int("id", t.name)?,
                at: r.int(kind.time_col(), t.name)?,
                json: row_json(r, t)?,
            })
        })
        .collect()
}

/// A row into JSON, by its table's columns.
pub fn row_json(r: &impl Fields, t: &'static TableSpec) -> Result<Value> {
    let mut m = Map::new();
    for (c, kind) in t.cols {
        let v = match kind {
            Col::Int => Value::from(r.int(c, t.name)?),
            Col::OptInt => r.opt_int(c, t.name)?.map_or(Value::Null, Value::from),
            Col::Int4 => Value::from(r.int4(c, t.name)?),
            Col::OptInt4 => r.opt_int4(c, t.name)?.map_or(Value::Null, Value::from),
            Col::Text => Value::from(r.text(c, t.name)?),
            Col::OptText => r.opt_text(c, t.name)?.map_or(Value::Null, Value::from),
            Col::Bytes => {
                Value::from(base64::engine::general_purpose::STANDARD.encode(r.bytes(c, t.name)?))
            }
            Col::Json => r.json(c, t.name)?,
        };
        m.insert((*c).to_string(), v);
    }
    Ok(Value::Object(m))
}

/// One column's value from an archived row, owned until bound.
enum Owned {
    Int(Option<i64>),
    Int4(Option<i32>),
    Text(Option<String>),
    Bytes(Vec<u8>),
    Json(Value),
}

/// An archived row's values in column order; an error names the column.
fn values(t: &TableSpec, row: &Value) -> Result<Vec<Owned>> {
    let bad = |c: &str, what: &str| {
        crate::driver::corrupt(
            "archive",
            format!("{}.{c}: {what} in an archived row", t.name),
        )
    };
    let mut out = Vec::with_capacity(t.cols.len());
    for (c, kind) in t.cols {
        let v = row.get(*c).unwrap_or(&Value::Null);
        let nullable = matches!(kind, Col::OptInt | Col::OptInt4 | Col::OptText);
        if v.is_null() && !nullable && *kind != Col::Json {
            return Err(bad(c, "missing"));
        }
        out.push(match kind {
            Col::Int | Col::OptInt => Owned::Int(if v.is_null() {
                None
            } else {
                Some(v.as_i64().ok_or_else(|| bad(c, "not an integer"))?)
            }),
            Col::Int4 | Col::OptInt4 => Owned::Int4(if v.is_null() {
                None
            } else {
                Some(
                    v.as_i64()
                        .and_then(|n| i32::try_from(n).ok())
                        .ok_or_else(|| bad(c, "not a 32-bit integer"))?,
                )
            }),
            Col::Text | Col::OptText => Owned::Text(if v.is_null() {
                None
            } else {
                Some(v.as_str().ok_or_else(|| bad(c, "not text"))?.to_string())
            }),
            Col::Bytes => Owned::Bytes(
                base64::engine::general_purpose::STANDARD
                    .decode(v.as_str().ok_or_else(|| bad(c, "not base64 text"))?)
                    .map_err(|_| bad(c, "not base64"))?,
            ),
            Col::Json => Owned::Json(if v.is_null() {
                Value::Object(Map::new())
            } else {
                v.clone()
            }),
        });
    }
    Ok(out)
}

fn bind_owned<'a>(mut s: Stmt<'a>, vals: &'a [Owned]) -> Stmt<'a> {
    for v in vals {
        s.args.push(match v {
            Owned::Int(i) => Arg::Int(*i),
            Owned::Int4(i) => Arg::Int4(*i),
            Owned::Text(t) => Arg::Text(t.as_deref()),
            Owned::Bytes(b) => Arg::Bytes(b),
            Owned::Json(j) => Arg::Json(j),
        });
    }
    s
}

fn tombstone(r: &impl Fields) -> Result<Tombstone> {
    let t = "archived_payments";
    Ok(Tombstone {
        id: r.text("id", t)?,
        provider: r.text("provider", t)?,
        provider_ref: r.opt_text("provider_ref", t)?,
        status: r.text("status", t)?,
        finalized_at: Timestamp(r.int("finalized_at", t)?),
        archived_at: Timestamp(r.int("archived_at", t)?),
        archive: r.text("archive", t)?,
    })
}

/// A payment as locked for archiving: what its tombstone keeps.
struct Locked {
    provider: String,
    provider_ref: Option<String>,
    merchant_ref: Option<String>,
    status: String,
    finalized_at: i64,
}

/// `$from…` placeholders bound to `ids`.
fn with_texts<'a>(mut s: Stmt<'a>, ids: &'a [&'a str]) -> Stmt<'a> {
    for id in ids {
        s = s.text(id);
    }
    s
}

#[async_trait::async_trait]
impl<B: Backend> Lifecycle for B {
    async fn life_page(&self, kind: RowKind, after: i64, limit: u32) -> Result<Vec<LifeRow>> {
        let t = kind.spec();
        let from = crate::partitions::row_table(self, kind).await?;
        let sql = format!(
            "SELECT {} FROM {from} WHERE id > $1 AND {} ORDER BY id LIMIT $2",
            col_list(t, ""),
            kind.filter()
        );
        let mut conn = self.read().await?;
        let rows = conn
            .all(
                stmt(&sql, "reading rows for retention")
                    .int(after)
                    .int(i64::from(limit)),
            )
            .await?;
        life_rows(&rows, kind)
    }

    async fn life_remove(
        &self,
        kind: RowKind,
        rows: &[(i64, Option<String>)],
        before: Timestamp,
        now: Timestamp,
    ) -> Result<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let from = crate::partitions::row_table(self, kind).await?;
        // Webhook rows by the state they were read in; others all at once.
        let mut groups: std::collections::BTreeMap<Option<&str>, Vec<i64>> =
            std::collections::BTreeMap::new();
        for (id, state) in rows {
            let key = if kind == RowKind::Webhooks {
                state.as_deref()
            } else {
                None
            };
            groups.entry(key).or_default().push(*id);
        }
        let mut total = 0;
        // The body's replacement: empty (the column is NOT NULL).
        let empty: &[u8] = &[];
        let mut tx = self.begin_write().await?;
        for (state, ids) in &groups {
            for chunk in ids.chunks(500) {
                // The parameters before the ids: the cut-off, then the
                // empty body and the time (bodies) or the state read.
                let (sql, op, first_id) = match kind {
                    RowKind::WebhookBodies => (
                        "UPDATE webhook_inbox SET raw_body = $2, headers = '{}', \
                         body_dropped_at = $3 WHERE body_dropped_at IS NULL \
                         AND state <> 'received' AND received_at < $1"
                            .to_string(),
                        "dropping webhook bodies past retention",
                        4,
                    ),
                    RowKind::Webhooks => (
                        format!(
                            "DELETE FROM webhook_inbox WHERE {SETTLED_INBOX} AND state = $2 \
                             AND received_at < $1"
                        ),
                        "deleting webhooks past retention",
                        3,
                    ),
                    _ => (
                        format!("DELETE FROM {from} WHERE {} < $1", kind.time_col()),
                        "deleting rows past retention",
                        2,
                    ),
                };
                let sql = format!("{sql} AND id IN ({})", placeholders(first_id, chunk.len()));
                let mut q = stmt(&sql, op).int(before.0);
                q = match kind {
                    RowKind::WebhookBodies => q.bytes(empty).int(now.0),
                    RowKind::Webhooks => q.opt_text(*state),
                    _ => q,
                };
                for id in chunk {
                    q = q.int(*id);
                }
                total += tx.run(q).await?;
            }
        }
        tx.commit().await.op("committing retention")?;
        Ok(total)
    }

    async fn archivable_payments(
        &self,
        before: Timestamp,
        after: Option<(i64, String)>,
        limit: u32,
    ) -> Result<Vec<PaymentBundle>> {
        let (after_at, after_id) = after.unwrap_or((i64::MIN, String::new()));
        let sql = format!(
            "SELECT {} FROM payments p WHERE {} \
             AND (p.finalized_at > $2 OR (p.finalized_at = $2 AND p.id > $3)) \
             ORDER BY p.finalized_at, p.id LIMIT $4",
            col_list(&PAYMENTS, "p."),
            archivable()
        );
        let mut conn = self.read().await?;
        let rows = conn
            .all(
                stmt(&sql, "reading payments for archiving")
                    .int(before.0)
                    .int(after_at)
                    .text(&after_id)
                    .int(i64::from(limit)),
            )
            .await?;
        let mut out: Vec<PaymentBundle> = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(PaymentBundle {
                id: r.text("id", "payments")?,
                finalized_at: r.int("finalized_at", "payments")?,
                updated_at: r.int("updated_at", "payments")?,
                payment: row_json(r, &PAYMENTS)?,
                history: Vec::new(),
                attempts: Vec::new(),
                audit: Vec::new(),
            });
        }
        if out.is_empty() {
            return Ok(out);
        }
        let ids: Vec<&str> = out.iter().map(|b| b.id.as_str()).collect();
        let list = placeholders(1, ids.len());
        let mut related = std::collections::HashMap::new();
        for (spec, order) in [
            (&STATUS_HISTORY, "payment_id, id"),
            (&POLL_ATTEMPTS, "payment_id, id"),
            (&AUDIT_LOG, "payment_id, id"),
        ] {
            let sql = format!(
                "SELECT {} FROM {} WHERE payment_id IN ({list}) ORDER BY {order}",
                col_list(spec, ""),
                spec.name
            );
            let rows = conn
                .all(with_texts(
                    stmt(&sql, "reading an archived payment's rows"),
                    &ids,
                ))
                .await?;
            for r in &rows {
                let pid = r.text("payment_id", spec.name)?;
                related
                    .entry((spec.name, pid))
                    .or_insert_with(Vec::new)
                    .push(row_json(r, spec)?);
            }
        }
        for b in &mut out {
            let mut take = |t: &'static str| related.remove(&(t, b.id.clone())).unwrap_or_default();
            b.history = take("status_history");
            b.attempts = take("poll_attempts");
            b.audit = take("audit_log");
        }
        Ok(out)
    }

    async fn archive_payments(
        &self,
        payments: &[(&PaymentBundle, String)],
        before: Timestamp,
        now: Timestamp,
    ) -> Result<Vec<String>> {
        let mut gone = Vec::new();
        let mut tx = self.begin_write().await?;
        for chunk in payments.chunks(200) {
            let ids: Vec<&str> = chunk.iter().map(|(b, _)| b.id.as_str()).collect();
            let list = placeholders(2, ids.len());
            // Locked and re-checked: a payment reopened or changed since it
            // was read stays (its archived copy is only a copy).
            let sql = format!(
                "SELECT p.id, p.provider, p.provider_ref, p.merchant_ref, p.status, \
                 p.finalized_at, p.updated_at FROM payments p \
                 WHERE p.id IN ({list}) AND {} ORDER BY p.id{}",
                archivable(),
                <B::Conn as Conn>::SQL.row_lock
            );
            let rows = tx
                .all(with_texts(
                    stmt(&sql, "locking payments to archive").int(before.0),
                    &ids,
                ))
                .await?;
            // What each payment's other rows are now (count, newest id):
            // they must be what the file holds.
            let mut now_rows: std::collections::HashMap<(&str, String), (i64, i64)> =
                std::collections::HashMap::new();
            for spec in [&STATUS_HISTORY, &POLL_ATTEMPTS, &AUDIT_LOG] {
                let sql = format!(
                    "SELECT payment_id, COUNT(*) AS n, MAX(id) AS m FROM {} \
                     WHERE payment_id IN ({}) GROUP BY payment_id",
                    spec.name,
                    placeholders(1, ids.len())
                );
                for r in tx
                    .all(with_texts(
                        stmt(&sql, "checking an archived payment's rows"),
                        &ids,
                    ))
                    .await?
                {
                    now_rows.insert(
                        (spec.name, r.text("payment_id", spec.name)?),
                        (r.int("n", spec.name)?, r.int("m", spec.name)?),
                    );
                }
            }
            let mut take: Vec<(String, &str, Locked)> = Vec::new();
            for r in &rows {
                let id = r.text("id", "payments")?;
                let Some((b, file)) = chunk.iter().find(|(b, _)| b.id == id) else {
                    continue;
                };
                if r.int("updated_at", "payments")? != b.updated_at {
                    continue;
                }
                let unchanged = [
                    (&STATUS_HISTORY, &b.history),
                    (&POLL_ATTEMPTS, &b.attempts),
                    (&AUDIT_LOG, &b.audit),
                ]
                .iter()
                .all(|(spec, read)| {
                    let was = (!read.is_empty()).then(|| {
                        let max = read
                            .iter()
                            .filter_map(|v| v.get("id").and_then(Value::as_i64))
                            .max()
                            .unwrap_or(0);
                        (read.len() as i64, max)
                    });
                    was == now_rows.get(&(spec.name, id.clone())).copied()
                });
                if !unchanged {
                    continue;
                }
                take.push((
                    id,
                    file.as_str(),
                    Locked {
                        provider: r.text("provider", "payments")?,
                        provider_ref: r.opt_text("provider_ref", "payments")?,
                        merchant_ref: r.opt_text("merchant_ref", "payments")?,
                        status: r.text("status", "payments")?,
                        finalized_at: r.int("finalized_at", "payments")?,
                    },
                ));
            }
            if take.is_empty() {
                continue;
            }
            let ids: Vec<&str> = take.iter().map(|(id, _, _)| id.as_str()).collect();
            // Exactly the rows in the file, by id: a row committed since
            // the check (an audit row or a provider call, which wait on no
            // lock of the payment's) stays, with its payment id.
            for spec in [&AUDIT_LOG, &POLL_ATTEMPTS, &STATUS_HISTORY] {
                let row_ids: Vec<i64> = chunk
                    .iter()
                    .filter(|(b, _)| ids.contains(&b.id.as_str()))
                    .flat_map(|(b, _)| b.rows_of(spec))
                    .filter_map(|v| v.get("id").and_then(Value::as_i64))
                    .collect();
                for part in row_ids.chunks(500) {
                    let sql = format!(
                        "DELETE FROM {} WHERE id IN ({})",
                        spec.name,
                        placeholders(1, part.len())
                    );
                    let mut q = stmt(&sql, "deleting archived payments' rows");
                    for id in part {
                        q = q.int(*id);
                    }
                    tx.run(q).await?;
                }
            }
            let sql = format!(
                "DELETE FROM payments WHERE id IN ({})",
                placeholders(1, ids.len())
            );
            tx.run(with_texts(stmt(&sql, "deleting archived payments"), &ids))
                .await?;
            for (id, file, p) in &take {
                tx.run(
                    stmt(
                        "INSERT INTO archived_payments (id, provider, provider_ref, merchant_ref, \
                         status, finalized_at, archived_at, archive) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO UPDATE \
                         SET archived_at = $7, archive = $8",
                        "leaving a tombstone",
                    )
                    .text(id)
                    .text(&p.provider)
                    .opt_text(p.provider_ref.as_deref())
                    .opt_text(p.merchant_ref.as_deref())
                    .text(&p.status)
                    .int(p.finalized_at)
                    .int(now.0)
                    .text(file),
                )
                .await?;
            }
            gone.extend(take.into_iter().map(|(id, _, _)| id));
        }
        tx.commit().await.op("committing archived payments")?;
        Ok(gone)
    }

    async fn archived_payment(&self, id: &str) -> Result<Option<Tombstone>> {
        let mut conn = self.read().await?;
        conn.opt(
            stmt(
                "SELECT id, provider, provider_ref, status, finalized_at, archived_at, archive \
                 FROM archived_payments WHERE id = $1",
                "reading an archived payment",
            )
            .text(id),
        )
        .await?
        .as_ref()
        .map(tombstone)
        .transpose()
    }

    async fn archived_by_ref(
        &self,
        provider: &str,
        provider_ref: &str,
    ) -> Result<Option<Tombstone>> {
        let mut conn = self.read().await?;
        conn.opt(
            stmt(
                "SELECT id, provider, provider_ref, status, finalized_at, archived_at, archive \
                 FROM archived_payments WHERE provider = $1 AND provider_ref = $2 \
                 ORDER BY archived_at DESC LIMIT 1",
                "reading an archived payment by reference",
            )
            .text(provider)
            .text(provider_ref),
        )
        .await?
        .as_ref()
        .map(tombstone)
        .transpose()
    }

    async fn restore_rows(&self, table: &TableSpec, rows: &[Value]) -> Result<u64> {
        let cols = col_list(table, "");
        let key = table.cols[0].0;
        // A webhook whose row stayed when its body went gets the body back;
        // every other row already present is kept as it is.
        let on_conflict = if table.name == WEBHOOK_INBOX.name {
            "DO UPDATE SET raw_body = excluded.raw_body, headers = excluded.headers, \
             body_dropped_at = NULL \
             WHERE webhook_inbox.body_dropped_at IS NOT NULL AND excluded.body_dropped_at IS NULL"
        } else {
            "DO NOTHING"
        };
        // Any other unique key already taken (a redelivery stored as new
        // after its row went, a reference registered again) keeps the row
        // that is there.
        let target = if table.name == WEBHOOK_INBOX.name {
            format!("({key})")
        } else {
            String::new()
        };
        let sql = format!(
            "INSERT INTO {} ({cols}) VALUES ({}) ON CONFLICT {target} {on_conflict}",
            table.name,
            placeholders(1, table.cols.len())
        );
        let mut n = 0;
        let mut tx = self.begin_write().await?;
        for row in rows {
            let vals = values(table, row)?;
            // A history row needs its payment (a foreign key): one whose
            // reference another payment took meanwhile was not restored,
            // and its history is not either.
            if table.name == STATUS_HISTORY.name {
                let pid = row.get("payment_id").and_then(Value::as_str).unwrap_or("");
                let there = tx
                    .opt(
                        stmt(
                            "SELECT id FROM payments WHERE id = $1",
                            "checking a restored row's payment",
                        )
                        .text(pid),
                    )
                    .await?;
                if there.is_none() {
                    continue;
                }
            }
            if table.name == WEBHOOK_INBOX.name {
                let (Some(p), Some(e), Some(id)) = (
                    row.get("provider").and_then(Value::as_str),
                    row.get("event_id").and_then(Value::as_str),
                    row.get("id").and_then(Value::as_i64),
                ) else {
                    continue;
                };
                let taken = tx
                    .opt(
                        stmt(
                            "SELECT id FROM webhook_inbox WHERE provider = $1 AND event_id = $2 \
                             AND id <> $3",
                            "checking a restored webhook's key",
                        )
                        .text(p)
                        .text(e)
                        .int(id),
                    )
                    .await?;
                if taken.is_some() {
                    continue;
                }
            }
            n += tx
                .run(bind_owned(stmt(&sql, "restoring archived rows"), &vals))
                .await?;
            if table.name == "payments" {
                if let Some(id) = row.get("id").and_then(Value::as_str) {
                    tx.run(
                        stmt(
                            "DELETE FROM archived_payments WHERE id = $1 \
                             AND EXISTS (SELECT 1 FROM payments WHERE id = $1)",
                            "removing a restored payment's tombstone",
                        )
                        .text(id),
                    )
                    .await?;
                }
            }
        }
        tx.commit().await.op("committing restored rows")?;
        Ok(n)
    }

    async fn hold_day(&self, kind: &str, day: &str, until: Timestamp) -> Result<()> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "INSERT INTO archive_holds (kind, day, until) VALUES ($1, $2, $3) \
                 ON CONFLICT (kind, day) DO UPDATE SET until = $3",
                "holding a restored day",
            )
            .text(kind)
            .text(day)
            .int(until.0),
        )
        .await?;
        Ok(())
    }

    async fn held_days(&self, kind: &str, now: Timestamp) -> Result<Vec<String>> {
        let mut conn = self.read().await?;
        conn.all(
            stmt(
                "SELECT day FROM archive_holds WHERE kind = $1 AND until > $2 ORDER BY day",
                "reading held days",
            )
            .text(kind)
            .int(now.0),
        )
        .await?
        .iter()
        .map(|r| r.text("day", "archive_holds"))
        .collect()
    }

    async fn life_cursor(&self, kind: RowKind) -> Result<i64> {
        let mut conn = self.read().await?;
        let r = conn
            .opt(
                stmt(
                    "SELECT after_id FROM lifecycle_cursors WHERE kind = $1",
                    "reading a retention cursor",
                )
                .text(kind.as_str()),
            )
            .await?;
        r.map_or(Ok(0), |r| r.int("after_id", "lifecycle_cursors"))
    }

    async fn life_cursor_move(&self, kind: RowKind, from: i64, to: i64) -> Result<bool> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "INSERT INTO lifecycle_cursors (kind, after_id) VALUES ($1, 0) \
                 ON CONFLICT (kind) DO NOTHING",
                "creating a retention cursor",
            )
            .text(kind.as_str()),
        )
        .await?;
        let n = conn
            .run(
                stmt(
                    "UPDATE lifecycle_cursors SET after_id = $3 WHERE kind = $1 AND after_id = $2",
                    "moving a retention cursor",
                )
                .text(kind.as_str())
                .int(from)
                .int(to),
            )
            .await?;
        Ok(n == 1)
    }

    async fn life_cursor_rewind(&self, kind: RowKind, to: i64) -> Result<()> {
        let mut conn = self.read().await?;
        conn.run(
            stmt(
                "UPDATE lifecycle_cursors SET after_id = $2 WHERE kind = $1 AND after_id > $2",
                "rewinding a retention cursor",
            )
            .text(kind.as_str())
            .int(to),
        )
        .await?;
        Ok(())
    }

    async fn reclaim_space(&self) -> Result<()> {
        if let Some(sql) = <B::Conn as Conn>::SQL.reclaim_space {
            let mut conn = self.read().await?;
            conn.run(stmt(sql, "giving freed pages back")).await?;
        }
        Ok(())
    }
}
