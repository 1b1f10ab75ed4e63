//! `/v1/openapi.json`: valid OpenAPI 3.1 by the OpenAPI Initiative's own
//! schema, covering every `/v1` route; and every answer the API gives in a
//! run through each route has its status code documented for that route
//! and a body that validates against the documented schema, which forbids
//! undocumented fields (`additionalProperties: false`).

use super::roles::{spawn_named, ADMIN, ALICE, SERVICE};
use super::*;
use reqwest::Method;

/// Every `/v1` route of the HTTP contract (docs/API in README).
const ROUTES: &[(&str, &str)] = &[
    ("post", "/v1/payments"),
    ("get", "/v1/payments"),
    ("get", "/v1/payments/{id}"),
    ("get", "/v1/payments/{id}/attempts"),
    ("post", "/v1/payments/{id}/resolve"),
    ("post", "/v1/payments/{id}/poll"),
    ("get", "/v1/events"),
    ("get", "/v1/events/destinations"),
    ("post", "/v1/events/destinations/{name}/rewind"),
    ("post", "/v1/events/destinations/{name}/redeliver"),
    ("post", "/v1/events/destinations/{name}/pause"),
    ("post", "/v1/events/destinations/{name}/resume"),
    ("get", "/v1/accounts"),
    ("post", "/v1/accounts"),
    ("post", "/v1/accounts/{provider}/{id}/disable"),
    ("get", "/v1/stats/providers"),
    ("get", "/v1/audit"),
    ("get", "/v1/sweep/runs"),
    ("get", "/v1/reconciliations"),
    ("post", "/v1/reconciliations"),
    ("get", "/v1/reconciliations/{id}"),
    ("get", "/v1/flags"),
    ("post", "/v1/payments/{id}/flags/{flag}/resolve"),
    ("get", "/v1/openapi.json"),
];

fn oas_validator() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../fixtures/oas-3.1-schema.json")).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// The documented schema of `(method, template, status)`, or why not.
fn documented(doc: &Value, method: &str, template: &str, status: u16) -> Result<Value, String> {
    let op = doc["paths"][template][method]
        .as_object()
        .ok_or_else(|| format!("{method} {template} is not in the document"))?;
    let resp = op["responses"]
        .get(status.to_string())
        .ok_or_else(|| format!("{method} {template} does not document status {status}"))?;
    Ok(resp["content"]["application/json"]["schema"].clone())
}

fn check_body(doc: &Value, schema: &Value, body: &Value) -> Result<(), String> {
    if schema.is_null() {
        return Err("no JSON schema documented".into());
    }
    let mut root = schema.clone();
    root["components"] = doc["components"].clone();
    root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    let v = jsonschema::validator_for(&root).map_err(|e| format!("bad schema: {e}"))?;
    let errors: Vec<String> = v
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[tokio::test]
async fn document_is_openapi_3_1_and_covers_every_route() {
    let app = spawn_named(Backend::Sqlite).await;
    // Public: no token needed.
    let resp = app
        .http
        .get(format!("{}/v1/openapi.json", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let doc: Value = resp.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let oas = oas_validator();
    let errors: Vec<String> = oas
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not a valid OpenAPI 3.1 document: {errors:#?}"
    );
    // The check can fail: a document without `info` is refused.
    let mut broken = doc.clone();
    broken.as_object_mut().unwrap().remove("info");
    assert!(!oas.is_valid(&broken));

    let mut in_doc: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            in_doc.push((method.clone(), path.clone()));
        }
    }
    for (m, p) in ROUTES {
        assert!(
            in_doc.contains(&(m.to_string(), p.to_string())),
            "{m} {p} is missing from /v1/openapi.json"
        );
    }
    for (m, p) in &in_doc {
        assert!(
            ROUTES.contains(&(m.as_str(), p.as_str())),
            "{m} {p} is documented but not in this test's route list: add it and its scenarios"
        );
    }
    // OpenAPI: "The id MUST be unique among all operations described in
    // the API" (client generators name methods by it).
    let mut ids = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap_or_default().to_string();
            assert!(!id.is_empty(), "{method} {path} has no operationId");
            if let Some(other) = ids.insert(id.clone(), format!("{method} {path}")) {
                panic!("operationId `{id}` of {method} {path} is also {other}'s");
            }
        }
    }
    // Error bodies and cursors are described once and referred to.
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    assert!(doc["components"]["schemas"]["Cursor"].is_object());
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
}

