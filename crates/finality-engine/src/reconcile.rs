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
//! | refund, chargeback | for part of the amount (or another currency) | `partial_refund`: kept for a person, not applied |
//! | fee | its payment (a fee on a line of its own that names one) | `matched` |
//! | fee, payout, other | — | `ignored` (counted) |
//! | (no line) | succeeded here within the report's period | `missing_from_report`: kept for a person |
//!
//! The file is read twice, as a stream each time: once whole to check every
//! line and take its SHA-256 (a malformed line stops the import before
//! anything is applied, with the line and column named), then to apply. A
//! report already imported (same provider, same bytes) changes nothing.
//!
//! Lines are decided a page at a time: one query finds the page's payments
//! (instead of two per line), [`decide`] (pure) says what each line means,
//! and only the lines that change something write. With a period, the
//! payments each page found are noted in the database, and one anti-join at
//! the end lists those the report should have had and did not.

use crate::report_owner::Index;
use finality_core::{Scope, Source, Status, Timestamp};
use finality_providers::settlement::{Format, LineKind, ReportError, SettlementLine};
use finality_store::reconciliations::{Ledger, ReconLine, ReconStart};
use finality_store::{ApplyOutcome, PaymentStore, Reconciliations, Report};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
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
    /// The same report is being imported right now (run `run_id`).
    #[error("{file}: being imported since {started_at} (run {run_id}); try again when it ends")]
    Busy {
        file: String,
        run_id: i64,
        started_at: Timestamp,
    },
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

/// Lines decided per page (one lookup, one write of kept lines).
const PAGE: usize = 500;

/// An import notes it is alive at least this often; one silent for
/// [`ALIVE_WITHIN`] died, and a new import of its report starts it again.
const ALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);
const ALIVE_WITHIN: std::time::Duration = std::time::Duration::from_secs(600);

pub use crate::period::{Period, PeriodError};
pub use crate::report_owner::Owner;

/// What to import: whose report, under which name, read how, covering
/// which period (without one, payments absent from the report are not
/// looked for).
#[derive(Debug, Clone)]
pub struct Import<'a> {
    pub provider: &'a str,
    /// Whose report it is, and whose payments its lines may reach.
    pub owner: Owner<'a>,
    /// Recorded with the run and named in reasons (the upload's own name,
    /// not the temporary file's).
    pub name: &'a str,
    pub format: &'a Format,
    pub period: Option<Period>,
}

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
/// file's own name, with no period.
pub async fn reconcile_file<S: ReconcileStore + ?Sized>(
    store: &S,
    provider: &str,
    path: &Path,
    format: &Format,
    now: Timestamp,
) -> Result<Reconciled, ReconcileError> {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let import = Import {
        provider,
        owner: Owner::default(),
        name: &name,
        format,
        period: None,
    };
    reconcile(store, &import, path, now).await
}

/// The roles a reconciliation uses: its runs and lines, and the payments
/// it settles, reverses or sends to review through `apply`.
pub trait ReconcileStore: Reconciliations + PaymentStore {}
impl<T: Reconciliations + PaymentStore + ?Sized> ReconcileStore for T {}

/// Import the report at `path` as `import` says.
pub async fn reconcile<S: ReconcileStore + ?Sized>(
    store: &S,
    import: &Import<'_>,
    path: &Path,
    now: Timestamp,
) -> Result<Reconciled, ReconcileError> {
    let (name, format) = (import.name, import.format);
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
    run_import(store, import, &sha, lines, Some(path), now).await
}

/// Import a day the provider says had no report because nothing happened
/// (WeChat Pay's `NO_STATEMENT_EXIST`: no trade or refund that day): no
/// line, so within `import`'s period every payment finality holds is
/// `missing_from_report`, and the run is recorded like any other (the day
/// is not fetched again). `said` is the provider's answer, kept in the log.
pub async fn reconcile_nothing<S: ReconcileStore + ?Sized>(
    store: &S,
    import: &Import<'_>,
    said: &str,
    now: Timestamp,
) -> Result<Reconciled, ReconcileError> {
    tracing::info!(provider = import.provider, report = import.name, %said, "the provider has no report for the day: imported as an empty one");
    run_import(store, import, "no-report", 0, None, now).await
}

