//! One row per schedule: the table, the JSON rows and the SVG frontier.

use super::presets::Preset;
use serde_json::{json, Value};
use std::time::Duration;

/// How each payment ended, as the figures need it.
pub struct Outcomes {
    /// Seconds from settlement at the provider to the final status here,
    /// for payments whose webhook was lost.
    pub lost_webhook_detection_s: Vec<f64>,
    /// Settled at the provider within the give-up window, yet sent to review.
    pub undetected: usize,
    pub review: usize,
}

/// The figures of one schedule.
#[derive(Debug, Clone)]
pub struct Row {
    pub schedule: String,
    pub what: String,
    pub payments: usize,
    pub calls_mean: f64,
    pub calls_p50: f64,
    pub calls_p99: f64,
    pub calls_total: u64,
    /// Of `calls_total`, event-list reads (each answers many payments).
    pub list_calls: u64,
    /// `None` when no payment had its webhook lost (or none was detected).
    pub detection_p50: Option<f64>,
    pub detection_p95: Option<f64>,
    pub detection_p99: Option<f64>,
    pub lost_detected: usize,
    pub undetected: usize,
    pub review: usize,
    pub wall: Duration,
}

/// The `q` quantile of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

impl Row {
    pub fn new(
        preset: &Preset,
        payments: usize,
        calls: &[u32],
        calls_total: u64,
        mut o: Outcomes,
        wall: Duration,
    ) -> Row {
        let mut c: Vec<f64> = calls.iter().map(|n| f64::from(*n)).collect();
        c.sort_by(f64::total_cmp);
        o.lost_webhook_detection_s.sort_by(f64::total_cmp);
        let d = &o.lost_webhook_detection_s;
        Row {
            schedule: preset.name.clone(),
            what: preset.what.clone(),
            payments,
            calls_mean: calls_total as f64 / payments.max(1) as f64,
            calls_p50: quantile(&c, 0.50).unwrap_or(0.0),
            calls_p99: quantile(&c, 0.99).unwrap_or(0.0),
            calls_total,
            list_calls: 0,
            detection_p50: quantile(d, 0.50),
            detection_p95: quantile(d, 0.95),
            detection_p99: quantile(d, 0.99),
            lost_detected: d.len(),
            undetected: o.undetected,
            review: o.review,
            wall,
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "schedule": self.schedule,
            "description": self.what,
            "payments": self.payments,
            "calls_total": self.calls_total,
            "list_calls": self.list_calls,
            "calls_per_payment": {"mean": self.calls_mean, "p50": self.calls_p50, "p99": self.calls_p99},
            "lost_webhook_detection_s": {
                "p50": self.detection_p50, "p95": self.detection_p95, "p99": self.detection_p99,
                "count": self.lost_detected,
            },
            "undetected": self.undetected,
            "review": self.review,
            "wall_s": self.wall.as_secs_f64(),
        })
    }
}

pub fn json(rows: &[Row]) -> anyhow::Result<String> {
    let rows: Vec<Value> = rows.iter().map(Row::to_json).collect();
    Ok(serde_json::to_string_pretty(&json!({ "rows": rows }))?)
}

fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |s| format!("{s:.0}"))
}

/// Print one row (with the header before the first).
pub fn print_row(r: &Row, first: bool) {
    if first {
        println!(
            "\n  {:<17} {:>8} {:>5} {:>6}   {:>8} {:>8} {:>8}   {:>10} {:>7} {:>7}",
            "schedule",
            "calls/p",
            "p50",
            "p99",
            "lost p50",
            "p95",
            "p99",
            "undetected",
            "review",
            "wall"
        );
    }
    println!(
        "  {:<17} {:>8.2} {:>5.0} {:>6.0}   {:>7}s {:>7}s {:>7}s   {:>10} {:>6.2}% {:>6.1}s",
        r.schedule,
        r.calls_mean,
        r.calls_p50,
        r.calls_p99,
        secs(r.detection_p50),
        secs(r.detection_p95),
        secs(r.detection_p99),
        r.undetected,
        100.0 * r.review as f64 / r.payments.max(1) as f64,
        r.wall.as_secs_f64()
    );
}

pub const LEGEND: &str =
    "\n  calls/p: provider calls per payment (mean, p50, p99) · lost: seconds from \
settlement at the provider to the final status here, for payments whose webhook was lost · \
undetected: settled at the provider within the give-up window but sent to review · review: share \
of payments in review at the end";

/// The frontier as an SVG scatter: calls per payment (log scale) against
/// lost-webhook detection p95. Written by hand: a handful of labelled
/// points, where a plotting crate would bring a font backend for its text
/// layout.
pub fn svg(rows: &[Row]) -> String {
    let (w, h, m) = (720.0, 420.0, 70.0);
    let pts: Vec<(&Row, f64, f64)> = rows
        .iter()
        .filter_map(|r| r.detection_p95.map(|d| (r, r.calls_mean.max(0.01), d)))
        .collect();
    let (xmin, xmax) = (
        0.01f64.ln(),
        pts.iter().map(|p| p.1).fold(10.0f64, f64::max).ln(),
    );
    let ymax = pts.iter().map(|p| p.2).fold(60.0f64, f64::max) * 1.1;
    let x = |v: f64| m + (v.ln() - xmin) / (xmax - xmin) * (w - 2.0 * m);
    let y = |v: f64| h - m - v / ymax * (h - 2.0 * m);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <line x1=\"{m}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{m}\" y1=\"{m}\" x2=\"{m}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{cx}\" y=\"{xl}\" text-anchor=\"middle\">provider calls per payment (mean, log scale)</text>\n\
         <text x=\"18\" y=\"{cy}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {cy})\">lost-webhook detection p95 (s)</text>\n",
        b = h - m,
        r = w - m,
        cx = w / 2.0,
        xl = h - 25.0,
        cy = h / 2.0
    );
    for tick in [0.01f64, 0.1, 1.0, 10.0, 100.0, 1000.0] {
        if tick.ln() <= xmax {
            s += &format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{tick}</text>\n",
                x(tick),
                h - m + 16.0
            );
        }
    }
    for i in 0..=4 {
        let v = ymax * f64::from(i) / 4.0;
        s += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>\n",
            m - 6.0,
            y(v) + 4.0
        );
    }
    for (r, cx, cy) in &pts {
        s += &format!(
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#1f77b4\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            x(*cx),
            y(*cy),
            x(*cx) + 6.0,
            y(*cy) - 6.0,
            r.schedule
        );
    }
    s + "</svg>\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&v, 1.0), Some(100.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
