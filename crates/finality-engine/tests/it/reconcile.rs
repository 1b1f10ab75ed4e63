//! Settlement-report reconciliation against real stores: every outcome of
//! the table in `reconcile.rs`, a malformed report that changes nothing, and
//! a second import of the same report that changes nothing.

use super::*;
use finality_core::{Source, Status};
use finality_engine::reconcile::{reconcile, reconcile_file, Import, Period, ReconcileError};
use finality_providers::settlement::{Columns, Format, LineKind};
use finality_store::Report;
use finality_testkit::Backend;

fn columns() -> Format {
    Format::Columns(Columns {
        reference: "psp_reference".into(),
        amount: "gross".into(),
        currency: "currency".into(),
        kind: Some("type".into()),
        kinds: vec![
            ("Settled".into(), LineKind::Charge),
            ("Refunded".into(), LineKind::Refund),
            ("Chargeback".into(), LineKind::Chargeback),
            ("Fee".into(), LineKind::Fee),
        ],
        fee: Some("fee".into()),
        merchant_ref: None,
        decimal: true,
    })
}

fn payment(id: &str, amount: i64) -> NewPayment {
    NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: "sim".into(),
        provider_ref: Some(ProviderRef::parse(&format!("psp_{id}")).unwrap()),
        merchant_ref: None,
        account: None,
        kind: Kind::Payment,
        amount: Amount::new(amount, Currency::parse("EUR").unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    }
}

