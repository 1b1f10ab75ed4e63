//! The pages' templates and the formatting of what they show. Every value
//! a template prints is prepared here as text, so the templates hold only
//! layout (askama escapes all of it, except the SVG charts drawn here).

use askama::Template;
use finality_core::Timestamp;

/// What every signed-in page shows in its header.
pub struct Chrome {
    pub user: String,
    pub role: String,
    pub csrf: String,
    pub nav: &'static str,
    pub flash: Option<String>,
}

#[derive(Template)]
#[template(path = "console/login.html")]
pub struct Login {
    pub next: String,
    pub error: Option<String>,
}

#[derive(Template)]
#[template(path = "console/error.html")]
pub struct ErrorPage {
    pub status: String,
    pub message: String,
    pub back: String,
}

pub struct ReviewRow {
    pub id: String,
    pub href: String,
    pub provider: String,
    pub kind: String,
    pub amount: String,
    pub reason: String,
    pub since: String,
    pub age: String,
}

pub struct CountRow {
    pub reason: String,
    pub n: i64,
    pub href: String,
}

#[derive(Default)]
pub struct FilterView {
    pub provider: String,
    pub kind: String,
    pub reason: String,
    pub min_age: String,
}

#[derive(Template)]
#[template(path = "console/review.html")]
pub struct Review {
    pub chrome: Chrome,
    pub total: i64,
    pub counts: Vec<CountRow>,
    pub providers: Vec<String>,
    pub kinds: Vec<&'static str>,
    pub filter: FilterView,
    pub rows: Vec<ReviewRow>,
    pub next: Option<String>,
    pub can_resolve: bool,
    pub statuses: Vec<&'static str>,
    /// Facts after final waiting for a person (flags), oldest first.
    pub flags: Vec<FlagRow>,
}

pub struct FlagRow {
    pub id: i64,
    pub payment_id: String,
    pub href: String,
    pub reason: String,
    pub opened: String,
    /// `open`, or who closed it and how.
    pub state: String,
}

pub struct PaymentFacts {
    pub id: String,
    /// The id as a URL path segment (ids may hold `%`, `?`, `#`).
    pub path: String,
    pub status: String,
    pub provider: String,
    pub provider_ref: String,
    pub merchant_ref: String,
    pub kind: String,
    pub amount: String,
    pub created: String,
    pub updated: String,
    pub source: String,
    pub finalized: String,
}

pub struct HistRow {
    pub at: String,
    pub from: String,
    pub to: String,
    pub source: String,
    pub event_id: String,
    pub reason: String,
    pub actor: String,
}

pub struct CallRow {
    pub at: String,
    pub outcome: String,
    pub provider_status: String,
    pub error_class: String,
    pub latency: String,
    pub error: String,
}

pub struct CountersView {
    pub authorised: String,
    pub captured: String,
    pub refunded: String,
    pub disputed: String,
    pub dispute_reversed: String,
}

pub struct PieceRow {
    pub kind: &'static str,
    pub id: String,
    pub state: &'static str,
    pub amount: String,
}

pub struct HookRow {
    pub received: String,
    pub provider: String,
    pub event_id: String,
    pub reference: String,
    pub provider_status: String,
    pub state: String,
    pub reason: String,
    pub attempts: u32,
}

pub struct AuditRow {
    pub at: String,
    pub actor: String,
    pub role: String,
    pub action: String,
    pub payment_id: String,
    pub href: String,
    pub detail: String,
    pub outcome: String,
    pub remote: String,
}

#[derive(Template)]
#[template(path = "console/payment.html")]
pub struct PaymentPage {
    pub chrome: Chrome,
    pub p: PaymentFacts,
    pub next_poll: String,
    pub is_final: bool,
    pub can_resolve: bool,
    pub statuses: Vec<&'static str>,
    pub history: Vec<HistRow>,
    /// The counted money, each counter with its currency.
    pub counters: CountersView,
    pub pieces: Vec<PieceRow>,
    pub flags: Vec<FlagRow>,
    pub calls: Vec<CallRow>,
    pub hooks: Vec<HookRow>,
    /// Only for roles that may read the audit trail.
    pub show_audit: bool,
    pub audit: Vec<AuditRow>,
}

#[derive(Template)]
#[template(path = "console/confirm.html")]
pub struct Confirm {
    pub chrome: Chrome,
    pub title: String,
    pub ids: Vec<String>,
    pub status: String,
    pub reason: String,
    pub note: String,
    pub action: String,
    pub back: String,
}

pub struct BulkRow {
    pub id: String,
    pub href: String,
    pub outcome: String,
    pub ok: bool,
}

#[derive(Template)]
#[template(path = "console/bulk_result.html")]
pub struct BulkResult {
    pub chrome: Chrome,
    pub changed: usize,
    pub rows: Vec<BulkRow>,
}

pub struct ProviderView {
    pub name: String,
    pub payments: usize,
    pub open: usize,
    pub in_review: usize,
    pub pause: String,
    pub breaker: String,
    pub webhooks: String,
    pub rate_limit: String,
    pub final_by: String,
    pub queries: String,
    pub time_to_final: String,
    pub errors: String,
}

pub struct SweepView {
    pub finished: String,
    pub holder: String,
    pub scanned: i64,
    pub pass: &'static str,
    pub findings: String,
    pub repaired: i64,
}

