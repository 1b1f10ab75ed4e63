//! The tuner against the truth: a history produced by the engine on a known
//! model, the tuner's recommendation from that history alone, and an
//! exhaustive grid searched on the true model itself.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::simulate::model::Model;
use crate::simulate::presets;
use finality_store::memory::MemStore;

/// The true model's draws (common to every schedule compared).
fn truth(n: usize) -> Vec<crate::simulate::model::Draw> {
    Model::mixture().draw(n, simulate::T0, 7)
}

/// Every candidate of a grid finer in the first interval than the tuner's
/// coarse scan, over the same shapes.
fn grid_best(
    draws: &[crate::simulate::model::Draw],
    base: &RetryPolicy,
    target: f64,
) -> (f64, usize) {
    let mut best = f64::INFINITY;
    let mut n = 0;
    for family in search::Family::all() {
        for first in (20..=300).step_by(10) {
            let policy = RetryPolicy {
                schedule: family.schedule(Duration::from_secs(first)),
                ..base.clone()
            };
            let e = search::evaluate(&policy, draws, 1);
            n += 1;
            if e.undetected == 0 && e.p95 <= target && e.calls < best {
                best = e.calls;
            }
        }
    }
    (best, n)
}

#[test]
fn recommendation_from_history_is_within_5_percent_of_the_grid_best() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // History: the engine runs today's default on the mixture model.
        let model = Model::mixture();
        let history = Arc::new(model.draw(6000, simulate::T0, 99));
        let store = Arc::new(MemStore::new());
        let default = presets::pick(&["default".into()]).unwrap().remove(0);
        simulate::simulate_on(store.clone(), &model, &history, &default, 0)
            .await
            .unwrap();
        let dyn_store: Arc<dyn finality_store::Store> = store;
        let fit = fit::read(&*dyn_store, "model", Timestamp(0), usize::MAX)
            .await
            .unwrap();
        assert_eq!(fit.payments, 6000);
        // 2 % never settle; about 2 % of webhooks were lost (polls that beat
        // a webhook count as losses too: an upper bound).
        let never = fit.never as f64 / 6000.0;
        assert!((0.01..0.04).contains(&never), "{never}");
        assert!(
            (0.01..0.06).contains(&fit.webhook_loss()),
            "{}",
            fit.webhook_loss()
        );

        let target = Duration::from_secs(120);
        let current = default.policy.clone();
        let tuned = tune(fit, current.clone(), target, 4000, 3).await.unwrap();
        let rec = tuned
            .recommended
            .clone()
            .expect("a schedule meets 2 minutes");
        // The engine confirms it on draws from the history.
        let row = tuned.recommended_row.as_ref().unwrap();
        assert_eq!(row.undetected, 0, "{row:?}");

        // On the true model: the recommendation against the best of an
        // exhaustive grid searched with the truth.
        let draws = truth(10_000);
        let (best, n) = grid_best(&draws, &current, 120.0);
        assert!(n > 2000 && best.is_finite());
        let got = search::evaluate(&rec, &draws, 1);
        assert!(
            got.calls <= best * 1.05,
            "recommended {} ({got:?}) against the grid's best {best:.3} calls",
            toml_of(&rec.schedule)
        );
        eprintln!(
            "recommended {}: {got:?}; grid best {best:.3} calls over {n} candidates",
            toml_of(&rec.schedule)
        );
        assert_eq!(got.undetected, 0, "{got:?}");
        assert!(got.p95 <= 120.0 * 1.1, "{got:?}");
    });
}

/// How far the recommendation strays over histories of several sizes:
/// `cargo test --release -p finality-cli tune_spread -- --ignored --nocapture`.
#[test]
#[ignore = "an experiment, minutes long; run by hand in release"]
fn tune_spread() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let model = Model::mixture();
        let truth_draws = truth(50_000);
        let default = presets::pick(&["default".into()]).unwrap().remove(0);
        let (best, _) = grid_best(&truth_draws, &default.policy, 120.0);
        for (hist, draws) in [(6000, 20000)] {
            for seed in 0..6u64 {
                let history = Arc::new(model.draw(hist, simulate::T0, 1000 + seed));
                let store = Arc::new(MemStore::new());
                simulate::simulate_on(store.clone(), &model, &history, &default, 0)
                    .await
                    .unwrap();
                let dyn_store: Arc<dyn finality_store::Store> = store;
                let fit = fit::read(&*dyn_store, "model", Timestamp(0), usize::MAX)
                    .await
                    .unwrap();
                let late = |v: &[crate::simulate::model::Draw]| {
                    let settled: Vec<_> = v
                        .iter()
                        .filter_map(|d| d.settles_at.map(|s| s.0 - d.registered_at.0))
                        .collect();
                    settled.iter().filter(|a| **a > 20 * 60_000).count() as f64
                        / settled.len() as f64
                };
                let fitted = model_of(&fit, &default.policy).draw(50_000, simulate::T0, 5);
                eprintln!(
                    "late share: fit {:.4} truth {:.4}; fit never {} loss {:.4}",
                    late(&fitted),
                    late(&truth_draws),
                    fit.never,
                    fit.webhook_loss()
                );
                let tuned = tune(
                    fit,
                    default.policy.clone(),
                    Duration::from_secs(120),
                    draws,
                    3,
                )
                .await
                .unwrap();
                let rec = tuned.recommended.unwrap();
                let got = search::evaluate(&rec, &truth_draws, 1);
                eprintln!(
                    "history {hist} draws {draws} seed {seed}: {:.3} calls ({:+.1} %) p95 {:.0} {}",
                    got.calls,
                    100.0 * (got.calls / best - 1.0),
                    got.p95,
                    toml_of(&rec.schedule)
                );
            }
        }
        eprintln!("grid best on the truth: {best:.3}");
    });
}
