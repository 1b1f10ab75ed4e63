//! Every row of every adapter's map, black-box through the HTTP API: the
//! simulator says each published word (a status its API answers with, or a
//! notification it sends, in the provider's own format) about a payment
//! registered here, and the payment ends as the row says: the row's status,
//! `needs_review` for a review, or untouched (the notification kept as
//! `ignored`) for an ignore. Rows decided from other fields (`depends`)
//! have tests of their own (`no_false_final`, `contracts`, `providers`).

use super::no_false_final::{
    adyen_table, alipay_table, spawn_with, stripe_table, webhooks_to, wechat_table,
};
use super::providers::money;
use super::*;
use finality_core::Kind;
use finality_providers::contract::{Action, Row};
use finality_store::InboxState;
use finality_testkit::Backend;

/// Payments at the simulator settle a day from now: only the words said
/// here reach finality.
const LATER: Duration = Duration::from_secs(86_400);

/// What a row says should become of a payment that was `pending`.
fn expected(row: &Row) -> Option<&'static str> {
    match row.action {
        Action::Status(s) => Some(s.as_str()),
        Action::Review => Some("needs_review"),
        Action::Ignore => Some("pending"),
        Action::Depends => None,
    }
}

fn kind_of(row: &Row) -> Kind {
    row.kinds.first().copied().unwrap_or(Kind::Payment)
}

/// One adapter's app and how its payments are named.
struct Setup<'a> {
    b: Backend,
    provider: &'a str,
    /// The simulator's path for this provider (its `base_url`).
    path: &'a str,
    table: Value,
    /// Registered by `merchant_ref` (the order number) instead of the
    /// provider's id (WeChat Pay and Alipay trades).
    by_order_no: bool,
    /// The simulator's id for the payment of row `i`.
    sim_id: fn(usize, &Row) -> String,
    /// The provider's id finality is given for a simulator id.
    provider_ref: fn(&str) -> String,
}

/// A payment for each row, created at the simulator and registered here;
/// returns `(payment id, sim id, row)`.
async fn register_rows<'r>(
    app: &TestApp,
    s: &Setup<'_>,
    rows: &[&'r Row],
) -> Vec<(String, String, &'r Row)> {
    let m = money(s.provider);
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let sid = (s.sim_id)(i, row);
        let id = format!("row_{i:03}");
        let order_no = format!("ord-{sid}");
        // The merchant's reference is known to the provider either way
        // (an Alipay refund is asked for by it).
        app.sim.create_priced(
            Some(sid.clone()),
            Some(order_no.clone()),
            m.amount,
            m.currency,
        );
        let mut body = json!({"id": id, "provider": s.provider, "kind": kind_of(row).as_str(),
                              "amount": m.amount, "currency": m.currency});
        if s.by_order_no {
            body["merchant_ref"] = json!(order_no);
        } else {
            body["provider_ref"] = json!((s.provider_ref)(&sid));
        }
        let (st, v) = app.post("/v1/payments", body).await;
        assert_eq!(st, StatusCode::CREATED, "{}: {v}", row.value);
        out.push((id, sid, *row));
    }
    out
}

