//! Settlement reports fetched on their schedule, on virtual time, from the
//! simulator's fetch APIs in each provider's own wire format (Stripe's
//! report runs, WeChat Pay's trade bill with its SHA1, Alipay's bill zip):
//! a simulated day's payments settle with discrepancies drawn in on
//! purpose; at the documented ready time the fetcher fetches the day's
//! report, imports it, and finds exactly what was injected; a second run
//! imports nothing; a file altered in transit is refused with nothing
//! applied; a day the provider withholds is overdue after its grace.

use super::*;
use chrono::NaiveDate;
use finality_core::{Source, Status, VirtualClock};
use finality_engine::settlement::{DayOutcome, Fetcher};
use finality_providers::config::ProviderConfig;
use finality_sim::settlement::Inject;
use finality_store::Report;
use finality_testkit::sshd::Sshd;
use finality_testkit::Backend;
use std::collections::BTreeMap;

/// 2026-12-03 09:00 UTC (17:00 Beijing time, 01:00 US Pacific): the day's
/// payments settle on 2026-12-03 in every provider's zone.
pub(super) const T0: Timestamp = Timestamp(1_796_288_400_000);
pub(super) const STRIPE_KEY: &str = "sk_test_finality_settlement_fetch";
/// The HMAC key of the Adyen notifications (hex, 32 bytes).
pub(super) const ADYEN_HMAC_HEX: &str =
    "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";

pub(super) fn day(n: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 12, n).unwrap()
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Which {
    Stripe,
    WeChat,
    Alipay,
    Adyen,
    PayPal,
}

