//! The console over real HTTP: sign-in, the session cookie's flags, form
//! tokens against cross-site posts, roles; and the whole review queue worked
//! in a real headless Chromium (Debian `chromium` and `chromium-driver`).

use super::roles::{call, named_tokens, ADMIN, ALICE, SERVICE};
use super::*;
use finality_core::{Source, Status, Timestamp};
use finality_store::model::{InboxState, NewInboxEvent};

/// Payments that go to review after three "still pending" answers, 200 ms
/// apart: the real path into the queue, with real provider calls on record.
async fn spawn_console(backend: Backend) -> TestApp {
    let db = match backend {
        Backend::Postgres => testing::postgres(8).await,
        Backend::Sqlite => testing::sqlite().await,
        Backend::Mysql => testing::mysql(8).await,
    };
    let mut sim = SimConfig::deterministic(Duration::from_secs(3600));
    sim.webhooks.lost = 1.0;
    spawn_app_tokens(
        db,
        sim,
        true,
        |sim_url| {
            let mut cfg = ProviderConfig::sim(sim_url);
            cfg.schedule_override = Some(finality_core::Schedule::Fixed {
                delays: vec![Duration::from_millis(200)],
            });
            cfg.max_attempts = 3;
            let adapter = SimAdapter::new(
                sim_url,
                None,
                Timeouts {
                    connect: cfg.connect_timeout,
                    total: cfg.timeout,
                },
            )
            .unwrap();
            let mut providers = Providers::new();
            providers.insert(
                "sim".into(),
                ProviderEntry::from_config(Arc::new(adapter), &cfg),
            );
            providers
        },
        named_tokens(),
    )
    .await
}

/// Register a payment with the service token.
async fn register(app: &TestApp, body: &Value) {
    let r = app
        .http
        .post(format!("{}/v1/payments", app.base))
        .bearer_auth(SERVICE)
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
}

