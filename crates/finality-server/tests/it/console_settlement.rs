//! The console's Providers page lists each scheduled settlement report's
//! last days: a day imported (its run and outcome counts) and a day past
//! its ready time and grace with no report (missing).

use super::console::{no_redirects, page, sign_in};
use super::roles::{named_tokens, ADMIN};
use super::*;
use finality_core::SystemClock;

/// Stripe at `sim_url`, its reports ready at midnight UTC, missing an hour
/// later.
fn stripe(sim_url: &str) -> ProviderConfig {
    let cfg: ProviderConfig = serde_json::from_value(json!({
        "adapter": "stripe", "base_url": format!("{sim_url}/stripe"),
        "api_key_env": "FINALITY_IT_DAYS_STRIPE_KEY",
        "settlement": {"ready_at": "00:00", "grace": "1h"}
    }))
    .unwrap();
    cfg.validate().unwrap();
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settlement_days_show_imported_and_missing() {
    std::env::set_var("FINALITY_IT_DAYS_STRIPE_KEY", "sk_test_days");
    let app = spawn_app_tokens(
        testing::sqlite().await,
        SimConfig::deterministic(Duration::from_secs(3600)),
        false,
        |sim_url| {
            let cfg = stripe(sim_url);
            let adapter = finality_providers::config::build("stripe", &cfg).unwrap();
            let mut providers = Providers::new();
            providers.insert(
                "stripe".into(),
                ProviderEntry::named("stripe", adapter, &cfg),
            );
            providers
        },
        named_tokens(),
    )
    .await;
    // Yesterday's report imported as the fetcher names it; the day before
    // never came.
    let schedule = stripe("http://127.0.0.1:9")
        .settlement_schedule()
        .unwrap()
        .unwrap();
    let yesterday = schedule.newest_ready(SystemClock.now());
    let before = yesterday.pred_opt().unwrap();
    let name = finality_engine::settlement::import_name("stripe", &schedule.report, yesterday);
    let dir = std::env::temp_dir().join(format!("finality-days-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(&name);
    std::fs::write(
        &path,
        "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,payment_intent_id\n\
         txn_1,2026-12-03 10:00:00,usd,19.99,-0.53,19.46,charge,ch_x,ch_x,pi_nobody_here\n",
    )
    .unwrap();
    let format = finality_providers::settlement::Format::StripeItemized;
    let day = schedule.day(yesterday);
    let import = finality_engine::reconcile::Import {
        provider: "stripe",
        owner: Default::default(),
        name: &name,
        format: &format,
        period: Some(finality_engine::reconcile::Period {
            from: day.from,
            until: day.until,
        }),
    };
    finality_engine::reconcile::reconcile(&*app.db.store, &import, &path, SystemClock.now())
        .await
        .unwrap();

    let http = no_redirects();
    let cookie = sign_in(&app, &http, ADMIN).await;
    let (status, html) = page(&app, &http, &cookie, "/console/providers").await;
    assert_eq!(status, StatusCode::OK);
    let table = &html[html.find("id=\"settlement-days\"").expect("the days table")..];
    let table = &table[..table.find("</table>").unwrap()];
    let row = |d: chrono::NaiveDate| {
        let at = table
            .find(&format!("<td>{d}</td>"))
            .unwrap_or_else(|| panic!("{d} in {table}"));
        table[at..].split("</tr>").next().unwrap().to_string()
    };
    let y = row(yesterday);
    assert!(
        y.contains("imported") && y.contains("unknown_here 1"),
        "{y}"
    );
    let b = row(before);
    assert!(b.contains("missing (due "), "{b}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Adyen's reports are announced, not made per day: the table lists the
/// last files Adyen announced, imported (with the run's outcome counts),
/// refused (with why) or still waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn announced_files_show_imported_refused_and_waiting() {
    use finality_store::reconciliations::FileTry;
    std::env::set_var("FINALITY_IT_FILES_ADYEN_KEY", "report-api-key");
    let app = spawn_app_tokens(
        testing::sqlite().await,
        SimConfig::deterministic(Duration::from_secs(3600)),
        false,
        |sim_url| {
            let cfg: ProviderConfig = serde_json::from_value(json!({
                "adapter": "adyen", "base_url": format!("{sim_url}/adyen"),
                "settlement": {"api_key_env": "FINALITY_IT_FILES_ADYEN_KEY", "grace": "1h"}
            }))
            .unwrap();
            cfg.validate().unwrap();
            let adapter = finality_providers::config::build("adyen", &cfg).unwrap();
            let mut providers = Providers::new();
            providers.insert("adyen".into(), ProviderEntry::named("adyen", adapter, &cfg));
            providers
        },
        named_tokens(),
    )
    .await;
    let store = &app.db.store;
    let now = SystemClock.now();
    let url = |n: u32| {
        format!("https://ca-test.adyen.com/reports/download/MerchantAccount/M/settlement_detail_report_batch_{n}.csv")
    };
    let name = |n: u32| format!("settlement_detail_report_batch_{n}.csv");
    for n in [1, 2, 3] {
        store
            .file_announce(&finality_core::Scope::own("adyen"), &name(n), &url(n), now)
            .await
            .unwrap();
    }
    // Batch 1 imported through the one import path, batch 2 refused.
    let dir = std::env::temp_dir().join(format!("finality-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name(1));
    std::fs::write(
        &path,
        format!(
            "{}\nSimCompany,M,9900000000000001,,visa,2026-12-03 10:00:00,UTC,Settled,,EUR,,19.99,1,EUR,,19.70,,,,0.29,visaclassic,,1,,,,,,,\n",
            finality_sim::settlement::ADYEN_HEADER.join(",")
        ),
    )
    .unwrap();
    let format = finality_providers::settlement::Format::AdyenSettlementDetails;
    let import = finality_engine::reconcile::Import {
        provider: "adyen",
        owner: Default::default(),
        name: &name(1),
        format: &format,
        period: None,
    };
    let run = finality_engine::reconcile::reconcile(&**store, &import, &path, now)
        .await
        .unwrap();
    let imported = FileTry::Done {
        outcome: "imported".into(),
        detail: "checked".into(),
        run_id: Some(run.run_id),
    };
    store
        .file_tried(
            &finality_core::Scope::own("adyen"),
            &name(1),
            &imported,
            now,
        )
        .await
        .unwrap();
    let refused = FileTry::Done {
        outcome: "refused".into(),
        detail: "line 2 is merchant account `X`'s".into(),
        run_id: None,
    };
    store
        .file_tried(&finality_core::Scope::own("adyen"), &name(2), &refused, now)
        .await
        .unwrap();

    let http = no_redirects();
    let cookie = sign_in(&app, &http, ADMIN).await;
    let (status, html) = page(&app, &http, &cookie, "/console/providers").await;
    assert_eq!(status, StatusCode::OK);
    let table = &html[html.find("id=\"settlement-days\"").expect("the days table")..];
    let table = &table[..table.find("</table>").unwrap()];
    let row = |n: u32| {
        let at = table
            .find(&name(n))
            .unwrap_or_else(|| panic!("{} in {table}", name(n)));
        table[at..].split("</tr>").next().unwrap().to_string()
    };
    assert!(
        row(1).contains("imported") && row(1).contains("unknown_here 1"),
        "{}",
        row(1)
    );
    assert!(
        row(2).contains("refused: line 2 is merchant account"),
        "{}",
        row(2)
    );
    assert!(row(3).contains("waiting (missing after "), "{}", row(3));
    std::fs::remove_dir_all(&dir).ok();
}