impl Which {
    pub(super) fn name(self) -> &'static str {
        match self {
            Which::Stripe => "stripe",
            Which::WeChat => "wechat",
            Which::Alipay => "alipay",
            Which::Adyen => "adyen",
            Which::PayPal => "paypal",
        }
    }

    pub(super) fn currency(self) -> &'static str {
        match self {
            Which::Stripe => "USD",
            Which::Adyen => "EUR",
            Which::PayPal => "USD",
            _ => "CNY",
        }
    }

    /// The id the provider's API gives the simulator's payment `id`.
    pub(super) fn provider_ref(self, id: &str) -> String {
        match self {
            Which::Stripe | Which::Adyen | Which::PayPal => id.to_string(),
            Which::WeChat => finality_sim::wire::wechat_transaction_id(id),
            Which::Alipay => finality_sim::wire::alipay_trade_no(id),
        }
    }

    /// The provider's table as a `finality.toml` would give it. The
    /// simulator signs WeChat Pay's answers on virtual time: the tolerance
    /// for their timestamps is widened to cover it.
    pub(super) fn config(self, sim_url: &str, sshd: Option<&Sshd>) -> ProviderConfig {
        use finality_sim::wire::wechat_keys as k;
        for (var, value) in [
            ("FINALITY_ITS_STRIPE_KEY", STRIPE_KEY),
            ("FINALITY_ITS_MERCHANT_KEY", k::MERCHANT_PRIVATE_PEM),
            ("FINALITY_ITS_PLATFORM_KEY", k::PLATFORM_PUBLIC_PEM),
            ("FINALITY_ITS_APIV3", k::API_V3_KEY),
            ("FINALITY_ITS_ADYEN_HMAC", ADYEN_HMAC_HEX),
            ("FINALITY_ITS_ADYEN_REPORT", STRIPE_KEY),
            ("FINALITY_ITS_PAYPAL", "client-id:client-secret"),
        ] {
            std::env::set_var(var, value);
        }
        // Each SFTP server has a user key of its own, under a name of its
        // own: tests running at once never read another's key.
        let sftp_key_env = sshd.map(|s| format!("FINALITY_ITS_SFTP_KEY_{}", s.port));
        if let (Some(var), Some(s)) = (&sftp_key_env, sshd) {
            std::env::set_var(var, &s.user_key);
        }
        let settlement = serde_json::json!({"first_day": "2026-12-03", "grace": "2h"});
        let v = match self {
            Which::Stripe => serde_json::json!({"adapter": "stripe",
                "base_url": format!("{sim_url}/stripe"),
                "api_key_env": "FINALITY_ITS_STRIPE_KEY", "settlement": settlement}),
            Which::WeChat => serde_json::json!({"adapter": "wechat",
                "base_url": format!("{sim_url}/wechat"), "webhook_tolerance": "400days",
                "wechat": {"mchid": k::MCHID, "serial_no": k::SERIAL_NO,
                           "private_key_env": "FINALITY_ITS_MERCHANT_KEY",
                           "platform_public_key_env": "FINALITY_ITS_PLATFORM_KEY",
                           "api_v3_key_env": "FINALITY_ITS_APIV3"},
                "settlement": settlement}),
            Which::Alipay => serde_json::json!({"adapter": "alipay",
                "base_url": format!("{sim_url}/alipay/gateway.do"),
                "alipay": {"app_id": "2021000000000001",
                           "private_key_env": "FINALITY_ITS_MERCHANT_KEY",
                           "alipay_public_key_env": "FINALITY_ITS_PLATFORM_KEY"},
                "settlement": settlement}),
            Which::PayPal => {
                let sshd = sshd.expect("PayPal's reports are on an SFTP server");
                serde_json::json!({"adapter": "paypal",
                    "base_url": format!("{sim_url}/paypal"),
                    "api_key_env": "FINALITY_ITS_PAYPAL",
                    "settlement": {"first_day": "2026-12-03", "grace": "2h",
                        "sftp": {"host": format!("127.0.0.1:{}", sshd.port), "user": sshd.user,
                                 "host_key": sshd.host_key,
                                 "private_key_env": sftp_key_env,
                                 "dir": sshd.files().display().to_string()}}})
            }
            Which::Adyen => serde_json::json!({"adapter": "adyen",
                "base_url": format!("{sim_url}/adyen"),
                "webhook_secret_envs": ["FINALITY_ITS_ADYEN_HMAC"],
                "adyen": {"merchant_account": finality_sim::wire::ADYEN_REPORT_MERCHANT},
                "settlement": {"grace": "2h", "user": "report_000001@Company.Sim",
                               "password_env": "FINALITY_ITS_ADYEN_REPORT"}}),
        };
        let cfg: ProviderConfig = serde_json::from_value(v).unwrap();
        cfg.validate().unwrap();
        cfg
    }
}

async fn status(store: &dyn Store, id: &str) -> Status {
    store.get(id).await.unwrap().unwrap().payment.status
}

/// What each line should come out as, from what was injected and what
/// finality had before (every other payment already final here).
fn expected_counts(
    ids: &[(String, String)],
    injected: &finality_sim::settlement::Injected,
) -> BTreeMap<String, i64> {
    let mut expected: BTreeMap<String, i64> = BTreeMap::new();
    for (i, (_, sim_id)) in ids.iter().enumerate() {
        let final_here = i % 2 == 0;
        let outcome = if injected.missing.contains(sim_id) {
            if final_here {
                "missing_from_report"
            } else {
                continue;
            }
        } else if injected.wrong_amount.contains(sim_id) {
            "amount_mismatch"
        } else if final_here {
            "matched"
        } else {
            "applied"
        };
        *expected.entry(outcome.into()).or_default() += 1;
        if injected.refunded.contains(sim_id) {
            *expected.entry("reversed".into()).or_default() += 1;
        }
    }
    expected.insert("unknown_here".into(), injected.unknown.len() as i64);
    expected
}