/// Wait until every payment is as its row says; a `pending` one must also
/// have been told (a poll answered, or its notification processed).
async fn check(app: &TestApp, provider: &str, cases: &[(String, String, &Row, Option<String>)]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    let mut wrong = Vec::new();
    for (id, sid, row, event) in cases {
        let want = expected(row).unwrap();
        loop {
            let (_, v) = app.get(&format!("/v1/payments/{id}")).await;
            let told = match event {
                Some(e) => app
                    .db
                    .store
                    .inbox_get(provider, e)
                    .await
                    .unwrap()
                    .is_some_and(|r| r.state != InboxState::Received),
                // Asked by its id, its order number or its capture's id.
                None => [sid.clone(), format!("ord-{sid}"), format!("CAP{sid}")]
                    .iter()
                    .any(|k| app.sim.calls_for(k) > 0),
            };
            // A review about a payment already named elsewhere (a PayPal
            // dispute names its capture) is a review row beside it.
            let review_row = match (row.action, event) {
                (Action::Review, Some(e)) => app
                    .db
                    .store
                    .inbox_get(provider, e)
                    .await
                    .unwrap()
                    .is_some_and(|r| r.state == InboxState::Review),
                _ => false,
            };
            if (v["status"] == want || review_row) && told {
                break;
            }
            if std::time::Instant::now() > deadline {
                wrong.push(format!(
                    "`{}` ({}): want {want}, got {} (told: {told})",
                    row.value, row.list, v["status"]
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if want == "pending" {
            if let Some(e) = event {
                let r = app.db.store.inbox_get(provider, e).await.unwrap().unwrap();
                if !matches!(r.state, InboxState::Ignored | InboxState::Orphaned)
                    || r.reason.is_none()
                {
                    wrong.push(format!(
                        "`{}`: kept as {:?} {:?}",
                        row.value, r.state, r.reason
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{provider}: rows not honoured:\n{}",
        wrong.join("\n")
    );
}

/// The simulator's id is the provider's.
fn same(sid: &str) -> String {
    sid.to_string()
}

fn rows_of<'a>(rows: &'a [Row], lists: &[&str]) -> Vec<&'a Row> {
    rows.iter()
        .filter(|r| lists.contains(&r.list) && expected(r).is_some())
        .collect()
}

/// Published statuses, answered by the provider's status API.
async fn polled(s: Setup<'_>, rows: Vec<&Row>) {
    let app = spawn_with(s.b, s.provider, s.path, s.table.clone(), true, LATER).await;
    // Said before registration: the first poll hears it.
    for (i, row) in rows.iter().enumerate() {
        app.sim.answer_with(&(s.sim_id)(i, row), row.value);
    }
    let cases = register_rows(&app, &s, &rows).await;
    let cases: Vec<_> = cases.into_iter().map(|(a, b, r)| (a, b, r, None)).collect();
    check(&app, s.provider, &cases).await;
    app.stop.cancel();
}

/// Published notifications, sent by the provider to the webhook endpoint
/// (`success`: Adyen's flag for the row).
async fn notified(s: Setup<'_>, rows: Vec<&Row>, success: fn(&Row) -> bool) {
    let app = spawn_with(s.b, s.provider, s.path, s.table.clone(), false, LATER).await;
    webhooks_to(&app, s.provider);
    let cases = register_rows(&app, &s, &rows).await;
    let mut sent = Vec::new();
    for (id, sid, row) in cases {
        let word = row.value.replace('*', "simulated");
        let ok = success(row);
        let (status, event) = app.sim.notify_word(&sid, &word, ok).await.unwrap();
        assert!((200..300).contains(&status), "`{word}`: answered {status}");
        // Adyen's items are deduplicated by `pspReference:eventCode:success`.
        let event = if s.provider == "adyen" {
            let (psp, _) = finality_sim::published::adyen_references(&word, &sid);
            format!("{psp}:{word}:{ok}")
        } else {
            event
        };
        sent.push((id, sid, row, Some(event)));
    }
    check(&app, s.provider, &sent).await;
    app.stop.cancel();
}

fn always(_: &Row) -> bool {
    true
}

fn stripe_id(i: usize, r: &Row) -> String {
    match kind_of(r) {
        Kind::Refund => format!("re_row{i}"),
        Kind::Payout => format!("po_row{i}"),
        Kind::Payment => format!("pi_row{i}"),
    }
}

async fn stripe_rows(b: Backend) {
    use finality_providers::stripe::contract::*;
    let setup = || Setup {
        b,
        provider: "stripe",
        path: "/stripe",
        table: stripe_table(),
        by_order_no: false,
        sim_id: stripe_id,
        provider_ref: same,
    };
    polled(
        setup(),
        rows_of(ROWS, &[PAYMENT_INTENT, REFUND_STATUS, PAYOUT_STATUS]),
    )
    .await;
    notified(setup(), rows_of(ROWS, &[EVENT]), always).await;
}

async fn adyen_rows(b: Backend) {
    use finality_providers::adyen::contract::*;
    let setup = Setup {
        b,
        provider: "adyen",
        path: "",
        table: adyen_table("automatic", None),
        by_order_no: false,
        sim_id: |i, _| format!("PSPROW{i:010}"),
        provider_ref: same,
    };
    notified(setup, rows_of(ROWS, &[TRUE, FALSE]), |r| r.list == TRUE).await;
}

async fn wechat_rows(b: Backend) {
    use finality_providers::wechat::contract::*;
    let setup = || Setup {
        b,
        provider: "wechat",
        path: "/wechat",
        table: wechat_table(finality_sim::wire::wechat_keys::APPID),
        by_order_no: true,
        // Refunds are known by their out_refund_no (the simulator's
        // refunds start `rf`).
        sim_id: |i, r| match kind_of(r) {
            Kind::Refund => format!("rf_row{i}"),
            _ => format!("wx_row{i}"),
        },
        provider_ref: same,
    };
    let rows = rows_of(ROWS, &[TRADE_STATE, REFUND_STATUS]);
    polled(setup(), rows.clone()).await;
    notified(setup(), rows, always).await;
}

async fn alipay_rows(b: Backend) {
    use finality_providers::alipay::contract::*;
    let setup = |by_order_no| Setup {
        b,
        provider: "alipay",
        path: "/alipay/gateway.do",
        table: alipay_table(finality_sim::wire::ALIPAY_APP_ID),
        by_order_no,
        sim_id: |i, r| match kind_of(r) {
            Kind::Refund => format!("arf_row{i}"),
            _ => format!("ali_row{i}"),
        },
        // A refund is named by its trade and its refund request number.
        provider_ref: |sid| format!("2026{sid}:ord-{sid}"),
    };
    let trades = rows_of(ROWS, &[TRADE_STATUS]);
    polled(setup(true), trades.clone()).await;
    notified(setup(true), trades, always).await;
    polled(setup(false), rows_of(ROWS, &[REFUND_STATUS])).await;
}

fn paypal_table(payments: &str) -> Value {
    std::env::set_var(
        "FINALITY_TEST_ROW_PAYPAL",
        super::providers::PAYPAL_CREDENTIALS,
    );
    std::env::set_var(
        "FINALITY_TEST_ROW_PAYPAL_HOOK",
        super::providers::PAYPAL_WEBHOOK_ID,
    );
    json!({"adapter": "paypal", "api_key_env": "FINALITY_TEST_ROW_PAYPAL",
           "webhook_secret_envs": ["FINALITY_TEST_ROW_PAYPAL_HOOK"],
           "paypal": {"payments": payments}})
}

async fn paypal_rows(b: Backend) {
    use finality_providers::paypal::contract::*;
    let setup = |payments, provider_ref| Setup {
        b,
        provider: "paypal",
        path: "/paypal",
        table: paypal_table(payments),
        by_order_no: false,
        sim_id: |i, _| format!("PPROW{i:04}"),
        provider_ref,
    };
    polled(
        setup("orders", same),
        rows_of(ROWS, &[ORDER, REFUND_STATUS]),
    )
    .await;
    // A capture's id is `CAP` and its payment's, at the simulator.
    let cap: fn(&str) -> String = |sid| format!("CAP{sid}");
    polled(setup("captures", cap), rows_of(ROWS, &[CAPTURE])).await;
    notified(setup("orders", same), rows_of(ROWS, &[EVENT]), always).await;
}

finality_testkit::on_both_backends!(
    stripe_rows,
    adyen_rows,
    wechat_rows,
    alipay_rows,
    paypal_rows
);
