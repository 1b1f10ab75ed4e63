//! The providers page: health, pauses, breakers, webhooks kept for review,
//! and queries and time until final per provider and per account.

use crate::console::charts::{bars, Bar};
use crate::console::pages::respond::{api_error, chrome, render};
use crate::console::pages::review::hook_row;
use crate::console::session::Session;
use crate::console::views::*;
use crate::replica::Reads;
use crate::{App, AppState};
use axum::extract::{Query, State};
use axum::response::Response;
use finality_core::Timestamp;
use finality_store::stats::{By, ProviderStats};
use finality_store::InboxState;
use std::collections::HashMap;

pub(crate) fn quantile_bars(
    q: &finality_store::stats::Quantiles,
    fmt: impl Fn(f64) -> String,
) -> Vec<Bar> {
    [
        ("p50", q.p50),
        ("p90", q.p90),
        ("p99", q.p99),
        ("max", q.max),
    ]
    .into_iter()
    .filter_map(|(label, v)| {
        v.map(|v| Bar {
            label: label.into(),
            value: v,
            text: fmt(v),
        })
    })
    .collect()
}

pub async fn providers(
    State(app): State<App>,
    reads: Reads,
    s: Session,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let back = "/console/providers";
    let window = q
        .get("window")
        .map(|w| w.trim().to_string())
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| "24h".into());
    let stats = match crate::stats::compute(&app, &*reads.store, Some(&window), By::Provider).await
    {
        Ok(s) => s,
        Err(e) => return api_error(e, "/console/review"),
    };
    let by_account =
        match crate::stats::compute(&app, &*reads.store, Some(&window), By::Account).await {
            Ok(s) => s.providers,
            Err(e) => return api_error(e, "/console/review"),
        };
    let (failed, orphaned, review, sweeps, reports) = match tokio::try_join!(
        reads.store.inbox_in_state(InboxState::Failed, None, 50),
        reads.store.inbox_in_state(InboxState::Orphaned, None, 50),
        reads.store.inbox_in_state(InboxState::Review, None, 50),
        reads.store.sweep_runs(10),
        reads.store.recon_runs(200),
    ) {
        Ok(v) => v,
        Err(e) => return api_error(e.into(), back),
    };
    let now = app.clock.now();
    let pauses: HashMap<String, String> = app
        .health
        .pauses(now)
        .into_iter()
        .map(|(name, p)| {
            let text = format!(
                "until {} ({}: {})",
                time(p.until),
                p.class.as_str(),
                p.reason
            );
            (name, text)
        })
        .collect();
    let breakers: HashMap<String, String> = app
        .health
        .breakers()
        .tripped()
        .into_iter()
        .map(|t| {
            (
                t.provider,
                format!("{}, next probe {}", t.state, time(t.until)),
            )
        })
        .collect();
    let outages: HashMap<String, Timestamp> = app.health.webhook_outages().into_iter().collect();
    let mut names: Vec<String> = app.providers.keys().cloned().collect();
    for p in &stats.providers {
        if !names.contains(&p.provider) {
            names.push(p.provider.clone());
        }
    }
    names.sort();
    let views = names
        .into_iter()
        .map(|name| {
            let st = stats.providers.iter().find(|p| p.provider == name);
            let entry = app.providers.get(&name);
            let finals: usize = st.map(|s| s.final_by.values().sum()).unwrap_or(0);
            let final_by = st
                .map(|s| {
                    s.final_by
                        .iter()
                        .map(|(src, n)| Bar {
                            label: src.clone(),
                            value: *n as f64,
                            text: format!("{n} ({:.0}%)", 100.0 * *n as f64 / finals.max(1) as f64),
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            let queries = st
                .map(|s| quantile_bars(&s.queries_until_final, |v| format!("{v:.0}")))
                .unwrap_or_default();
            let ttf = st
                .map(|s| quantile_bars(&s.time_to_final_s, |v| age((v * 1000.0) as i64)))
                .unwrap_or_default();
            let errors = st
                .map(|s| {
                    s.errors
                        .iter()
                        .map(|(class, n)| Bar {
                            label: class.clone(),
                            value: *n as f64,
                            text: n.to_string(),
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            ProviderView {
                payments: st.map_or(0, |s| s.payments),
                open: st.map_or(0, |s| s.open),
                in_review: st.map_or(0, |s| s.in_review),
                pause: pauses.get(&name).cloned().unwrap_or_else(|| "no".into()),
                breaker: breakers
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| "closed".into()),
                webhooks: match (outages.get(&name), entry.map(|e| e.outage_policy.is_some())) {
                    (Some(since), _) => format!(
                        "not arriving since {}: polling on the outage schedule",
                        time(*since)
                    ),
                    (None, Some(true)) => "arriving".into(),
                    _ => "not configured (polls only)".into(),
                },
                rate_limit: entry
                    .and_then(|e| e.rate_limit.as_ref())
                    .map(|b| format!("{} calls/s across nodes, burst {}", b.per_second, b.burst))
                    .unwrap_or_else(|| "none".into()),
                final_by: bars(&format!("{name}: how final statuses arrived"), &final_by),
                queries: bars(&format!("{name}: status queries until final"), &queries),
                time_to_final: bars(&format!("{name}: time to final"), &ttf),
                errors: bars(&format!("{name}: failed calls by error class"), &errors),
                name,
            }
        })
        .collect();
    let accounts = account_rows(&app, &by_account, &pauses);
    let days = settlement_days(&app, &reports, now).await;
    render(&Providers {
        accounts,
        days,
        chrome: chrome(&s, "providers", None),
        window,
        providers: views,
        failed: failed.into_iter().map(hook_row).collect(),
        orphaned: orphaned.into_iter().map(hook_row).collect(),
        review: review.into_iter().map(hook_row).collect(),
        sweeps: sweeps
            .into_iter()
            .map(|r| SweepView {
                finished: time(r.finished_at),
                holder: r.holder,
                scanned: r.scanned,
                pass: if r.pass_complete { "yes" } else { "continues" },
                findings: if r.findings.is_empty() {
                    "none".into()
                } else {
                    r.findings
                        .iter()
                        .map(|(k, n)| format!("{k} {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                repaired: r.repaired,
            })
            .collect(),
        reports: reports
            .into_iter()
            .take(10)
            .map(|r| ReconView {
                id: r.id,
                provider: r.provider,
                file_name: r.file_name,
                finished: r
                    .finished_at
                    .map_or_else(|| "unfinished (redone on the next import)".into(), time),
                lines: r.lines,
                counts: r
                    .counts
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
            .collect(),
    })
}

/// Every configured account with its figures, and accounts with payments
/// in the window that are no longer configured.
fn account_rows(
    app: &AppState,
    by_account: &[ProviderStats],
    pauses: &HashMap<String, String>,
) -> Vec<AccountStatsView> {
    let q = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "-".to_string(), f);
    let count = |v: f64| format!("{v:.0}");
    let secs = |v: f64| age((v * 1000.0) as i64);
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for (name, e) in app.providers.iter() {
        for a in e.accounts.all() {
            let state = match (&a.adapter, a.disabled) {
                (_, true) => "disabled".to_string(),
                (Err(why), false) => format!("not set up here: {why}"),
                (Ok(_), false) => "enabled".to_string(),
            };
            rows.push((name.clone(), a.id.clone(), state));
        }
    }
    for st in by_account {
        if let Some(Some(acct)) = &st.account {
            if !rows.iter().any(|(p, a, _)| p == &st.provider && a == acct) {
                rows.push((st.provider.clone(), acct.clone(), "not configured".into()));
            }
        }
    }
    rows.sort();
    rows.into_iter()
        .map(|(provider, account, state)| {
            let st = by_account.iter().find(|s| {
                s.provider == provider
                    && s.account.as_ref().and_then(|a| a.as_deref()) == Some(account.as_str())
            });
            let scope = finality_engine::accounts::scope(&provider, Some(&account));
            let (c, t) = (
                st.map(|s| &s.queries_until_final),
                st.map(|s| &s.time_to_final_s),
            );
            AccountStatsView {
                pause: pauses.get(&scope).cloned().unwrap_or_else(|| "no".into()),
                payments: st.map_or(0, |s| s.payments),
                open: st.map_or(0, |s| s.open),
                in_review: st.map_or(0, |s| s.in_review),
                queries: c.map_or_else(
                    || "-".into(),
                    |c| {
                        format!(
                            "{} / {} / {} / {}",
                            q(c.p50, &count),
                            q(c.p90, &count),
                            q(c.p99, &count),
                            q(c.max, &count)
                        )
                    },
                ),
                time_to_final: t.map_or_else(
                    || "-".into(),
                    |t| format!("{} / {}", q(t.p50, &secs), q(t.p99, &secs)),
                ),
                errors: st
                    .map(|s| {
                        s.errors
                            .iter()
                            .map(|(k, n)| format!("{k} {n}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "none".into()),
                provider,
                account,
                state,
            }
        })
        .collect()
}

fn counts_text(r: &finality_store::reconciliations::ReconRun) -> String {
    r.counts
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The last files a provider announced (Adyen): imported, refused, or
/// still to fetch (missing once past its grace).
async fn announced_files(
    app: &AppState,
    name: &str,
    schedule: &finality_providers::settlement::fetch::ReportSchedule,
    runs: &[finality_store::reconciliations::ReconRun],
    now: Timestamp,
) -> Vec<SettlementDayView> {
    let files = match app.store.files_recent(name, DAYS_SHOWN as u32).await {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(provider = %name, error = %e, "announced settlement reports not read for the console");
            return Vec::new();
        }
    };
    files
        .into_iter()
        .map(|f| {
            let run = f.run_id.and_then(|id| runs.iter().find(|r| r.id == id));
            let due = f.announced_at.plus(schedule.grace);
            let detail = f.detail.clone().unwrap_or_default();
            let state = match f.outcome.as_deref() {
                Some("imported") => "imported".to_string(),
                Some(other) => format!("{other}: {detail}"),
                None if due <= now => format!(
                    "missing (due {}; {} tries: {detail})",
                    time(due),
                    f.attempts
                ),
                None => format!("waiting (missing after {})", time(due)),
            };
            SettlementDayView {
                provider: name.to_string(),
                day: format!("{} (announced {})", f.name, time(f.announced_at)),
                state,
                run: f.run_id.map(|i| i.to_string()).unwrap_or_default(),
                counts: run.map(counts_text).unwrap_or_default(),
            }
        })
        .collect()
}

/// Days of settlement reports shown per provider that fetches them.
const DAYS_SHOWN: usize = 7;

/// The last days of each provider's scheduled reports: imported (with its
/// run and outcomes), waiting (ready, within its grace), or missing.
async fn settlement_days(
    app: &AppState,
    runs: &[finality_store::reconciliations::ReconRun],
    now: Timestamp,
) -> Vec<SettlementDayView> {
    let mut out = Vec::new();
    let mut names: Vec<&String> = app.providers.keys().collect();
    names.sort();
    for name in names {
        let Some(schedule) = app.providers.get(name).and_then(|e| e.settlement.as_ref()) else {
            continue;
        };
        if schedule.announced {
            out.extend(announced_files(app, name, schedule, runs, now).await);
            continue;
        }
        let mut next = Some(schedule.newest_ready(now));
        for _ in 0..DAYS_SHOWN {
            let Some(day) = next.filter(|d| schedule.first_day.is_none_or(|f| *d >= f)) else {
                break;
            };
            next = day.pred_opt();
            let file = finality_engine::settlement::import_name(name, &schedule.report, day);
            let run = runs
                .iter()
                .find(|r| &r.provider == name && r.file_name == file);
            let due = schedule.ready(day).plus(schedule.grace);
            let (state, counts, run_id) = match run {
                Some(r) if r.finished_at.is_some() => {
                    ("imported".to_string(), counts_text(r), r.id.to_string())
                }
                Some(r) => ("importing".into(), String::new(), r.id.to_string()),
                None if due <= now => (
                    format!("missing (due {})", time(due)),
                    String::new(),
                    String::new(),
                ),
                None => (
                    format!("waiting (missing after {})", time(due)),
                    String::new(),
                    String::new(),
                ),
            };
            out.push(SettlementDayView {
                provider: name.clone(),
                day: day.to_string(),
                state,
                run: run_id,
                counts,
            });
        }
    }
    out
}
