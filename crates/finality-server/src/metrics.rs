//! Prometheus metrics: the binary installs one process-wide recorder
//! ([`install`]) and hands its handle to [`crate::AppState`]; the library
//! never installs a global on its own, so an embedding application keeps
//! its recorder.
//!
//! - [`CATALOG`]: every series finality exports, with its help text (a
//!   `# HELP` line each) and unit; `docs/OPERATIONS.md` lists the same.
//! - Histograms, never summaries, so they add up across nodes.
//! - The cluster's state gauges (open payments, review queue, poll backlog,
//!   inbox, feed lag, nodes) need queries: [`ClusterGauges`] computes them
//!   on a timer, on one node at a time (a lease), never per scrape.

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use finality_core::{Clock, Timestamp};
use finality_store::{Cursors, Gauges, Store};
use metrics::Unit;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What kind of series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One exported series: name, kind, unit, help text.
pub type Entry = (&'static str, Kind, Unit, &'static str);

/// Every series finality exports. A test scrapes a running server and
/// checks that each one the dashboard and alert rules use is here, exported,
/// with its help text.
pub const CATALOG: &[Entry] = &[
    // Polls and providers.
    ("finality_polls_total", Kind::Counter, Unit::Count, "Status queries made, by provider and outcome (a status, or an error class)."),
    ("finality_provider_call_seconds", Kind::Histogram, Unit::Seconds, "Time a status query took, by provider and outcome (ok, or the error class)."),
    ("finality_poll_lateness_seconds", Kind::Histogram, Unit::Seconds, "How late a poll started after it fell due, by provider."),
    ("finality_poll_leases_held", Kind::Gauge, Unit::Count, "Polls this node holds a lease on (executing or waiting for their time)."),
    ("finality_leases_released_total", Kind::Counter, Unit::Count, "Poll leases of a stopped node handed back, by reason (node_stopped)."),
    ("finality_provider_circuit_open", Kind::Gauge, Unit::Count, "1 while a provider's circuit breaker is open (its polls wait), by provider."),
    ("finality_provider_paused_until_seconds", Kind::Gauge, Unit::Seconds, "Unix time until which a provider's polls are paused, by provider and the error class that paused them (permanent, rate_limited); 0 or past: not paused."),
    ("finality_bulk_requests_total", Kind::Counter, Unit::Count, "Bulk status requests sent, by provider."),
    ("finality_bulk_request_size", Kind::Histogram, Unit::Count, "Payments asked about per bulk status request, by provider."),
    ("finality_catch_up_calls_total", Kind::Counter, Unit::Count, "Event-list pages read from a provider, by provider."),
    ("finality_catch_up_events_total", Kind::Counter, Unit::Count, "Events read from a provider's event list, by provider."),
    ("finality_catch_up_errors_total", Kind::Counter, Unit::Count, "Failed event-list reads, by provider."),
    ("finality_catch_up_restarts_total", Kind::Counter, Unit::Count, "Event-list reads restarted from the newest event (cursor lost), by provider."),
    ("finality_time_to_final_seconds", Kind::Histogram, Unit::Seconds, "From registration to the final status, by provider and by what settled it (webhook, status_query, sweep, manual)."),
    // Connections and authentication.
    ("finality_connections_reserved_total", Kind::Counter, Unit::Count, "Connections taken into the reserve (server.max_connections less the reserve were open, or the address was at its cap): each serves one request, and only /healthz, /readyz or a request with a credential."),
    ("finality_connections_refused_total", Kind::Counter, Unit::Count, "Connections closed at once because server.max_connections were open, or server.max_connections_per_address from that address."),
    ("finality_connections_idle_closed_total", Kind::Counter, Unit::Count, "Connections closed after server.idle_timeout with no request in flight (HTTP/1.1 and HTTP/2 alike)."),
    ("finality_auth_failures_total", Kind::Counter, Unit::Count, "Requests refused for a missing or unknown token, by surface (api, console)."),
    ("finality_refused_actions_total", Kind::Counter, Unit::Count, "Actions a caller's role does not allow (403), each also an audit record."),
    ("finality_auth_throttled_total", Kind::Counter, Unit::Count, "Failed authentications answered 429: their source or token name was over its limit, by surface."),
    // Webhooks.
    ("finality_webhooks_received_total", Kind::Counter, Unit::Count, "Webhooks verified and stored, by provider."),
    ("finality_webhooks_rejected_total", Kind::Counter, Unit::Count, "Webhooks refused (bad signature, stale, malformed), by provider and reason."),
    ("finality_webhooks_duplicates_total", Kind::Counter, Unit::Count, "Webhooks already stored (a provider's redelivery), by provider."),
    ("finality_webhooks_ignored_total", Kind::Counter, Unit::Count, "Webhooks that changed nothing (stale, duplicate, not about a payment), by provider."),
    ("finality_webhooks_nudges_total", Kind::Counter, Unit::Count, "Webhooks without a status that brought a poll forward, by provider."),
    ("finality_webhooks_review_total", Kind::Counter, Unit::Count, "Webhooks kept for a person, by provider."),
    ("finality_webhooks_parked_total", Kind::Counter, Unit::Count, "Verified webhooks of an account the provider does not have (or has disabled), kept parked until it is added, by provider."),
    ("finality_webhooks_unparked_total", Kind::Counter, Unit::Count, "Parked webhooks sent to processing once their account came."),
    ("finality_webhooks_other_mode_total", Kind::Counter, Unit::Count, "Verified webhooks of the provider's other environment (test at live, live at test), kept as ignored, by provider."),
    ("finality_webhooks_applied_total", Kind::Counter, Unit::Count, "Webhooks whose status was applied, by provider."),
    ("finality_webhooks_orphaned_total", Kind::Counter, Unit::Count, "Webhooks for payments nobody registered (yet), by provider."),
    ("finality_webhook_ack_seconds", Kind::Histogram, Unit::Seconds, "From a webhook's arrival to its acknowledgement (stored durably), by provider."),
    ("finality_inbox_batch_rows", Kind::Histogram, Unit::Count, "Webhooks stored per group commit of the inbox."),
    ("finality_webhook_outage", Kind::Gauge, Unit::Count, "1 while a provider's webhooks are believed down (polls on its outage schedule), by provider."),
    ("finality_http_refused_total", Kind::Counter, Unit::Count, "HTTP requests refused before a handler (too large, too slow, overloaded), by reason."),
    // A read replica.
    ("finality_replica_lag_seconds", Kind::Gauge, Unit::Seconds, "How far the read replica is behind the primary: the age of the oldest primary WAL position it has not replayed (0: caught up)."),
    ("finality_replica_serving", Kind::Gauge, Unit::Count, "1 while the read replica serves the API's reads; 0 while it lags past read_max_lag or is down (reads go to the primary)."),
    ("finality_api_reads_total", Kind::Counter, Unit::Count, "API and console reads on a node with a read replica, by where they were served from (replica, primary)."),
    // Events out.
    ("finality_event_deliveries_total", Kind::Counter, Unit::Count, "Event deliveries tried, by destination and result."),
    ("finality_event_destination_failing", Kind::Gauge, Unit::Count, "1 while a destination's head event keeps failing, by destination."),
    // Reconciliation.
    ("finality_sweep_findings_total", Kind::Counter, Unit::Count, "What the reconciliation sweep found, by kind."),
    ("finality_reconciliation_lines_total", Kind::Counter, Unit::Count, "Settlement-report lines (and payments missing from reports) by outcome."),
    ("finality_settlement_reports_total", Kind::Counter, Unit::Count, "Settlement-report days fetched, by provider and outcome (imported, already_imported, not_ready, refused, failed)."),
    ("finality_settlement_report_age_seconds", Kind::Gauge, Unit::Seconds, "Since the end of the newest day whose settlement report was imported, by provider, and by account for an account's own reports (on the node holding the fetch lease)."),
    ("finality_settlement_report_overdue_seconds", Kind::Gauge, Unit::Seconds, "How long the oldest missing settlement report is past its documented ready time and grace, by provider, and by account for an account's own reports; 0 when none is (and on nodes not holding the fetch lease)."),
    ("finality_settlement_report_discrepancies", Kind::Gauge, Unit::Count, "Lines of the last imported settlement report that did not agree (neither matched, applied nor ignored), by provider, and by account for an account's own reports."),
    ("finality_settlement_report_gaps", Kind::Gauge, Unit::Count, "Batch numbers never announced between the lowest and highest a provider announced (Adyen's REPORT_AVAILABLE), by provider."),
    // Retention.
    ("finality_retention_removed_total", Kind::Counter, Unit::Count, "Rows retention archived and then deleted (bodies dropped, for webhook_bodies), by kind."),
    // The cluster's state, computed on a timer by one node.
    ("finality_payments_open", Kind::Gauge, Unit::Count, "Open payments (pending, processing, needs_review), by provider and status."),
    ("finality_review_queue", Kind::Gauge, Unit::Count, "Payments waiting for a person, by reason class (gave_up, provider_errors, webhook, settlement_report, sweep, manual, other, none)."),
    ("finality_polls_due", Kind::Gauge, Unit::Count, "Poll jobs due now (an expired lease counts as due)."),
    ("finality_polls_overdue", Kind::Gauge, Unit::Count, "Poll jobs due for longer than metrics.overdue_after."),
    ("finality_poll_oldest_due_age_seconds", Kind::Gauge, Unit::Seconds, "How long the oldest due poll has been waiting (0 when none is due)."),
    ("finality_inbox_webhooks", Kind::Gauge, Unit::Count, "Webhooks in the inbox by state: received (not yet applied), failed (retrying), orphaned (no payment registered)."),
    ("finality_events_unsequenced", Kind::Gauge, Unit::Count, "Committed status changes not yet given a feed position."),
    ("finality_event_destination_behind", Kind::Gauge, Unit::Count, "Events not yet delivered to a destination, by destination."),
    ("finality_event_destination_oldest_age_seconds", Kind::Gauge, Unit::Seconds, "Age of the oldest event not yet delivered to a destination (0: none), by destination."),
    ("finality_nodes_live", Kind::Gauge, Unit::Count, "Nodes whose heartbeat is recent."),
    ("finality_cluster_gauges_updated_seconds", Kind::Gauge, Unit::Seconds, "Unix time the cluster gauges were last computed, on the node that computes them (0 elsewhere)."),
];

