//! `finality archive restore`: rows brought back from archive files,
//! checked against the manifest's hashes, without duplicates.

use crate::lifecycle::error::{io, LifecycleError};
use crate::lifecycle::{manifest_path, read_manifest, ArchiveFile};
use finality_core::Timestamp;
use finality_store::retention::{self, RowKind, TableSpec};
use finality_store::Lifecycle;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

/// What a restore brought back.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RestoreReport {
    pub kind: String,
    pub day: String,
    /// Per table: rows in the files, and how many were not in the
    /// database already.
    pub tables: BTreeMap<String, (u64, u64)>,
    /// Retention leaves the day alone until then.
    #[serde(serialize_with = "rfc3339")]
    pub held_until: Timestamp,
}

pub(crate) fn rfc3339<S: serde::Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339())
}

/// Bring back the rows of an archive file (for payments, with the
/// history, provider calls and audit rows written beside them), after
/// checking each file against the manifest; the day is then held from
/// retention for `hold`.
pub async fn restore(
    store: &dyn Lifecycle,
    dir: &Path,
    file: &Path,
    hold: Duration,
    now: Timestamp,
) -> Result<RestoreReport, LifecycleError> {
    let bad = |detail: String| LifecycleError::Archive {
        path: file.to_path_buf(),
        detail,
    };
    let rel = file
        .strip_prefix(dir)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/");
    let manifest = read_manifest(dir)?;
    let entry = manifest
        .iter()
        .find(|e| e.file == rel)
        .ok_or_else(|| bad(format!("not in {}", manifest_path(dir).display())))?;
    let stamp = rel
        .rsplit('/')
        .next()
        .and_then(|name| name.strip_suffix(".jsonl.gz"))
        .and_then(|name| name.split_once('.'))
        .map(|(_, stamp)| stamp.to_string())
        .ok_or_else(|| bad("not an archive file name (DAY.STAMP.jsonl.gz)".into()))?;
    // The day's files of this run, in restore order (a payment before its
    // history).
    let mut set: Vec<&ArchiveFile> = manifest
        .iter()
        .filter(|e| {
            e.kind == entry.kind
                && e.day == entry.day
                && e.file.ends_with(&format!(".{stamp}.jsonl.gz"))
        })
        .collect();
    set.sort_by_key(|e| {
        retention::TABLES
            .iter()
            .position(|t| t.name == e.table)
            .unwrap_or(usize::MAX)
    });
    let mut report = RestoreReport {
        kind: entry.kind.clone(),
        day: entry.day.clone(),
        ..RestoreReport::default()
    };
    for e in set {
        let spec = retention::table(&e.table)
            .ok_or_else(|| bad(format!("unknown table `{}` in the manifest", e.table)))?;
        let (rows, new, min_id) = restore_file(store, &dir.join(&e.file), e, spec).await?;
        report.tables.insert(e.table.clone(), (rows, new));
        if e.table == "webhook_inbox" {
            if let Some(min) = min_id {
                // Bodies came back: the body scan must pass them again
                // once the hold ends.
                store
                    .life_cursor_rewind(RowKind::WebhookBodies, min - 1)
                    .await?;
            }
        }
    }
    report.held_until = now.plus(hold);
    store
        .hold_day(&report.kind, &report.day, report.held_until)
        .await?;
    Ok(report)
}

/// One file: checksum, then rows in batches; a bad line names its number.
pub(crate) async fn restore_file(
    store: &dyn Lifecycle,
    path: &Path,
    entry: &ArchiveFile,
    spec: &'static TableSpec,
) -> Result<(u64, u64, Option<i64>), LifecycleError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let sum = hex::encode(Sha256::digest(&bytes));
    if sum != entry.sha256 {
        return Err(LifecycleError::Archive {
            path: path.to_path_buf(),
            detail: format!(
                "SHA-256 {sum} does not match the manifest's {}: the file changed since it was written",
                entry.sha256
            ),
        });
    }
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(&bytes[..]));
    let (mut rows, mut new) = (0u64, 0u64);
    let mut min_id: Option<i64> = None;
    let mut batch = Vec::with_capacity(500);
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(io(path))?;
        let v: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| LifecycleError::Archive {
                path: path.to_path_buf(),
                detail: format!("line {}: {e}", i + 1),
            })?;
        if let Some(id) = v.get("id").and_then(serde_json::Value::as_i64) {
            min_id = Some(min_id.map_or(id, |m| m.min(id)));
        }
        batch.push(v);
        rows += 1;
        if batch.len() == 500 {
            new += store.restore_rows(spec, &batch).await?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        new += store.restore_rows(spec, &batch).await?;
    }
    if rows != entry.rows {
        return Err(LifecycleError::Archive {
            path: path.to_path_buf(),
            detail: format!("{rows} rows, the manifest says {}", entry.rows),
        });
    }
    Ok((rows, new, min_id))
}
