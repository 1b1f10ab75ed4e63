//! Named tokens and roles: who may do what, the actor taken from the
//! token, and the audit trail of manual actions, on both backends.

use super::*;
use finality_server::identity::{ApiToken, Role};

pub const SERVICE: &str = "svc-secret-0123456789abcdef";
pub const ALICE: &str = "alice-secret-0123456789abcdef";
pub const ADMIN: &str = "admin-secret-0123456789abcdef";

pub fn named_tokens() -> Tokens {
    Tokens::named(vec![
        ApiToken::new("checkout", Role::Service, SERVICE),
        ApiToken::new("alice", Role::Reviewer, ALICE),
        ApiToken::new("root", Role::Admin, ADMIN),
    ])
    .unwrap()
}

pub async fn spawn_named(backend: Backend) -> TestApp {
    let db = match backend {
        Backend::Postgres => testing::postgres(8).await,
        Backend::Sqlite => testing::sqlite().await,
        Backend::Mysql => testing::mysql(8).await,
    };
    spawn_app_tokens(
        db,
        SimConfig::deterministic(Duration::from_secs(3600)),
        false,
        sim_providers,
        named_tokens(),
    )
    .await
}

pub(crate) async fn call(
    app: &TestApp,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = app
        .http
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap())
}

pub(crate) fn payment(id: &str) -> Value {
    json!({"id": id, "provider": "sim", "provider_ref": format!("sim_{id}"),
           "amount": 1000, "currency": "USD"})
}

async fn roles_and_audit(backend: Backend) {
    use reqwest::Method;
    let app = spawn_named(backend).await;

    // service: registers and reads; cannot settle, poll or read the audit.
    let (s, _) = call(
        &app,
        SERVICE,
        Method::POST,
        "/v1/payments",
        Some(payment("pay_r1")),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _) = call(&app, SERVICE, Method::GET, "/v1/payments/pay_r1", None).await;
    assert_eq!(s, StatusCode::OK);
    let resolve = json!({"status": "succeeded", "reason": "bank statement"});
    let (s, v) = call(
        &app,
        SERVICE,
        Method::POST,
        "/v1/payments/pay_r1/resolve",
        Some(resolve.clone()),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{v}");
    assert_eq!(v["error"]["code"], "forbidden");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("checkout") && msg.contains("service") && msg.contains("reviewer or admin"),
        "{msg}"
    );
    assert!(!msg.contains(SERVICE), "the secret is never echoed");
    let (s, _) = call(
        &app,
        SERVICE,
        Method::POST,
        "/v1/payments/pay_r1/poll",
        None,
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = call(&app, SERVICE, Method::GET, "/v1/audit", None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    // reviewer: cannot register; resolves as itself.
    let (s, _) = call(
        &app,
        ALICE,
        Method::POST,
        "/v1/payments",
        Some(payment("pay_r2")),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, v) = call(
        &app,
        ALICE,
        Method::POST,
        "/v1/payments/pay_r1/resolve",
        Some(json!({"status": "succeeded", "reason": "bank statement", "actor": "bob"})),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        v["error"]["field"], "actor",
        "the body cannot choose the actor"
    );
    let (s, _) = call(&app, ALICE, Method::POST, "/v1/payments/pay_r1/poll", None).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    let (s, v) = call(
        &app,
        ALICE,
        Method::POST,
        "/v1/payments/pay_r1/resolve",
        Some(json!({"status": "succeeded", "reason": "bank statement", "note": "ticket OPS-12"})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let last = v["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["actor"], "alice");
    assert_eq!(last["source"], "manual");
    assert_eq!(last["reason"], "bank statement");

    // The audit trail: newest first, who, what, from where, and outcome.
    let (s, v) = call(
        &app,
        ALICE,
        Method::GET,
        "/v1/audit?payment_id=pay_r1",
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{v}");
    let r = &records[0];
    assert_eq!(r["actor"], "alice");
    assert_eq!(r["role"], "reviewer");
    assert_eq!(r["action"], "resolve");
    assert_eq!(r["detail"]["note"], "ticket OPS-12");
    assert_eq!(r["outcome"], "changed from pending to succeeded");
    assert_eq!(r["remote_addr"], "127.0.0.1");
    assert_eq!(records[1]["action"], "poll_now");
    assert_eq!(records[1]["outcome"], "scheduled");
    let (s, v) = call(&app, ADMIN, Method::GET, "/v1/audit?actor=root", None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(v["records"].as_array().unwrap().is_empty());
    let (s, v) = call(&app, ADMIN, Method::GET, "/v1/audit?cursor=abc", None).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["error"]["field"], "cursor");

    // A refused resolve is recorded too.
    let (s, _) = call(
        &app,
        ADMIN,
        Method::POST,
        "/v1/payments/pay_r1/resolve",
        Some(json!({"status": "failed", "reason": "second thoughts"})),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (_, v) = call(&app, ADMIN, Method::GET, "/v1/audit?limit=1", None).await;
    assert_eq!(v["records"][0]["actor"], "root");
    assert!(
        v["records"][0]["outcome"]
            .as_str()
            .unwrap()
            .starts_with("refused"),
        "{v}"
    );
    assert!(v["next_cursor"].is_string());

    // Admin registers; an unknown token is 401.
    let (s, _) = call(
        &app,
        ADMIN,
        Method::POST,
        "/v1/payments",
        Some(payment("pay_r3")),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _) = call(
        &app,
        "nope-0123456789abcdef",
        Method::GET,
        "/v1/payments",
        None,
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn roles_and_audit_postgres() {
    roles_and_audit(Backend::Postgres).await;
}

#[tokio::test]
async fn roles_and_audit_sqlite() {
    roles_and_audit(Backend::Sqlite).await;
}

#[tokio::test]
async fn roles_and_audit_mysql() {
    roles_and_audit(Backend::Mysql).await;
}
