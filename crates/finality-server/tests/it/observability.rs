//! What an on-call engineer's dashboard and alerts read: after a short run
//! (payments settled by polls, a webhook stored, one refused, events pushed
//! to a destination), `/metrics` exports every series the Grafana dashboard
//! and the Prometheus rules in `ops/` name, each with its `# HELP`, and the
//! timings as histograms (buckets), never summaries.

use super::*;
use crate::webhooks::signed;
use std::collections::BTreeSet;

/// Every `finality_…` name in `text`, histogram suffixes taken off.
fn names_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("finality_") {
        let start = i + at;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        let name = &text[start..end];
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        out.insert(base.to_string());
        i = end;
    }
    out
}

fn ops_file(path: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A receiver of pushed events: 200 to everything.
async fn receiver() -> String {
    let app = axum::Router::new().route("/events", axum::routing::post(|| async { "ok" }));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/events", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_cover_every_series_the_dashboard_and_alerts_use() {
    std::env::set_var("FINALITY_TEST_PUSH_SECRET", WEBHOOK_SECRET);
    let url = receiver().await;
    let app = spawn_app_background(
        testing::sqlite().await,
        SimConfig::deterministic(Duration::from_millis(300)),
        true,
        sim_providers,
        Tokens::shared(TOKEN),
        |b| {
            b.gauges = Some(finality_server::metrics::MetricsConfig {
                gauges_every: Duration::from_millis(200),
                ..Default::default()
            });
            b.events = Some(finality_relay::config::EventsConfig {
                http: vec![finality_relay::config::HttpEndpoint {
                    name: "orders".into(),
                    url,
                    secret_env: "FINALITY_TEST_PUSH_SECRET".into(),
                    types: Vec::new(),
                    timeout: Duration::from_secs(2),
                    concurrency: 4,
                    retry_for: Duration::from_secs(60),
                    schema: Default::default(),
                    format: Default::default(),
                }],
                ..Default::default()
            });
        },
    )
    .await;
    for i in 0..5 {
        app.register(&format!("obs_{i}")).await;
    }
    let r = app.register("obs_hooked").await;
    let (headers, body) = signed(
        WEBHOOK_SECRET,
        "msg_obs",
        crate::webhooks::now_s(),
        &r,
        "succeeded",
    );
    assert_eq!(app.webhook(&headers, &body).await.0, StatusCode::OK);
    let (mut bad, body) = signed(
        WEBHOOK_SECRET,
        "msg_bad",
        crate::webhooks::now_s(),
        &r,
        "failed",
    );
    bad[2].1 = "v1,bm90IGEgc2lnbmF0dXJl".into();
    assert_eq!(app.webhook(&bad, &body).await.0, StatusCode::UNAUTHORIZED);

    // Wait (bounded) until the payments settled, their events went out and
    // the gauges were computed after that.
    let metrics_url = format!("{}/metrics", app.base);
    let mut text = String::new();
    for _ in 0..200 {
        text = app
            .http
            .get(&metrics_url)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        // The engine's first heartbeat may come after the first gauges
        // (on a loaded machine): wait for the round that counts it.
        let settled = text.contains("finality_nodes_live 1\n")
            && text.contains("finality_time_to_final_seconds_bucket")
            && text.contains("finality_provider_call_seconds_bucket")
            && text.contains("finality_event_deliveries_total")
            // A gauges round that ran after the pusher made its cursor.
            && text.contains("finality_event_destination_behind{")
            && text.contains("finality_cluster_gauges_updated_seconds ")
            && !text.contains("finality_cluster_gauges_updated_seconds 0\n");
        if settled {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let exported = names_in(&text);

    let wanted: BTreeSet<String> = names_in(&ops_file("ops/prometheus/finality-alerts.yml"))
        .into_iter()
        .chain(names_in(&ops_file("ops/grafana/finality-dashboard.json")))
        .collect();
    assert!(wanted.len() >= 20, "{wanted:?}");
    let catalog: BTreeSet<&str> = finality_server::metrics::CATALOG
        .iter()
        .map(|e| e.0)
        .collect();
    for name in &wanted {
        assert!(
            catalog.contains(name.as_str()),
            "{name} is used but not in the catalog"
        );
        assert!(exported.contains(name), "{name} is not exported:\n{text}");
        assert!(
            text.contains(&format!("# HELP {name} ")),
            "{name} has no # HELP line"
        );
    }
    // Timings are histograms (they add up across nodes), not summaries.
    for (name, kind, _, _) in finality_server::metrics::CATALOG {
        if *kind == finality_server::metrics::Kind::Histogram && exported.contains(*name) {
            assert!(
                text.contains(&format!("# TYPE {name} histogram")),
                "{name} is not a histogram"
            );
        }
    }
    // What the gauges say is what happened.
    assert!(text.contains("finality_nodes_live 1"), "{text}");
    assert!(
        text.contains("finality_webhooks_rejected_total{provider=\"sim\""),
        "{text}"
    );
}