/// Register `ids` and wait until each is in review.
async fn fill_queue(app: &TestApp, ids: &[&str]) {
    for id in ids {
        let plan = app.sim.create_priced(None, None, 129_900, "EUR");
        let body = json!({"id": id, "provider": "sim", "provider_ref": plan.id,
            "amount": 129_900, "currency": "EUR", "metadata": {"order": format!("ord-{id}")}});
        register(app, &body).await;
    }
    for id in ids {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let v = app.db.store.get(id).await.unwrap().unwrap();
            if v.payment.status == Status::NeedsReview {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{id} never reached review"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // A webhook that failed and one nobody registered a payment for.
    let hook = |event: &str, r: &str, state: InboxState, reason: Option<&str>| NewInboxEvent {
        provider: "sim".into(),
        account: None,
        event_id: event.into(),
        provider_ref: Some(r.into()),
        merchant_ref: None,
        observed: Some(Status::Succeeded),
        provider_status: Some("succeeded".into()),
        occurred_at: Some(Timestamp(1_700_000_000_000)),
        reported: Default::default(),
        raw_body: b"{}".to_vec(),
        headers: json!({}),
        state,
        reason: reason.map(str::to_string),
        source: Source::Webhook,
    };
    app.db
        .store
        .inbox_insert(
            &[hook(
                "evt_unparsable",
                "sim_x",
                InboxState::Failed,
                Some("body did not parse: expected `data.object`"),
            )],
            finality_core::SystemClock.now(),
        )
        .await
        .unwrap();
    // Another merchant's notification, kept for a human.
    app.db
        .store
        .inbox_insert(
            &[hook(
                "evt_other_merchant",
                "sim_y",
                InboxState::Review,
                Some("account_mismatch: the provider reports app_id `1`, configured `2`"),
            )],
            finality_core::SystemClock.now(),
        )
        .await
        .unwrap();
    let orphan = hook("evt_orphan", "sim_nobody", InboxState::Received, None);
    app.db
        .store
        .inbox_insert(&[orphan], finality_core::SystemClock.now())
        .await
        .unwrap();
}

pub(crate) fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Sign in with `token`: the session cookie (`name=value`).
pub(crate) async fn sign_in(app: &TestApp, http: &reqwest::Client, token: &str) -> String {
    let r = http
        .post(format!("{}/console/login", app.base))
        .form(&[("token", token), ("next", "/console/review")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
    set.split(';').next().unwrap().to_string()
}

fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"_csrf\" value=\"")
        .expect("a form token in the page");
    html[at + 20..].split('"').next().unwrap().to_string()
}

pub(crate) async fn page(
    app: &TestApp,
    http: &reqwest::Client,
    cookie: &str,
    path: &str,
) -> (StatusCode, String) {
    let r = http
        .get(format!("{}{path}", app.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    (r.status(), r.text().await.unwrap())
}

#[tokio::test]
async fn sessions_form_tokens_and_roles() {
    sessions_form_tokens_and_roles_on(Backend::Sqlite).await;
}

/// The console's pages and their queries on MariaDB.
#[tokio::test]
async fn sessions_form_tokens_and_roles_on_mysql() {
    sessions_form_tokens_and_roles_on(Backend::Mysql).await;
}

async fn sessions_form_tokens_and_roles_on(backend: Backend) {
    let app = spawn_console(backend).await;
    fill_queue(&app, &["cs_1"]).await;
    let http = no_redirects();

    // Not signed in: to the sign-in page, and back afterwards.
    let r = http
        .get(format!("{}/console/review", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        "/console/login?next=%2Fconsole%2Freview"
    );
    // A wrong token: 401, no cookie.
    let r = http
        .post(format!("{}/console/login", app.base))
        .form(&[("token", "not-a-token-0123456789")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get("set-cookie").is_none());
    // The cookie's flags; `Secure` behind a TLS proxy.
    let r = http
        .post(format!("{}/console/login", app.base))
        .form(&[("token", ALICE), ("next", "https://evil.example/")])
        .send()
        .await
        .unwrap();
    let set = r.headers()["set-cookie"].to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    assert!(!set.contains(ALICE), "the token is not the cookie");
    assert_eq!(
        r.headers()["location"],
        "/console/review",
        "never a redirect off-site"
    );
    let r = http
        .post(format!("{}/console/login", app.base))
        .header("x-forwarded-proto", "https")
        .form(&[("token", ALICE)])
        .send()
        .await
        .unwrap();
    assert!(r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("; Secure"));

    let alice = sign_in(&app, &http, ALICE).await;
    let (s, html) = page(&app, &http, &alice, "/console/payments/cs_1").await;
    assert_eq!(s, StatusCode::OK);
    assert!(html.contains("needs_review"));
    let csrf = csrf_of(&html);
    let resolve = format!("{}/console/payments/cs_1/resolve", app.base);
    let form = |csrf: &str, confirm: &str| {
        vec![
            ("_csrf", csrf.to_string()),
            ("status", "succeeded".to_string()),
            ("reason", "seen on the bank statement".to_string()),
            ("confirm", confirm.to_string()),
        ]
    };
    // A post without this session's form token (what a page on another
    // site could send): refused, nothing changed.
    for bad in ["", "0123456789abcdef0123456789abcdef"] {
        let r = http
            .post(&resolve)
            .header("cookie", &alice)
            .form(&form(bad, "yes"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
    }
    // The first submit only asks for confirmation.
    let r = http
        .post(&resolve)
        .header("cookie", &alice)
        .form(&form(&csrf, ""))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.unwrap().contains("id=\"confirm\""));
    let v = app.db.store.get("cs_1").await.unwrap().unwrap();
    assert_eq!(
        v.payment.status,
        Status::NeedsReview,
        "nothing changes before confirming"
    );

    // A service token's session may look, not settle.
    let svc = sign_in(&app, &http, SERVICE).await;
    let (_, html) = page(&app, &http, &svc, "/console/payments/cs_1").await;
    assert!(
        !html.contains("id=\"resolve\""),
        "no resolve form for a service token"
    );
    let svc_csrf = csrf_of(&html);
    let r = http
        .post(&resolve)
        .header("cookie", &svc)
        .form(&form(&svc_csrf, "yes"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let (s, _) = page(&app, &http, &svc, "/console/audit").await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // Alice's session's token is not valid in the service's session.
    let r = http
        .post(&resolve)
        .header("cookie", &svc)
        .form(&form(&csrf, "yes"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        app.db
            .store
            .get("cs_1")
            .await
            .unwrap()
            .unwrap()
            .payment
            .status,
        Status::NeedsReview
    );

    // Confirmed: done, under Alice's name.
    let r = http
        .post(&resolve)
        .header("cookie", &alice)
        .form(&form(&csrf, "yes"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let v = app.db.store.get("cs_1").await.unwrap().unwrap();
    assert_eq!(v.payment.status, Status::Succeeded);
    assert_eq!(v.history.last().unwrap().actor.as_deref(), Some("alice"));
    let trail = app
        .db
        .store
        .audit_list(&finality_store::review::AuditFilter {
            limit: 50,
            ..Default::default()
        })
        .await
        .unwrap();
    let actions: Vec<(&str, &str)> = trail
        .iter()
        .map(|r| (r.entry.actor.as_str(), r.entry.action.as_str()))
        .collect();
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == ("alice", "resolve"))
            .count(),
        1,
        "{actions:?}"
    );
    assert!(actions.contains(&("checkout", "sign_in")));

    // A service session's payment page holds no audit records.
    let (_, html) = page(&app, &http, &svc, "/console/payments/cs_1").await;
    assert!(!html.contains("payment-audit"));
    // A sign-in posted from another site is refused.
    let r = http
        .post(format!("{}/console/login", app.base))
        .header("origin", "https://evil.example")
        .form(&[("token", ALICE)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.headers().get("set-cookie").is_none());
    // An id with `%` and `?` in it: every link and form names it encoded.
    let odd = json!({"id": "ord-%31?x", "provider": "sim", "provider_ref": "sim_odd",
        "amount": 100, "currency": "EUR"});
    register(&app, &odd).await;
    let (s, html) = page(&app, &http, &alice, "/console/payments/ord-%2531%3Fx").await;
    assert_eq!(s, StatusCode::OK, "{html}");
    assert!(
        html.contains("action=\"/console/payments/ord-%2531%3Fx/resolve\""),
        "{html}"
    );

    // Every page: a plain title and no id twice.
    for path in [
        "/console/review",
        "/console/payments/cs_1",
        "/console/providers",
        "/console/health",
        "/console/audit",
        "/console/api",
    ] {
        let (s, html) = page(&app, &http, &alice, path).await;
        assert_eq!(s, StatusCode::OK, "{path}");
        let title = html
            .split("<title>")
            .nth(1)
            .and_then(|t| t.split("</title>").next());
        assert!(
            title.is_some_and(|t| !t.contains('<')),
            "{path}: title {title:?}"
        );
        let mut ids: Vec<&str> = html
            .split(" id=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "{path}: an id appears twice");
    }

    // The pages' protective headers.
    let r = http
        .get(format!("{}/console/review", app.base))
        .header("cookie", &alice)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-frame-options"], "DENY");
    assert!(r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("frame-ancestors 'none'"));
    // Signing out clears the cookie.
    let r = http
        .post(format!("{}/console/logout", app.base))
        .header("cookie", &alice)
        .form(&[("_csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert!(r.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
}

/// The one shared token cannot sign in to the console: it could not say
/// who acted.
#[tokio::test]
async fn the_shared_token_cannot_sign_in() {
    let app = spawn_app_with(Backend::Sqlite, Duration::from_secs(3600), false).await;
    let r = no_redirects()
        .post(format!("{}/console/login", app.base))
        .form(&[("token", TOKEN)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.headers().get("set-cookie").is_none());
    assert!(r.text().await.unwrap().contains("named tokens"));
}

/// A headless Chromium driven over WebDriver by `chromedriver`, on a port
/// of its own; both stop with the test.
pub(crate) struct Browser {
    driver: std::process::Child,
    pub(crate) client: fantoccini::Client,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn which(names: &[&str]) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    names.iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

pub(crate) async fn browser() -> Browser {
    let driver_bin = which(&["chromedriver"]).expect(
        "chromedriver not found: install the Debian packages chromium and chromium-driver \
         (.ci/run does)",
    );
    let chromium = which(&["chromium", "chromium-browser", "google-chrome"])
        .expect("chromium not found: install the Debian package chromium (.ci/run does)");
    let port = finality_testkit::free_port();
    let driver = std::process::Command::new(driver_bin)
        .arg(format!("--port={port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting chromedriver");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "chromedriver did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000", "--hide-scrollbars", "--force-device-scale-factor=1"]
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = fantoccini::ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a WebDriver session in headless Chromium");
    Browser { driver, client }
}

/// Where the screenshots go: `docs/console/` when asked for
/// (`FINALITY_SCREENSHOTS=1`), else a temporary folder.
fn shots_dir() -> std::path::PathBuf {
    if std::env::var_os("FINALITY_SCREENSHOTS").is_some() {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/console")
    } else {
        std::env::temp_dir().join("finality-console-shots")
    }
}

pub(crate) async fn shot(c: &fantoccini::Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "{name} is not a PNG");
    let dir = shots_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

pub(crate) async fn text(c: &fantoccini::Client, css: &str) -> String {
    c.wait()
        .for_element(fantoccini::Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no `{css}` on the page: {e}"))
        .text()
        .await
        .unwrap()
}

pub(crate) async fn click(c: &fantoccini::Client, css: &str) {
    c.wait()
        .for_element(fantoccini::Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no `{css}` to click: {e}"))
        .click()
        .await
        .unwrap();
}

async fn select(c: &fantoccini::Client, css: &str, value: &str) {
    let el = c.find(fantoccini::Locator::Css(css)).await.unwrap();
    el.select_by_value(value).await.unwrap();
}

pub(crate) async fn type_in(c: &fantoccini::Client, css: &str, text: &str) {
    let el = c.find(fantoccini::Locator::Css(css)).await.unwrap();
    el.send_keys(text).await.unwrap();
}

/// Wait (up to 10 s) until the address holds `part`: a click's navigation
/// has landed.
/// Signs the browser in and waits for a signed-in page: a `goto` issued
/// right after the click can cancel the form's navigation before its
/// cookie is set, and the next page is then the sign-in page again.
pub(crate) async fn browser_sign_in(c: &fantoccini::Client, app: &TestApp, token: &str) {
    c.goto(&format!("{}/console/login", app.base))
        .await
        .unwrap();
    type_in(c, "#token", token).await;
    click(c, "#sign-in").await;
    text(c, "#signed-in-as").await;
}

/// Waits until `css`'s text is `want`, reloading the page between looks:
/// for figures the server updates after the event the test waited on.
pub(crate) async fn wait_text(c: &fantoccini::Client, css: &str, want: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let got = text(c, css).await;
        if got == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "`{css}` stayed {got:?}, not {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.refresh().await.unwrap();
    }
}

pub(crate) async fn wait_url(c: &fantoccini::Client, part: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let url = c.current_url().await.unwrap();
        if url.as_str().contains(part) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never reached {part}: at {url}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Elements matching `css` on the page as it is now (wait for the page
/// first: this does not).
pub(crate) async fn rows(c: &fantoccini::Client, css: &str) -> usize {
    c.find_all(fantoccini::Locator::Css(css))
        .await
        .unwrap()
        .len()
}

/// The review queue worked end to end in the browser, every page loaded,
/// and a screenshot of each.
#[tokio::test]
async fn review_queue_in_headless_chromium() {
    use fantoccini::Locator::Css;
    let app = spawn_console(Backend::Sqlite).await;
    fill_queue(&app, &["pay_7f3a", "pay_8b21", "pay_9c04", "pay_a1d9"]).await;
    let b = browser().await;
    let c = &b.client;

    // Sign in.
    c.goto(&format!("{}/console", app.base)).await.unwrap();
    assert!(c
        .current_url()
        .await
        .unwrap()
        .path()
        .ends_with("/console/login"));
    shot(c, "login").await;
    type_in(c, "#token", ALICE).await;
    click(c, "#sign-in").await;
    assert_eq!(text(c, "#signed-in-as").await, "alice (reviewer)");

    // The queue: four waiting, one reason, oldest first.
    assert_eq!(text(c, "#queue-total").await, "4 waiting");
    assert_eq!(rows(c, "#queue tbody tr").await, 4);
    let reasons = text(c, "#reasons").await;
    assert!(
        reasons.contains("gave up after 3 status queries") && reasons.contains('4'),
        "{reasons}"
    );
    shot(c, "review-queue").await;
    // Filter by the reason (a link): the same four.
    click(c, "#reasons a").await;
    wait_url(c, "reason=gave+up").await;
    assert_eq!(rows(c, "#queue tbody tr input[type=checkbox]").await, 4);

    // One payment's whole story.
    c.goto(&format!("{}/console/payments/pay_7f3a", app.base))
        .await
        .unwrap();
    assert_eq!(text(c, "#status").await, "needs_review");
    assert_eq!(
        rows(c, "#calls tbody tr").await,
        3,
        "three status queries on record"
    );
    let history = text(c, "#history").await;
    assert!(
        history.contains("gave up after 3 status queries"),
        "{history}"
    );
    assert!(text(c, "#next-poll").await.contains("parked"));
    shot(c, "payment").await;

    // Resolve it through the form: status, reason, confirm.
    select(c, "#resolve-status", "succeeded").await;
    type_in(
        c,
        "#resolve-reason",
        "funds seen on the bank statement of 1 Dec",
    )
    .await;
    click(c, "#resolve-submit").await;
    assert_eq!(text(c, "#confirm-status").await, "succeeded");
    shot(c, "confirm").await;
    click(c, "#confirm").await;
    assert_eq!(text(c, "#status").await, "succeeded");
    assert!(text(c, "#flash").await.starts_with("Resolved"));
    let last = c
        .find_all(Css("#history tbody tr"))
        .await
        .unwrap()
        .pop()
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        last.contains("needs_review")
            && last.contains("succeeded")
            && last.contains("manual")
            && last.contains("alice")
            && last.contains("bank statement"),
        "the history shows the change: {last}"
    );
    assert!(text(c, "#payment-audit").await.contains("alice"));
    shot(c, "payment-resolved").await;

    // Back in the queue: three left. Select two, resolve them together.
    c.goto(&format!("{}/console/review", app.base))
        .await
        .unwrap();
    assert_eq!(text(c, "#queue-total").await, "3 waiting");
    let boxes = c
        .find_all(Css("#queue input[type=checkbox]"))
        .await
        .unwrap();
    assert_eq!(boxes.len(), 3);
    boxes[0].click().await.unwrap();
    boxes[1].click().await.unwrap();
    select(c, "#bulk select[name=status]", "failed").await;
    type_in(
        c,
        "#bulk input[name=reason]",
        "provider confirmed by phone: declined",
    )
    .await;
    click(c, "#bulk-resolve").await;
    text(c, "#confirm-ids").await;
    assert_eq!(rows(c, "#confirm-ids li").await, 2);
    click(c, "#confirm").await;
    let results = text(c, "#bulk-results").await;
    assert_eq!(
        results
            .matches("changed from needs_review to failed")
            .count(),
        2,
        "{results}"
    );
    shot(c, "bulk-result").await;
    c.goto(&format!("{}/console/review", app.base))
        .await
        .unwrap();
    assert_eq!(text(c, "#queue-total").await, "1 waiting");

    // Poll now on the last one.
    click(c, "#queue a.payment-link").await;
    click(c, "#poll-now button").await;
    assert!(text(c, "#flash").await.starts_with("Poll scheduled"));

    // A sweep run, shown on the providers page.
    let mut sweeper = finality_engine::sweep::Sweeper::new(
        app.db.store.clone(),
        Arc::new(finality_core::SystemClock),
        Arc::new(Providers::new()),
        finality_engine::sweep::SweepConfig::default(),
        "node-console",
    );
    let run = sweeper
        .run_once()
        .await
        .unwrap()
        .expect("the sweep's lease is free");
    assert!(run.findings.is_empty(), "nothing fell through: {run:?}");

    // The last one in review turns up in the provider's settlement report.
    let last = app.db.store.get("pay_a1d9").await.unwrap().unwrap().payment;
    let dir = std::env::temp_dir().join(format!("finality-console-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("settlement_2026-12-01.csv");
    let body = format!(
        "reference,type,gross,currency\n{},SALE,1299.00,EUR\n",
        last.provider_ref.unwrap()
    );
    std::fs::write(&report, body).unwrap();
    let format =
        finality_providers::settlement::Format::Columns(finality_providers::settlement::Columns {
            reference: "reference".into(),
            amount: "gross".into(),
            currency: "currency".into(),
            kind: Some("type".into()),
            kinds: vec![(
                "SALE".into(),
                finality_providers::settlement::LineKind::Charge,
            )],
            fee: None,
            merchant_ref: None,
            decimal: true,
        });
    let out = finality_engine::reconcile::reconcile_file(
        &*app.db.store,
        "sim",
        &report,
        &format,
        finality_core::SystemClock.now(),
    )
    .await
    .unwrap();
    assert_eq!(out.counts.get("applied"), Some(&1), "{out:?}");
    std::fs::remove_dir_all(&dir).ok();

    // An account added at run time (an institution behind the provider).
    let (s, v) = call(
        &app,
        ADMIN,
        reqwest::Method::POST,
        "/v1/accounts",
        Some(json!({"provider": "sim", "id": "inst_aba"})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");

    // Providers: statistics drawn as SVG, failed and orphaned webhooks, the
    // sweep, the settlement reports, the accounts.
    c.goto(&format!("{}/console/providers", app.base))
        .await
        .unwrap();
    assert!(rows(c, "#provider-sim svg.chart").await >= 4);
    let sim = text(c, "#provider-sim").await;
    assert!(sim.contains("4 (") && sim.contains("0 in review"), "{sim}");
    assert!(text(c, "#failed-webhooks").await.contains("evt_unparsable"));
    let kept = text(c, "#review-webhooks").await;
    assert!(
        kept.contains("evt_other_merchant") && kept.contains("account_mismatch"),
        "{kept}"
    );
    assert!(text(c, "#sweep-runs").await.contains("node-console"));
    let reports = text(c, "#settlement-reports").await;
    assert!(
        reports.contains("settlement_2026-12-01.csv") && reports.contains("applied 1"),
        "{reports}"
    );
    let accounts = text(c, "#account-stats").await;
    assert!(
        accounts.contains("inst_aba") && accounts.contains("enabled"),
        "{accounts}"
    );
    shot(c, "providers").await;

    // The audit trail, and the API document.
    c.goto(&format!("{}/console/audit", app.base))
        .await
        .unwrap();
    let audit = text(c, "#audit").await;
    assert!(
        audit.contains("sign_in") && audit.contains("resolve") && audit.contains("poll_now"),
        "{audit}"
    );
    assert_eq!(audit.matches("resolve").count(), 3, "{audit}");
    shot(c, "audit").await;

    // Health: the figures the dashboard and the alerts read.
    c.goto(&format!("{}/console/health", app.base))
        .await
        .unwrap();
    let backlog = text(c, "#backlog").await;
    assert!(backlog.contains("Live nodes"), "{backlog}");
    let reasons = text(c, "#review-reasons").await;
    assert!(reasons.contains("Reason"), "{reasons}");
    assert!(text(c, "#open-payments").await.contains("sim"));
    assert!(text(c, "#inbox").await.contains("failed"));
    shot(c, "health").await;
    c.goto(&format!("{}/console/api", app.base)).await.unwrap();
    assert!(c
        .source()
        .await
        .unwrap()
        .contains("/v1/payments/{id}/resolve"));
    shot(c, "api").await;

    // Signing out ends the session.
    click(c, "header .who button").await;
    c.wait().for_element(Css("#token")).await.unwrap();
    assert!(c
        .current_url()
        .await
        .unwrap()
        .path()
        .ends_with("/console/login"));
    c.goto(&format!("{}/console/review", app.base))
        .await
        .unwrap();
    assert!(c
        .current_url()
        .await
        .unwrap()
        .path()
        .ends_with("/console/login"));

    // What the browser did is what the store holds.
    let v = app.db.store.get("pay_7f3a").await.unwrap().unwrap();
    assert_eq!(v.payment.status, Status::Succeeded);
    assert_eq!(v.history.last().unwrap().actor.as_deref(), Some("alice"));
    b.client.clone().close().await.unwrap();
}

/// The payment page shows the counted money: a partial capture's 25.00 of
/// 42.00, with the capture listed by the provider's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payment_amounts_in_headless_chromium() {
    use finality_core::amounts::{Piece, PieceKind, PieceState};
    let app = spawn_console(Backend::Sqlite).await;
    let plan = app.sim.create_priced(None, None, 4200, "EUR");
    let body = json!({"id": "pay_amt", "provider": "sim", "provider_ref": plan.id,
        "amount": 4200, "currency": "EUR"});
    register(&app, &body).await;
    let capture_piece = || Piece {
        kind: PieceKind::Capture,
        id: "cap_8825408195409505".into(),
        state: PieceState::Succeeded,
        amount: 2500,
        currency: "EUR".into(),
    };
    let capture = capture_piece();
    let template = NewInboxEvent {
        provider: "sim".into(),
        account: None,
        event_id: "evt_capture_part".into(),
        provider_ref: Some(plan.id.clone()),
        merchant_ref: None,
        observed: Some(Status::Succeeded),
        provider_status: Some("capture succeeded".into()),
        occurred_at: Some(Timestamp(1_700_000_000_000)),
        reported: finality_core::Reported {
            pieces: vec![capture],
            ..finality_core::Reported::money(2500, "EUR")
        },
        raw_body: b"{}".to_vec(),
        headers: json!({}),
        state: InboxState::Received,
        reason: None,
        source: Source::Webhook,
    };
    app.db
        .store
        .inbox_insert(
            std::slice::from_ref(&template),
            finality_core::SystemClock.now(),
        )
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while app
        .db
        .store
        .get("pay_amt")
        .await
        .unwrap()
        .unwrap()
        .payment
        .status
        != Status::Succeeded
    {
        assert!(std::time::Instant::now() < deadline, "never succeeded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let b = browser().await;
    let c = &b.client;
    browser_sign_in(c, &app, ALICE).await;
    c.goto(&format!("{}/console/payments/pay_amt", app.base))
        .await
        .unwrap();
    assert_eq!(text(c, "#status").await, "succeeded");
    let captured = text(c, "#captured").await;
    assert!(captured.contains("25.00"), "{captured}");
    assert_eq!(rows(c, "#pieces tbody tr").await, 1);
    let pieces = text(c, "#pieces").await;
    assert!(pieces.contains("cap_8825408195409505"), "{pieces}");
    let history = text(c, "#history").await;
    assert!(history.contains("captured 2500 of 4200 EUR"), "{history}");

    // The provider then says that capture failed: a fact beside the
    // succeeded payment, listed under the review queue and on its page.
    let failed = Piece {
        state: PieceState::Failed,
        ..capture_piece()
    };
    let ev = NewInboxEvent {
        event_id: "evt_capture_failed".into(),
        observed: Some(Status::NeedsReview),
        provider_status: Some("CAPTURE_FAILED:true".into()),
        reported: finality_core::Reported {
            pieces: vec![failed],
            ..finality_core::Reported::money(2500, "EUR")
        },
        ..template.clone()
    };
    app.db
        .store
        .inbox_insert(&[ev], finality_core::SystemClock.now())
        .await
        .unwrap();
    // Processed by the inbox within moments: the page is reloaded until
    // the flag is there.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while rows(c, "#payment-flags .flag-state").await == 0 {
        assert!(std::time::Instant::now() < deadline, "no flag shown");
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.refresh().await.unwrap();
    }
    assert_eq!(text(c, "#payment-flags .flag-state").await, "open");
    c.goto(&format!("{}/console/review", app.base))
        .await
        .unwrap();
    wait_text(c, "#flags-total", "1 open").await;
    let listed = text(c, "#flags").await;
    assert!(listed.contains("pay_amt"), "{listed}");
}