const UPLOAD: &str = "/v1/reconciliations?provider=sim&format=csv&reference=ref&amount=gross&currency=ccy&decimal=true&file_name=day1.csv";
const REPORT: &str = "ref,gross,ccy\nsim_oa_2,12.00,EUR\nsim_nobody,1.00,EUR\n";
const BAD_REPORT: &str = "ref,gross,ccy\nsim_oa_2,12.00,EUR\nsim_x,lots,EUR\n";

struct Call {
    token: Option<&'static str>,
    method: Method,
    path: String,
    template: &'static str,
    body: Option<Value>,
    raw: Option<&'static str>,
    csv: Option<&'static str>,
    want: u16,
}

fn call(
    token: &'static str,
    method: Method,
    path: &str,
    template: &'static str,
    want: u16,
) -> Call {
    Call {
        token: Some(token),
        method,
        path: path.into(),
        template,
        body: None,
        raw: None,
        csv: None,
        want,
    }
}

impl Call {
    fn json(mut self, v: Value) -> Self {
        self.body = Some(v);
        self
    }
    fn raw(mut self, s: &'static str) -> Self {
        self.raw = Some(s);
        self
    }
    fn csv(mut self, s: &'static str) -> Self {
        self.csv = Some(s);
        self
    }
    fn anonymous(mut self) -> Self {
        self.token = None;
        self
    }
}

