//! Outside bytes at the HTTP surface, fuzzed (proptest) against the real
//! server over loopback: API bodies, query strings and feed cursors never
//! make a 5xx (a 4xx names what was wrong); a flood of badly signed
//! webhooks is turned away without a database write; too many headers are
//! refused and the server keeps serving.

use super::*;
use proptest::prelude::*;

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,40}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(".{0,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A registration body with the real field names and arbitrary values.
fn registration() -> impl Strategy<Value = Value> {
    let field = prop::sample::select(vec![
        "id",
        "provider",
        "provider_ref",
        "merchant_ref",
        "amount",
        "currency",
        "kind",
        "metadata",
    ]);
    prop::collection::btree_map(field.prop_map(String::from), json_value(), 0..8)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn api_bodies_query_strings_and_cursors_never_answer_5xx() {
    let rt = runtime();
    let app = rt.block_on(spawn_app_with(
        Backend::Sqlite,
        Duration::from_secs(3600),
        false,
    ));
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 200,
        ..ProptestConfig::default()
    });
    runner
        .run(
            &(
                registration(),
                json_value(),
                ".{0,60}",
                "[a-z_]{0,10}=.{0,30}",
            ),
            |(reg, any_json, raw, query)| {
                rt.block_on(async {
                    for body in [reg.to_string(), any_json.to_string(), raw.clone()] {
                        let r = app
                            .http
                            .post(format!("{}/v1/payments", app.base))
                            .bearer_auth(TOKEN)
                            .header("content-type", "application/json")
                            .body(body.clone())
                            .send()
                            .await
                            .unwrap();
                        let status = r.status();
                        let text = r.text().await.unwrap();
                        prop_assert!(status.as_u16() < 500, "{status} for {body}: {text}");
                        if status.is_client_error() {
                            let v: Value = serde_json::from_str(&text).unwrap();
                            prop_assert!(v["error"]["message"].is_string(), "{text}");
                        }
                    }
                    let encoded: String =
                        url::form_urlencoded::byte_serialize(raw.as_bytes()).collect();
                    for path in [
                        format!("/v1/payments?{query}"),
                        format!("/v1/payments/{encoded}"),
                        format!("/v1/events?after={encoded}"),
                        format!("/v1/events?{query}"),
                        format!("/v1/stats/providers?window={encoded}"),
                    ] {
                        let r = app
                            .http
                            .get(format!("{}{path}", app.base))
                            .bearer_auth(TOKEN)
                            .send()
                            .await
                            .unwrap();
                        prop_assert!(r.status().as_u16() < 500, "{} for {path}", r.status());
                    }
                    Ok(())
                })
            },
        )
        .unwrap();
}

/// 500 webhooks with bad signatures, 50 at a time: every one 401, not one
/// inbox row written, and the server answers normally afterwards.
#[test]
fn a_flood_of_badly_signed_webhooks_writes_nothing() {
    let rt = runtime();
    rt.block_on(async {
        let app = spawn_app_with(Backend::Postgres, Duration::from_secs(3600), false).await;
        let before = app.db.store.inbox_counts().await.unwrap();
        let started = std::time::Instant::now();
        for chunk in 0..10 {
            let mut batch = Vec::new();
            for i in 0..50 {
                let (headers, body) = super::webhooks::signed(
                    "whsec_bm90IHRoZSByaWdodCBzZWNyZXQ=",
                    &format!("msg_flood_{chunk}_{i}"),
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .as_secs() as i64,
                    "sim_flood",
                    "succeeded",
                );
                let mut req = app.http.post(format!("{}/webhooks/sim", app.base));
                for (k, v) in &headers {
                    req = req.header(*k, v);
                }
                batch.push(req.body(body).send());
            }
            for r in futures::future::join_all(batch).await {
                assert_eq!(r.unwrap().status(), StatusCode::UNAUTHORIZED);
            }
        }
        let took = started.elapsed();
        assert_eq!(app.db.store.inbox_counts().await.unwrap(), before);
        eprintln!("500 badly signed webhooks answered in {took:?}");
        let (s, _) = app.get("/healthz").await;
        assert_eq!(s, StatusCode::OK);
    });
}

