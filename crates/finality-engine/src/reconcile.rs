//! Settlement-report reconciliation: a provider's report of what it settled,
//! checked line by line against finality's records.
//!
//! | line | finality has | outcome |
//! |---|---|---|
//! | charge | the payment succeeded | `matched` |
//! | charge | the payment open (pending, processing, in review) | `applied`: succeeded through `apply`, source `sweep`, the report and line as the reason |
//! | charge | a different amount or currency | `amount_mismatch`: never applied; an open payment goes to review with the reason |
//! | charge | the payment failed or cancelled | `contradiction`: kept for a person |
//! | charge, refund, chargeback | no such payment | `unknown_here`: kept for a person |
//! | refund, chargeback | the payment succeeded | `reversed` through `apply` (where the transition table allows) |
//! | refund, chargeback | the payment already reversed | `matched` |
//! | fee, payout, other | — | `ignored` (counted) |
//!
//! The file is read twice, as a stream each time: once whole to check every
//! line and take its SHA-256 (a malformed line stops the import before
//! anything is applied, with the line and column named), then to apply. A
//! report already imported (same provider, same bytes) changes nothing.

use finality_core::{Source, Status, Timestamp};
use finality_providers::settlement::{Format, LineKind, ReportError, SettlementLine};
use finality_store::reconciliations::{ReconLine, ReconStart};
use finality_store::{ApplyOutcome, Report, Store};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The report does not read (nothing was applied).
    #[error("{file}: {error}")]
    Report { file: String, error: ReportError },
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
    #[error(transparent)]
    Store(#[from] finality_store::StoreError),
}

/// What an import did.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciled {
    pub run_id: i64,
    /// The same file had been imported before: nothing was done.
    pub already_imported: bool,
    pub lines: i64,
    pub counts: BTreeMap<String, i64>,
}

/// Lines kept per database write.
const BATCH: usize = 500;

