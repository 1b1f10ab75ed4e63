//! The tuner against the truth: a history produced by the engine on a known
//! model, the tuner's recommendation from that history alone, and an
//! exhaustive grid searched on the true model itself.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::simulate::model::Model;
use crate::simulate::presets;
use finality_core::cost::Fate;
use finality_store::memory::MemStore;

/// The true model's payments (common to every schedule compared).
fn truth(n: usize, seed: u64) -> Vec<Fate> {
    search::fates(&Model::mixture().draw(n, simulate::T0, seed))
}

/// The fewest calls of an exhaustive grid on `fates`: the tuner's 116 shapes
/// with every first interval from 20 s to 300 s in 10 s steps, held to the
/// plain p95.
fn grid_best(fates: &[Fate], base: &RetryPolicy, target: f64) -> (f64, usize) {
    let mut best = f64::INFINITY;
    let mut n = 0;
    for family in search::Family::all() {
        for first in (20..=300).step_by(10) {
            let policy = RetryPolicy {
                schedule: family.schedule(Duration::from_secs(first)),
                ..base.clone()
            };
            let e = search::evaluate(&policy, fates, 1);
            n += 1;
            if e.undetected == 0 && e.p95 <= target && e.calls < best {
                best = e.calls;
            }
        }
    }
    (best, n)
}

/// Run the engine with today's default over `n` payments of the mixture and
/// fit what it recorded.
async fn history(n: usize, seed: u64) -> fit::Fit {
    let model = Model::mixture();
    let drawn = Arc::new(model.draw(n, simulate::T0, seed));
    let store = Arc::new(MemStore::new());
    let default = presets::pick(&["default".into()]).unwrap().remove(0);
    simulate::simulate_on(store.clone(), &model, &drawn, &default, 0)
        .await
        .unwrap();
    let dyn_store: Arc<dyn finality_store::Store> = store;
    fit::read(&*dyn_store, "model", Timestamp(0), usize::MAX)
        .await
        .unwrap()
}

fn default_policy() -> RetryPolicy {
    presets::pick(&["default".into()]).unwrap().remove(0).policy
}

#[test]
fn recommendation_from_history_is_within_7_percent_of_the_grid_best() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let fit = history(20_000, 99).await;
        assert_eq!(fit.payments, 20_000);
        // 2 % never settle; about 2 % of webhooks were lost (polls that beat
        // a webhook count as losses too: an upper bound).
        let never = fit.never as f64 / 20_000.0;
        assert!((0.01..0.04).contains(&never), "{never}");
        assert!(
            (0.01..0.06).contains(&fit.webhook_loss()),
            "{}",
            fit.webhook_loss()
        );

        let target = Duration::from_secs(120);
        let current = default_policy();
        let tuned = tune(fit, current.clone(), target, None, 20_000, 3)
            .await
            .unwrap();
        let rec = tuned
            .recommended
            .clone()
            .expect("a schedule meets 2 minutes");
        // The engine confirms it on draws from the history.
        let row = tuned.recommended_row.as_ref().unwrap();
        assert_eq!(row.undetected, 0, "{row:?}");

        // On the true model: the recommendation against the best of an
        // exhaustive grid searched with the truth.
        let draws = truth(20_000, 7);
        let (best, n) = grid_best(&draws, &current, 120.0);
        assert!(n > 2000 && best.is_finite());
        let got = search::evaluate(&rec, &draws, 1);
        eprintln!(
            "recommended {}: {got:?}; grid best {best:.3} calls over {n} candidates",
            toml_of(&rec.schedule)
        );
        // The history differs run to run (the engine's jittered schedules
        // decide which polls beat a lost webhook): four runs of this test
        // recommended 2.21–2.35 calls against the grid's 2.234, so the
        // bound is 7 %, above that spread and below a poor fit (≥ 10 %).
        assert!(
            got.calls <= best * 1.07,
            "recommended {} ({got:?}) against the grid's best {best:.3} calls",
            toml_of(&rec.schedule)
        );
        assert_eq!(got.undetected, 0, "{got:?}");
        assert!(got.p95 <= 120.0 * 1.1, "{got:?}");
    });
}