fn write(dir: &std::path::Path, name: &str, body: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// Register `p`, its first poll due in a minute.
async fn register_one(store: &dyn Store, p: &NewPayment, now: Timestamp) {
    let r = store
        .register(p, now, now.plus(Duration::from_secs(60)))
        .await
        .unwrap();
    assert!(matches!(r, Registered::Created(_)), "{r:?}");
}

/// Set `id`'s status by hand at `at`, as a person would.
async fn settle(store: &dyn Store, id: &str, to: Status, at: Timestamp) {
    store
        .apply(&Report::manual(id, to, "r".into(), "t".into(), at), at)
        .await
        .unwrap();
}

async fn status(store: &dyn Store, id: &str) -> Status {
    store.get(id).await.unwrap().unwrap().payment.status
}

async fn every_outcome_once(backend: Backend) {
    let db = backend.open().await;
    let store = db.store.clone();
    let now = T0;
    for (id, amount) in [
        ("open", 1250),
        ("done", 1250),
        ("wrong", 1250),
        ("refunded", 990),
        ("failed", 500),
        ("untouched", 700),
        ("both", 400),
        ("forgotten", 300),
        ("earlier", 200),
    ] {
        register_one(&*store, &payment(id, amount), now).await;
    }
    // Succeeded within the report's period but not in it, and before it.
    let hour = Duration::from_secs(3600);
    for (id, at) in [("forgotten", now), ("earlier", Timestamp(T0.0 - 7_200_000))] {
        settle(&*store, id, Status::Succeeded, at).await;
    }
    for id in ["done", "refunded"] {
        settle(&*store, id, Status::Succeeded, now).await;
    }
    settle(&*store, "failed", Status::Failed, now).await;

    let dir = tempdir();
    // A malformed line (line 4): nothing is applied, the error names it.
    let bad = write(
        &dir,
        "bad.csv",
        "psp_reference,type,gross,fee,currency\n\
        psp_open,Settled,12.50,0.30,EUR\n\
        psp_done,Settled,12.50,0.30,EUR\n\
        psp_wrong,Settled,twelve,0.30,EUR\n",
    );
    let err = reconcile_file(&*store, "sim", &bad, &columns(), now)
        .await
        .unwrap_err();
    match &err {
        ReconcileError::Report { error, .. } => {
            assert_eq!((error.line, error.column.as_str()), (4, "gross"), "{err}");
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("bad.csv: line 4: gross"), "{err}");
    assert_eq!(
        status(&*store, "open").await,
        Status::Pending,
        "nothing half-applied"
    );
    assert!(store.recon_runs(10).await.unwrap().is_empty());

    let report = "psp_reference,type,gross,fee,currency\n\
        psp_open,Settled,12.50,0.30,EUR\n\
        psp_done,Settled,12.50,0.30,EUR\n\
        psp_wrong,Settled,13.00,0.30,EUR\n\
        psp_refunded,Refunded,-9.90,,EUR\n\
        psp_failed,Settled,5.00,0.10,EUR\n\
        psp_stranger,Settled,1.00,0.03,EUR\n\
        ,Fee,-0.50,,EUR\n\
        psp_both,Settled,4.00,0.10,EUR\n\
        psp_both,Refunded,-4.00,,EUR\n";
    let good = write(&dir, "settlement_2026-12-01.csv", report);
    let format = columns();
    let import = Import {
        provider: "sim",
        owner: Default::default(),
        name: "settlement_2026-12-01.csv",
        format: &format,
        period: Some(Period {
            from: Timestamp(now.0 - 3_600_000),
            until: now.plus(hour),
        }),
    };
    let out = reconcile(&*store, &import, &good, now).await.unwrap();
    assert!(!out.already_imported);
    assert_eq!(out.lines, 9);
    let c = |k: &str| out.counts.get(k).copied().unwrap_or(0);
    assert_eq!(
        (
            c("applied"),
            c("matched"),
            c("amount_mismatch"),
            c("reversed")
        ),
        (2, 1, 1, 2),
        "{:?}",
        out.counts
    );
    assert_eq!(
        (
            c("contradiction"),
            c("unknown_here"),
            c("ignored"),
            c("missing_from_report")
        ),
        (1, 1, 1, 1),
        "{:?}",
        out.counts
    );

    // What each line did.
    let v = store.get("open").await.unwrap().unwrap();
    assert_eq!(v.payment.status, Status::Succeeded);
    assert_eq!(v.payment.status_source, Some(Source::Sweep));
    assert!(v
        .history
        .last()
        .unwrap()
        .reason
        .as_deref()
        .unwrap()
        .contains("settlement_2026-12-01.csv, line 2"));
    assert_eq!(
        status(&*store, "wrong").await,
        Status::NeedsReview,
        "a mismatch is never applied"
    );
    assert_eq!(status(&*store, "refunded").await, Status::Reversed);
    assert_eq!(
        status(&*store, "failed").await,
        Status::Failed,
        "kept for a person"
    );
    assert_eq!(status(&*store, "untouched").await, Status::Pending);
    assert_eq!(
        status(&*store, "both").await,
        Status::Reversed,
        "settled then refunded within one page"
    );
    let kept = store.recon_lines(out.run_id, 100).await.unwrap();
    let outcomes: Vec<(Option<i64>, &str)> =
        kept.iter().map(|l| (l.line, l.outcome.as_str())).collect();
    assert_eq!(
        outcomes,
        vec![
            (Some(2), "applied"),
            (Some(4), "amount_mismatch"),
            (Some(5), "reversed"),
            (Some(6), "contradiction"),
            (Some(7), "unknown_here"),
            (Some(9), "applied"),
            (Some(10), "reversed"),
            (None, "missing_from_report"),
        ]
    );
    let missing = kept.last().unwrap();
    assert_eq!(missing.payment_id.as_deref(), Some("forgotten"));
    assert!(
        missing.reason.contains("absent from sim settlement report"),
        "{}",
        missing.reason
    );
    assert_eq!(seen_rows(&db).await, 0, "the run's scratch rows are gone");
    assert!(
        kept[1]
            .reason
            .contains("settled 1300 EUR but registered as 1250 EUR"),
        "{}",
        kept[1].reason
    );

    // The same report again: nothing changes, the first run is named.
    let history_before = store.get("open").await.unwrap().unwrap().history.len();
    let again = reconcile(&*store, &import, &good, now).await.unwrap();
    assert!(again.already_imported);
    assert_eq!(again.run_id, out.run_id);
    assert_eq!(again.counts, out.counts);
    assert_eq!(
        store.get("open").await.unwrap().unwrap().history.len(),
        history_before
    );
    assert_eq!(store.recon_runs(10).await.unwrap().len(), 1);
    let events = store.events_after(0, 1000).await.unwrap().len();
    let _ = reconcile_file(&*store, "sim", &good, &columns(), now)
        .await
        .unwrap();
    assert_eq!(
        store.events_after(0, 1000).await.unwrap().len(),
        events,
        "no event twice"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The simulator settles payments on virtual time while the engine drives
/// them to final here; then it writes its settlement report (Adyen's
/// Settlement details layout) with discrepancies injected on purpose:
/// lines left out, amounts changed, refunds, payments nobody registered.
/// Some payments were registered here only after they settled (open here).
/// Every line and every payment of the period must come out exactly as the
/// injections say.
async fn simulator_report_with_injected_discrepancies(backend: Backend) {
    use finality_core::VirtualClock;
    use finality_sim::settlement::{write_adyen_report, Inject};
    use std::collections::{BTreeMap, HashSet};
    let db = backend.open().await;
    let store = db.store.clone();
    let vclock = Arc::new(VirtualClock::new(T0));
    let clock: Arc<dyn Clock> = vclock.clone();
    let mut config = SimConfig::default();
    config.outcomes.cancelled = 0.0;
    config.outcomes.failed = 0.1;
    config.outcomes.succeeded = 0.9;
    let server = spawn_sim(config, clock.clone()).await;
    for i in 0..150 {
        register(
            &*store,
            &server.sim,
            &format!("pay_{i:03}"),
            T0,
            T0.plus(Duration::from_secs(1)),
        )
        .await;
    }
    // Created at the provider now, registered here only after the run.
    let late: Vec<String> = (0..30)
        .map(|i| server.sim.create(Some(format!("late_{i:02}"))).id)
        .collect();
    let e = engine(
        store.clone(),
        clock.clone(),
        providers(
            &server.base_url,
            quick_policy(40, Duration::from_secs(6 * 3600)),
            None,
            Duration::from_secs(5),
        ),
        engine_config("v", 16),
    );
    tokio::time::timeout(
        Duration::from_secs(120),
        e.run_until_idle(CancellationToken::new()),
    )
    .await
    .expect("virtual run finishes");
    let now = clock.now();
    for r in &late {
        let p = NewPayment {
            id: PaymentId::parse(&format!("p_{r}")).unwrap(),
            provider: "sim".into(),
            provider_ref: Some(ProviderRef::parse(r).unwrap()),
            merchant_ref: None,
            account: None,
            kind: Kind::Payment,
            amount: Amount::new(1000, Currency::parse("EUR").unwrap()).unwrap(),
            metadata: serde_json::json!({}),
        };
        store
            .register(&p, now, now.plus(Duration::from_secs(3600)))
            .await
            .unwrap();
    }

    let settled = server.sim.settled_until(now);
    let inject = Inject {
        missing: 0.06,
        wrong_amount: 0.06,
        refunded: 0.06,
        unknown: 0.04,
        seed: 11,
    };
    let dir = tempdir();
    let path = dir.join("settlement_detail_report_batch_1.csv");
    let injected = write_adyen_report(
        settled.clone(),
        &inject,
        1,
        std::fs::File::create(&path).unwrap(),
    )
    .unwrap();
    for (what, list) in [
        ("missing", &injected.missing),
        ("wrong_amount", &injected.wrong_amount),
        ("refunded", &injected.refunded),
        ("unknown", &injected.unknown),
    ] {
        assert!(
            !list.is_empty(),
            "the seed injects some {what}: {injected:?}"
        );
    }

    // What each line should come out as, from the injections and what
    // finality had before the import.
    let mut expected: BTreeMap<&str, i64> = BTreeMap::new();
    let mut expect_missing = HashSet::new();
    let mut statuses = BTreeMap::new();
    for s in &settled {
        let id = store
            .find_by_ref(&finality_core::Scope::own("sim"), &s.psp_reference)
            .await
            .unwrap()
            .unwrap();
        let here = status(&*store, &id).await;
        statuses.insert(id.clone(), here);
        let r = &s.psp_reference;
        let open = !here.is_final();
        let outcome = if injected.missing.contains(r) {
            if here == Status::Succeeded {
                expect_missing.insert(id);
                "missing_from_report"
            } else {
                continue;
            }
        } else if injected.wrong_amount.contains(r) {
            "amount_mismatch"
        } else if open {
            "applied"
        } else {
            "matched"
        };
        *expected.entry(outcome).or_default() += 1;
        if injected.refunded.contains(r) {
            *expected.entry("reversed").or_default() += 1;
        }
    }
    expected.insert("unknown_here", injected.unknown.len() as i64);
    expected.insert("ignored", 2);
    assert!(
        expected.get("applied").copied().unwrap_or(0) > 0,
        "{expected:?}"
    );

    let format = Format::AdyenSettlementDetails;
    let import = Import {
        provider: "sim",
        owner: Default::default(),
        name: "settlement_detail_report_batch_1.csv",
        format: &format,
        period: Some(Period {
            from: T0,
            until: now.plus(Duration::from_secs(1)),
        }),
    };
    let out = reconcile(&*store, &import, &path, now).await.unwrap();
    let got: BTreeMap<&str, i64> = out.counts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(got, expected);
    assert_eq!(out.lines as u64, injected.lines);

    // What became of each payment.
    for s in &settled {
        let id = store
            .find_by_ref(&finality_core::Scope::own("sim"), &s.psp_reference)
            .await
            .unwrap()
            .unwrap();
        let r = &s.psp_reference;
        let before = statuses[&id];
        let after = status(&*store, &id).await;
        let want = if injected.missing.contains(r) {
            before
        } else if injected.wrong_amount.contains(r) {
            if before.is_final() {
                before
            } else {
                Status::NeedsReview
            }
        } else if injected.refunded.contains(r) {
            Status::Reversed
        } else {
            Status::Succeeded
        };
        assert_eq!(after, want, "{id} ({r}) was {before}");
    }
    let kept = store.recon_lines(out.run_id, 10_000).await.unwrap();
    let missing: HashSet<String> = kept
        .iter()
        .filter(|l| l.outcome == "missing_from_report")
        .filter_map(|l| l.payment_id.clone())
        .collect();
    assert_eq!(missing, expect_missing);
    let unknown: HashSet<String> = kept
        .iter()
        .filter(|l| l.outcome == "unknown_here")
        .filter_map(|l| l.provider_ref.clone())
        .collect();
    assert_eq!(unknown, injected.unknown.iter().cloned().collect());
    std::fs::remove_dir_all(&dir).ok();
}

/// Each dedicated format, end to end: a payment its report settles (open
/// here: applied), one it settles and refunds (reversed), matched by the
/// reference that format carries (Stripe's PaymentIntent, PayPal's
/// capture id or invoice id, WeChat Pay's and Alipay's transaction ids,
/// and a refund row's pointer back to its payment).
async fn every_format_settles_and_reverses(backend: Backend) {
    let db = backend.open().await;
    let store = db.store.clone();
    let now = T0;
    let reg = |provider: &'static str,
               id: &'static str,
               pref: Option<&'static str>,
               mref: Option<&'static str>,
               amount: i64,
               ccy: &'static str| NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: provider.into(),
        provider_ref: pref.map(|r| ProviderRef::parse(r).unwrap()),
        merchant_ref: mref.map(|r| finality_core::money::MerchantRef::parse(r).unwrap()),
        account: None,
        kind: Kind::Payment,
        amount: Amount::new(amount, Currency::parse(ccy).unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    };
    let payments = [
        reg("stripe", "s1", Some("pi_1"), None, 2500, "USD"),
        reg("stripe", "s2", Some("pi_2"), None, 1200, "JPY"),
        reg("paypal", "p1", Some("8MC585209K746392H"), None, 5200, "AUD"),
        reg("paypal", "p2", None, Some("inv-2"), 100, "JPY"), // STL writes 10000: ×100 in every currency
        reg(
            "wechat",
            "w1",
            Some("4200000925202101284997714292"),
            Some("S1"),
            1,
            "CNY",
        ),
        reg(
            "wechat",
            "w2",
            Some("4200000844202101245866928772"),
            Some("S2"),
            1,
            "CNY",
        ),
        reg(
            "alipay",
            "a1",
            Some("2026113022001400000000000001"),
            Some("order-1"),
            9900,
            "CNY",
        ),
        reg(
            "alipay",
            "a2",
            Some("2026113022001400000000000002"),
            Some("order-2"),
            500,
            "CNY",
        ),
    ];
    for p in &payments {
        store
            .register(p, now, now.plus(Duration::from_secs(60)))
            .await
            .unwrap();
    }
    let dir = tempdir();
    let reports = [
        (
            "stripe",
            Format::StripeItemized,
            "balance_transaction_id,source_id,payment_intent_id,charge_id,currency,gross,fee,net,reporting_category\n\
             txn_1,ch_1,pi_1,ch_1,usd,25.00,0.95,24.05,charge\n\
             txn_2,ch_2,pi_2,ch_2,jpy,1200,46,1154,charge\n\
             txn_3,re_2,pi_2,ch_2,jpy,-1200,0,-1200,refund\n\
             txn_4,po_1,,,usd,-24.05,0,-24.05,payout\n"
                .to_string(),
        ),
        (
            "paypal",
            Format::PaypalStl,
            "\"RH\",2026/12/01 02:00:00 -0800,\"A\",\"ACCT\",009,\n\
             \"CH\",\"Transaction ID\",\"Invoice ID\",\"PayPal Reference ID\",\"PayPal Reference ID Type\",\"Transaction Event Code\",\"Transaction Debit or Credit\",\"Gross Transaction Amount\",\"Gross Transaction Currency\",\"Fee Debit or Credit\",\"Fee Amount\"\n\
             \"SB\",\"8MC585209K746392H\",\"inv-1\",\"\",\"\",\"T0006\",\"CR\",5200,\"AUD\",\"DR\",225\n\
             \"SB\",\"2GG279541U471931P\",\"inv-2\",\"\",\"\",\"T0006\",\"CR\",10000,\"JPY\",\"DR\",400\n\
             \"SB\",\"1JU08902781691411\",\"inv-2\",\"2GG279541U471931P\",\"TXN\",\"T1107\",\"DR\",10000,\"JPY\",\"CR\",400\n\
             \"SF\",\"JPY\",10000,10000,400,400\n"
                .to_string(),
        ),
        (
            "wechat",
            Format::WechatTradeBill,
            "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\n\
             `2021-01-28 17:07:11,`wx1,`1,`0,`,`4200000925202101284997714292,`S1,`o,`NATIVE,`SUCCESS,`OTHERS,`CNY,`0.01,`0.00,`0,`0,`0.00,`0.00,`,`,`t,`c,`0.00000,`1.00%,`0.01,`0.00,`\n\
             `2021-01-28 17:07:12,`wx1,`1,`0,`,`4200000844202101245866928772,`S2,`o,`NATIVE,`SUCCESS,`OTHERS,`CNY,`0.01,`0.00,`0,`0,`0.00,`0.00,`,`,`t,`c,`0.00000,`1.00%,`0.01,`0.00,`\n\
             `2021-01-28 18:00:00,`wx1,`1,`0,`,`4200000844202101245866928772,`S2,`o,`NATIVE,`REFUND,`OTHERS,`CNY,`0.00,`0.00,`503008,`R2,`0.01,`0.00,`ORIGINAL,`SUCCESS,`t,`c,`0.00000,`1.00%,`0.00,`0.01,`\n\
             总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\n\
             `3,`0.02,`0.01,`0.00,`0.00000,`0.02,`0.01\n"
                .to_string(),
        ),
        (
            "alipay",
            Format::AlipayTradeBill,
            "#支付宝业务明细查询\n\
             支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注\n\
             2026113022001400000000000001\t,order-1\t,交易\t,x,2026-11-30 10:00:00,2026-11-30 10:00:05,,,,,,99.00,99.00,0.00,0.00,0.00,0.00,0.00,,0.00,0.00,,0.59,0.00,\n\
             2026113022001400000000000002\t,order-2\t,交易\t,x,2026-11-30 11:00:00,2026-11-30 11:00:05,,,,,,5.00,5.00,0.00,0.00,0.00,0.00,0.00,,0.00,0.00,,0.03,0.00,\n\
             2026113022001400000000000002\t,order-2\t,退款\t,x,2026-11-30 12:00:00,2026-11-30 12:00:05,,,,,,5.00,-5.00,0.00,0.00,0.00,0.00,0.00,,0.00,0.00,R2,-0.03,0.00,\n\
             #交易合计：2笔\n"
                .to_string(),
        ),
    ];
    for (provider, format, body) in reports {
        let path = dir.join(format!("{provider}.csv"));
        let bytes = if provider == "alipay" {
            encoding_rs::GBK.encode(&body).0.into_owned()
        } else {
            body.into_bytes()
        };
        std::fs::write(&path, bytes).unwrap();
        let out = reconcile_file(&*store, provider, &path, &format, now)
            .await
            .unwrap_or_else(|e| panic!("{provider}: {e}"));
        let c = |k: &str| out.counts.get(k).copied().unwrap_or(0);
        assert_eq!(
            (
                c("applied"),
                c("reversed"),
                c("unknown_here"),
                c("contradiction"),
                c("amount_mismatch")
            ),
            (2, 1, 0, 0, 0),
            "{provider}: {:?}",
            out.counts
        );
    }
    for (id, want) in [
        ("s1", Status::Succeeded),
        ("s2", Status::Reversed),
        ("p1", Status::Succeeded),
        ("p2", Status::Reversed),
        ("w1", Status::Succeeded),
        ("w2", Status::Reversed),
        ("a1", Status::Succeeded),
        ("a2", Status::Reversed),
    ] {
        assert_eq!(status(&*store, id).await, want, "{id}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The edges a reviewer found: a refund record finality tracks is not a
/// payment a report must list; a fee line naming a payment does not list
/// it; a partial refund is kept for a person, not applied; the same file
/// checked against another period is another import; a second import of a
/// report while the first runs is refused.
async fn period_edges_and_reimports(backend: Backend) {
    let db = backend.open().await;
    let store = db.store.clone();
    let now = T0;
    for (id, amount) in [("listed", 1000), ("fee_only", 1000), ("partly", 1000)] {
        register_one(&*store, &payment(id, amount), now).await;
    }
    let mut refund = payment("re_1", 400);
    refund.kind = Kind::Refund;
    register_one(&*store, &refund, now).await;
    for id in ["listed", "fee_only", "partly", "re_1"] {
        settle(&*store, id, Status::Succeeded, now).await;
    }
    let dir = tempdir();
    let path = write(
        &dir,
        "r.csv",
        "psp_reference,type,gross,fee,currency\n\
         psp_listed,Settled,10.00,0.30,EUR\n\
         psp_fee_only,Fee,-0.30,,EUR\n\
         psp_partly,Settled,10.00,0.30,EUR\n\
         psp_partly,Refunded,-2.50,,EUR\n",
    );
    let format = columns();
    let day = Some(Period {
        from: Timestamp(now.0 - 3_600_000),
        until: now.plus(Duration::from_secs(3600)),
    });
    let import = Import {
        provider: "sim",
        owner: Default::default(),
        name: "r.csv",
        format: &format,
        period: day,
    };
    let out = reconcile(&*store, &import, &path, now).await.unwrap();
    let c = |k: &str| out.counts.get(k).copied().unwrap_or(0);
    assert_eq!(
        (c("matched"), c("partial_refund"), c("missing_from_report")),
        (3, 1, 1),
        "{:?}",
        out.counts
    );
    let kept = store.recon_lines(out.run_id, 100).await.unwrap();
    let missing: Vec<_> = kept
        .iter()
        .filter(|l| l.outcome == "missing_from_report")
        .filter_map(|l| l.payment_id.as_deref())
        .collect();
    assert_eq!(
        missing,
        vec!["fee_only"],
        "the refund record is not a payment to list"
    );
    assert_eq!(
        status(&*store, "partly").await,
        Status::Succeeded,
        "not reversed"
    );

    // The same file against another period is another run; the same
    // period again changes nothing.
    let other = Import {
        period: Some(Period {
            from: Timestamp(now.0 - 7_200_000),
            until: Timestamp(now.0 - 3_600_000),
        }),
        ..import.clone()
    };
    let again = reconcile(&*store, &other, &path, now).await.unwrap();
    assert!(!again.already_imported);
    assert_ne!(again.run_id, out.run_id);
    assert_eq!(again.counts.get("missing_from_report"), None);
    assert!(
        reconcile(&*store, &import, &path, now)
            .await
            .unwrap()
            .already_imported
    );

    // A second import while the first is alive is refused; once the first
    // has been silent long enough, it is done again.
    let busy_path = write(
        &dir,
        "busy.csv",
        "psp_reference,type,gross,fee,currency\npsp_listed,Settled,10.00,,EUR\n",
    );
    let sha = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(std::fs::read(&busy_path).unwrap()))
    };
    store
        .recon_start("sim", "busy.csv", &sha, now, now)
        .await
        .unwrap();
    let err = reconcile_file(
        &*store,
        "sim",
        &busy_path,
        &format,
        now.plus(Duration::from_secs(60)),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ReconcileError::Busy { .. }), "{err}");
    assert!(err.to_string().contains("being imported since"), "{err}");
    let later = now.plus(Duration::from_secs(3600));
    let done = reconcile_file(&*store, "sim", &busy_path, &format, later)
        .await
        .unwrap();
    assert_eq!(done.counts.get("matched"), Some(&1));
    std::fs::remove_dir_all(&dir).ok();
}

/// Rows left in the scratch table of listed payments.
async fn seen_rows(db: &finality_testkit::testing::TestDb) -> i64 {
    count(db, "SELECT COUNT(*) FROM reconciliation_seen").await
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("finality-recon-{}", uuid_like()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn uuid_like() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{n:x}-{:?}", std::thread::current().id()).replace(['(', ')'], "")
}

finality_testkit::on_both_backends!(
    every_outcome_once,
    simulator_report_with_injected_discrepancies,
    every_format_settles_and_reverses,
    period_edges_and_reimports
);