/// Each payment's status after the import: refunded ones reversed, a
/// wrong amount on an open one for review, one the report left out still
/// open, the rest succeeded.
async fn check_statuses(
    store: &dyn Store,
    ids: &[(String, String)],
    injected: &finality_sim::settlement::Injected,
) {
    for (i, (id, sim_id)) in ids.iter().enumerate() {
        let want = if injected.refunded.contains(sim_id) {
            Status::Reversed
        } else if injected.wrong_amount.contains(sim_id) {
            if i % 2 == 0 {
                Status::Succeeded
            } else {
                Status::NeedsReview
            }
        } else if injected.missing.contains(sim_id) && i % 2 == 1 {
            Status::Pending
        } else {
            Status::Succeeded
        };
        assert_eq!(status(store, id).await, want, "{id} ({sim_id})");
    }
}

/// A simulated day: the simulator (its reports drawn with discrepancies)
/// and 80 payments settled there on 2026-12-03, half already final here
/// (their webhook came), half still open.
struct Day {
    db: finality_testkit::testing::TestDb,
    store: Arc<dyn Store>,
    vclock: Arc<VirtualClock>,
    clock: Arc<dyn Clock>,
    server: SimServer,
    /// (payment id here, the simulator's id)
    ids: Vec<(String, String)>,
}

async fn simulated_day(backend: Backend, which: Which) -> Day {
    let db = backend.open().await;
    let store = db.store.clone();
    let vclock = Arc::new(VirtualClock::new(T0));
    let clock: Arc<dyn Clock> = vclock.clone();
    let mut config = SimConfig::deterministic(Duration::from_secs(2));
    config.api_key = Some(STRIPE_KEY.into());
    let server = spawn_sim(config, clock.clone()).await;
    let name = which.name();
    let inject = Inject {
        missing: 0.08,
        wrong_amount: 0.08,
        refunded: 0.08,
        unknown: 0.05,
        seed: 5,
    };
    server.sim.set_report_inject(&inject);

    // The day's payments: every one settles at the provider; half are
    // already final here (their webhook came), half still open.
    let mut ids = Vec::new();
    for i in 0..80 {
        let sim_id = format!("s{name}{i:03}");
        let order = format!("2026120300{i:04}");
        server.sim.create_priced(
            Some(sim_id.clone()),
            Some(order.clone()),
            1999,
            which.currency(),
        );
        let id = format!("p_{name}_{i:03}");
        let p = NewPayment {
            id: PaymentId::parse(&id).unwrap(),
            provider: name.into(),
            provider_ref: Some(ProviderRef::parse(&which.provider_ref(&sim_id)).unwrap()),
            merchant_ref: Some(finality_core::money::MerchantRef::parse(&order).unwrap()),
            account: None,
            kind: Kind::Payment,
            amount: Amount::new(1999, Currency::parse(which.currency()).unwrap()).unwrap(),
            metadata: serde_json::json!({}),
        };
        store
            .register(&p, T0, T0.plus(Duration::from_secs(3600)))
            .await
            .unwrap();
        if i % 2 == 0 {
            let settled = Report {
                payment_id: id.clone(),
                status: Status::Succeeded,
                source: Source::Webhook,
                event_id: None,
                observed_at: T0.plus(Duration::from_secs(5)),
                reason: None,
                actor: None,
            };
            store
                .apply(&settled, T0.plus(Duration::from_secs(5)))
                .await
                .unwrap();
        }
        ids.push((id, sim_id));
    }
    vclock.advance(Duration::from_secs(60));
    Day {
        db,
        store,
        vclock,
        clock,
        server,
        ids,
    }
}

