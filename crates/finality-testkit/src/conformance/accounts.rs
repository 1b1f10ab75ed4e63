//! A provider's accounts: stored at run time ([`finality_store::Accounts`]),
//! carried by payments and their jobs, and claimed fairly between lanes
//! ([`finality_store::PollQueue::claim`]).

use super::support::*;
use super::Case;
use finality_core::Timestamp;
use finality_store::{AccountPut, Store};
use std::collections::HashMap;
use std::sync::Arc;

/// Added, listed in order, replaced (enabled again), disabled; an unknown
/// one is not disabled.
pub async fn accounts_are_added_replaced_and_disabled(db: Arc<dyn Store>) {
    let later = |s: i64| Timestamp(T0.0 + s * 1000);
    assert!(db.accounts().await.unwrap().is_empty());
    let spec = serde_json::json!({"webhook_secret_envs": ["ACCT_B_WHSEC"]});
    assert_eq!(
        db.account_put("stripe", "acct_b", &spec, "ops", T0)
            .await
            .unwrap(),
        AccountPut::Created
    );
    db.account_put("stripe", "acct_a", &serde_json::json!({}), "ops", T0)
        .await
        .unwrap();
    db.account_put("adyen", "Shop", &serde_json::json!({}), "ops", T0)
        .await
        .unwrap();
    let all = db.accounts().await.unwrap();
    let names: Vec<(&str, &str)> = all
        .iter()
        .map(|a| (a.provider.as_str(), a.account.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("adyen", "Shop"),
            ("stripe", "acct_a"),
            ("stripe", "acct_b")
        ]
    );
    assert_eq!(all[2].spec, spec);
    assert_eq!(all[2].updated_by, "ops");

    assert!(db
        .account_disable("stripe", "acct_b", "oncall", later(5))
        .await
        .unwrap());
    assert!(!db
        .account_disable("stripe", "acct_none", "oncall", later(5))
        .await
        .unwrap());
    let b = db.accounts().await.unwrap().remove(2);
    assert_eq!(b.disabled_at, Some(later(5)));
    assert_eq!(b.updated_by, "oncall");
    assert_eq!(b.created_at, T0);

    let spec2 = serde_json::json!({"weight": 3});
    assert_eq!(
        db.account_put("stripe", "acct_b", &spec2, "ops", later(9))
            .await
            .unwrap(),
        AccountPut::Updated
    );
    let b = db.accounts().await.unwrap().remove(2);
    assert_eq!(
        (b.disabled_at, b.spec, b.updated_at),
        (None, spec2, later(9))
    );
}

/// One account's backlog does not take a claim round from another's due
/// poll: each lane with due work gets its share (by weight), the rest of
/// the round goes first-due first; a claimed job and its payment carry
/// the account.
pub async fn claims_are_shared_fairly_between_accounts(db: Arc<dyn Store>) {
    let at = |s: i64| Timestamp(T0.0 + s * 1000);
    for i in 0..40 {
        let mut p = new_payment(&format!("pay_big{i:02}"));
        p.account = Some("acct_big".into());
        db.register(&p, T0, at(i)).await.unwrap();
    }
    for i in 0..2 {
        let mut p = new_payment(&format!("pay_small{i}"));
        p.account = Some("acct_small".into());
        db.register(&p, T0, at(100 + i)).await.unwrap();
    }
    let got = db.get("pay_small0").await.unwrap().expect("registered");
    assert_eq!(got.payment.account.as_deref(), Some("acct_small"));

    // First-due-first alone would hand all ten to acct_big's backlog.
    let mut first = claim_req(at(200), 10, "w1");
    first.lease_until = at(10_000); // held through the rest of the case
    let jobs = db.claim(&first).await.unwrap();
    assert_eq!(jobs.len(), 10);
    let small: Vec<&str> = jobs
        .iter()
        .filter(|j| j.account.as_deref() == Some("acct_small"))
        .map(|j| j.payment_id.as_str())
        .collect();
    assert_eq!(small, vec!["pay_small0", "pay_small1"], "{jobs:?}");
    // acct_big got its share and the rest, oldest first.
    let big: Vec<&str> = jobs
        .iter()
        .filter(|j| j.account.as_deref() == Some("acct_big"))
        .map(|j| j.payment_id.as_str())
        .collect();
    let oldest: Vec<String> = (0..8).map(|i| format!("pay_big{i:02}")).collect();
    assert_eq!(big, oldest);

    // Weights: a lane of weight 3 takes three quarters of a round.
    for i in 0..20 {
        let mut p = new_payment(&format!("pay_heavy{i:02}"));
        p.account = Some("acct_heavy".into());
        db.register(&p, T0, at(300 + i)).await.unwrap();
    }
    let mut req = claim_req(at(400), 8, "w2");
    req.weights = Arc::new(HashMap::from([(
        ("sim".to_string(), "acct_heavy".to_string()),
        3,
    )]));
    let jobs = db.claim(&req).await.unwrap();
    let heavy = jobs
        .iter()
        .filter(|j| j.account.as_deref() == Some("acct_heavy"))
        .count();
    assert_eq!((jobs.len(), heavy), (8, 6), "{jobs:?}");

    // The figures per account read the account back.
    let rows = db.stats_rows(T0).await.unwrap();
    let by = finality_store::stats::compute(&rows, &[], finality_store::stats::By::Account);
    let counts: Vec<(Option<&str>, usize)> = by
        .iter()
        .map(|s| (s.account.as_ref().and_then(|a| a.as_deref()), s.payments))
        .collect();
    assert_eq!(
        counts,
        vec![
            (Some("acct_big"), 40),
            (Some("acct_heavy"), 20),
            (Some("acct_small"), 2)
        ]
    );
}

/// The lanes are found one step per lane (a recursive query, which
/// MariaDB and MySQL stop at 1,000 steps unless told otherwise, returning
/// what they found so far): 1,100 accounts with one due poll each, beside
/// an older backlog in the first account, each get a job of a round of
/// 1,100, the last account too.
pub async fn more_than_a_thousand_lanes_are_claimed(db: Arc<dyn Store>) {
    let at = |ms: i64| Timestamp(T0.0 + ms);
    for i in 0..150 {
        let mut p = new_payment(&format!("pay_old{i:03}"));
        p.account = Some("acct_0000".into());
        db.register(&p, T0, at(i)).await.unwrap();
    }
    for i in 0..1100 {
        let mut p = new_payment(&format!("pay_lane{i:04}"));
        p.account = Some(format!("acct_{i:04}"));
        db.register(&p, T0, at(1000)).await.unwrap();
    }
    let jobs = db.claim(&claim_req(at(2000), 1100, "w")).await.unwrap();
    assert_eq!(jobs.len(), 1100);
    let lanes: std::collections::HashSet<Option<String>> =
        jobs.iter().map(|j| j.account.clone()).collect();
    assert_eq!(lanes.len(), 1100, "one job from every lane");
    assert!(jobs.iter().any(|j| j.payment_id == "pay_lane1099"));
}

pub const CASES: &[(&str, Case)] = cases![
    accounts_are_added_replaced_and_disabled,
    claims_are_shared_fairly_between_accounts,
    more_than_a_thousand_lanes_are_claimed,
];
