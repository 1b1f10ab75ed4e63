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

/// A payment for each row, created at the simulator under `sim_id(i, row)`
/// and registered here (by `provider_ref`, or by `merchant_ref` when
/// `by_order_no`); returns `(payment id, sim id, row)`.
async fn register_rows<'r>(
    app: &TestApp,
    provider: &str,
    rows: &[&'r Row],
    sim_id: impl Fn(usize, &Row) -> String,
    provider_ref: impl Fn(&str) -> String,
    by_order_no: bool,
) -> Vec<(String, String, &'r Row)> {
    let m = money(provider);
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let sid = sim_id(i, row);
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
        let mut body = json!({"id": id, "provider": provider, "kind": kind_of(row).as_str(),
                              "amount": m.amount, "currency": m.currency});
        if by_order_no {
            body["merchant_ref"] = json!(order_no);
        } else {
            body["provider_ref"] = json!(provider_ref(&sid));
        }
        let (s, v) = app.post("/v1/payments", body).await;
        assert_eq!(s, StatusCode::CREATED, "{}: {v}", row.value);
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
async fn polled(
    b: Backend,
    provider: &str,
    path: &str,
    table: Value,
    rows: Vec<&Row>,
    sim_id: impl Fn(usize, &Row) -> String,
    provider_ref: impl Fn(&str) -> String,
    by_order_no: bool,
) {
    let app = spawn_with(b, provider, path, table, true, LATER).await;
    // Said before registration: the first poll hears it.
    let ids: Vec<String> = rows.iter().enumerate().map(|(i, r)| sim_id(i, r)).collect();
    for (sid, row) in ids.iter().zip(&rows) {
        app.sim.answer_with(sid, row.value);
    }
    let cases = register_rows(&app, provider, &rows, sim_id, provider_ref, by_order_no).await;
    let cases: Vec<_> = cases.into_iter().map(|(a, b, r)| (a, b, r, None)).collect();
    check(&app, provider, &cases).await;
    app.stop.cancel();
}

/// Published notifications, sent by the provider to the webhook endpoint.
async fn notified(
    b: Backend,
    provider: &str,
    path: &str,
    table: Value,
    rows: Vec<&Row>,
    sim_id: impl Fn(usize, &Row) -> String,
    provider_ref: impl Fn(&str) -> String,
    by_order_no: bool,
    success: impl Fn(&Row) -> bool,
) {
    let app = spawn_with(b, provider, path, table, false, LATER).await;
    webhooks_to(&app, provider);
    let cases = register_rows(&app, provider, &rows, sim_id, provider_ref, by_order_no).await;
    let mut sent = Vec::new();
    for (id, sid, row) in cases {
        let word = row.value.replace('*', "simulated");
        let ok = success(row);
        let (status, event) = app.sim.notify_word(&sid, &word, ok).await.unwrap();
        assert!((200..300).contains(&status), "`{word}`: answered {status}");
        // Adyen's items are deduplicated by `pspReference:eventCode:success`.
        let event = if provider == "adyen" {
            let (psp, _) = finality_sim::published::adyen_references(&word, &sid);
            format!("{psp}:{word}:{ok}")
        } else {
            event
        };
        sent.push((id, sid, row, Some(event)));
    }
    check(&app, provider, &sent).await;
    app.stop.cancel();
}

async fn stripe_rows(b: Backend) {
    use finality_providers::stripe::contract::*;
    let id = |i: usize, r: &Row| match (r.list, kind_of(r)) {
        (_, Kind::Refund) => format!("re_row{i}"),
        (_, Kind::Payout) => format!("po_row{i}"),
        _ => format!("pi_row{i}"),
    };
    let rows = rows_of(ROWS, &[PAYMENT_INTENT, REFUND_STATUS, PAYOUT_STATUS]);
    polled(
        b,
        "stripe",
        "/stripe",
        stripe_table(),
        rows,
        id,
        same,
        false,
    )
    .await;
    let rows = rows_of(ROWS, &[EVENT]);
    notified(
        b,
        "stripe",
        "/stripe",
        stripe_table(),
        rows,
        id,
        same,
        false,
        |_| true,
    )
    .await;
}

async fn adyen_rows(b: Backend) {
    use finality_providers::adyen::contract::*;
    let id = |i: usize, _: &Row| format!("PSPROW{i:010}");
    let rows = rows_of(ROWS, &[TRUE, FALSE]);
    notified(
        b,
        "adyen",
        "",
        adyen_table("automatic", None),
        rows,
        id,
        same,
        false,
        |r| r.list == TRUE,
    )
    .await;
}

async fn wechat_rows(b: Backend) {
    use finality_providers::wechat::contract::*;
    // Refunds are known by their out_refund_no (the simulator's refunds
    // start `rf`).
    let id = |i: usize, r: &Row| match kind_of(r) {
        Kind::Refund => format!("rf_row{i}"),
        _ => format!("wx_row{i}"),
    };
    let appid = finality_sim::wire::wechat_keys::APPID;
    let rows = rows_of(ROWS, &[TRADE_STATE, REFUND_STATUS]);
    polled(
        b,
        "wechat",
        "/wechat",
        wechat_table(appid),
        rows.clone(),
        id,
        same,
        true,
    )
    .await;
    notified(
        b,
        "wechat",
        "/wechat",
        wechat_table(appid),
        rows,
        id,
        same,
        true,
        |_| true,
    )
    .await;
}

async fn alipay_rows(b: Backend) {
    use finality_providers::alipay::contract::*;
    let table = || alipay_table(finality_sim::wire::ALIPAY_APP_ID);
    let trades = rows_of(ROWS, &[TRADE_STATUS]);
    let trade_id = |i: usize, _: &Row| format!("ali_row{i}");
    polled(
        b,
        "alipay",
        "/alipay/gateway.do",
        table(),
        trades.clone(),
        trade_id,
        same,
        true,
    )
    .await;
    notified(
        b,
        "alipay",
        "/alipay/gateway.do",
        table(),
        trades,
        trade_id,
        same,
        true,
        |_| true,
    )
    .await;
    // Refunds by the refund query: the trade and the refund request number.
    let refunds = rows_of(ROWS, &[REFUND_STATUS]);
    let refund_id = |i: usize, _: &Row| format!("arf_row{i}");
    polled(
        b,
        "alipay",
        "/alipay/gateway.do",
        table(),
        refunds,
        refund_id,
        |sid| format!("2026{sid}:ord-{sid}"),
        false,
    )
    .await;
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
    let id = |i: usize, _: &Row| format!("PPROW{i:04}");
    let orders = rows_of(ROWS, &[ORDER, REFUND_STATUS]);
    polled(
        b,
        "paypal",
        "/paypal",
        paypal_table("orders"),
        orders,
        id,
        same,
        false,
    )
    .await;
    // A capture's id is `CAP` and its payment's, at the simulator.
    let captures = rows_of(ROWS, &[CAPTURE]);
    let cap = |sid: &str| format!("CAP{sid}");
    polled(
        b,
        "paypal",
        "/paypal",
        paypal_table("captures"),
        captures,
        id,
        cap,
        false,
    )
    .await;
    let events = rows_of(ROWS, &[EVENT]);
    notified(
        b,
        "paypal",
        "/paypal",
        paypal_table("orders"),
        events,
        id,
        same,
        false,
        |_| true,
    )
    .await;
}

finality_testkit::on_both_backends!(
    stripe_rows,
    adyen_rows,
    wechat_rows,
    alipay_rows,
    paypal_rows
);
