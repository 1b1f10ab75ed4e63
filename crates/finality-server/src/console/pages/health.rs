//! The cluster's health and the API document, for the people who run finality.

use crate::console::pages::respond::{api_error, chrome, render};
use crate::console::session::Session;
use crate::console::views::*;
use crate::replica::Reads;
use crate::{ApiError, App};
use axum::extract::State;
use axum::response::Response;

pub(crate) fn schema_name(v: &serde_json::Value) -> String {
    if let Some(r) = v["$ref"].as_str() {
        return r.rsplit('/').next().unwrap_or(r).to_string();
    }
    if let Some(items) = v.get("items") {
        return format!("array of {}", schema_name(items));
    }
    if let Some(one) = v["oneOf"].as_array() {
        return one.iter().map(schema_name).collect::<Vec<_>>().join(" or ");
    }
    match &v["type"] {
        serde_json::Value::String(t) => t.clone(),
        serde_json::Value::Array(ts) => ts
            .iter()
            .filter_map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".into(),
    }
}

/// The cluster's state as the alerts read it, computed for this page.
pub async fn health(State(app): State<App>, reads: Reads, s: Session) -> Response {
    let back = "/console/review";
    let now = app.clock.now();
    let cfg = crate::metrics::MetricsConfig::default();
    let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let g = match reads
        .store
        .cluster_gauges(
            now,
            finality_core::Timestamp(now.0 - ms(cfg.overdue_after)),
            finality_core::Timestamp(now.0 - ms(cfg.node_silent_after)),
        )
        .await
    {
        Ok(g) => g,
        Err(e) => return api_error(e.into(), back),
    };
    let human = |d: std::time::Duration| {
        humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string()
    };
    let mut review: std::collections::BTreeMap<&'static str, i64> = Default::default();
    for (reason, n) in &g.review {
        *review
            .entry(crate::metrics::reason_class(reason.as_deref()))
            .or_default() += n;
    }
    let inbox = ["received", "failed", "orphaned"]
        .iter()
        .map(|st| {
            let n = g.inbox.iter().find(|(s, _)| s == st).map_or(0, |(_, n)| *n);
            (st.to_string(), n)
        })
        .collect();
    render(&Health {
        chrome: chrome(&s, "health", None),
        overdue_after: human(cfg.overdue_after),
        polls_due: g.polls_due,
        polls_overdue: g.polls_overdue,
        oldest_due: g
            .oldest_due_at
            .map_or_else(|| "nothing is due".into(), |t| human(now.since(t))),
        nodes: g.nodes,
        review: review
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        open: {
            let mut open: std::collections::BTreeMap<(String, String), i64> = app
                .providers
                .keys()
                .flat_map(|p| {
                    ["pending", "processing", "needs_review"]
                        .map(|st| ((p.clone(), st.to_string()), 0))
                })
                .collect();
            for (p, st, n) in g.open {
                open.insert((p, st), n);
            }
            open.into_iter().map(|((p, st), n)| (p, st, n)).collect()
        },
        inbox,
        unsequenced: g.unsequenced,
        destinations: g
            .destinations
            .into_iter()
            .map(|(name, behind, oldest)| {
                let age = match oldest {
                    Some(t) if behind > 0 => human(now.since(t)),
                    _ => String::new(),
                };
                (name, behind, age)
            })
            .collect(),
    })
}

pub async fn api(s: Session) -> Response {
    let doc: serde_json::Value = match serde_json::from_str(crate::openapi::document_json()) {
        Ok(d) => d,
        Err(e) => return api_error(ApiError::Internal(e.to_string()), "/console/review"),
    };
    let mut ops = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            let Some(item) = item.as_object() else {
                continue;
            };
            for (method, op) in item {
                let params = op["parameters"]
                    .as_array()
                    .map(|ps| {
                        ps.iter()
                            .map(|p| {
                                format!(
                                    "{} ({}, {}): {}",
                                    p["name"].as_str().unwrap_or_default(),
                                    p["in"].as_str().unwrap_or_default(),
                                    schema_name(&p["schema"]),
                                    p["description"].as_str().unwrap_or_default()
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let body = op["requestBody"]["content"]["application/json"]["schema"]
                    .as_object()
                    .map(|_| {
                        schema_name(&op["requestBody"]["content"]["application/json"]["schema"])
                    })
                    .unwrap_or_default();
                let responses = op["responses"]
                    .as_object()
                    .map(|rs| {
                        rs.iter()
                            .map(|(code, r)| {
                                let schema = &r["content"]["application/json"]["schema"];
                                let body = if schema.is_null() {
                                    String::new()
                                } else {
                                    format!(" → {}", schema_name(schema))
                                };
                                format!(
                                    "{code} {}{body}",
                                    r["description"].as_str().unwrap_or_default()
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                ops.push(OpView {
                    anchor: format!("{method}-{}", path.replace(['/', '{', '}', '.'], "-")),
                    method: method.clone(),
                    path: path.clone(),
                    summary: op["summary"]
                        .as_str()
                        .or(op["description"].as_str())
                        .unwrap_or_default()
                        .to_string(),
                    params,
                    body,
                    responses,
                });
            }
        }
    }
    let schemas = doc["components"]["schemas"]
        .as_object()
        .map(|all| {
            all.iter()
                .map(|(name, sch)| SchemaView {
                    name: name.clone(),
                    description: sch["description"].as_str().unwrap_or_default().to_string(),
                    fields: sch["properties"]
                        .as_object()
                        .map(|props| {
                            let required: Vec<&str> = sch["required"]
                                .as_array()
                                .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
                                .unwrap_or_default();
                            props
                                .iter()
                                .map(|(f, p)| {
                                    format!(
                                        "{f}{}: {} {}",
                                        if required.contains(&f.as_str()) {
                                            ""
                                        } else {
                                            " (optional)"
                                        },
                                        schema_name(p),
                                        p["description"].as_str().unwrap_or_default()
                                    )
                                })
                                .collect()
                        })
                        .or_else(|| {
                            sch["enum"].as_array().map(|vs| {
                                vec![format!(
                                    "one of: {}",
                                    vs.iter()
                                        .filter_map(|v| v.as_str())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                )]
                            })
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    render(&Api {
        chrome: chrome(&s, "api", None),
        version: doc["openapi"].as_str().unwrap_or_default().to_string(),
        description: doc["info"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        ops,
        schemas,
    })
}
