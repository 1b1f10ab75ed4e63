//! Per-provider statistics over a window: how many queries a payment takes
//! to reach its final status, how long that takes, how statuses arrive
//! (webhook, poll, sweep, person) and which errors the provider gave. The
//! figures teams otherwise write SQL by hand for, computed once here from
//! rows every backend reads the same way.

use finality_core::{Source, Status, Timestamp};
use serde::Serialize;
use std::collections::BTreeMap;

/// One payment registered in the window, as the statistics need it.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsRow {
    pub provider: String,
    pub status: Status,
    pub source: Option<Source>,
    pub created_at: Timestamp,
    pub finalized_at: Option<Timestamp>,
    /// Provider calls recorded for it.
    pub calls: i64,
}

/// p50 / p90 / p99 / max of a set of values (nearest rank); all `None`
/// when the set is empty.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Quantiles {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl Quantiles {
    fn of(mut v: Vec<f64>) -> Quantiles {
        v.sort_by(f64::total_cmp);
        let q = |f: f64| -> Option<f64> {
            let n = v.len();
            (n > 0).then(|| v[((f * n as f64).ceil() as usize).clamp(1, n) - 1])
        };
        Quantiles {
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            max: v.last().copied(),
        }
    }
}

/// One provider's figures.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderStats {
    pub provider: String,
    /// Payments registered in the window.
    pub payments: usize,
    /// Final ones, by how their final status arrived (`webhook`,
    /// `status_query`, `sweep`, `manual`).
    pub final_by: BTreeMap<String, usize>,
    pub in_review: usize,
    pub open: usize,
    /// Provider calls each final payment took.
    pub queries_until_final: Quantiles,
    /// Seconds from registration to the final status.
    pub time_to_final_s: Quantiles,
    /// Failed provider calls of these payments, by error class.
    pub errors: BTreeMap<String, i64>,
}

/// Aggregate rows and `(provider, error class, count)` into one entry per
/// provider, sorted by name.
pub fn compute(rows: &[StatsRow], errors: &[(String, String, i64)]) -> Vec<ProviderStats> {
    let mut by: BTreeMap<&str, Vec<&StatsRow>> = BTreeMap::new();
    for r in rows {
        by.entry(r.provider.as_str()).or_default().push(r);
    }
    for (p, _, _) in errors {
        by.entry(p.as_str()).or_default();
    }
    by.into_iter()
        .map(|(provider, rows)| {
            let finals: Vec<&&StatsRow> = rows.iter().filter(|r| r.status.is_final()).collect();
            let mut final_by = BTreeMap::new();
            for r in &finals {
                let how = r.source.map_or("unknown", |s| s.as_str());
                *final_by.entry(how.to_string()).or_insert(0) += 1;
            }
            ProviderStats {
                provider: provider.to_string(),
                payments: rows.len(),
                final_by,
                in_review: rows
                    .iter()
                    .filter(|r| r.status == Status::NeedsReview)
                    .count(),
                open: rows
                    .iter()
                    .filter(|r| !r.status.is_final() && r.status != Status::NeedsReview)
                    .count(),
                queries_until_final: Quantiles::of(finals.iter().map(|r| r.calls as f64).collect()),
                time_to_final_s: Quantiles::of(
                    finals
                        .iter()
                        .filter_map(|r| {
                            r.finalized_at
                                .map(|f| (f.0 - r.created_at.0) as f64 / 1000.0)
                        })
                        .collect(),
                ),
                errors: errors
                    .iter()
                    .filter(|(p, _, _)| p == provider)
                    .map(|(_, class, n)| (class.clone(), *n))
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        provider: &str,
        status: Status,
        source: Option<Source>,
        fin: Option<i64>,
        calls: i64,
    ) -> StatsRow {
        StatsRow {
            provider: provider.into(),
            status,
            source,
            created_at: Timestamp(1_000),
            finalized_at: fin.map(Timestamp),
            calls,
        }
    }

    #[test]
    fn figures_per_provider() {
        let rows = [
            row(
                "a",
                Status::Succeeded,
                Some(Source::Webhook),
                Some(3_000),
                0,
            ),
            row(
                "a",
                Status::Failed,
                Some(Source::StatusQuery),
                Some(11_000),
                4,
            ),
            row(
                "a",
                Status::NeedsReview,
                Some(Source::StatusQuery),
                None,
                60,
            ),
            row("a", Status::Pending, None, None, 2),
            row(
                "b",
                Status::Succeeded,
                Some(Source::Manual),
                Some(101_000),
                1,
            ),
        ];
        let s = compute(&rows, &[("a".into(), "transient".into(), 3)]);
        assert_eq!(s.len(), 2);
        let a = &s[0];
        assert_eq!((a.payments, a.in_review, a.open), (4, 1, 1));
        assert_eq!(a.final_by.get("webhook"), Some(&1));
        assert_eq!(a.final_by.get("status_query"), Some(&1));
        assert_eq!(a.queries_until_final.max, Some(4.0));
        assert_eq!(a.queries_until_final.p50, Some(0.0));
        assert_eq!(a.time_to_final_s.max, Some(10.0));
        assert_eq!(a.errors.get("transient"), Some(&3));
        assert_eq!(s[1].time_to_final_s.p50, Some(100.0));
        assert!(s[1].errors.is_empty());
    }
}
