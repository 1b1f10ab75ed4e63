//! A settlement report line of one merchant never changes another
//! merchant's payment, on every backend: Adyen report lines are matched in
//! the merchant account their `Merchant Account` column names (two
//! accounts' colliding merchant references each reach their own payment),
//! and a report imported as one account's reaches only that account's
//! payments, and looks for missing ones only among them.

use super::*;
use finality_core::money::MerchantRef;
use finality_core::Status;
use finality_engine::reconcile::{reconcile, Import, Owner, Period};
use finality_providers::settlement::{Columns, Format, LineKind};
use finality_store::Report;
use finality_testkit::Backend;

finality_testkit::on_both_backends!(
    adyen_lines_reach_the_merchant_account_they_name,
    an_accounts_report_reaches_only_its_payments,
);

/// The 30-column header of Adyen's Settlement details report (as Adyen
/// documents it; see `finality-providers` `settlement/adyen.rs`).
const ADYEN_HEADER: &str = "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Modification Merchant Reference,Batch Number,Reserved4,Reserved5,Reserved6,Reserved7,Reserved8,Reserved9,Reserved10";

fn adyen_row(account: &str, psp: &str, merchant_ref: &str, credit: &str) -> String {
    format!(
        "Company,{account},{psp},{merchant_ref},visa,2026-12-01 10:00:00,CET,Settled,{psp},EUR,,{credit},,EUR,,{credit},0.10,,,,visa,,1,,,,,,,"
    )
}

fn payment(
    id: &str,
    account: Option<&str>,
    provider_ref: Option<&str>,
    merchant_ref: &str,
) -> NewPayment {
    NewPayment {
        id: PaymentId::parse(id).unwrap(),
        provider: "adyen".into(),
        provider_ref: provider_ref.map(|r| ProviderRef::parse(r).unwrap()),
        merchant_ref: Some(MerchantRef::parse(merchant_ref).unwrap()),
        account: account.map(String::from),
        kind: Kind::Payment,
        amount: Amount::new(1000, Currency::parse("EUR").unwrap()).unwrap(),
        metadata: serde_json::json!({}),
    }
}

async fn status(store: &dyn Store, id: &str) -> Status {
    store.get(id).await.unwrap().unwrap().payment.status
}

fn file(name: &str, body: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "finality-recon-acct-{}-{}",
        std::process::id(),
        T0.0 ^ (body.len() as i64) ^ (name.len() as i64)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{}-{name}", uuid()));
    std::fs::write(&p, body).unwrap();
    p
}

fn uuid() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

async fn adyen_lines_reach_the_merchant_account_they_name(backend: Backend) {
    let db = backend.open().await;
    let store = db.store.clone();
    let now = T0;
    // Three payments share merchant reference order-1001: the provider's
    // own (merchant account Company-own), ShopA's and ShopB's.
    for p in [
        payment("own", None, Some("8816000000000000"), "order-1001"),
        payment(
            "shop_a",
            Some("ShopA"),
            Some("8816000000000001"),
            "order-1001",
        ),
        payment("shop_b", Some("ShopB"), None, "order-1001"),
    ] {
        let r = store
            .register(&p, now, now.plus(Duration::from_secs(60)))
            .await
            .unwrap();
        assert!(matches!(r, Registered::Created(_)), "{r:?}");
    }
    // ShopA's line names its psp reference; ShopB's names only the shared
    // merchant reference (and a psp reference finality does not know).
    let body = [
        ADYEN_HEADER.to_string(),
        adyen_row("ShopA", "8816000000000001", "order-1001", "10.00"),
        adyen_row("ShopB", "8816000000000002", "order-1001", "10.00"),
    ]
    .join("\n");
    let path = file("settlement_detail_report_batch_1.csv", &body);
    let format = Format::AdyenSettlementDetails;
    let import = Import {
        provider: "adyen",
        owner: Owner {
            account: None,
            lines_name_accounts: true,
            own_id: Some("CompanyOwn"),
        },
        name: "settlement_detail_report_batch_1.csv",
        format: &format,
        period: None,
    };
    let out = reconcile(&*store, &import, &path, now).await.unwrap();
    assert_eq!(
        out.counts.get("applied").copied(),
        Some(2),
        "{:?}",
        out.counts
    );
    assert_eq!(status(&*store, "shop_a").await, Status::Succeeded);
    assert_eq!(status(&*store, "shop_b").await, Status::Succeeded);
    assert_eq!(
        status(&*store, "own").await,
        Status::Pending,
        "another account's lines"
    );

    // At a provider without accounts every line is the report's, the
    // provider's own: none of these references is an own payment's, so
    // none is found (and no account's payment is reached).
    let path = file("batch_2.csv", &body.replace("order-1001", "order-x"));
    let import = Import {
        owner: Owner::default(),
        name: "batch_2.csv",
        ..import
    };
    let out = reconcile(&*store, &import, &path, now).await.unwrap();
    assert_eq!(
        out.counts.get("unknown_here").copied(),
        Some(2),
        "{:?}",
        out.counts
    );
    assert_eq!(status(&*store, "own").await, Status::Pending);
}