async fn fetched_on_schedule(backend: Backend, which: Which) {
    let Day {
        db: _db,
        store,
        vclock,
        clock,
        server,
        ids,
    } = simulated_day(backend, which).await;
    let name = which.name();
    // PayPal's reports are on its SFTP server: one of the test's own, the
    // simulator writing each day's file into it as PayPal does overnight.
    let sshd = (which == Which::PayPal).then(Sshd::start);
    let publish = |date: NaiveDate| {
        if let Some(s) = &sshd {
            server.sim.paypal_stl_drop(date, &s.files()).unwrap();
        }
    };

    let cfg = which.config(&server.base_url, sshd.as_ref());
    let schedule = cfg.settlement_schedule().unwrap().unwrap();
    let adapter = finality_providers::config::build(name, &cfg).unwrap();
    let mut providers = Providers::new();
    providers.insert(name.into(), ProviderEntry::named(name, adapter, &cfg));
    let dir = std::env::temp_dir().join(format!(
        "finality-fetch-{name}-{}",
        T0.millis() ^ i64::from(std::process::id())
    ));
    let fetcher = Fetcher::new(store.clone(), clock.clone(), &providers, "node-a", &dir).unwrap();

    // Before the documented ready time: nothing is asked for.
    vclock.advance_to(Timestamp(schedule.ready(day(3)).millis() - 60_000));
    assert!(fetcher.run_due().await.is_empty());

    vclock.advance_to(schedule.ready(day(3)));
    publish(day(3));
    let done = fetcher.run_due().await;
    let injected = server
        .sim
        .report_injected(name, day(3))
        .unwrap_or_else(|| panic!("no report was made: {done:?}"));
    for list in [
        &injected.missing,
        &injected.wrong_amount,
        &injected.refunded,
        &injected.unknown,
    ] {
        assert!(
            !list.is_empty(),
            "the seed injects some of each: {injected:?}"
        );
    }
    let expected = expected_counts(&ids, &injected);
    assert_eq!(done.len(), 1, "{done:?}");
    let (provider, date, outcome) = &done[0];
    assert_eq!((provider.as_str(), *date), (name, day(3)));
    let DayOutcome::Imported {
        counts, already, ..
    } = outcome
    else {
        panic!("{outcome:?}");
    };
    assert!(!already);
    assert_eq!(counts, &expected, "{name}");
    check_statuses(&*store, &ids, &injected).await;
    let runs = store.recon_runs(10).await.unwrap();
    assert_eq!(runs.len(), 1);

    // A second run imports nothing new; a backfill of the day skips it.
    vclock.advance(schedule.every);
    // WeChat Pay and Alipay make no bill for a day without trades: one
    // payment settles on the 4th (in Beijing, where it is now), unknown here.
    if matches!(which, Which::WeChat | Which::Alipay) {
        server
            .sim
            .create_priced(Some(format!("s{name}day4")), None, 1999, which.currency());
    }
    assert!(fetcher.run_due().await.is_empty());
    let again = fetcher.backfill(name, day(3), day(3)).await.unwrap();
    assert_eq!(again, vec![(None, day(3), DayOutcome::Skipped)]);
    assert_eq!(store.recon_runs(10).await.unwrap().len(), 1);

    // A file altered in transit is refused: no run, nothing applied.
    server.sim.tamper_reports(true);
    vclock.advance_to(schedule.ready(day(4)));
    publish(day(4));
    let done = fetcher.run_due().await;
    // Each by what its provider gives to check it by.
    let by = match which {
        Which::Stripe => "bytes, Stripe says",
        Which::WeChat => "hash_value says",
        Which::Alipay => "zip",
        Which::PayPal => "report footer (RF) says",
        Which::Adyen => unreachable!("announced, not fetched by day"),
    };
    assert!(
        matches!(done.as_slice(), [(_, d, DayOutcome::Refused(why))] if *d == day(4) && why.contains(by)),
        "{done:?}"
    );
    assert_eq!(store.recon_runs(10).await.unwrap().len(), 1);

    // Fixed in transit; the provider withholds the 5th: the 4th is
    // imported, the 5th overdue once its grace has passed.
    server.sim.tamper_reports(false);
    server.sim.withhold_report(name, day(5));
    publish(day(4));
    publish(day(5));
    vclock.advance_to(
        schedule
            .ready(day(5))
            .plus(schedule.grace)
            .plus(Duration::from_secs(60)),
    );
    let done = fetcher.run_due().await;
    // Alipay answers a bill not made and a day without trades alike
    // (`isp.bill_not_exist`): past the day's grace, a day without trades.
    let alipay = which == Which::Alipay;
    assert!(
        matches!(
            done.as_slice(),
            [(_, d4, DayOutcome::Imported { .. }), (_, d5, DayOutcome::NotReady(_))]
                if *d4 == day(4) && *d5 == day(5) && !alipay
        ) || matches!(
            done.as_slice(),
            [(_, d4, DayOutcome::Imported { .. }), (_, d5, DayOutcome::Imported { .. })]
                if *d4 == day(4) && *d5 == day(5) && alipay
        ),
        "{done:?}"
    );
    // The payments the 3rd's report made final (at its import, on the
    // 4th) were listed by it: the 4th's does not call them missing.
    if let DayOutcome::Imported { counts, .. } = &done[0].2 {
        assert_eq!(counts.get("missing_from_report"), None, "{counts:?}");
    }
    let state = fetcher.states().remove(name).unwrap();
    if alipay {
        assert_eq!(state.last_day, Some(day(5)));
        assert_eq!(state.overdue, None);
    } else {
        assert_eq!(state.last_day, Some(day(4)));
        assert_eq!(state.overdue.map(|(d, _)| d), Some(day(5)));
    }
    std::fs::remove_dir_all(&dir).ok();
}

