//! Each account's own settlement reports fetched on schedule beside the
//! provider's, on every backend, from the simulator's fetch APIs in each
//! provider's wire format: a Stripe connected account's by the Connect
//! report type with `parameters[connected_account]` (made by the platform's
//! key, without `Stripe-Account`), an Alipay merchant's bill by the
//! `app_auth_token` it granted the integrator, a WeChat Pay sub-merchant's
//! bill by `sub_mchid`. Each report is imported as its account's: its
//! lines reach that account's payments only, and the provider's own
//! report neither lists them nor calls them missing.

use super::settlement_fetch::{day, Which, T0};
use super::*;
use finality_core::{Scope, Source, Status, VirtualClock};
use finality_engine::settlement::{DayOutcome, Fetcher};
use finality_providers::config::AccountSpec;
use finality_store::Report;
use finality_testkit::Backend;
use std::collections::BTreeMap;

finality_testkit::on_both_backends!(
    stripe_connected_accounts_reports_are_fetched,
    alipay_isv_merchants_bills_are_fetched,
    wechat_sub_merchants_bills_are_fetched,
);

/// The account each provider's test adds: a connected account, the
/// merchant's app an integrator acts for, a sub-merchant.
fn account_of(which: Which) -> &'static str {
    match which {
        Which::Stripe => "acct_1SimConnectedB",
        Which::Alipay => "2021000000000777",
        Which::WeChat => "1900000109",
        _ => unreachable!("per-account reports of these three"),
    }
}

const ALIPAY_TOKEN: &str = "202612BB8b3c1c3a1e5b4c7e9a0d2f4e6X77";

async fn register(store: &dyn Store, which: Which, id: &str, sim_id: &str, account: Option<&str>) {
    let p = NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: which.name().into(),
        provider_ref: Some(ProviderRef::parse(&which.provider_ref(sim_id)).unwrap()),
        merchant_ref: None,
        account: account.map(String::from),
        kind: Kind::Payment,
        amount: Amount::new(1999, Currency::parse(which.currency()).unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    };
    store
        .register(&p, T0, T0.plus(Duration::from_secs(3600)))
        .await
        .unwrap();
}

async fn status(store: &dyn Store, id: &str) -> Status {
    store.get(id).await.unwrap().unwrap().payment.status
}

async fn fetched_per_account(backend: Backend, which: Which) {
    let db = backend.open().await;
    let store = db.store.clone();
    let vclock = Arc::new(VirtualClock::new(T0));
    let clock: Arc<dyn Clock> = vclock.clone();
    let mut config = SimConfig::deterministic(Duration::from_secs(2));
    config.api_key = Some(super::settlement_fetch::STRIPE_KEY.into());
    let server = spawn_sim(config, clock.clone()).await;
    let name = which.name();
    let acct = account_of(which);
    if which == Which::Alipay {
        server.sim.set_alipay_app_auth_token(acct, ALIPAY_TOKEN);
    }

    // Ten payments of the provider's own and ten of the account's settle
    // at the provider on 2026-12-03; half of each are final here already.
    let mut ids: Vec<(String, Option<&str>)> = Vec::new();
    for (whose, prefix) in [(None, "own"), (Some(acct), "acc")] {
        for i in 0..10 {
            let sim_id = format!("s{name}{prefix}{i:02}");
            server.sim.create_priced(
                Some(sim_id.clone()),
                Some(format!("o-{prefix}-{i}")),
                1999,
                which.currency(),
            );
            if let Some(a) = whose {
                server.sim.assign_account(&sim_id, a);
            }
            let id = format!("p_{name}_{prefix}_{i:02}");
            register(&*store, which, &id, &sim_id, whose).await;
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
            ids.push((id, whose));
        }
    }
    vclock.advance(Duration::from_secs(60));

    std::env::set_var("FINALITY_ITS_ALIPAY_TOKEN", ALIPAY_TOKEN);
    let mut cfg = which.config(&server.base_url, None);
    cfg.accounts = vec![match which {
        Which::Alipay => AccountSpec {
            app_auth_token_env: Some("FINALITY_ITS_ALIPAY_TOKEN".into()),
            ..AccountSpec::named(acct)
        },
        _ => AccountSpec::named(acct),
    }];
    cfg.validate().unwrap();
    let schedule = cfg.settlement_schedule().unwrap().unwrap();
    let adapter = finality_providers::config::build(name, &cfg).unwrap();
    let entry = ProviderEntry::named(name, adapter, &cfg);
    assert!(entry.accounts.file_errors().is_empty());
    let mut providers = Providers::new();
    providers.insert(name.into(), entry);
    let dir = std::env::temp_dir().join(format!(
        "finality-fetch-acct-{name}-{}-{backend:?}",
        std::process::id()
    ));
    let fetcher = Fetcher::new(store.clone(), clock.clone(), &providers, "node-a", &dir).unwrap();

    vclock.advance_to(schedule.ready(day(3)));
    let done = fetcher.run_due().await;
    let label = Scope::new(name, Some(acct)).to_string();
    let counts: BTreeMap<String, BTreeMap<String, i64>> = done
        .iter()
        .map(|(whose, d, outcome)| {
            assert_eq!(*d, day(3), "{done:?}");
            let DayOutcome::Imported { counts, .. } = outcome else {
                panic!("{whose}: {outcome:?}");
            };
            (whose.clone(), counts.clone())
        })
        .collect();
    // Each report lists its own payments only: five matched (final here
    // already), five applied, nothing unknown, nothing missing.
    let want: BTreeMap<String, i64> = [("applied".to_string(), 5), ("matched".to_string(), 5)]
        .into_iter()
        .collect();
    assert_eq!(
        counts.get(name),
        Some(&want),
        "the provider's own: {done:?}"
    );
    assert_eq!(counts.get(&label), Some(&want), "{label}: {done:?}");
    assert_eq!(done.len(), 2, "{done:?}");
    for (id, _) in &ids {
        assert_eq!(status(&*store, id).await, Status::Succeeded, "{id}");
    }
    // Kept in the account's own folder, imported under its own name.
    let kept = std::fs::read_dir(dir.join(name).join(format!("account-{acct}")))
        .unwrap()
        .count();
    assert_eq!(kept, 1);
    let runs = store.recon_runs(10).await.unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs.iter().any(|r| r.file_name.contains(acct)), "{runs:?}");
    // Each feed has its own cursor: the next round asks for nothing.
    vclock.advance(schedule.every);
    assert!(fetcher.run_due().await.is_empty());
    let state = fetcher.states();
    assert_eq!(state[name].last_day, Some(day(3)));
    assert_eq!(state[&label].last_day, Some(day(3)));

    // `finality reconcile fetch` covers the account too: the day is
    // skipped for both, as imported before.
    let again = fetcher.backfill(name, day(3), day(3)).await.unwrap();
    assert_eq!(
        again,
        vec![
            (None, day(3), DayOutcome::Skipped),
            (Some(acct.to_string()), day(3), DayOutcome::Skipped)
        ]
    );
    std::fs::remove_dir_all(&dir).ok();
}

async fn stripe_connected_accounts_reports_are_fetched(backend: Backend) {
    fetched_per_account(backend, Which::Stripe).await;
}

async fn alipay_isv_merchants_bills_are_fetched(backend: Backend) {
    fetched_per_account(backend, Which::Alipay).await;
}

async fn wechat_sub_merchants_bills_are_fetched(backend: Backend) {
    fetched_per_account(backend, Which::WeChat).await;
}