/// Histogram buckets by what is measured.
const FAST: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
const TIME_TO_FINAL: &[f64] = &[
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
    259200.0,
];
/// Lateness: milliseconds when healthy, minutes in a backlog.
const LATENESS: &[f64] = &[
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];
const SIZES: &[f64] = &[1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Install the recorder once per process (several servers in one test
/// process share it). `None` if another recorder was installed first.
pub fn install() -> Option<PrometheusHandle> {
    handle().cloned()
}

fn handle() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let installed = PrometheusBuilder::new()
                .set_buckets(FAST)
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("finality_time_to_final_seconds".into()),
                        TIME_TO_FINAL,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("finality_poll_lateness_seconds".into()),
                        LATENESS,
                    )
                })
                .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_size".into()), SIZES))
                .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_rows".into()), SIZES))
                .and_then(|b| b.install_recorder())
                .map_err(|e| tracing::warn!(error = %e, "metrics recorder not installed"))
                .ok();
            if installed.is_some() {
                describe();
            }
            installed
        })
        .as_ref()
}

/// Give every series its help text and unit.
fn describe() {
    for &(name, kind, unit, help) in CATALOG {
        match kind {
            Kind::Counter => metrics::describe_counter!(name, unit, help),
            Kind::Gauge => metrics::describe_gauge!(name, unit, help),
            Kind::Histogram => metrics::describe_histogram!(name, unit, help),
        }
    }
}