pub struct ReconView {
    pub id: i64,
    pub provider: String,
    pub file_name: String,
    pub finished: String,
    pub lines: i64,
    pub counts: String,
}

#[derive(Template)]
#[template(path = "console/providers.html")]
pub struct Providers {
    pub chrome: Chrome,
    pub window: String,
    pub providers: Vec<ProviderView>,
    pub failed: Vec<HookRow>,
    pub orphaned: Vec<HookRow>,
    /// Authentic events kept for a human (another merchant's, other
    /// money, a word no row maps, a fact beside a final payment).
    pub review: Vec<HookRow>,
    pub sweeps: Vec<SweepView>,
    pub reports: Vec<ReconView>,
    /// Each account of each provider: its state and its figures.
    pub accounts: Vec<AccountStatsView>,
    /// The last days of each scheduled settlement report.
    pub days: Vec<SettlementDayView>,
}

/// One provider's day of settlement report: imported, waiting or missing.
pub struct SettlementDayView {
    pub provider: String,
    pub day: String,
    pub state: String,
    pub run: String,
    pub counts: String,
}

/// One account's line on the providers page (the per-institution table).
pub struct AccountStatsView {
    pub provider: String,
    pub account: String,
    pub state: String,
    pub pause: String,
    pub payments: usize,
    pub open: usize,
    pub in_review: usize,
    /// Status queries until final: p50 / p90 / p99 / max.
    pub queries: String,
    /// Time to final: p50 / p99.
    pub time_to_final: String,
    pub errors: String,
}

#[derive(Template)]
#[template(path = "console/audit.html")]
pub struct Audit {
    pub chrome: Chrome,
    pub actor: String,
    pub rows: Vec<AuditRow>,
    pub next: Option<String>,
}

pub struct DestinationRow {
    pub id: String,
    pub name: String,
    pub action: String,
    pub state: String,
    pub paused: bool,
    pub paused_by: String,
    pub delivered_seq: i64,
    pub backlog: i64,
    pub attempts: u32,
    pub last_error: String,
    pub next_attempt: String,
}

pub struct RedeliveryRow {
    pub id: i64,
    pub destination: String,
    pub event_id: String,
    pub requested: String,
    pub outcome: String,
}

#[derive(Template)]
#[template(path = "console/events.html")]
pub struct Events {
    pub chrome: Chrome,
    pub admin: bool,
    pub head: i64,
    pub oldest: String,
    pub rows: Vec<DestinationRow>,
    pub redeliveries: Vec<RedeliveryRow>,
}

pub struct OpView {
    pub anchor: String,
    pub method: String,
    pub path: String,
    pub summary: String,
    pub params: Vec<String>,
    pub body: String,
    pub responses: Vec<String>,
}

pub struct SchemaView {
    pub name: String,
    pub description: String,
    pub fields: Vec<String>,
}

#[derive(Template)]
#[template(path = "console/api.html")]
pub struct Api {
    pub chrome: Chrome,
    pub version: String,
    pub description: String,
    pub ops: Vec<OpView>,
    pub schemas: Vec<SchemaView>,
}

/// `2026-12-01 18:40:12Z`: to the second, in UTC, as on-call reads it.
pub fn time(t: Timestamp) -> String {
    let s = t.to_rfc3339();
    match s.split_once('.') {
        Some((head, _)) => format!("{}Z", head.replacen('T', " ", 1)),
        None => s.replacen('T', " ", 1),
    }
}

pub fn opt_time(t: Option<Timestamp>) -> String {
    t.map(time).unwrap_or_else(|| "—".into())
}

/// `3d 4h`, `2h 5m`, `45s`: the two largest units.
pub fn age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    let (d, h, m) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {}s", s % 60)
    } else {
        format!("{s}s")
    }
}

/// Minor units in major units with the currency's ISO 4217 exponent.
pub fn amount(minor: i64, currency: &str) -> String {
    format!(
        "{} {currency}",
        finality_core::money::decimal_in(minor, currency)
    )
}

pub fn or_dash(v: Option<String>) -> String {
    v.filter(|s| !s.is_empty()).unwrap_or_else(|| "—".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(amount(1250, "USD"), "12.50 USD");
        assert_eq!(amount(1250, "JPY"), "1250 JPY");
        assert_eq!(amount(1250, "KWD"), "1.250 KWD");
        assert_eq!(amount(5, "EUR"), "0.05 EUR");
        assert_eq!(age(45_000), "45s");
        assert_eq!(age(3_900_000), "1h 5m");
        assert_eq!(age(90_000_000), "1d 1h");
        assert_eq!(time(Timestamp(1_700_000_000_123)), "2023-11-14 22:13:20Z");
    }
}

#[derive(Template)]
#[template(path = "console/health.html")]
pub struct Health {
    pub chrome: Chrome,
    pub overdue_after: String,
    pub polls_due: i64,
    pub polls_overdue: i64,
    pub oldest_due: String,
    pub nodes: i64,
    pub review: Vec<(String, i64)>,
    pub open: Vec<(String, String, i64)>,
    pub inbox: Vec<(String, i64)>,
    pub unsequenced: i64,
    pub destinations: Vec<(String, i64, String)>,
}
