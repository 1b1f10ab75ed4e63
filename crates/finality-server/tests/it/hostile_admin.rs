//! Hostile asks of the admin and read surfaces, second round (issue
//! "Hostile traffic, second round…"): a rewind that would skip a backlog,
//! a feed position never given, a readiness probe that printed a
//! provider's words to anyone, and an account whose secret file was any
//! file the process could read. Each is also covered inside a larger
//! story elsewhere (`replay`, `api`, `providers`, `accounts`); here each
//! stands alone so `test(hostile)` runs it.

use super::roles::{call, ADMIN, ALICE};
use super::*;
use finality_testkit::Backend;
use reqwest::Method;

/// Before: `to_seq` above a destination's cursor (or a `to_time` after
/// every event) was accepted and moved the cursor forward, so the events
/// waiting for it were never sent. Now a rewind only moves back: 422
/// naming the field, the backlog untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_past_what_was_delivered_is_refused() {
    use super::replay::{settle, spawn_pushing, wait_got, DEST};
    let (app, got) = spawn_pushing(Backend::Sqlite).await;
    settle(&app, "pay_hr1").await;
    settle(&app, "pay_hr2").await;
    wait_got(&got, 2).await;
    let path = |a: &str| format!("/v1/events/destinations/{DEST}/{a}");
    let (s, _) = call(&app, ADMIN, Method::POST, &path("pause"), None).await;
    assert_eq!(s, StatusCode::OK);
    // A pusher reads its stored state at least every `STATE_CHECK`.
    tokio::time::sleep(finality_relay::pusher::STATE_CHECK + Duration::from_millis(200)).await;
    settle(&app, "pay_hr3").await;
    let backlog = || async {
        let (_, list) = call(&app, ALICE, Method::GET, "/v1/events/destinations", None).await;
        (list["destinations"][0]["backlog"].as_i64(), list)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (n, list) = backlog().await;
        if n == Some(1) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no backlog of 1: {list}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    for (ask, field) in [
        (json!({"to_seq": 3}), "to_seq"),
        (json!({"to_time": "2099-01-01T00:00:00Z"}), "to_time"),
    ] {
        let (s, v) = call(&app, ADMIN, Method::POST, &path("rewind"), Some(ask)).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        assert_eq!(v["error"]["field"], field, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("after position 2 the destination has delivered"),
            "{v}"
        );
    }
    assert_eq!(backlog().await.0, Some(1), "nothing skipped");
    let (s, _) = call(&app, ADMIN, Method::POST, &path("resume"), None).await;
    assert_eq!(s, StatusCode::OK);
    let all = wait_got(&got, 3).await;
    assert_eq!(all[2]["payment_id"], "pay_hr3");
    app.stop.cancel();
}

