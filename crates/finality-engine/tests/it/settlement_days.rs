//! Settlement days mean what the provider says, on every backend: a day
//! the provider has no report for because nothing happened (WeChat Pay's
//! `NO_STATEMENT_EXIST`; Alipay's `isp.bill_not_exist`, once the day's
//! grace has passed, since Alipay answers the same before its bill is
//! made) is imported as an empty report, every payment finality holds for
//! it `missing_from_report`, and the next day is fetched; a Stripe payment
//! presented in another currency than the account settles in reconciles by
//! `customer_facing_amount` without a mismatch; a report run Stripe refused
//! as "not available yet" is not answered with that refusal again.

use super::settlement_fetch::{day, Which, STRIPE_KEY, T0};
use super::*;
use chrono::NaiveDate;
use finality_core::{Source, Status, VirtualClock};
use finality_engine::settlement::{DayOutcome, Fetcher};
use finality_store::Report;
use finality_testkit::Backend;
use std::collections::BTreeMap;

finality_testkit::on_both_backends!(
    a_quiet_wechat_day_is_imported_empty_and_the_next_is_fetched,
    a_quiet_alipay_day_is_imported_empty_after_its_grace,
    a_stripe_foreign_currency_day_reconciles_after_a_refused_run,
    an_adyen_report_by_date_for_several_merchant_accounts_is_routed,
);

struct Setup {
    _db: finality_testkit::testing::TestDb,
    store: Arc<dyn Store>,
    vclock: Arc<VirtualClock>,
    server: SimServer,
    fetcher: Arc<Fetcher>,
    schedule: finality_providers::settlement::fetch::ReportSchedule,
    dir: std::path::PathBuf,
}

async fn setup(backend: Backend, which: Which) -> Setup {
    setup_with(backend, which, &[]).await
}

async fn setup_with(backend: Backend, which: Which, accounts: &[&str]) -> Setup {
    let db = backend.open().await;
    let store = db.store.clone();
    let vclock = Arc::new(VirtualClock::new(T0));
    let clock: Arc<dyn Clock> = vclock.clone();
    let mut config = SimConfig::deterministic(Duration::from_secs(2));
    config.api_key = Some(STRIPE_KEY.into());
    let server = spawn_sim(config, clock.clone()).await;
    let name = which.name();
    let mut cfg = which.config(&server.base_url, None);
    cfg.accounts = accounts
        .iter()
        .map(|a| finality_providers::config::AccountSpec::named(a))
        .collect();
    cfg.validate().unwrap();
    let schedule = cfg.settlement_schedule().unwrap().unwrap();
    let adapter = finality_providers::config::build(name, &cfg).unwrap();
    let mut providers = Providers::new();
    providers.insert(name.into(), ProviderEntry::named(name, adapter, &cfg));
    let dir = std::env::temp_dir().join(format!(
        "finality-days-{name}-{}-{:?}",
        std::process::id(),
        backend
    ));
    let fetcher = Fetcher::new(store.clone(), clock, &providers, "node-a", &dir).unwrap();
    Setup {
        _db: db,
        store,
        vclock,
        server,
        fetcher,
        schedule,
        dir,
    }
}

/// A payment of `amount` `currency` at the simulator (settling two
/// seconds later) and here; `final_here`: its webhook came.
async fn payment(s: &Setup, which: Which, i: u32, currency: &str, final_here: bool) -> String {
    let name = which.name();
    let sim_id = format!("s{name}d{i:03}");
    s.server
        .sim
        .create_priced(Some(sim_id.clone()), None, 1999, currency);
    let id = format!("p_{name}_d{i:03}");
    register(s, which, &id, &which.provider_ref(&sim_id), currency).await;
    if final_here {
        succeed(s, &id).await;
    }
    id
}

async fn register(s: &Setup, which: Which, id: &str, provider_ref: &str, currency: &str) {
    let now = s.vclock.now();
    let p = NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: which.name().into(),
        provider_ref: Some(ProviderRef::parse(provider_ref).unwrap()),
        merchant_ref: None,
        account: None,
        kind: Kind::Payment,
        amount: Amount::new(1999, Currency::parse(currency).unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    };
    s.store
        .register(&p, now, now.plus(Duration::from_secs(3600)))
        .await
        .unwrap();
}

async fn succeed(s: &Setup, id: &str) {
    let at = s.vclock.now().plus(Duration::from_secs(5));
    let report = Report {
        payment_id: id.to_string(),
        status: Status::Succeeded,
        source: Source::Webhook,
        event_id: None,
        observed_at: at,
        reason: None,
        actor: None,
    };
    s.store.apply(&report, at).await.unwrap();
}