/// Pass 2 of an import whose content is identified by `content` (the
/// file's SHA-256) and has `lines` lines, read from `path` (`None`: no
/// line at all).
async fn run_import<S: ReconcileStore + ?Sized>(
    store: &S,
    import: &Import<'_>,
    content: &str,
    lines: i64,
    path: Option<&Path>,
    now: Timestamp,
) -> Result<Reconciled, ReconcileError> {
    let (provider, name, format) = (import.provider, import.name, import.format);
    let file = name.to_string();
    let report_err = |error| ReconcileError::Report {
        file: file.clone(),
        error,
    };
    // The same file checked against another period is another import (the
    // lines are decided the same; which payments are missing is not).
    // And the same bytes as another account's report (two merchants' empty
    // reports of one day) are another import.
    let key = match import.period {
        Some(p) => format!("{content}:{}..{}", p.from.0, p.until.0),
        None => content.to_string(),
    };
    let key = match import.owner.account {
        Some(a) => format!("{key}@{a}"),
        None => key,
    };
    let alive_since = Timestamp(now.0 - ALIVE_WITHIN.as_millis() as i64);
    let run_id = match store
        .recon_start(provider, name, &key, now, alive_since)
        .await?
    {
        ReconStart::AlreadyDone(run) => {
            return Ok(Reconciled {
                run_id: run.id,
                already_imported: true,
                lines: run.lines,
                counts: run.counts,
            })
        }
        ReconStart::Busy(run) => {
            return Err(ReconcileError::Busy {
                file,
                run_id: run.id,
                started_at: run.started_at,
            })
        }
        ReconStart::Started(id) => id,
    };

    // Pass 2: decide and apply, a page at a time.
    let mut run = Run {
        store,
        import,
        run_id,
        now,
        counts: BTreeMap::new(),
        last_alive: std::time::Instant::now(),
    };
    if let Some(path) = path {
        let mut page: Vec<SettlementLine> = Vec::with_capacity(PAGE);
        let input = std::io::BufReader::new(open(path)?);
        for line in format.read(input).map_err(report_err)? {
            page.push(line.map_err(report_err)?);
            if page.len() >= PAGE {
                run.page(&page).await?;
                page.clear();
            }
        }
        run.page(&page).await?;
    }
    if let Some(period) = import.period {
        run.absent(period).await?;
    }
    let counts = run.counts;
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

/// One import's pass 2.
struct Run<'a, S: ?Sized> {
    store: &'a S,
    import: &'a Import<'a>,
    run_id: i64,
    now: Timestamp,
    counts: BTreeMap<String, i64>,
    last_alive: std::time::Instant,
}