pub(crate) async fn render(
    axum::extract::State(app): axum::extract::State<crate::App>,
) -> impl IntoResponse {
    let body = app.metrics.as_ref().map(|h| h.render()).unwrap_or_default();
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}

/// Export the per-provider and per-destination state gauges (and the
/// counter an alert takes the increase of) at 0 from the start, so a dashboard and an alert see "healthy" rather than "no data"
/// before the first incident.
pub fn init_series<'a>(providers: impl Iterator<Item = &'a str>, destinations: &[String]) {
    for p in providers {
        for name in [
            "finality_provider_circuit_open",
            "finality_provider_paused_until_seconds",
            "finality_webhook_outage",
        ] {
            metrics::gauge!(name, "provider" => p.to_string()).set(0.0);
        }
        // `increase()` over a series that appears with its first 1 misses
        // that 1: the review alert would stay quiet for the first webhook
        // kept for a person.
        metrics::counter!("finality_webhooks_review_total", "provider" => p.to_string())
            .absolute(0);
        // The parked alert likewise (a parked webhook's count is added to).
        metrics::counter!("finality_webhooks_parked_total", "provider" => p.to_string())
            .increment(0);
        // Received and duplicates likewise (a webhook handler records
        // neither when its count is zero); added to, never reset.
        for name in [
            "finality_webhooks_received_total",
            "finality_webhooks_duplicates_total",
        ] {
            metrics::counter!(name, "provider" => p.to_string()).increment(0);
        }
        // Settlement reports: none overdue, none refused, no discrepancy
        // (also true of a provider whose reports are imported by hand).
        for name in [
            "finality_settlement_report_overdue_seconds",
            "finality_settlement_report_discrepancies",
            "finality_settlement_report_gaps",
        ] {
            metrics::gauge!(name, "provider" => p.to_string()).set(0.0);
        }
        metrics::counter!("finality_settlement_reports_total", "provider" => p.to_string(), "outcome" => "refused")
            .absolute(0);
    }
    for d in destinations {
        metrics::gauge!("finality_event_destination_failing", "destination" => d.clone()).set(0.0);
    }
    // 0 until this node computes the gauges: with none computing them
    // anywhere, `FinalityClusterGaugesStale` sees 0, not "no data".
    metrics::gauge!("finality_cluster_gauges_updated_seconds").set(0.0);
    // Seen at 0 before the first refusal, so a rate over it starts there.
    metrics::counter!("finality_refused_actions_total").increment(0);
}