fn counts(outcome: &DayOutcome) -> &BTreeMap<String, i64> {
    match outcome {
        DayOutcome::Imported { counts, .. } => counts,
        other => panic!("not imported: {other:?}"),
    }
}

/// Day 3: the provider settled nothing, but finality holds one payment
/// that succeeded here that day (its webhook came). Day 4: four payments
/// settle at the provider, two already final here.
async fn quiet_then_busy(backend: Backend, which: Which) {
    let s = setup(backend, which).await;
    let held = format!("p_{}_held", which.name());
    register(
        &s,
        which,
        &held,
        &which.provider_ref("never_at_the_provider"),
        which.currency(),
    )
    .await;
    succeed(&s, &held).await;

    // Just after day 3's ready time.
    s.vclock
        .advance_to(s.schedule.ready(day(3)).plus(Duration::from_secs(60)));
    let done = s.fetcher.run_due().await;
    assert_eq!(done.len(), 1, "{done:?}");
    let (_, d, outcome) = &done[0];
    assert_eq!(*d, day(3));
    match which {
        // WeChat Pay says so plainly: imported at once.
        Which::WeChat => {
            assert_eq!(
                counts(outcome),
                &BTreeMap::from([("missing_from_report".into(), 1)])
            );
            let DayOutcome::Imported { checked, .. } = outcome else {
                unreachable!()
            };
            assert!(checked.contains("NO_STATEMENT_EXIST"), "{checked}");
        }
        // Alipay's answer also means "not made yet": not before the grace.
        _ => assert!(
            matches!(outcome, DayOutcome::NotReady(why)
                if why.contains("isp.bill_not_exist") && why.contains("once its grace")),
            "{outcome:?}"
        ),
    }

    // Day 4's payments, at 17:00 Beijing time.
    s.vclock.advance_to(T0.plus(Duration::from_secs(24 * 3600)));
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(payment(&s, which, i, which.currency(), i % 2 == 0).await);
    }
    s.vclock
        .advance_to(s.schedule.ready(day(4)).plus(Duration::from_secs(60)));
    let done = s.fetcher.run_due().await;
    let days: Vec<NaiveDate> = done.iter().map(|(_, d, _)| *d).collect();
    let busy = BTreeMap::from([("applied".into(), 2), ("matched".into(), 2)]);
    match which {
        Which::WeChat => {
            assert_eq!(days, vec![day(4)], "{done:?}");
            assert_eq!(counts(&done[0].2), &busy);
        }
        _ => {
            assert_eq!(days, vec![day(3), day(4)], "{done:?}");
            assert_eq!(
                counts(&done[0].2),
                &BTreeMap::from([("missing_from_report".into(), 1)])
            );
            assert_eq!(counts(&done[1].2), &busy);
        }
    }
    for id in &ids {
        let v = s.store.get(id).await.unwrap().unwrap();
        assert_eq!(v.payment.status, Status::Succeeded, "{id}");
    }
    // The empty day's run is on record, its one finding the held payment.
    let runs = s.store.recon_runs(10).await.unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let state = s.fetcher.states().remove(which.name()).unwrap();
    assert_eq!(state.last_day, Some(day(4)));
    assert_eq!(state.overdue, None);
    std::fs::remove_dir_all(&s.dir).ok();
}

async fn a_quiet_wechat_day_is_imported_empty_and_the_next_is_fetched(backend: Backend) {
    quiet_then_busy(backend, Which::WeChat).await;
}

async fn a_quiet_alipay_day_is_imported_empty_after_its_grace(backend: Backend) {
    quiet_then_busy(backend, Which::Alipay).await;
}

/// Payments in EUR on an account that settles in USD (at 1.085): the
/// report's `gross` is in USD, `customer_facing_amount` in the payment's
/// EUR; nothing is an `amount_mismatch`. The day's first run is refused as
/// "not available yet"; the next attempt gets a run, not that refusal.
async fn a_stripe_foreign_currency_day_reconciles_after_a_refused_run(backend: Backend) {
    let s = setup(backend, Which::Stripe).await;
    s.server.sim.stripe_settles_in("USD", 10_850);
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(payment(&s, Which::Stripe, i, "EUR", i % 2 == 0).await);
    }
    s.server.sim.withhold_report("stripe", day(3));
    s.vclock.advance_to(s.schedule.ready(day(3)));
    let done = s.fetcher.run_due().await;
    assert!(
        matches!(done.as_slice(), [(_, d, DayOutcome::NotReady(why))]
            if *d == day(3) && why.contains("not available yet")),
        "{done:?}"
    );
    s.server.sim.release_report("stripe", day(3));
    s.vclock.advance(s.schedule.every);
    let done = s.fetcher.run_due().await;
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(
        counts(&done[0].2),
        &BTreeMap::from([("applied".into(), 3), ("matched".into(), 3)])
    );
    for id in &ids {
        let v = s.store.get(id).await.unwrap().unwrap();
        assert_eq!(v.payment.status, Status::Succeeded, "{id}");
    }
    std::fs::remove_dir_all(&s.dir).ok();
}