async fn stripe_report_runs(backend: Backend) {
    fetched_on_schedule(backend, Which::Stripe).await;
}

async fn wechat_trade_bill(backend: Backend) {
    fetched_on_schedule(backend, Which::WeChat).await;
}

async fn alipay_bill_zip(backend: Backend) {
    fetched_on_schedule(backend, Which::Alipay).await;
}

async fn paypal_stl_over_sftp(backend: Backend) {
    fetched_on_schedule(backend, Which::PayPal).await;
}

/// Adyen announces each report (REPORT_AVAILABLE, HMAC-signed); the
/// announcement is kept before the webhook is acknowledged, and the
/// fetcher downloads the named file as the report user and imports it.
async fn adyen_report_available(backend: Backend) {
    let Day {
        db: _db,
        store,
        vclock,
        clock,
        server,
        ids,
    } = simulated_day(backend, Which::Adyen).await;
    let key = hex::decode(ADYEN_HMAC_HEX).unwrap();
    let cfg = Which::Adyen.config(&server.base_url, None);
    let adapter = finality_providers::config::build("adyen", &cfg).unwrap();
    let mut providers = Providers::new();
    providers.insert(
        "adyen".into(),
        ProviderEntry::named("adyen", adapter.clone(), &cfg),
    );
    let dir = std::env::temp_dir().join(format!(
        "finality-fetch-adyen-{}",
        T0.millis() ^ i64::from(std::process::id())
    ));
    let fetcher = Fetcher::new(store.clone(), clock.clone(), &providers, "node-a", &dir).unwrap();
    assert!(fetcher.run_due().await.is_empty(), "nothing announced yet");

    // Batch 1 closes with the day's payments; its announcement arrives.
    let announce_for = |scope: finality_core::Scope, batch: u32, date: NaiveDate| {
        let body = server
            .sim
            .adyen_report_available(&key, batch, date, &server.base_url)
            .unwrap()
            .to_string();
        let (adapter, store, clock) = (adapter.clone(), store.clone(), clock.clone());
        async move {
            let evs = adapter
                .verify_webhook(&Default::default(), body.as_bytes(), clock.now())
                .await
                .unwrap();
            finality_engine::settlement::announce(&*store, &scope, &evs, clock.now())
                .await
                .unwrap()
        }
    };
    let announce =
        |batch: u32, date: NaiveDate| announce_for(finality_core::Scope::own("adyen"), batch, date);
    vclock.advance_to(Timestamp(T0.millis() + 86_400_000));
    assert_eq!(announce(1, day(3)).await, 1);
    assert_eq!(announce(1, day(3)).await, 0, "a redelivery changes nothing");
    let done = fetcher.run_due().await;
    let injected = server.sim.report_injected("adyen", day(3)).unwrap();
    // A batch names no period: a payment it left out is not flagged
    // (`missing_from_report` is the day-based reports'); the batch's own
    // fee and payout lines are read and ignored.
    let mut expected = expected_counts(&ids, &injected);
    assert!(expected.remove("missing_from_report").is_some());
    expected.insert("ignored".into(), 2);
    let [(
        _,
        _,
        DayOutcome::Imported {
            counts,
            already: false,
            run_id,
            checked,
        },
    )] = done.as_slice()
    else {
        panic!("{done:?}");
    };
    assert_eq!(counts, &expected);
    assert!(
        checked.contains("merchant account SimMerchant, batch 1"),
        "{checked}"
    );
    check_statuses(&*store, &ids, &injected).await;
    let run = store.recon_run(*run_id).await.unwrap().unwrap();
    assert_eq!(run.file_name, "settlement_detail_report_batch_1.csv");
    assert!(dir
        .join("adyen/settlement_detail_report_batch_1.csv")
        .exists());

    // A second run, and a redelivered announcement, import nothing new.
    vclock.advance(Duration::from_secs(60));
    assert_eq!(announce(1, day(3)).await, 0);
    assert!(fetcher.run_due().await.is_empty());
    assert_eq!(store.recon_runs(10).await.unwrap().len(), 1);

    // A file that is not the one announced (another merchant account's
    // lines under its name) is refused, nothing applied, and not retried.
    server.sim.tamper_reports(true);
    assert_eq!(announce(2, day(3)).await, 1);
    vclock.advance(Duration::from_secs(60));
    let done = fetcher.run_due().await;
    assert!(
        matches!(done.as_slice(), [(_, _, DayOutcome::Refused(why))] if why.contains("not the file Adyen announced")),
        "{done:?}"
    );
    assert_eq!(store.recon_runs(10).await.unwrap().len(), 1);
    let files = store.files_recent("adyen", 10).await.unwrap();
    assert_eq!(files[0].outcome.as_deref(), Some("refused"));
    vclock.advance(Duration::from_secs(600));
    assert!(fetcher.run_due().await.is_empty());
    server.sim.tamper_reports(false);

    // An announced file Adyen does not serve is tried again, then overdue
    // once its grace has passed.
    let body = finality_sim::wire::adyen_report_available(
        &key,
        finality_sim::wire::ADYEN_REPORT_MERCHANT,
        "settlement_detail_report_batch_3.csv",
        &format!(
            "{}/adyen/reports/download/MerchantAccount/SimMerchant/settlement_detail_report_batch_3.csv",
            server.base_url
        ),
    )
    .to_string();
    let evs = adapter
        .verify_webhook(&Default::default(), body.as_bytes(), clock.now())
        .await
        .unwrap();
    finality_engine::settlement::announce(
        &*store,
        &finality_core::Scope::own("adyen"),
        &evs,
        clock.now(),
    )
    .await
    .unwrap();
    vclock.advance(Duration::from_secs(60));
    let done = fetcher.run_due().await;
    assert!(
        matches!(done.as_slice(), [(_, _, DayOutcome::Failed(_))]),
        "{done:?}"
    );
    assert_eq!(fetcher.states()["adyen"].overdue, None);
    vclock.advance(Duration::from_secs(2 * 3600 + 60));
    fetcher.run_due().await;
    let state = fetcher.states().remove("adyen").unwrap();
    assert!(state.overdue.is_some(), "{state:?}");
    let files = store.files_recent("adyen", 10).await.unwrap();
    assert!(files[0].attempts >= 2, "{files:?}");
    assert_eq!(state.missing_batches, Some(vec![]), "{state:?}");

    // Batch 5 announced, batch 4 never: a gap in the numbers.
    assert_eq!(announce(5, day(4)).await, 1);
    vclock.advance(Duration::from_secs(60));
    fetcher.run_due().await;
    let state = fetcher.states().remove("adyen").unwrap();
    assert_eq!(state.missing_batches, Some(vec![4]));

    // Merchant account ShopB's batch 1 (batches are numbered per merchant
    // account): a file of its own, not a redelivery of the provider's
    // batch 1; downloaded into ShopB's folder and reconciled as ShopB's
    // report, whose lines reach none of the provider's own payments.
    let shop_b = finality_core::Scope::new("adyen", Some("ShopB"));
    let before = store.recon_runs(10).await.unwrap().len();
    assert_eq!(announce_for(shop_b.clone(), 1, day(3)).await, 1);
    assert_eq!(announce_for(shop_b, 1, day(3)).await, 0);
    vclock.advance(Duration::from_secs(60));
    // (Batch 3, still not served, is tried again beside it.)
    let done = fetcher.run_due().await;
    let Some(counts) = done.iter().find_map(|(_, _, o)| match o {
        DayOutcome::Imported {
            counts,
            already: false,
            ..
        } => Some(counts),
        _ => None,
    }) else {
        panic!("{done:?}");
    };
    assert!(
        counts.get("unknown_here").copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
    for touched in ["matched", "applied", "reversed", "amount_mismatch"] {
        assert!(!counts.contains_key(touched), "{touched}: {counts:?}");
    }
    assert_eq!(store.recon_runs(10).await.unwrap().len(), before + 1);
    assert!(dir
        .join("adyen/account-ShopB/settlement_detail_report_batch_1.csv")
        .exists());
    check_statuses(&*store, &ids, &injected).await;
    let state = fetcher.states().remove("adyen").unwrap();
    assert_eq!(state.missing_batches, Some(vec![4]));
    assert!(state.account_gaps.is_empty(), "{state:?}");
    std::fs::remove_dir_all(&dir).ok();
}

finality_testkit::on_both_backends!(
    stripe_report_runs,
    wechat_trade_bill,
    alipay_bill_zip,
    adyen_report_available,
    paypal_stl_over_sftp
);

/// PayPal's SFTP server is known by its pinned host key: a server showing
/// another key is refused before any credential is sent, and nothing is
/// downloaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paypal_sftp_refuses_an_unpinned_host_key() {
    let clock: Arc<dyn Clock> = Arc::new(VirtualClock::new(T0));
    let server = spawn_sim(SimConfig::deterministic(Duration::from_secs(2)), clock).await;
    let sshd = Sshd::start();
    server.sim.paypal_stl_drop(day(3), &sshd.files()).unwrap();
    let mut cfg = Which::PayPal.config(&server.base_url, Some(&sshd));
    let schedule = cfg.settlement_schedule().unwrap().unwrap();
    let pinned = |cfg: &ProviderConfig| {
        let adapter = finality_providers::config::build("paypal", cfg).unwrap();
        let dest = sshd.dir.join("fetched.part");
        let day = schedule.day(day(3));
        async move { (adapter.fetch_report(&day, &dest).await, dest) }
    };
    let (ok, dest) = pinned(&cfg).await;
    let ok = ok.unwrap();
    assert_eq!(ok.name, "STL-20261203.01.009.CSV");
    assert_eq!(std::fs::metadata(&dest).unwrap().len(), ok.bytes);
    std::fs::remove_file(&dest).unwrap();

    let other = finality_testkit::sshd::other_host_key();
    cfg.settlement
        .as_mut()
        .unwrap()
        .sftp
        .as_mut()
        .unwrap()
        .host_key = other;
    let (refused, dest) = pinned(&cfg).await;
    let Err(finality_providers::settlement::fetch::FetchError::Refused(why)) = refused else {
        panic!("{refused:?}");
    };
    assert!(why.contains("not the pinned"), "{why}");
    assert!(!dest.exists() || std::fs::metadata(&dest).unwrap().len() == 0);
}