impl<S: ReconcileStore + ?Sized> Run<'_, S> {
    async fn page(&mut self, page: &[SettlementLine]) -> Result<(), ReconcileError> {
        if page.is_empty() {
            return Ok(());
        }
        let (store, provider) = (self.store, self.import.provider);
        if self.last_alive.elapsed() >= ALIVE_EVERY {
            store.recon_alive(self.run_id, self.now).await?;
            self.last_alive = std::time::Instant::now();
        }
        // Each line is looked for in its own scope only: one lookup per
        // scope the page names (usually one).
        let owner = self.import.owner;
        let scopes: Vec<Scope> = page.iter().map(|l| owner.line(provider, l)).collect();
        let mut by_scope: BTreeMap<&Scope, Vec<&str>> = BTreeMap::new();
        for (l, scope) in page.iter().zip(&scopes) {
            if l.kind.names_a_payment() || l.kind == LineKind::Fee {
                by_scope.entry(scope).or_default().extend(l.references());
            }
        }
        let mut ledger: Vec<Ledger> = Vec::new();
        let mut ranges: HashMap<&Scope, std::ops::Range<usize>> = HashMap::new();
        for (scope, refs) in &by_scope {
            let start = ledger.len();
            ledger.extend(store.recon_lookup(scope, refs).await?);
            ranges.insert(scope, start..ledger.len());
        }
        let found: Vec<Option<usize>> = {
            let ix: HashMap<&Scope, Index<'_>> = ranges
                .iter()
                .map(|(s, r)| (*s, Index::new(&ledger[r.clone()])))
                .collect();
            page.iter()
                .zip(&scopes)
                .map(|(l, s)| {
                    let at = ranges.get(s).map_or(0, |r| r.start);
                    ix.get(s).and_then(|ix| ix.find(l)).map(|i| i + at)
                })
                .collect()
        };
        let mut kept: Vec<ReconLine> = Vec::new();
        for (line, &found) in page.iter().zip(&found) {
            let evidence = format!(
                "{provider} settlement report {}, line {}",
                self.import.name, line.line
            );
            let mut verdict = decide(&evidence, line, found.map(|i| &ledger[i]));
            if let (Some(to), Some(i)) = (verdict.apply, found) {
                let report = Report {
                    payment_id: ledger[i].id.clone(),
                    status: to,
                    source: Source::Sweep,
                    event_id: None,
                    observed_at: self.now,
                    reason: Some(verdict.reason.clone()),
                    actor: None,
                };
                match store.apply(&report, self.now).await? {
                    ApplyOutcome::Applied { to, .. } => ledger[i].status = to,
                    // The payment moved since the page was read (a webhook
                    // or a poll got there first): decide again against
                    // what it is now, without applying a second time.
                    ApplyOutcome::Unchanged | ApplyOutcome::Ignored { .. } => {
                        if let Some(v) = store.get(&ledger[i].id).await? {
                            ledger[i].status = v.payment.status;
                        }
                        let again = decide(&evidence, line, Some(&ledger[i]));
                        verdict = if again.apply.is_none() {
                            again
                        } else {
                            Verdict::new(
                                "contradiction",
                                format!(
                                    "{evidence}: the transition table refuses {} from {}",
                                    to, ledger[i].status
                                ),
                                None,
                            )
                        };
                    }
                    ApplyOutcome::NotFound => {
                        verdict = Verdict::new(
                            "unknown_here",
                            format!("{evidence}: payment `{}` vanished", ledger[i].id),
                            None,
                        );
                    }
                }
            }
            *self.counts.entry(verdict.outcome.to_string()).or_default() += 1;
            if verdict.outcome != "matched" && verdict.outcome != "ignored" {
                kept.push(ReconLine {
                    line: Some(line.line as i64),
                    kind: line.kind.as_str().into(),
                    provider_ref: line.provider_ref.clone(),
                    amount: line.amount,
                    currency: line.currency.clone(),
                    outcome: verdict.outcome.into(),
                    reason: verdict.reason,
                    payment_id: found.map(|i| ledger[i].id.clone()),
                });
            }
        }
        store.recon_add_lines(self.run_id, &kept).await?;
        if self.import.period.is_some() {
            // Only the payments a charge, refund or chargeback line was
            // matched to: a fee line, or a second reference of a line
            // matched by its first, does not list a payment.
            let mut ids: Vec<&str> = page
                .iter()
                .zip(&found)
                .filter(|(l, _)| l.kind.names_a_payment())
                .filter_map(|(_, f)| f.map(|i| ledger[i].id.as_str()))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            store.recon_seen(self.run_id, &ids).await?;
        }
        Ok(())
    }

    /// The payments that succeeded here within `period` and that no line
    /// of the report named.
    async fn absent(&mut self, period: Period) -> Result<(), ReconcileError> {
        let (store, provider) = (self.store, self.import.provider);
        let scope = self.import.owner.report(provider);
        let mut after = String::new();
        loop {
            let page = store
                .recon_absent(
                    self.run_id,
                    &scope,
                    (period.from, period.until),
                    &after,
                    PAGE as u32,
                )
                .await?;
            let Some(last) = page.last() else { break };
            after = last.id.clone();
            let kept: Vec<ReconLine> = page
                .iter()
                .map(|p| ReconLine {
                    line: None,
                    kind: "charge".into(),
                    provider_ref: p.provider_ref.clone(),
                    amount: p.amount,
                    currency: p.currency.clone(),
                    outcome: "missing_from_report".into(),
                    reason: format!(
                        "succeeded here at {} but absent from {provider} settlement report {} \
                         (period {} to {})",
                        p.finalized_at.map_or_else(String::new, |t| t.to_rfc3339()),
                        self.import.name,
                        period.from.to_rfc3339(),
                        period.until.to_rfc3339(),
                    ),
                    payment_id: Some(p.id.clone()),
                })
                .collect();
            *self.counts.entry("missing_from_report".into()).or_default() += kept.len() as i64;
            store.recon_add_lines(self.run_id, &kept).await?;
        }
        store.recon_forget_seen(self.run_id).await?;
        Ok(())
    }
}