/// Drain the histograms' samples into their buckets every few seconds, so
/// memory stays flat when nothing scrapes `/metrics` (the exporter keeps
/// samples until a render or an upkeep).
pub fn spawn_upkeep(
    handle: PrometheusHandle,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(5)) => handle.run_upkeep(),
                _ = shutdown.cancelled() => return,
            }
        }
    })
}

/// `[metrics]` in `finality.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// How often one node computes the cluster gauges (each a few counts
    /// over indexes).
    #[serde(with = "humantime_serde")]
    pub gauges_every: Duration,
    /// A due poll waiting longer than this counts as overdue.
    #[serde(with = "humantime_serde")]
    pub overdue_after: Duration,
    /// A node whose heartbeat is older than this is not counted live.
    #[serde(with = "humantime_serde")]
    pub node_silent_after: Duration,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            gauges_every: Duration::from_secs(30),
            overdue_after: Duration::from_secs(60),
            node_silent_after: Duration::from_secs(60),
        }
    }
}

/// The lease that keeps the cluster gauges to one node at a time (a row of
/// `provider_cursors`, as the sweep's).
pub const GAUGES_LEASE: &str = "finality:gauges";

/// Every value [`reason_class`] gives.
pub const REASON_CLASSES: &[&str] = &[
    "gave_up",
    "provider_errors",
    "settlement_report",
    "sweep",
    "webhook",
    "manual",
    "other",
    "none",
];