/// Every route, its success and each of its documented errors, against
/// the document.
#[tokio::test]
async fn every_answer_is_documented_with_its_fields() {
    let app = spawn_named(Backend::Postgres).await;
    let doc: Value = app
        .http
        .get(format!("{}/v1/openapi.json", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // A recorded sweep run, so its fields are checked too.
    let run = finality_store::sweep::SweepRun {
        id: 0,
        holder: "node-a".into(),
        started_at: finality_core::Timestamp(1_700_000_000_000),
        finished_at: finality_core::Timestamp(1_700_000_000_500),
        scanned: 12,
        pass_complete: true,
        findings: [("job_missing".to_string(), 1)].into_iter().collect(),
        repaired: 1,
    };
    app.db.store.sweep_record(&run).await.unwrap();
    // An imported report with one kept line, so their fields are checked.
    use finality_store::reconciliations::{ReconLine, ReconStart};
    let ReconStart::Started(run_id) = app
        .db
        .store
        .recon_start(
            "sim",
            "report.csv",
            "ab12",
            finality_core::Timestamp(1_700_000_000_000),
            finality_core::Timestamp(1_700_000_000_000),
        )
        .await
        .unwrap()
    else {
        panic!("a new import")
    };
    let kept = ReconLine {
        line: Some(2),
        kind: "charge".into(),
        provider_ref: Some("sim_x".into()),
        amount: 1250,
        currency: "EUR".into(),
        outcome: "unknown_here".into(),
        reason: "never registered".into(),
        payment_id: None,
    };
    app.db.store.recon_add_lines(run_id, &[kept]).await.unwrap();
    let counts = [("unknown_here".to_string(), 1)].into_iter().collect();
    app.db
        .store
        .recon_finish(
            run_id,
            1,
            &counts,
            finality_core::Timestamp(1_700_000_000_100),
        )
        .await
        .unwrap();
    // A flag: a failure reported after a payment succeeded.
    {
        use finality_core::{Source, Status, Timestamp};
        use finality_testkit::conformance::{drain_inbox, inbox_event, new_payment};
        let now = finality_core::SystemClock.now();
        let store = &app.db.store;
        store
            .register(&new_payment("oa_flag"), now, Timestamp(now.0 + 3_600_000))
            .await
            .unwrap();
        let paid = finality_store::Report {
            payment_id: "oa_flag".into(),
            status: Status::Succeeded,
            source: Source::Webhook,
            event_id: Some("evt_oa_paid".into()),
            observed_at: now,
            reason: None,
            actor: None,
        };
        store.apply(&paid, now).await.unwrap();
        store
            .inbox_insert(
                &[inbox_event("evt_oa_late", "ref_oa_flag", Status::Failed)],
                now,
            )
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while store.flags_open(0, 10).await.unwrap().is_empty() {
            assert!(std::time::Instant::now() < deadline, "no flag raised");
            drain_inbox(&**store, now).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let flag = app.db.store.flags_open(0, 10).await.unwrap()[0].id;
    let flag_path = format!("/v1/payments/oa_flag/flags/{flag}/resolve");
    let p = |id: &str| {
        json!({"id": id, "provider": "sim", "provider_ref": format!("sim_{id}"),
        "amount": 1200, "currency": "EUR", "metadata": {"order": 7}})
    };
    use Method as M;
    const FLAG: &str = "/v1/payments/{id}/flags/{flag}/resolve";
    let calls = vec![
        call(ALICE, M::GET, "/v1/flags", "/v1/flags", 200),
        call(ALICE, M::GET, "/v1/flags?limit=0", "/v1/flags", 422),
        call(ALICE, M::GET, "/v1/flags", "/v1/flags", 401).anonymous(),
        call(SERVICE, M::POST, &flag_path, FLAG, 403).json(json!({"reason": "r"})),
        call(ALICE, M::POST, &flag_path, FLAG, 400).raw("nope"),
        call(ALICE, M::POST, &flag_path, FLAG, 422).json(json!({})),
        call(ALICE, M::POST, "/v1/payments/oa_flag/flags/999999/resolve", FLAG, 404)
            .json(json!({"reason": "r"})),
        call(ALICE, M::POST, &flag_path, FLAG, 200).json(json!({"reason": "the bank shows it paid"})),
        call(SERVICE, M::POST, "/v1/payments", "/v1/payments", 201).json(p("oa_1")),
        call(SERVICE, M::POST, "/v1/payments", "/v1/payments", 200).json(p("oa_1")),
        call(SERVICE, M::POST, "/v1/payments", "/v1/payments", 201).json(p("oa_2")),
        call(SERVICE, M::POST, "/v1/payments", "/v1/payments", 400).raw("{not json"),
        call(SERVICE, M::POST, "/v1/payments", "/v1/payments", 401).json(p("oa_3")).anonymous(),
        call(ALICE, M::POST, "/v1/payments", "/v1/payments", 403).json(p("oa_3")),
        call(SERVICE, M::POST, "/v1/payments", "/v1/payments", 409)
            .json(json!({"id": "oa_1", "provider": "sim", "provider_ref": "sim_oa_1", "amount": 1, "currency": "EUR"})),
        call(SERVICE, M::POST, "/v1/payments", "/v1/payments", 422)
            .json(json!({"id": "oa_4", "provider": "sim", "provider_ref": "x", "currency": "EUR"})),
        call(SERVICE, M::GET, "/v1/payments?limit=1", "/v1/payments", 200),
        call(SERVICE, M::GET, "/v1/payments?limit=0", "/v1/payments", 422),
        call(SERVICE, M::GET, "/v1/payments", "/v1/payments", 401).anonymous(),
        call(SERVICE, M::GET, "/v1/payments/oa_1", "/v1/payments/{id}", 200),
        call(SERVICE, M::GET, "/v1/payments/nope", "/v1/payments/{id}", 404),
        call(SERVICE, M::GET, "/v1/payments/oa_1/attempts", "/v1/payments/{id}/attempts", 200),
        call(SERVICE, M::GET, "/v1/payments/nope/attempts", "/v1/payments/{id}/attempts", 404),
        call(ALICE, M::POST, "/v1/payments/oa_1/poll", "/v1/payments/{id}/poll", 202),
        call(SERVICE, M::POST, "/v1/payments/oa_1/poll", "/v1/payments/{id}/poll", 403),
        call(ALICE, M::POST, "/v1/payments/nope/poll", "/v1/payments/{id}/poll", 404),
        call(SERVICE, M::POST, "/v1/payments/oa_1/resolve", "/v1/payments/{id}/resolve", 403)
            .json(json!({"status": "succeeded", "reason": "r"})),
        call(ALICE, M::POST, "/v1/payments/oa_1/resolve", "/v1/payments/{id}/resolve", 400).raw("nope"),
        call(ALICE, M::POST, "/v1/payments/oa_1/resolve", "/v1/payments/{id}/resolve", 422)
            .json(json!({"status": "pending", "reason": "r"})),
        call(ALICE, M::POST, "/v1/payments/nope/resolve", "/v1/payments/{id}/resolve", 404)
            .json(json!({"status": "succeeded", "reason": "r"})),
        call(ALICE, M::POST, "/v1/payments/oa_1/resolve", "/v1/payments/{id}/resolve", 200)
            .json(json!({"status": "succeeded", "reason": "seen at the bank", "note": "OPS-1"})),
        call(ALICE, M::POST, "/v1/payments/oa_1/resolve", "/v1/payments/{id}/resolve", 409)
            .json(json!({"status": "failed", "reason": "r"})),
        call(ALICE, M::POST, "/v1/payments/oa_1/poll", "/v1/payments/{id}/poll", 409),
        call(ALICE, M::GET, "/v1/payments/oa_1", "/v1/payments/{id}", 200),
        call(ALICE, M::GET, "/v1/events?after=0&limit=10", "/v1/events", 200),
        call(ALICE, M::GET, "/v1/events?after=x", "/v1/events", 422),
        call(ALICE, M::GET, "/v1/events", "/v1/events", 401).anonymous(),
        call(ALICE, M::GET, "/v1/events/destinations", "/v1/events/destinations", 200),
        call(ADMIN, M::POST, "/v1/events/destinations/http:x/rewind", "/v1/events/destinations/{name}/rewind", 404)
            .json(json!({"to_seq": 0})),
        call(ADMIN, M::POST, "/v1/events/destinations/http:x/rewind", "/v1/events/destinations/{name}/rewind", 422)
            .json(json!({"to_seq": 1, "to_time": "2026-01-01T00:00:00Z"})),
        call(ADMIN, M::POST, "/v1/events/destinations/http:x/rewind", "/v1/events/destinations/{name}/rewind", 400)
            .raw("nope"),
        call(ALICE, M::POST, "/v1/events/destinations/http:x/rewind", "/v1/events/destinations/{name}/rewind", 403)
            .json(json!({"to_seq": 0})),
        call(ADMIN, M::POST, "/v1/events/destinations/http:x/redeliver", "/v1/events/destinations/{name}/redeliver", 404)
            .json(json!({"event_id": "evt_x"})),
        call(ADMIN, M::POST, "/v1/events/destinations/http:x/redeliver", "/v1/events/destinations/{name}/redeliver", 422)
            .json(json!({})),
        call(ADMIN, M::POST, "/v1/events/destinations/http:x/pause", "/v1/events/destinations/{name}/pause", 404),
        call(ALICE, M::POST, "/v1/events/destinations/http:x/resume", "/v1/events/destinations/{name}/resume", 403),
        call(ALICE, M::GET, "/v1/accounts", "/v1/accounts", 200),
        call(ALICE, M::GET, "/v1/accounts", "/v1/accounts", 401).anonymous(),
        call(ADMIN, M::POST, "/v1/accounts", "/v1/accounts", 201)
            .json(json!({"provider": "sim", "id": "inst_1", "rate_limit": {"per_second": 5}, "weight": 2})),
        call(ADMIN, M::POST, "/v1/accounts", "/v1/accounts", 200)
            .json(json!({"provider": "sim", "id": "inst_1"})),
        call(ALICE, M::POST, "/v1/accounts", "/v1/accounts", 403)
            .json(json!({"provider": "sim", "id": "inst_2"})),
        call(ADMIN, M::POST, "/v1/accounts", "/v1/accounts", 422)
            .json(json!({"provider": "nope", "id": "inst_2"})),
        call(ADMIN, M::POST, "/v1/accounts", "/v1/accounts", 400).raw("nope"),
        call(ALICE, M::GET, "/v1/accounts", "/v1/accounts", 200),
        call(ADMIN, M::POST, "/v1/accounts/sim/inst_1/disable", "/v1/accounts/{provider}/{id}/disable", 200),
        call(ADMIN, M::POST, "/v1/accounts/sim/none/disable", "/v1/accounts/{provider}/{id}/disable", 404),
        call(ALICE, M::POST, "/v1/accounts/sim/inst_1/disable", "/v1/accounts/{provider}/{id}/disable", 403),
        call(ALICE, M::GET, "/v1/stats/providers?by=account", "/v1/stats/providers", 200),
        call(ALICE, M::GET, "/v1/stats/providers?by=merchant", "/v1/stats/providers", 422),
        call(ALICE, M::GET, "/v1/stats/providers?window=1h", "/v1/stats/providers", 200),
        call(ALICE, M::GET, "/v1/stats/providers?window=0s", "/v1/stats/providers", 422),
        call(ADMIN, M::GET, "/v1/audit", "/v1/audit", 200),
        call(ADMIN, M::GET, "/v1/audit?limit=1", "/v1/audit", 200),
        call(SERVICE, M::GET, "/v1/audit", "/v1/audit", 403),
        call(ADMIN, M::GET, "/v1/audit?limit=x", "/v1/audit", 422),
        call(SERVICE, M::GET, "/v1/sweep/runs", "/v1/sweep/runs", 200),
        call(SERVICE, M::GET, "/v1/sweep/runs?limit=0", "/v1/sweep/runs", 422),
        call(SERVICE, M::GET, "/v1/sweep/runs", "/v1/sweep/runs", 401).anonymous(),
        call(SERVICE, M::GET, "/v1/reconciliations", "/v1/reconciliations", 200),
        call(SERVICE, M::GET, "/v1/reconciliations?limit=x", "/v1/reconciliations", 422),
        call(SERVICE, M::GET, "/v1/reconciliations/1", "/v1/reconciliations/{id}", 200),
        call(SERVICE, M::GET, "/v1/reconciliations/999", "/v1/reconciliations/{id}", 404),
        call(ALICE, M::POST, UPLOAD, "/v1/reconciliations", 201).csv(REPORT),
        call(ALICE, M::POST, UPLOAD, "/v1/reconciliations", 200).csv(REPORT),
        call(ALICE, M::POST, UPLOAD, "/v1/reconciliations", 422).csv(BAD_REPORT),
        call(SERVICE, M::POST, UPLOAD, "/v1/reconciliations", 403).csv(REPORT),
        call(ALICE, M::POST, "/v1/reconciliations?provider=sim&format=pdf", "/v1/reconciliations", 422)
            .csv(REPORT),
    ];
    let mut failures = Vec::new();
    let mut seen: Vec<(String, &str)> = Vec::new();
    for c in calls {
        let mut req = app
            .http
            .request(c.method.clone(), format!("{}{}", app.base, c.path));
        if let Some(t) = c.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = &c.body {
            req = req.json(b);
        }
        if let Some(r) = c.csv {
            req = req.header("content-type", "text/csv").body(r);
        }
        if let Some(r) = c.raw {
            req = req.header("content-type", "application/json").body(r);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap();
        let label = format!("{} {} → {status}", c.method, c.path);
        assert_eq!(status, c.want, "{label}: {body}");
        let method = c.method.as_str().to_lowercase();
        seen.push((method.clone(), c.template));
        match documented(&doc, &method, c.template, status)
            .and_then(|schema| check_body(&doc, &schema, &body))
        {
            Ok(()) => {}
            Err(e) => failures.push(format!("{label}: {e}\n  body: {body}")),
        }
    }
    assert!(
        failures.is_empty(),
        "answers not as documented:\n{}",
        failures.join("\n")
    );
    for (m, p) in ROUTES {
        if *p != "/v1/openapi.json" {
            assert!(
                seen.contains(&(m.to_string(), p)),
                "no scenario calls {m} {p}"
            );
        }
    }

    // The checks can fail: an undocumented field, or a wrong type, is caught.
    let schema = documented(&doc, "get", "/v1/payments/{id}", 200).unwrap();
    let (_, mut payment) = (0, app_get(&app, "/v1/payments/oa_1").await);
    check_body(&doc, &schema, &payment).unwrap();
    payment["surprise"] = json!(1);
    assert!(
        check_body(&doc, &schema, &payment).is_err(),
        "an undocumented field must fail"
    );
    let mut payment = app_get(&app, "/v1/payments/oa_1").await;
    payment["amount"] = json!("12.00");
    assert!(
        check_body(&doc, &schema, &payment).is_err(),
        "a wrong type must fail"
    );
}

async fn app_get(app: &TestApp, path: &str) -> Value {
    app.http
        .get(format!("{}{path}", app.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A report larger than the API's 1 MiB body limit is streamed to disk and
/// imported (the limit of other requests does not apply to it).
#[tokio::test]
async fn a_large_report_is_streamed() {
    let app = spawn_named(Backend::Sqlite).await;
    let mut body = String::from("ref,type,gross,ccy\n");
    let mut n = 0;
    while body.len() < 3 * 1024 * 1024 {
        body.push_str(&format!("sim_fee_{n},FEE,-0.25,EUR\n"));
        n += 1;
    }
    let r = app
        .http
        .post(format!(
            "{}/v1/reconciliations?provider=sim&format=csv&reference=ref&amount=gross\
             &currency=ccy&kind=type&kinds=FEE=fee&decimal=true&file_name=big.csv",
            app.base
        ))
        .bearer_auth(ALICE)
        .header("content-type", "text/csv")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["lines"], n);
    assert_eq!(v["counts"]["ignored"], n);
}
