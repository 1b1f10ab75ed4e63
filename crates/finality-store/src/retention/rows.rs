//! The rows retention reads, archives and deletes: the tables' columns
//! ([`TableSpec`]), which rows of each kind are settled ([`RowKind`]), and
//! a row as JSON, column by column, so one archive file restores into
//! either backend.

use crate::driver::{Arg, Fields, Stmt};
use crate::error::Result;
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
    /// An account: `''` (the provider's own) when an archive made before
    /// accounts were stored everywhere has none.
    Account,
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
        ("reported_pieces", Col::OptText),
        ("account", Col::Account),
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
        ("account", Col::Account),
        ("pieces", Col::OptText),
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
pub(crate) const SETTLED_INBOX: &str = "state IN ('applied', 'ignored', 'orphaned')";

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
    pub(crate) fn filter(self) -> &'static str {
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

/// A column list for `SELECT`.
pub(crate) fn col_list(t: &TableSpec, prefix: &str) -> String {
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
            Col::Account => Value::from(r.opt_text(c, t.name)?.unwrap_or_default()),
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
pub(crate) enum Owned {
    Int(Option<i64>),
    Int4(Option<i32>),
    Text(Option<String>),
    Bytes(Vec<u8>),
    Json(Value),
}

/// An archived row's values in column order; an error names the column.
pub(crate) fn values(t: &TableSpec, row: &Value) -> Result<Vec<Owned>> {
    let bad = |c: &str, what: &str| {
        crate::driver::corrupt(
            "archive",
            format!("{}.{c}: {what} in an archived row", t.name),
        )
    };
    let mut out = Vec::with_capacity(t.cols.len());
    for (c, kind) in t.cols {
        let v = row.get(*c).unwrap_or(&Value::Null);
        let nullable = matches!(
            kind,
            Col::OptInt | Col::OptInt4 | Col::OptText | Col::Account
        );
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
            Col::Account => Owned::Text(Some(v.as_str().unwrap_or_default().to_string())),
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

pub(crate) fn bind_owned<'a>(mut s: Stmt<'a>, vals: &'a [Owned]) -> Stmt<'a> {
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

pub(crate) fn tombstone(r: &impl Fields) -> Result<Tombstone> {
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

/// `$from…` placeholders bound to `ids`.
pub(crate) fn with_texts<'a>(mut s: Stmt<'a>, ids: &'a [&'a str]) -> Stmt<'a> {
    for id in ids {
        s = s.text(id);
    }
    s
}