/// `--target-p99`: the cheapest schedule at a p95 of 2 minutes leaves the
/// slow payments' tail hours long; held to a p99 of 45 minutes as well,
/// the search finds one that bounds it (a `proportional` one) for more
/// calls.
#[test]
fn a_p99_target_bounds_the_tail() {
    let fates = truth(20_000, 11);
    let base = default_policy();
    let p95 = Duration::from_secs(120);
    let (plain, _) = search::search(&base, &fates, p95, None, 0.95, 3);
    let (held, _) = search::search(
        &base,
        &fates,
        p95,
        Some(Duration::from_secs(45 * 60)),
        0.95,
        3,
    );
    let plain = plain.expect("a schedule meets 2 minutes");
    let held = held.expect("a schedule meets 2 minutes and a p99 of 45 minutes");
    eprintln!(
        "plain {} {:?}; held {} {:?}",
        toml_of(&plain.family.schedule(plain.first)),
        plain.eval,
        toml_of(&held.family.schedule(held.first)),
        held.eval
    );
    assert!(plain.eval.p99 > 2700.0, "{:?}", plain.eval);
    assert!(
        held.eval.p99 <= 2700.0 && held.eval.tail <= 120.0,
        "{:?}",
        held.eval
    );
    assert_eq!(held.eval.undetected, 0);
    assert!(held.eval.calls > plain.eval.calls);
    assert!(
        matches!(held.family, search::Family::Proportional { .. }),
        "{:?}",
        held.family
    );
}

/// How far the recommendation strays over histories of two sizes and six
/// seeds each: `cargo test --release -p finality-cli --bin finality
/// tune_spread -- --ignored --nocapture`.
#[test]
#[ignore = "an experiment, a minute or two; run by hand in release"]
fn tune_spread() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let truth_fates = truth(50_000, 7);
        let (best, _) = grid_best(&truth_fates, &default_policy(), 120.0);
        for hist in [6000, 20_000] {
            for seed in 0..6u64 {
                let fit = history(hist, 1000 + seed).await;
                let tuned = tune(fit, default_policy(), Duration::from_secs(120), None, 20_000, 3)
                    .await
                    .unwrap();
                let rec = tuned.recommended.unwrap();
                let got = search::evaluate(&rec, &truth_fates, 1);
                eprintln!(
                    "history {hist} seed {seed}: p{:.1} held · on the truth {:.3} calls ({:+.1} %) p95 {:.0} s · {}",
                    100.0 * tuned.tail_q,
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

/// The default holds the convergence targets on the mixture, with the
/// schedule code alone over 100,000 drawn payments (every settled payment
/// as if its webhook were lost, so the quantiles carry little noise): at
/// most 3.3 calls per payment, p95 ≤ 114 s, p99 ≤ 45 min, none undetected.
/// The doubling it replaced misses the p99 by hours.
#[test]
fn the_default_holds_calls_p95_and_p99_on_the_mixture() {
    for seed in [1, 2, 3] {
        let e = search::evaluate(&default_policy(), &truth(100_000, seed), seed);
        eprintln!("default, seed {seed}: {e:?}");
        assert!(e.calls <= 3.3, "{e:?}");
        assert!(e.p95 <= 114.0, "{e:?}");
        assert!(e.p99 <= 2_700.0, "{e:?}");
        assert_eq!(e.undetected, 0, "{e:?}");
    }
    let doubling = RetryPolicy {
        schedule: finality_core::Schedule::doubling(),
        ..default_policy()
    };
    let e = search::evaluate(&doubling, &truth(100_000, 1), 1);
    eprintln!("doubling: {e:?}");
    assert!(e.p99 > 4.0 * 2_700.0, "{e:?}");
}
