use super::*;
use reqwest::Method;

finality_testkit::on_both_backends!(
    register_get_list_and_idempotency,
    bad_input_names_the_field,
    auth_is_required,
    resolve_by_hand,
    poll_now_settles_through_the_engine,
    event_feed_pages_transitions,
    merchant_ref_registration_finds_the_provider_id,
    provider_stats_over_the_api,
    archived_payment_answers_gone,
);

const HOUR: Duration = Duration::from_secs(3600);

async fn register_get_list_and_idempotency(b: Backend) {
    let app = spawn_app(b, HOUR).await;
    let body = app.payment("pay_1");
    let (s, created) = app.post("/v1/payments", body.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    assert_eq!(created["status"], "pending");
    assert_eq!(created["kind"], "payment");
    assert_eq!(created["amount"], 4200);
    assert_eq!(created["poll"]["attempts"], 0);
    assert!(created["poll"]["next_poll_at"].is_string());
    assert_eq!(created["history"], json!([]));
    assert!(created["finalized_at"].is_null());

    let (s, again) = app.post("/v1/payments", body.clone()).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(again["created_at"], created["created_at"]);

    let mut changed = body.clone();
    changed["amount"] = json!(9999);
    let (s, err) = app.post("/v1/payments", changed).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(err["error"]["code"], "id_conflict");
    assert!(err["error"]["message"].as_str().unwrap().contains("amount"));

    let (s, got) = app.get("/v1/payments/pay_1").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(got["provider_ref"], body["provider_ref"]);
    assert_eq!(got["metadata"], json!({"order": "o-1"}));

    for i in 2..=4 {
        let (s, _) = app
            .post("/v1/payments", app.payment(&format!("pay_{i}")))
            .await;
        assert_eq!(s, StatusCode::CREATED);
    }
    let (s, page) = app
        .get("/v1/payments?limit=3&provider=sim&status=pending")
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(page["payments"].as_array().unwrap().len(), 3);
    let cursor = page["next_cursor"].as_str().unwrap().to_string();
    let (_, rest) = app
        .get(&format!("/v1/payments?limit=3&cursor={cursor}"))
        .await;
    assert_eq!(rest["payments"][0]["id"], "pay_4");
    assert!(rest["next_cursor"].is_null());

    let (s, a) = app.get("/v1/payments/pay_1/attempts").await;
    assert_eq!(s, StatusCode::OK);
    assert!(a["attempts"].is_array());
    let (s, e) = app.get("/v1/payments/nope").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(e["error"]["code"], "not_found");
}

async fn bad_input_names_the_field(b: Backend) {
    let app = spawn_app(b, HOUR).await;
    let good = app.payment("pay_bad");
    let with = |k: &str, v: Value| {
        let mut b = good.clone();
        b[k] = v;
        b
    };
    let without = |k: &str| {
        let mut b = good.clone();
        b.as_object_mut().unwrap().remove(k);
        b
    };
    let cases: Vec<(Value, &str)> = vec![
        (with("provider", json!("paypalz")), "provider"),
        (with("amount", json!(-5)), "amount"),
        (with("amount", json!(0)), "amount"),
        (with("amount", json!(12.5)), "amount"),
        (with("amount", json!("100")), "amount"),
        (with("currency", json!("euro")), "currency"),
        (with("currency", json!("eur")), "currency"),
        (with("kind", json!("charge")), "kind"),
        (with("metadata", json!([1, 2])), "metadata"),
        (with("id", json!("has space")), "id"),
        (with("merchant_ref", json!("has space")), "merchant_ref"),
        (with("ammount", json!(5)), "ammount"),
        (without("id"), "id"),
        (without("provider"), "provider"),
        (without("provider_ref"), "provider_ref"),
        (without("amount"), "amount"),
        (without("currency"), "currency"),
    ];
    for (body, field) in cases {
        let (s, err) = app.post("/v1/payments", body.clone()).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body} -> {err}");
        assert_eq!(err["error"]["field"], field, "{body} -> {err}");
        assert_eq!(err["error"]["code"], "invalid_field");
        assert!(err["error"]["message"].as_str().unwrap().len() > 5);
    }
    // Not JSON at all.
    let resp = app
        .http
        .post(format!("{}/v1/payments", app.base))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "malformed_json");
    // Too large.
    assert_eq!(post_oversized(&app.base, "/v1/payments").await, 413);
    // Nothing was stored by any of them.
    let (_, page) = app.get("/v1/payments").await;
    assert_eq!(page["payments"], json!([]));
    let (s, v) = app.get("/v1/payments?limit=0").await;
    assert_eq!(
        (s, v["error"]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("limit"))
    );
    let (s, v) = app.get("/v1/payments?status=done").await;
    assert_eq!(
        (s, v["error"]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("status"))
    );
}