fn columns() -> Format {
    Format::Columns(Columns {
        reference: "psp_reference".into(),
        amount: "gross".into(),
        currency: "currency".into(),
        kind: Some("type".into()),
        kinds: vec![("Settled".into(), LineKind::Charge)],
        fee: None,
        merchant_ref: None,
        decimal: true,
    })
}

async fn an_accounts_report_reaches_only_its_payments(backend: Backend) {
    let db = backend.open().await;
    let store = db.store.clone();
    let now = T0;
    for p in [
        payment("a1", Some("A"), Some("psp_a1"), "m-a1"),
        payment("b1", Some("B"), Some("psp_b1"), "m-b1"),
        payment("b2", Some("B"), Some("psp_b2"), "m-b2"),
    ] {
        store
            .register(&p, now, now.plus(Duration::from_secs(60)))
            .await
            .unwrap();
    }
    for id in ["a1", "b2"] {
        store
            .apply(
                &Report::manual(id, Status::Succeeded, "r".into(), "t".into(), now),
                now,
            )
            .await
            .unwrap();
    }
    // Account A's report names B's payment b1 (and A's own a1).
    let body =
        "psp_reference,type,gross,currency\npsp_a1,Settled,10.00,EUR\npsp_b1,Settled,10.00,EUR\n";
    let path = file("a.csv", body);
    let format = columns();
    let hour = Duration::from_secs(3600);
    let import = Import {
        provider: "adyen",
        owner: Owner {
            account: Some("A"),
            lines_name_accounts: true,
            own_id: None,
        },
        name: "a.csv",
        format: &format,
        period: Some(Period {
            from: Timestamp(now.0 - 3_600_000),
            until: now.plus(hour),
        }),
    };
    let out = reconcile(&*store, &import, &path, now).await.unwrap();
    let c = |k: &str| out.counts.get(k).copied().unwrap_or(0);
    assert_eq!(
        (c("matched"), c("unknown_here")),
        (1, 1),
        "{:?}",
        out.counts
    );
    assert_eq!(
        status(&*store, "b1").await,
        Status::Pending,
        "B's payment untouched"
    );
    // B's b2 succeeded in the period and is in no report of B's: A's
    // report does not call it missing.
    assert_eq!(c("missing_from_report"), 0, "{:?}", out.counts);
    // The same bytes as B's report are another import, within B.
    let import = Import {
        owner: Owner {
            account: Some("B"),
            ..import.owner
        },
        ..import
    };
    let out = reconcile(&*store, &import, &path, now).await.unwrap();
    assert!(!out.already_imported);
    let c = |k: &str| out.counts.get(k).copied().unwrap_or(0);
    assert_eq!(
        (c("applied"), c("unknown_here"), c("missing_from_report")),
        (1, 1, 1),
        "{:?}",
        out.counts
    );
    assert_eq!(status(&*store, "b1").await, Status::Succeeded);
}