/// Before: `after` past the feed's head was answered "nothing new" (with
/// `wait`, after holding the request for the whole wait), for ever: a
/// reader given a position from another database never noticed. Now it is
/// a 409 `feed_rewound` naming the positions and where to read on,
/// answered at once; so is a cursor of an epoch this feed never had.
async fn a_feed_position_never_given_is_refused(b: Backend) {
    let app = spawn_app_with(b, Duration::from_secs(3600), false).await;
    app.post("/v1/payments", app.payment("pay_hf")).await;
    let body = json!({"status": "failed", "reason": "declined on the phone", "actor": "ops"});
    let (s, _) = app.post("/v1/payments/pay_hf/resolve", body).await;
    assert_eq!(s, StatusCode::OK);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let end = loop {
        let (_, v) = app.get("/v1/events?limit=10").await;
        if v["events"].as_array().is_some_and(|e| e.len() == 1) {
            break v["next_cursor"].as_str().unwrap().to_string();
        }
        assert!(std::time::Instant::now() < deadline, "no event: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (epoch, head) = end.split_once('.').unwrap();
    let head: i64 = head.parse().unwrap();
    let past = head + 1;
    for (cursor, parted) in [
        (format!("{past}"), 0),
        (format!("{epoch}.{past}"), 0),
        (format!("zz0ther.{head}"), 0),
    ] {
        for wait in ["", "&wait=5s"] {
            let t = std::time::Instant::now();
            let (s, v) = app.get(&format!("/v1/events?after={cursor}{wait}")).await;
            assert_eq!(s, StatusCode::CONFLICT, "{cursor}: {v}");
            let e = &v["error"];
            assert_eq!(e["code"], "feed_rewound", "{v}");
            assert_eq!(e["field"], "after", "{v}");
            assert_eq!(
                e["lost"],
                json!({"after": parted, "through": cursor.rsplit('.').next().unwrap().parse::<i64>().unwrap()}),
                "{v}"
            );
            assert_eq!(e["resume_after"], json!(format!("{epoch}.{parted}")), "{v}");
            assert!(t.elapsed() < Duration::from_secs(4), "refused at once");
            // Where it says to read on reads, from the start of what may
            // be another history: the event again, under its id.
            let (s, v) = app
                .get(&format!(
                    "/v1/events?after={}",
                    e["resume_after"].as_str().unwrap()
                ))
                .await;
            assert_eq!(s, StatusCode::OK, "{v}");
            assert_eq!(v["events"][0]["payment_id"], "pay_hf", "{v}");
        }
    }
    let (s, _) = app.get(&format!("/v1/events?after={end}")).await;
    assert_eq!(s, StatusCode::OK, "the head itself is a position given");
}

finality_testkit::on_both_backends!(a_feed_position_never_given_is_refused);

/// Before: `/readyz`, which needs no credential, printed a paused
/// provider's own error body (what its API said about the key) to anyone
/// who asked. Now the class is shown to all, the reason only with a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_names_a_providers_words_only_to_a_credential() {
    let app = super::providers::stripe_app_with_key(true, false, "sk_test_revoked").await;
    app.register_at("stripe", "order_hz", "pi_3HostileReadyz")
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let anonymous = loop {
        let r = app
            .http
            .get(format!("{}/readyz", app.base))
            .send()
            .await
            .unwrap();
        let v: Value = r.json().await.unwrap();
        if v["status"] == "degraded" {
            break v;
        }
        assert!(std::time::Instant::now() < deadline, "{v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let paused = &anonymous["paused_providers"]["stripe"];
    assert_eq!(paused["class"], "permanent", "{anonymous}");
    assert!(paused["reason"].is_null(), "{anonymous}");
    assert!(!anonymous.to_string().contains("401"), "{anonymous}");
    let (_, authed) = app.get("/readyz").await;
    assert!(
        authed["paused_providers"]["stripe"]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("401"),
        "{authed}"
    );
}

/// Before: an account's `webhook_secret_envs` could name any file the
/// process could read (`/proc/self/environ`, every other secret in it),
/// and a change was audited without what it changed. Now a file must be
/// under `[server] secret_dirs` (422 naming the field otherwise), and an
/// update's audit record holds the account before and after, masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_secret_files_are_confined_and_changes_audited() {
    let app = spawn_app_custom(
        Backend::Sqlite,
        SimConfig::deterministic(Duration::from_secs(3600)),
        false,
        super::accounts::providers,
    )
    .await;
    let (s, v) = app
        .post(
            "/v1/accounts",
            json!({"provider": "stripe", "id": "acct_H",
                   "webhook_secret_envs": ["/proc/self/environ"]}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"]["field"], "webhook_secret_envs", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("secret_dirs"),
        "{v}"
    );
    for (weight, status) in [(2, StatusCode::CREATED), (3, StatusCode::OK)] {
        let (s, v) = app
            .post(
                "/v1/accounts",
                json!({"provider": "stripe", "id": "acct_H", "weight": weight,
                       "webhook_secret_envs": ["FINALITY_IT_ACCT_A_WHSEC"]}),
            )
            .await;
        assert_eq!(s, status, "{v}");
    }
    let (_, audit) = app.get("/v1/audit?limit=10").await;
    let update = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "account_update")
        .unwrap_or_else(|| panic!("{audit}"));
    assert_eq!(update["detail"]["before"]["spec"]["weight"], 2, "{update}");
    assert_eq!(update["detail"]["after"]["spec"]["weight"], 3, "{update}");
    assert!(
        !update.to_string().contains(super::accounts::WHSEC_A),
        "{update}"
    );
}