async fn auth_is_required(b: Backend) {
    let app = spawn_app(b, HOUR).await;
    let url = format!("{}/v1/payments/pay_1", app.base);
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("test-token-123"),
        Some("Bearer "),
    ] {
        let mut req = app.http.get(&url);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], "unauthorized");
    }
    let health = app
        .http
        .get(format!("{}/healthz", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let ready: Value = app
        .http
        .get(format!("{}/readyz", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready["status"], "ready");
}

async fn resolve_by_hand(b: Backend) {
    let app = spawn_app(b, HOUR).await;
    app.post("/v1/payments", app.payment("pay_r")).await;
    let (s, err) = app
        .post(
            "/v1/payments/pay_r/resolve",
            json!({"status": "succeeded", "reason": "bank statement"}),
        )
        .await;
    assert_eq!(
        (s, err["error"]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("actor"))
    );
    let (s, err) = app
        .post(
            "/v1/payments/pay_r/resolve",
            json!({"status": "processing", "reason": "x", "actor": "ana"}),
        )
        .await;
    assert_eq!(
        (s, err["error"]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("status"))
    );

    let body =
        json!({"status": "succeeded", "reason": "seen on the bank statement", "actor": "ana@ops"});
    let (s, v) = app.post("/v1/payments/pay_r/resolve", body.clone()).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "succeeded");
    assert_eq!(v["status_source"], "manual");
    assert!(v["poll"].is_null(), "a final payment has no poll");
    let h = &v["history"][0];
    assert_eq!(
        (h["from"].clone(), h["to"].clone(), h["source"].clone()),
        (json!("pending"), json!("succeeded"), json!("manual"))
    );
    assert_eq!(h["actor"], "ana@ops");
    let (s, _) = app.post("/v1/payments/pay_r/resolve", body).await;
    assert_eq!(s, StatusCode::OK, "same resolution twice is a no-op");
    let (s, err) = app
        .post(
            "/v1/payments/pay_r/resolve",
            json!({"status": "failed", "reason": "x", "actor": "bob"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(err["error"]["code"], "transition_not_allowed");
    let (s, _) = app.post("/v1/payments/pay_r/poll", json!({})).await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, _) = app
        .post(
            "/v1/payments/ghost/resolve",
            json!({"status": "failed", "reason": "x", "actor": "bob"}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

async fn poll_now_settles_through_the_engine(b: Backend) {
    // The provider settles at once; the first scheduled poll is 1 s away,
    // "poll now" makes it due immediately.
    let app = spawn_app(b, Duration::ZERO).await;
    let (s, _) = app.post("/v1/payments", app.payment("pay_p")).await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, v) = app
        .send(Method::POST, "/v1/payments/pay_p/poll", None)
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, v) = app.get("/v1/payments/pay_p").await;
        if v["status"] == "succeeded" {
            assert_eq!(v["status_source"], "status_query");
            assert_eq!(v["history"][0]["source"], "status_query");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not settled: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, a) = app.get("/v1/payments/pay_p/attempts").await;
    assert_eq!(a["attempts"][0]["outcome"], "succeeded");
    assert_eq!(a["attempts"][0]["provider_status"], "succeeded");
    assert_eq!(app.sim.stats().status_calls, 1);
}

async fn event_feed_pages_transitions(b: Backend) {
    let app = spawn_app_with(b, HOUR, false).await;
    for id in ["pay_e1", "pay_e2"] {
        app.post("/v1/payments", app.payment(id)).await;
        let body = json!({"status": "failed", "reason": "declined on the phone", "actor": "ops"});
        let (s, _) = app.post(&format!("/v1/payments/{id}/resolve"), body).await;
        assert_eq!(s, StatusCode::OK);
    }
    // Positions are given shortly after commit: wait until both are in.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (s, v) = app.get("/v1/events?limit=10").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        if v["events"].as_array().unwrap().len() == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "events missing from the feed: {v}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, v) = app.get("/v1/events?limit=1").await;
    let (first, cursor) = (
        v["events"][0].clone(),
        v["next_cursor"].as_str().unwrap().to_string(),
    );
    assert_eq!(first["type"], "payment.failed");
    assert_eq!(first["payment_id"], "pay_e1");
    assert_eq!(first["previous_status"], "pending");
    assert_eq!(first["source"], "manual");
    assert!(first["id"].as_str().unwrap().starts_with("evt_"));
    let (_, v) = app.get(&format!("/v1/events?after={cursor}")).await;
    assert_eq!(v["events"].as_array().unwrap().len(), 1);
    assert_eq!(v["events"][0]["payment_id"], "pay_e2");
    let end = v["next_cursor"].as_str().unwrap().to_string();
    let (_, v) = app.get(&format!("/v1/events?after={end}")).await;
    assert_eq!(v["events"], json!([]));
    assert_eq!(
        v["next_cursor"],
        json!(end),
        "an empty page keeps the cursor"
    );
    let (s, v) = app.get("/v1/events?after=abc").await;
    assert_eq!(
        (s, v["error"]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("after"))
    );
    // The cursor names the feed's history (its epoch) and the position.
    let (epoch, head) = end.split_once('.').unwrap();
    assert_eq!(head, "2", "{end}");
    assert!(!epoch.is_empty() && epoch.bytes().all(|b| b.is_ascii_alphanumeric()));
    // A bare position (a reader of before epochs) still reads.
    let (s, v) = app.get("/v1/events?after=1").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["events"][0]["payment_id"], "pay_e2");
    assert_eq!(v["next_cursor"], json!(end));
    // Past the head: see `hostile_admin` (409 `feed_rewound`).

    // Long poll: at the head, an empty page once the wait is over…
    let t = std::time::Instant::now();
    let (s, v) = app.get(&format!("/v1/events?after={end}&wait=300ms")).await;
    assert_eq!((s, v["events"].clone()), (StatusCode::OK, json!([])), "{v}");
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    // …and the next event as soon as it is sequenced, long before the wait.
    app.post("/v1/payments", app.payment("pay_e3")).await;
    let waiting = {
        let (http, url) = (
            app.http.clone(),
            format!("{}/v1/events?after={end}&wait=20s", app.base),
        );
        tokio::spawn(async move {
            let t = std::time::Instant::now();
            let v: Value = http
                .get(url)
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (v, t.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let body = json!({"status": "failed", "reason": "declined on the phone", "actor": "ops"});
    let (s, _) = app.post("/v1/payments/pay_e3/resolve", body).await;
    assert_eq!(s, StatusCode::OK);
    let (v, took) = waiting.await.unwrap();
    assert_eq!(v["events"][0]["payment_id"], "pay_e3", "{v}");
    assert!(took < Duration::from_secs(10), "answered after {took:?}");
    for bad in ["forever", "61s"] {
        let (s, v) = app.get(&format!("/v1/events?wait={bad}")).await;
        assert_eq!(
            (s, v["error"]["field"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("wait")),
            "{bad}: {v}"
        );
    }
}

/// Registered with only the merchant's reference: `provider_ref` is null
/// until the engine finds the provider's id (the simulator can be searched
/// by merchant reference), then recorded; neither reference can be taken
/// twice, and retrying the registration is still the same body.
async fn merchant_ref_registration_finds_the_provider_id(b: Backend) {
    let app = spawn_app(b, Duration::from_millis(600)).await;
    app.sim
        .create_priced(Some("sim_lost_1".into()), Some("ord-77".into()), 100, "USD");
    let body = json!({"id": "pay_m", "provider": "sim", "merchant_ref": "ord-77",
                      "amount": 100, "currency": "USD"});
    let (s, v) = app.post("/v1/payments", body.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["provider_ref"], Value::Null);
    assert_eq!(v["merchant_ref"], "ord-77");
    let (s, _) = app.post("/v1/payments", body.clone()).await;
    assert_eq!(s, StatusCode::OK);
    let mut twin = body.clone();
    twin["id"] = json!("pay_m_twin");
    let (s, err) = app.post("/v1/payments", twin).await;
    assert_eq!(s, StatusCode::CONFLICT, "{err}");
    assert_eq!(err["error"]["code"], "merchant_ref_conflict");
    assert_eq!(err["error"]["field"], "merchant_ref");
    assert!(err["error"]["message"].as_str().unwrap().contains("pay_m"));

    let v = app.wait_for_status("pay_m", "succeeded").await;
    assert_eq!(v["provider_ref"], "sim_lost_1", "{v}");
    // The caller retries without the provider's id: the same payment.
    let (s, again) = app.post("/v1/payments", body).await;
    assert_eq!(s, StatusCode::OK, "{again}");
    assert_eq!(again["provider_ref"], "sim_lost_1");
    // The found id is taken too.
    let taken = json!({"id": "pay_other", "provider": "sim", "provider_ref": "sim_lost_1",
                       "amount": 100, "currency": "USD"});
    let (s, err) = app.post("/v1/payments", taken).await;
    assert_eq!(s, StatusCode::CONFLICT, "{err}");
    assert_eq!(err["error"]["code"], "provider_ref_conflict");
}

/// `GET /v1/stats/providers`: the figures of the payments registered in the
/// window, per provider; a window that is not a duration is refused naming it.
async fn provider_stats_over_the_api(b: Backend) {
    let app = spawn_app(b, HOUR).await;
    for id in ["pay_st1", "pay_st2"] {
        let (s, _) = app.post("/v1/payments", app.payment(id)).await;
        assert_eq!(s, StatusCode::CREATED);
    }
    let body = json!({"status": "failed", "reason": "bank says so", "actor": "ana@ops"});
    let (s, v) = app.post("/v1/payments/pay_st1/resolve", body).await;
    assert_eq!(s, StatusCode::OK, "{v}");

    let (s, v) = app.get("/v1/stats/providers?window=1h").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["window_s"], 3600);
    let p = &v["providers"][0];
    assert_eq!(p["provider"], "sim", "{v}");
    assert_eq!(p["payments"], 2, "{v}");
    assert_eq!(p["final_by"]["manual"], 1, "{v}");
    assert_eq!(p["open"], 1, "{v}");
    assert_eq!(p["queries_until_final"]["max"], 0.0, "{v}");
    assert!(p["time_to_final_s"]["p50"].is_number(), "{v}");

    let (s, err) = app.get("/v1/stats/providers?window=soon").await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["error"]["field"], "window", "{err}");
}

/// A payment retention archived answers 410 with the file that holds it
/// (on `GET` and on `/attempts`), never a 404; a payment never registered
/// still answers 404; a restore brings it back to 200.
async fn archived_payment_answers_gone(b: Backend) {
    use finality_engine::lifecycle::{Archiver, RetentionConfig};
    let app = spawn_app(b, HOUR).await;
    app.post("/v1/payments", app.payment("pay_old")).await;
    let (s, _) = app
        .post(
            "/v1/payments/pay_old/resolve",
            json!({"status": "failed", "reason": "bank said so", "actor": "ana"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    // Its events delivered and pruned, and time passed: retention's turn.
    {
        use finality_testkit::testing::Backend as Db;
        let sql = "DELETE FROM outbox";
        match &app.db.backend {
            Db::Postgres(pg) => sqlx::query(sql).execute(pg.pool()).await.map(|_| ()),
            Db::Sqlite(l) => sqlx::query(sql).execute(l.pool()).await.map(|_| ()),
            Db::Mysql(m) => sqlx::query(sql).execute(m.pool()).await.map(|_| ()),
        }
        .unwrap();
    }
    let later = finality_core::Clock::now(&finality_core::SystemClock)
        .plus(Duration::from_secs(601 * 86_400));
    let dir =
        std::env::temp_dir().join(format!("finality_gone_{}_{}", std::process::id(), b as u8));
    let cfg = RetentionConfig {
        archive_dir: dir.clone(),
        ..RetentionConfig::default()
    };
    let report = Archiver::new(
        app.db.store.clone(),
        Arc::new(finality_core::VirtualClock::new(later)),
        cfg,
        "test",
    )
    .run_once(None)
    .await
    .unwrap()
    .unwrap();
    assert_eq!(report.removed.get("payments"), Some(&1), "{report:?}");

    for path in ["/v1/payments/pay_old", "/v1/payments/pay_old/attempts"] {
        let (s, v) = app.get(path).await;
        assert_eq!(s, StatusCode::GONE, "{path}: {v}");
        assert_eq!(v["error"]["code"], "archived");
        let file = v["error"]["archive"].as_str().unwrap();
        assert!(file.starts_with("payments/payments/"), "{file}");
        assert!(dir.join(file).exists());
        assert!(v["error"]["archived_at"].is_string());
        assert!(v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("finality archive restore"));
    }
    let (s, v) = app.get("/v1/payments/never_registered").await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!("not_found"))
    );

    let (_, v) = app.get("/v1/payments/pay_old").await;
    let file = dir.join(v["error"]["archive"].as_str().unwrap());
    finality_engine::lifecycle::restore(
        &*app.db.store,
        &dir,
        &file,
        Duration::from_secs(86_400),
        later,
    )
    .await
    .unwrap();
    let (s, v) = app.get("/v1/payments/pay_old").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "failed");
    assert_eq!(v["history"][0]["actor"], "ana");
    let _ = std::fs::remove_dir_all(&dir);
}