/// One line of an Adyen Settlement details report (the 30 columns in
/// Adyen's order, as in Adyen's published sample rows): a settled payment
/// of 19.99 EUR of merchant account `account`, in batch `batch`.
fn adyen_line(account: &str, psp: &str, batch: &str) -> String {
    let mut f = vec![
        "SimCompany",
        account,
        psp,
        "",
        "visa",
        "2026-12-03 10:00:00",
        "UTC",
        "Settled",
        "1713702551795048",
        "EUR",
        "",
        "19.99",
        "1",
        "EUR",
        "",
        "19.74",
        "",
        "0.10",
        "0.05",
        "0.10",
        "visaclassic",
        "",
        batch,
    ];
    f.resize(30, "");
    f.join(",")
}

/// Adyen makes a Settlement details report by hand, named by its date and
/// covering several merchant accounts ("If you select multiple merchant
/// accounts, the generated report will contain settlement data for all
/// merchant accounts that you selected"): it is read, and each line is
/// routed by its `Merchant Account`: the provider's own line settles the
/// own payment, ShopA's ShopA's, and ShopB's (not configured here) line
/// naming ShopA's PSP reference reaches nothing.
async fn an_adyen_report_by_date_for_several_merchant_accounts_is_routed(backend: Backend) {
    let s = setup_with(backend, Which::Adyen, &["ShopA"]).await;
    let (own_psp, a_psp) = ("8816000000000001", "8816000000000002");
    register(&s, Which::Adyen, "p_adyen_own", own_psp, "EUR").await;
    let p = NewPayment {
        id: PaymentId::parse("p_adyen_shop_a").unwrap(),
        provider: "adyen".into(),
        provider_ref: Some(ProviderRef::parse(a_psp).unwrap()),
        merchant_ref: None,
        account: Some("ShopA".into()),
        kind: Kind::Payment,
        amount: Amount::new(1999, Currency::parse("EUR").unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    };
    let now = s.vclock.now();
    s.store
        .register(&p, now, now.plus(Duration::from_secs(3600)))
        .await
        .unwrap();
    let mut csv = finality_sim::settlement::ADYEN_HEADER.join(",");
    for (account, psp, batch) in [
        (finality_sim::wire::ADYEN_REPORT_MERCHANT, own_psp, "7"),
        ("ShopA", a_psp, "3"),
        ("ShopB", a_psp, "12"),
    ] {
        csv.push('\n');
        csv.push_str(&adyen_line(account, psp, batch));
    }
    csv.push('\n');
    let name = "settlement_detail_report_2026_12_03.csv";
    let url = s
        .server
        .sim
        .keep_adyen_report(name, csv.into_bytes(), &s.server.base_url);
    let key = hex::decode(super::settlement_fetch::ADYEN_HMAC_HEX).unwrap();
    let body = finality_sim::wire::adyen_report_available(
        &key,
        finality_sim::wire::ADYEN_REPORT_MERCHANT,
        name,
        &url,
    )
    .to_string();
    let cfg = Which::Adyen.config(&s.server.base_url, None);
    let adapter = finality_providers::config::build("adyen", &cfg).unwrap();
    let evs = adapter
        .verify_webhook(&Default::default(), body.as_bytes(), s.vclock.now())
        .await
        .unwrap();
    let scope = finality_core::Scope::own("adyen");
    let n = finality_engine::settlement::announce(&*s.store, &scope, &evs, s.vclock.now())
        .await
        .unwrap();
    assert_eq!(n, 1);
    s.vclock.advance(Duration::from_secs(60));
    let done = s.fetcher.run_due().await;
    let [(_, _, outcome)] = done.as_slice() else {
        panic!("{done:?}");
    };
    let DayOutcome::Imported { checked, .. } = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        checked.contains("3 lines of merchant accounts ShopA, ShopB, SimMerchant"),
        "{checked}"
    );
    assert_eq!(
        counts(outcome),
        &BTreeMap::from([("applied".into(), 2), ("unknown_here".into(), 1)])
    );
    for id in ["p_adyen_own", "p_adyen_shop_a"] {
        let v = s.store.get(id).await.unwrap().unwrap();
        assert_eq!(v.payment.status, Status::Succeeded, "{id}");
    }
    std::fs::remove_dir_all(&s.dir).ok();
}