/// A request with far too many headers is refused (431 or a closed
/// connection); the server keeps answering others.
#[test]
fn too_many_headers_are_refused_and_the_server_keeps_serving() {
    let rt = runtime();
    rt.block_on(async {
        let app = spawn_app_with(Backend::Sqlite, Duration::from_secs(3600), false).await;
        let mut req = app
            .http
            .get(format!("{}/v1/payments", app.base))
            .bearer_auth(TOKEN);
        for i in 0..300 {
            req = req.header(format!("x-filler-{i}"), "y".repeat(64));
        }
        // A closed connection refuses it too; an answer must be a 4xx.
        if let Ok(r) = req.send().await {
            assert!(
                r.status().is_client_error(),
                "300 headers answered {}",
                r.status()
            );
        }
        // One header of 256 KiB: within what the HTTP server reads, beyond
        // what finality accepts.
        let huge = "z".repeat(256 * 1024);
        let r = app
            .http
            .get(format!("{}/v1/payments", app.base))
            .bearer_auth(TOKEN)
            .header("x-huge", huge)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "headers_too_large", "{v}");
        let (s, _) = app.get("/v1/payments").await;
        assert_eq!(s, StatusCode::OK);
    });
}

/// A caller's `X-Request-Id` comes back as sent; without one, a UUID is
/// made, and each request gets its own, on answers of every kind
/// (a success, a refusal by the guards, a 404).
#[test]
fn request_ids_are_kept_or_made_and_sent_back() {
    let rt = runtime();
    rt.block_on(async {
        let app = spawn_app_with(Backend::Sqlite, Duration::from_secs(3600), false).await;
        let id_of = |r: &reqwest::Response| {
            r.headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let get = |path: &str| {
            app.http
                .get(format!("{}{path}", app.base))
                .bearer_auth(TOKEN)
        };
        let r = get("/v1/payments")
            .header("x-request-id", "caller-42")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(id_of(&r).as_deref(), Some("caller-42"));
        let mut made = Vec::new();
        for path in ["/v1/payments", "/v1/payments/nope"] {
            let r = get(path).send().await.unwrap();
            let id = id_of(&r).unwrap_or_else(|| panic!("{path}: no x-request-id"));
            assert!(
                uuid::Uuid::parse_str(&id).is_ok(),
                "{path}: {id} is not a UUID"
            );
            made.push(id);
        }
        assert_ne!(made[0], made[1], "two requests, one id");
        let r = get("/v1/payments")
            .header("x-request-id", "caller-43")
            .header("x-huge", "z".repeat(64 * 1024))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        assert_eq!(id_of(&r).as_deref(), Some("caller-43"));
    });
}

/// Write `head` then one byte of `drip` every 300 ms, never finishing; how
/// long until the server answers or closes the connection (`None`: still
/// open after `give_up`).
async fn trickle(base: &str, head: &str, drip: &[u8], give_up: Duration) -> Option<Duration> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut r, mut w) = s.into_split();
    let started = std::time::Instant::now();
    w.write_all(head.as_bytes()).await.unwrap();
    let drip: Vec<u8> = drip.iter().copied().cycle().take(10_000).collect();
    let writer = tokio::spawn(async move {
        for b in drip {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if w.write_all(&[b]).await.is_err() {
                return;
            }
        }
    });
    let mut buf = [0u8; 512];
    // Any answer (a 4xx) or the connection closed ends the wait.
    let ended = tokio::time::timeout(give_up, r.read(&mut buf))
        .await
        .is_ok();
    writer.abort();
    ended.then(|| started.elapsed())
}

/// A client that trickles its headers, or its body, a byte at a time is
/// cut off after the client timeout instead of holding a connection
/// forever; the server keeps answering others meanwhile.
#[test]
fn slow_clients_are_cut_off_after_the_client_timeout() {
    let rt = runtime();
    rt.block_on(async {
        let app = spawn_app_with(Backend::Sqlite, Duration::from_secs(3600), false).await;
        let give_up = CLIENT_TIMEOUT * 4;
        let headers = trickle(
            &app.base,
            "POST /webhooks/sim HTTP/1.1\r\nHost: x\r\n",
            b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
            give_up,
        );
        let body_head = format!(
            "POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{{"
        );
        let body = trickle(&app.base, &body_head, b" ", give_up);
        let others = async {
            tokio::time::sleep(CLIENT_TIMEOUT / 2).await;
            app.get("/v1/payments").await.0
        };
        let (headers, body, others) = tokio::join!(headers, body, others);
        assert_eq!(others, StatusCode::OK, "others are served meanwhile");
        for (what, took) in [("headers", headers), ("body", body)] {
            let took =
                took.unwrap_or_else(|| panic!("trickled {what} still open after {give_up:?}"));
            assert!(
                took >= CLIENT_TIMEOUT - Duration::from_millis(200),
                "trickled {what} cut off after {took:?}, before the client timeout"
            );
        }
    });
}