fn open(path: &Path) -> Result<std::fs::File, ReconcileError> {
    std::fs::File::open(path).map_err(|error| ReconcileError::Io {
        file: path.display().to_string(),
        error,
    })
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

/// Import `path`, a report of `provider` in `format`, recorded under the
/// file's own name.
pub async fn reconcile_file(
    store: &dyn Store,
    provider: &str,
    path: &Path,
    format: &Format,
    now: Timestamp,
) -> Result<Reconciled, ReconcileError> {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    reconcile_file_named(store, provider, path, &name, format, now).await
}

/// [`reconcile_file`], recorded (and named in reasons) as `name` (an
/// upload kept in a temporary file, say).
pub async fn reconcile_file_named(
    store: &dyn Store,
    provider: &str,
    path: &Path,
    name: &str,
    format: &Format,
    now: Timestamp,
) -> Result<Reconciled, ReconcileError> {
    let file = name.to_string();
    let report_err = |error| ReconcileError::Report {
        file: file.clone(),
        error,
    };
    // Pass 1: every line reads, and the file's hash.
    let mut hashing = Hashing {
        inner: std::io::BufReader::new(open(path)?),
        hash: Sha256::new(),
    };
    let mut lines = 0i64;
    for line in format.read(&mut hashing).map_err(report_err)? {
        line.map_err(report_err)?;
        lines += 1;
    }
    // Whatever the CSV reader left unread still counts toward the hash.
    std::io::copy(&mut hashing, &mut std::io::sink()).map_err(|error| ReconcileError::Io {
        file: file.clone(),
        error,
    })?;
    let sha = hex::encode(hashing.hash.finalize());
    let run_id = match store.recon_start(provider, name, &sha, now).await? {
        ReconStart::AlreadyDone(run) => {
            return Ok(Reconciled {
                run_id: run.id,
                already_imported: true,
                lines: run.lines,
                counts: run.counts,
            })
        }
        ReconStart::Started(id) => id,
    };

    // Pass 2: decide and apply.
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    let mut kept: Vec<ReconLine> = Vec::new();
    let input = std::io::BufReader::new(open(path)?);
    for line in format.read(input).map_err(report_err)? {
        let line = line.map_err(report_err)?;
        let (outcome, reason, payment_id) = decide(store, provider, name, &line, now).await?;
        *counts.entry(outcome.to_string()).or_default() += 1;
        if outcome != "matched" && outcome != "ignored" {
            kept.push(ReconLine {
                line: line.line as i64,
                kind: line.kind.as_str().into(),
                provider_ref: line.provider_ref.clone(),
                amount: line.amount,
                currency: line.currency.clone(),
                outcome: outcome.into(),
                reason,
                payment_id,
            });
        }
        if kept.len() >= BATCH {
            store.recon_add_lines(run_id, &kept).await?;
            kept.clear();
        }
    }
    store.recon_add_lines(run_id, &kept).await?;
    store.recon_finish(run_id, lines, &counts, now).await?;
    for (outcome, n) in &counts {
        ::metrics::counter!("finality_reconciliation_lines_total", "outcome" => outcome.clone())
            .increment(*n as u64);
    }
    tracing::info!(provider, file = %name, lines, counts = ?counts, "settlement report reconciled");
    Ok(Reconciled {
        run_id,
        already_imported: false,
        lines,
        counts,
    })
}

/// One line's outcome, the reason kept with it, and the payment it is about.
async fn decide(
    store: &dyn Store,
    provider: &str,
    file: &str,
    line: &SettlementLine,
    now: Timestamp,
) -> Result<(&'static str, String, Option<String>), ReconcileError> {
    let evidence = format!("{provider} settlement report {file}, line {}", line.line);
    if matches!(
        line.kind,
        LineKind::Fee | LineKind::Payout | LineKind::Other
    ) {
        return Ok(("ignored", String::new(), None));
    }
    let found = match line
        .provider_ref
        .as_deref()
        .or(line.merchant_ref.as_deref())
    {
        Some(r) => store.find_by_ref(provider, r).await?,
        None => None,
    };
    let Some(id) = found else {
        let what = match line.kind {
            LineKind::Charge => "the provider settled a payment",
            _ => "the provider recorded a refund or chargeback of a payment",
        };
        return Ok((
            "unknown_here",
            format!("{evidence}: {what} finality does not know (never registered?)"),
            None,
        ));
    };
    let Some(view) = store.get(&id).await? else {
        return Ok((
            "unknown_here",
            format!("{evidence}: payment `{id}` vanished"),
            None,
        ));
    };
    let p = &view.payment;
    let apply = |status: Status, reason: String| Report {
        payment_id: id.clone(),
        status,
        source: Source::Sweep,
        event_id: None,
        observed_at: now,
        reason: Some(reason),
        actor: None,
    };
    match line.kind {
        LineKind::Charge => {
            if line.amount != p.amount || line.currency != p.currency {
                let reason = format!(
                    "{evidence}: settled {} {} but registered as {} {}; not applied",
                    line.amount, line.currency, p.amount, p.currency
                );
                if !p.status.is_final() && p.status != Status::NeedsReview {
                    store
                        .apply(&apply(Status::NeedsReview, reason.clone()), now)
                        .await?;
                }
                return Ok(("amount_mismatch", reason, Some(id)));
            }
            match p.status {
                Status::Succeeded | Status::Reversed => Ok(("matched", String::new(), Some(id))),
                Status::Failed | Status::Cancelled => Ok((
                    "contradiction",
                    format!(
                        "{evidence}: the provider settled it; finality has it {}",
                        p.status
                    ),
                    Some(id),
                )),
                _ => {
                    let reason = format!("settled: {evidence}");
                    match store
                        .apply(&apply(Status::Succeeded, reason.clone()), now)
                        .await?
                    {
                        ApplyOutcome::Applied { .. } => Ok(("applied", reason, Some(id))),
                        other => Ok((
                            "contradiction",
                            format!("{evidence}: could not apply: {other:?}"),
                            Some(id),
                        )),
                    }
                }
            }
        }
        LineKind::Refund | LineKind::Chargeback => {
            let what = line.kind.as_str();
            match p.status {
                Status::Reversed => Ok(("matched", String::new(), Some(id))),
                Status::Succeeded => {
                    let reason = format!("{what}: {evidence}");
                    match store
                        .apply(&apply(Status::Reversed, reason.clone()), now)
                        .await?
                    {
                        ApplyOutcome::Applied { .. } => Ok(("reversed", reason, Some(id))),
                        other => Ok((
                            "contradiction",
                            format!("{evidence}: a {what} the transition table refuses: {other:?}"),
                            Some(id),
                        )),
                    }
                }
                s => Ok((
                    "contradiction",
                    format!("{evidence}: a {what} of a payment that is {s} here"),
                    Some(id),
                )),
            }
        }
        LineKind::Fee | LineKind::Payout | LineKind::Other => Ok(("ignored", String::new(), None)),
    }
}