/// What a review reason is, as a label: reasons are free text (amounts,
/// notes), labels must be a small fixed set.
pub fn reason_class(reason: Option<&str>) -> &'static str {
    let Some(r) = reason else { return "none" };
    if r.contains("in a row failed") {
        "provider_errors"
    } else if r.starts_with("gave up") || r.starts_with("out of") {
        "gave_up"
    } else if r.contains("settlement report") {
        "settlement_report"
    } else if r.starts_with("still open") {
        "sweep"
    } else if r.contains("webhook") {
        "webhook"
    } else if r.starts_with("manual") {
        "manual"
    } else {
        "other"
    }
}

fn to_labels(labels: &[(&'static str, String)]) -> Vec<metrics::Label> {
    labels
        .iter()
        .map(|(k, v)| metrics::Label::new(*k, v.clone()))
        .collect()
}

/// Computes the cluster gauges on one node at a time; the others zero what
/// they exported when they held the lease, so `max` across nodes is right.
pub struct ClusterGauges<S: ?Sized = dyn Store> {
    /// Configured providers: each gets its open-payment series, 0 or not.
    providers: Vec<String>,
    /// The roles the gauges use: the lease that picks one node, the reads.
    store: Arc<S>,
    clock: Arc<dyn Clock>,
    cfg: MetricsConfig,
    holder: String,
    /// Label sets this node has set, to zero them when it stops holding.
    set: BTreeSet<(&'static str, Vec<(&'static str, String)>)>,
}

impl<S: ?Sized + Cursors + Gauges + 'static> ClusterGauges<S> {
    pub fn new(
        store: Arc<S>,
        clock: Arc<dyn Clock>,
        cfg: MetricsConfig,
        holder: &str,
        providers: Vec<String>,
    ) -> Self {
        ClusterGauges {
            providers,
            store,
            clock,
            cfg,
            holder: holder.to_string(),
            set: BTreeSet::new(),
        }
    }

    fn gauge(&mut self, name: &'static str, labels: Vec<(&'static str, String)>, v: f64) {
        metrics::gauge!(name, to_labels(&labels)).set(v);
        self.set.insert((name, labels));
    }

    /// One round: compute and export if this node holds the lease, else
    /// zero what it exported before. Returns whether it computed.
    pub async fn run_once(&mut self) -> finality_store::Result<bool> {
        let now = self.clock.now();
        let until = now.plus(self.cfg.gauges_every.max(Duration::from_secs(1)) * 3);
        let held = self
            .store
            .cursor_take(GAUGES_LEASE, &self.holder, now, until)
            .await?
            .is_some();
        if !held {
            self.zero_all();
            return Ok(false);
        }
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let g = self
            .store
            .cluster_gauges(
                now,
                Timestamp(now.0 - ms(self.cfg.overdue_after)),
                Timestamp(now.0 - ms(self.cfg.node_silent_after)),
            )
            .await?;
        // A label set that disappeared (a provider's last open payment
        // settled) goes to 0 rather than keeping its last value.
        let before = std::mem::take(&mut self.set);
        // Every configured provider and open status, 0 when none: "no
        // data" must not read as "nothing open".
        let mut open: std::collections::BTreeMap<(String, String), i64> = Default::default();
        for p in &self.providers {
            for st in ["pending", "processing", "needs_review"] {
                open.insert((p.clone(), st.to_string()), 0);
            }
        }
        for (provider, status, n) in &g.open {
            open.insert((provider.clone(), status.clone()), *n);
        }
        for ((provider, status), n) in open {
            self.gauge(
                "finality_payments_open",
                vec![("provider", provider), ("status", status)],
                n as f64,
            );
        }
        let mut reasons: std::collections::BTreeMap<&'static str, i64> =
            REASON_CLASSES.iter().map(|c| (*c, 0)).collect();
        for (reason, n) in &g.review {
            *reasons.entry(reason_class(reason.as_deref())).or_default() += n;
        }
        for (class, n) in reasons {
            self.gauge(
                "finality_review_queue",
                vec![("reason", class.to_string())],
                n as f64,
            );
        }
        self.gauge("finality_polls_due", vec![], g.polls_due as f64);
        self.gauge("finality_polls_overdue", vec![], g.polls_overdue as f64);
        let oldest = g.oldest_due_at.map_or(0.0, |t| now.since(t).as_secs_f64());
        self.gauge("finality_poll_oldest_due_age_seconds", vec![], oldest);
        for state in ["received", "failed", "orphaned"] {
            let n = g
                .inbox
                .iter()
                .find(|(s, _)| s == state)
                .map_or(0, |(_, n)| *n);
            self.gauge(
                "finality_inbox_webhooks",
                vec![("state", state.to_string())],
                n as f64,
            );
        }
        self.gauge("finality_events_unsequenced", vec![], g.unsequenced as f64);
        for (name, behind, oldest) in &g.destinations {
            self.gauge(
                "finality_event_destination_behind",
                vec![("destination", name.clone())],
                *behind as f64,
            );
            let age = match oldest {
                Some(t) if *behind > 0 => now.since(*t).as_secs_f64(),
                _ => 0.0,
            };
            self.gauge(
                "finality_event_destination_oldest_age_seconds",
                vec![("destination", name.clone())],
                age,
            );
        }
        self.gauge("finality_nodes_live", vec![], g.nodes as f64);
        self.gauge(
            "finality_cluster_gauges_updated_seconds",
            vec![],
            now.0 as f64 / 1000.0,
        );
        for (name, labels) in before.difference(&self.set) {
            metrics::gauge!(*name, to_labels(labels)).set(0.0);
        }
        Ok(true)
    }

    /// Zero everything this node exported: another node holds the lease,
    /// or this one cannot tell (the database fails), and its last values
    /// must not outlive its knowledge under `max`.
    fn zero_all(&mut self) {
        for (name, labels) in std::mem::take(&mut self.set) {
            metrics::gauge!(name, to_labels(&labels)).set(0.0);
        }
    }

    /// Every `gauges_every` (at least a second) until `shutdown`.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let every = self.cfg.gauges_every.max(Duration::from_secs(1));
        loop {
            if let Err(e) = self.run_once().await {
                self.zero_all();
                tracing::warn!(error = %e, "computing the cluster gauges failed; next round as scheduled");
            }
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = shutdown.cancelled() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_classes_are_a_small_fixed_set() {
        assert_eq!(
            reason_class(Some("gave up after 40 status queries")),
            "gave_up"
        );
        assert_eq!(
            reason_class(Some(
                "gave up after 5 status queries in a row failed (timeouts or server errors)"
            )),
            "provider_errors"
        );
        assert_eq!(
            reason_class(Some("adyen settlement report b.csv, line 4: settled 1300 EUR but registered as 1250 EUR; not applied")),
            "settlement_report"
        );
        assert_eq!(
            reason_class(Some(
                "still open 10d after registration, past sim's give-up window"
            )),
            "sweep"
        );
        assert_eq!(reason_class(None), "none");
        assert_eq!(reason_class(Some("anything a person typed")), "other");
    }

    #[test]
    fn every_series_is_named_once_with_help_and_finality_prefix() {
        let mut seen = BTreeSet::new();
        for (name, _, _, help) in CATALOG {
            assert!(name.starts_with("finality_"), "{name}");
            assert!(seen.insert(*name), "{name} twice");
            assert!(help.len() > 20 && help.ends_with('.'), "{name}: {help}");
        }
    }
}
