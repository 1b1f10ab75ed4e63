//! The contract matrix: every status and event code a provider publishes
//! in its machine-readable specification (vendored under
//! `testdata/<provider>/spec/`, each with its source and commit) has a row
//! in its adapter's map, and `docs/PROVIDERS.md` shows exactly those rows.
//!
//! A value a provider adds shows up here as a missing row the day its
//! specification is vendored again; a row deleted from a map fails here
//! (`a_deleted_row_is_found`).
//!
//! `FINALITY_BLESS_DOCS=1 cargo test -p finality-providers --test contract`
//! rewrites the tables in `docs/PROVIDERS.md` from the rows.

#![allow(clippy::unwrap_used)] // test code: a panic is how a test reports

use finality_providers::contract::{lookup, money_lookup, render, render_money, MoneyRow, Row};
use serde_json::Value;

mod common;
use common::json;

/// One published list of values, as the matrix reads it.
struct Published {
    /// The list name the adapter's rows use.
    list: &'static str,
    values: Vec<String>,
    /// Where the values were read, for the failure message.
    from: String,
}

/// The `enum` at a JSON pointer of a vendored extract's `subtrees`.
fn subtree_enum(extract: &Value, pointer: &str) -> Vec<String> {
    let tree = &extract["subtrees"][pointer];
    let values = tree["enum"]
        .as_array()
        .or_else(|| tree["items"]["enum"].as_array())
        .unwrap_or_else(|| panic!("no enum at {pointer}"));
    values
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// The values a description names in backticks: Stripe's Refund and
/// Payout `status` have no `enum`, their descriptions list them ("Status
/// of the refund. This can be `pending`, `requires_action`, `succeeded`,
/// `failed`, or `canceled`."), and name nothing else in backticks.
fn described_values(extract: &Value, pointer: &str) -> Vec<String> {
    let text = extract["subtrees"][pointer]["description"]
        .as_str()
        .unwrap_or_else(|| panic!("no description at {pointer}"));
    let mut values: Vec<String> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect();
    values.sort();
    values.dedup();
    values
}

fn stripe() -> Vec<Published> {
    use finality_providers::stripe::contract::*;
    let x = json("stripe/spec/spec3_extract.json");
    let s = "/components/schemas";
    let events = "/paths/~1v1~1webhook_endpoints/post/requestBody/content/\
                  application~1x-www-form-urlencoded/schema/properties/enabled_events/items";
    let from = |p: &str| format!("stripe/openapi {} spec3.json {p}", x["commit"]);
    vec![
        Published {
            list: PAYMENT_INTENT,
            values: subtree_enum(&x, &format!("{s}/payment_intent/properties/status")),
            from: from("payment_intent.status"),
        },
        Published {
            list: REFUND_STATUS,
            values: described_values(&x, &format!("{s}/refund/properties/status")),
            from: from("refund.status (description)"),
        },
        Published {
            list: PAYOUT_STATUS,
            values: described_values(&x, &format!("{s}/payout/properties/status")),
            from: from("payout.status (description)"),
        },
        Published {
            list: CHARGE_STATUS,
            values: subtree_enum(&x, &format!("{s}/charge/properties/status")),
            from: from("charge.status"),
        },
        Published {
            list: DISPUTE_STATUS,
            values: subtree_enum(&x, &format!("{s}/dispute/properties/status")),
            from: from("dispute.status"),
        },
        Published {
            list: EVENT,
            // `*` subscribes to every event; no event is of that type.
            values: subtree_enum(&x, events)
                .into_iter()
                .filter(|v| v != "*")
                .collect(),
            from: from("enabled_events"),
        },
    ]
}

fn adyen() -> Vec<Published> {
    use finality_providers::adyen::contract::{FALSE, TRUE};
    let x = json("adyen/spec/webhooks_event_codes.json");
    let codes: Vec<String> = [
        "NotificationRequestItem",
        "PaidoutReversedNotificationRequestItem",
        "ReportAvailableNotificationRequestItem",
    ]
    .iter()
    .flat_map(|s| subtree_enum(&x, &format!("/components/schemas/{s}/properties/eventCode")))
    .collect();
    let from = format!(
        "Adyen/adyen-openapi {} Webhooks-v1.json eventCode",
        x["commit"]
    );
    vec![
        Published {
            list: TRUE,
            values: codes.clone(),
            from: from.clone(),
        },
        Published {
            list: FALSE,
            values: codes,
            from: format!("{from} (success=false)"),
        },
    ]
}

fn paypal() -> Vec<Published> {
    use finality_providers::paypal::contract::*;
    let x = json("paypal/spec/rest_api_extract.json");
    let mut out = Vec::new();
    for (file, pointers) in x["files"].as_object().unwrap() {
        for (pointer, tree) in pointers.as_object().unwrap() {
            let list = match pointer.as_str() {
                "/components/schemas/order_status" => ORDER,
                "/components/schemas/capture_status/properties/status" => CAPTURE,
                "/components/schemas/refund_status/properties/status" => REFUND_STATUS,
                "/components/schemas/authorization_status/properties/status" => AUTHORIZATION,
                // Reasons, disputes and PayPal Payouts: not statuses this
                // adapter decides on.
                _ => continue,
            };
            out.push(Published {
                list,
                values: tree["enum"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect(),
                from: format!(
                    "paypal-rest-api-specifications {} {file} {pointer}",
                    x["commit"]
                ),
            });
        }
    }
    let names = json("paypal/spec/webhook_event_names.json");
    let mut events: Vec<String> = names["event_names"]
        .as_array()
        .unwrap()
        .iter()
        .chain(
            names["other_pages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|p| p["event_names"].as_array().unwrap().iter()),
        )
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    events.sort();
    events.dedup();
    out.push(Published {
        list: EVENT,
        values: events,
        from: "PayPal webhook event names pages (webhook_event_names.json)".into(),
    });
    out
}

fn sdk_enums(file: &str, lists: &[(&'static str, &str)]) -> Vec<Published> {
    let x = json(file);
    lists
        .iter()
        .map(|(list, name)| {
            let e = &x["enums"][name];
            let values: Vec<String> = e["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            // The values are the ones the vendored source lines name.
            let excerpt = e["excerpt"].as_str().unwrap();
            for v in &values {
                assert!(
                    excerpt.contains(v.as_str()),
                    "{file} {name}: `{v}` not in the excerpt"
                );
            }
            Published {
                list,
                values,
                from: format!("{} {} {} {}", x["repo"], x["commit"], e["path"], e["lines"]),
            }
        })
        .collect()
}

fn wechat() -> Vec<Published> {
    use finality_providers::wechat::contract::*;
    sdk_enums(
        "wechatpay/spec/status_enums.json",
        &[
            (TRADE_STATE, "trade_state"),
            (REFUND_STATUS, "refund_status"),
        ],
    )
}

fn alipay() -> Vec<Published> {
    use finality_providers::alipay::contract::*;
    sdk_enums(
        "alipay/spec/status_enums.json",
        &[
            (TRADE_STATUS, "trade_status"),
            (REFUND_STATUS, "refund_status"),
        ],
    )
}

/// Every adapter's rows beside the lists its provider publishes.
fn adapters() -> Vec<(&'static str, &'static [Row], Vec<Published>)> {
    vec![
        (
            "stripe",
            finality_providers::stripe::contract::ROWS,
            stripe(),
        ),
        ("adyen", finality_providers::adyen::contract::ROWS, adyen()),
        (
            "paypal",
            finality_providers::paypal::contract::ROWS,
            paypal(),
        ),
        (
            "wechat",
            finality_providers::wechat::contract::ROWS,
            wechat(),
        ),
        (
            "alipay",
            finality_providers::alipay::contract::ROWS,
            alipay(),
        ),
    ]
}

/// The published values with no row.
fn missing(rows: &[Row], published: &[Published]) -> Vec<String> {
    published
        .iter()
        .flat_map(|p| {
            p.values
                .iter()
                .filter(|v| lookup(rows, p.list, v).is_none())
                .map(move |v| format!("`{v}` ({}, from {})", p.list, p.from))
        })
        .collect()
}

#[test]
fn every_published_value_has_a_row() {
    for (name, rows, published) in adapters() {
        let total: usize = published.iter().map(|p| p.values.len()).sum();
        assert!(total > 0, "{name}: nothing read from its specification");
        let missing = missing(rows, &published);
        assert!(
            missing.is_empty(),
            "{name}: published values without a row in its map:\n{}",
            missing.join("\n")
        );
    }
}

/// The matrix can fail: take any one exact row out of any adapter's map
/// and the published value it covered is reported missing.
#[test]
fn a_deleted_row_is_found() {
    for (name, rows, published) in adapters() {
        for (i, row) in rows.iter().enumerate() {
            let published_here = published
                .iter()
                .any(|p| p.list == row.list && p.values.iter().any(|v| v == row.value));
            if !published_here {
                continue; // a family row, a catch-all, or a value kept from older docs
            }
            let fewer: Vec<Row> = rows
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, r)| *r)
                .collect();
            let gone = missing(&fewer, &published);
            assert!(
                gone.iter()
                    .any(|m| m.starts_with(&format!("`{}` ({}", row.value, row.list))),
                "{name}: deleting the row for `{}` ({}) went unnoticed",
                row.value,
                row.list
            );
        }
    }
}

/// Every row says why, with a source.
#[test]
fn every_row_has_words_and_a_source() {
    for (name, rows, _) in adapters() {
        for r in rows {
            assert!(!r.does.trim().is_empty(), "{name} {}: no words", r.value);
            assert!(!r.source.trim().is_empty(), "{name} {}: no source", r.value);
            assert!(
                !r.kinds.is_empty(),
                "{name} {}: applies to nothing",
                r.value
            );
        }
    }
}

/// `docs/PROVIDERS.md` holds each adapter's table as rendered from its rows.
#[test]
fn providers_md_shows_the_rows() {
    let mut tables: Vec<(&str, &[Row])> = adapters().into_iter().map(|(n, r, _)| (n, r)).collect();
    // Bakong publishes no machine-readable list: its rows are held to NBC's
    // samples in published.rs, and shown here the same way.
    tables.push(("bakong", finality_providers::bakong::contract::ROWS));
    let rendered = tables
        .into_iter()
        .map(|(name, rows)| (name, format!("{}\n", render(rows))))
        .collect();
    providers_md_sections("contract", rendered);
}

/// Each `<!-- KIND:NAME -->` … `<!-- /KIND:NAME -->` section of
/// `docs/PROVIDERS.md` is what `tables` renders for NAME; with
/// `FINALITY_BLESS_DOCS=1` the sections are rewritten instead.
fn providers_md_sections(kind: &str, tables: Vec<(&str, String)>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/PROVIDERS.md");
    let mut doc = std::fs::read_to_string(&path).unwrap();
    let bless = std::env::var("FINALITY_BLESS_DOCS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, want) in tables {
        let (open, close) = (
            format!("<!-- {kind}:{name} -->"),
            format!("<!-- /{kind}:{name} -->"),
        );
        let (Some(a), Some(b)) = (doc.find(&open), doc.find(&close)) else {
            panic!("docs/PROVIDERS.md has no {open} … {close} section");
        };
        let start = a + open.len();
        if doc[start..b] != want {
            stale.push(name);
            doc.replace_range(start..b, &want);
        }
    }
    if bless {
        std::fs::write(&path, doc).unwrap();
        return;
    }
    assert!(
        stale.is_empty(),
        "docs/PROVIDERS.md's {kind} tables for {stale:?} differ from the adapters' rows: run \
         FINALITY_BLESS_DOCS=1 cargo test -p finality-providers --test contract"
    );
}

/// Every adapter's money rows (what a published object names as a piece of
/// the payment's amounts), beside the published lists they cover.
fn money() -> Vec<(&'static str, &'static [MoneyRow], Vec<Published>)> {
    let of = |list: &str, all: Vec<Published>| {
        all.into_iter()
            .filter(|p| p.list == list)
            .collect::<Vec<_>>()
    };
    vec![
        (
            "paypal",
            finality_providers::paypal::contract::MONEY,
            of(finality_providers::paypal::contract::CAPTURE, paypal()),
        ),
        (
            "stripe",
            finality_providers::stripe::contract::MONEY,
            of(
                finality_providers::stripe::contract::REFUND_STATUS,
                stripe(),
            ),
        ),
    ]
}

fn money_missing(rows: &[MoneyRow], published: &[Published]) -> Vec<String> {
    published
        .iter()
        .flat_map(|p| {
            p.values
                .iter()
                .filter(|v| money_lookup(rows, p.list, v).is_none())
                .map(move |v| format!("`{v}` ({})", p.list))
        })
        .collect()
}

/// Every published capture status (PayPal) and refund status (Stripe) says
/// what it counts as, and taking any one row out is noticed.
#[test]
fn every_published_money_value_has_a_row_and_a_deleted_one_is_found() {
    for (name, rows, published) in money() {
        assert!(!published.is_empty(), "{name}: no published list");
        let missing = money_missing(rows, &published);
        assert!(
            missing.is_empty(),
            "{name}: without a money row: {missing:?}"
        );
        for i in 0..rows.len() {
            let fewer: Vec<MoneyRow> = rows
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, r)| *r)
                .collect();
            assert!(
                !money_missing(&fewer, &published).is_empty(),
                "{name}: deleting the money row for `{}` went unnoticed",
                rows[i].value
            );
        }
        for r in rows {
            assert!(!r.source.trim().is_empty(), "{name} {}: no source", r.value);
        }
    }
}

/// `docs/PROVIDERS.md` holds each adapter's money table as rendered from
/// its rows.
#[test]
fn providers_md_shows_the_money_rows() {
    let mut tables: Vec<(&str, String)> = money()
        .into_iter()
        .map(|(n, rows, _)| (n, render_money(rows)))
        .collect();
    tables.push((
        "adyen",
        finality_providers::adyen::pieces::render(finality_providers::adyen::pieces::ROWS),
    ));
    providers_md_sections("money", tables);
}
