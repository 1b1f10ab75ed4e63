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
    /// The provider's account it belongs to (`None`: the provider's own).
    pub account: Option<String>,
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
    /// With figures per account: the account (`null`: the provider's own
    /// payments); absent with figures per provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub account: Option<Option<String>>,
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

/// Failed provider calls of one provider's account (or the provider's
/// own) of one error class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorCount {
    pub provider: String,
    pub account: Option<String>,
    pub class: String,
    pub n: i64,
}

/// What the figures are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum By {
    #[default]
    Provider,
    /// Each account of a provider apart (the per-institution table a
    /// fund-channel team asks for), the provider's own payments as one more.
    Account,
}

/// Aggregate rows and error counts into one entry per provider (or per
/// provider and account), sorted by name.
pub fn compute(rows: &[StatsRow], errors: &[ErrorCount], by_what: By) -> Vec<ProviderStats> {
    fn key<'a>(by: By, provider: &'a str, account: &'a Option<String>) -> Key<'a> {
        match by {
            By::Provider => (provider, None),
            By::Account => (provider, account.as_deref()),
        }
    }
    type Key<'a> = (&'a str, Option<&'a str>);
    let mut by: BTreeMap<Key<'_>, Vec<&StatsRow>> = BTreeMap::new();
    for r in rows {
        by.entry(key(by_what, &r.provider, &r.account))
            .or_default()
            .push(r);
    }
    for e in errors {
        by.entry(key(by_what, &e.provider, &e.account)).or_default();
    }
    by.into_iter()
        .map(|((provider, account), rows)| {
            let finals: Vec<&&StatsRow> = rows.iter().filter(|r| r.status.is_final()).collect();
            let mut final_by = BTreeMap::new();
            for r in &finals {
                let how = r.source.map_or("unknown", |s| s.as_str());
                *final_by.entry(how.to_string()).or_insert(0) += 1;
            }
            ProviderStats {
                provider: provider.to_string(),
                account: match by_what {
                    By::Provider => None,
                    By::Account => Some(account.map(str::to_string)),
                },
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
                errors: {
                    let mut m = BTreeMap::new();
                    for e in errors
                        .iter()
                        .filter(|e| key(by_what, &e.provider, &e.account) == (provider, account))
                    {
                        *m.entry(e.class.clone()).or_insert(0) += e.n;
                    }
                    m
                },
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
            account: None,
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
        let errors = [ErrorCount {
            provider: "a".into(),
            account: None,
            class: "transient".into(),
            n: 3,
        }];
        let s = compute(&rows, &errors, By::Provider);
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

    /// Per account: each account of a provider apart, the provider's own
    /// payments as one more entry, errors counted where they happened.
    #[test]
    fn figures_per_account() {
        let mut rows = vec![
            row(
                "bakong",
                Status::Succeeded,
                Some(Source::StatusQuery),
                Some(5_000),
                3,
            ),
            row(
                "bakong",
                Status::Succeeded,
                Some(Source::StatusQuery),
                Some(9_000),
                7,
            ),
            row(
                "bakong",
                Status::Succeeded,
                Some(Source::StatusQuery),
                Some(2_000),
                1,
            ),
        ];
        rows[0].account = Some("aba".into());
        rows[1].account = Some("aba".into());
        let errors = [ErrorCount {
            provider: "bakong".into(),
            account: Some("aba".into()),
            class: "transient".into(),
            n: 2,
        }];
        let s = compute(&rows, &errors, By::Account);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].account, Some(None));
        assert_eq!(s[0].queries_until_final.max, Some(1.0));
        assert!(s[0].errors.is_empty());
        assert_eq!(s[1].account, Some(Some("aba".into())));
        assert_eq!(
            (s[1].payments, s[1].queries_until_final.max),
            (2, Some(7.0))
        );
        assert_eq!(s[1].errors.get("transient"), Some(&2));
        let whole = compute(&rows, &errors, By::Provider);
        assert_eq!(
            (whole.len(), whole[0].payments, whole[0].account.clone()),
            (1, 3, None)
        );
    }
}