/// What a line means, before anything is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `matched`, `applied`, `reversed`, `amount_mismatch`,
    /// `partial_refund`, `contradiction`, `unknown_here` or `ignored`.
    pub outcome: &'static str,
    /// Kept with the line (empty for `matched` and `ignored`).
    pub reason: String,
    /// The status to apply through `apply`, if any.
    pub apply: Option<Status>,
}

impl Verdict {
    fn new(outcome: &'static str, reason: String, apply: Option<Status>) -> Self {
        Verdict {
            outcome,
            reason,
            apply,
        }
    }
}

/// Decide one line against the payment it names (`None`: no such payment
/// here). Pure, so every row of the table in the module's documentation is
/// a unit test.
pub fn decide(evidence: &str, line: &SettlementLine, found: Option<&Ledger>) -> Verdict {
    if line.kind == LineKind::Fee && found.is_some() {
        // A fee on a line of its own, tied to its payment.
        return Verdict::new("matched", String::new(), None);
    }
    if !line.kind.names_a_payment() {
        return Verdict::new("ignored", String::new(), None);
    }
    let Some(p) = found else {
        let what = match line.kind {
            LineKind::Charge => "the provider settled a payment",
            _ => "the provider recorded a refund or chargeback of a payment",
        };
        return Verdict::new(
            "unknown_here",
            format!("{evidence}: {what} finality does not know (never registered?)"),
            None,
        );
    };
    match line.kind {
        LineKind::Charge => {
            if line.amount != p.amount || line.currency != p.currency {
                let reason = format!(
                    "{evidence}: settled {} {} but registered as {} {}; not applied",
                    line.amount, line.currency, p.amount, p.currency
                );
                let review = (!p.status.is_final() && p.status != Status::NeedsReview)
                    .then_some(Status::NeedsReview);
                return Verdict::new("amount_mismatch", reason, review);
            }
            match p.status {
                Status::Succeeded | Status::Reversed => {
                    Verdict::new("matched", String::new(), None)
                }
                Status::Failed | Status::Cancelled => Verdict::new(
                    "contradiction",
                    format!(
                        "{evidence}: the provider settled it; finality has it {}",
                        p.status
                    ),
                    None,
                ),
                _ => Verdict::new(
                    "applied",
                    format!("settled: {evidence}"),
                    Some(Status::Succeeded),
                ),
            }
        }
        _ => {
            let what = line.kind.as_str();
            if line.amount.abs() != p.amount || line.currency != p.currency {
                // Part of the money: the payment stays as it is (finality
                // has no partly-reversed status); a person reads it.
                return Verdict::new(
                    "partial_refund",
                    format!(
                        "{evidence}: a {what} of {} {} on a payment of {} {}; not applied",
                        line.amount.abs(),
                        line.currency,
                        p.amount,
                        p.currency
                    ),
                    None,
                );
            }
            match p.status {
                Status::Reversed => Verdict::new("matched", String::new(), None),
                Status::Succeeded => Verdict::new(
                    "reversed",
                    format!("{what}: {evidence}"),
                    Some(Status::Reversed),
                ),
                s => Verdict::new(
                    "contradiction",
                    format!("{evidence}: a {what} of a payment that is {s} here"),
                    None,
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: LineKind, amount: i64) -> SettlementLine {
        SettlementLine {
            line: 2,
            kind,
            provider_ref: Some("psp_1".into()),
            alt_ref: None,
            merchant_ref: None,
            amount,
            currency: "EUR".into(),
            fee: None,
            account: None,
        }
    }

    fn ledger(status: Status) -> Ledger {
        Ledger {
            id: "p1".into(),
            provider_ref: Some("psp_1".into()),
            merchant_ref: None,
            status,
            amount: 1250,
            currency: "EUR".into(),
            finalized_at: None,
        }
    }

    #[test]
    fn every_row_of_the_table() {
        use LineKind::*;
        use Status::*;
        let cases = [
            (Charge, 1250, Some(Succeeded), "matched", None),
            (Charge, 1250, Some(Reversed), "matched", None),
            (Charge, 1250, Some(Pending), "applied", Some(Succeeded)),
            (Charge, 1250, Some(NeedsReview), "applied", Some(Succeeded)),
            (
                Charge,
                1300,
                Some(Pending),
                "amount_mismatch",
                Some(NeedsReview),
            ),
            (Charge, 1300, Some(NeedsReview), "amount_mismatch", None),
            (Charge, 1300, Some(Succeeded), "amount_mismatch", None),
            (Charge, 1250, Some(Failed), "contradiction", None),
            (Charge, 1250, None, "unknown_here", None),
            (Refund, -1250, Some(Succeeded), "reversed", Some(Reversed)),
            (
                Chargeback,
                -1250,
                Some(Succeeded),
                "reversed",
                Some(Reversed),
            ),
            (Refund, -1250, Some(Reversed), "matched", None),
            (Refund, -250, Some(Succeeded), "partial_refund", None),
            (Chargeback, -1250, None, "unknown_here", None),
            (Refund, -1250, Some(Pending), "contradiction", None),
            (Refund, -1250, None, "unknown_here", None),
            (Fee, -30, Some(Succeeded), "matched", None),
            (Fee, -30, None, "ignored", None),
            (Payout, -100_000, None, "ignored", None),
        ];
        for (kind, amount, status, outcome, apply) in cases {
            let found = status.map(ledger);
            let v = decide("r.csv, line 2", &line(kind, amount), found.as_ref());
            assert_eq!(
                (v.outcome, v.apply),
                (outcome, apply),
                "{kind:?} {amount} against {status:?}"
            );
            assert_eq!(
                v.reason.is_empty(),
                matches!(outcome, "matched" | "ignored"),
                "{v:?}"
            );
        }
    }

    #[test]
    fn periods_read_dates_and_times_and_refuse_the_rest() {
        let p: Period = "2026-11-30..2026-12-01".parse().unwrap();
        assert_eq!(p.until.0 - p.from.0, 86_400_000);
        assert_eq!(p.from.to_rfc3339(), "2026-11-30T00:00:00.000Z");
        let p: Period = "2026-11-30T12:00:00+01:00..2026-11-30T13:00:00Z"
            .parse()
            .unwrap();
        assert_eq!(p.until.0 - p.from.0, 7_200_000);
        for bad in ["2026-11-30", "2026-12-01..2026-11-30", "yesterday..today"] {
            let e = bad.parse::<Period>().unwrap_err().to_string();
            assert!(e.contains('`'), "{bad}: {e}");
        }
    }
}
