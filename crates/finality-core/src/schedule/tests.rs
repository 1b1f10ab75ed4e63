//! The schedules' properties: never slower than asked, bounded, the same
//! from the same seed.

use super::*;
use proptest::prelude::*;

fn piecewise() -> Schedule {
    Schedule::Piecewise {
        every: Duration::from_secs(100),
        until: Duration::from_secs(1800),
        factor: 2.0,
        cap: Duration::from_secs(86_400),
        jitter: 0.0,
    }
}

/// Every 100 s until 30 min of age, then the ×2 sequence as a function
/// of age (100, 200, 400, … s apart), capped.
#[test]
fn piecewise_follows_the_age() {
    let s = piecewise();
    s.validate().unwrap();
    let min = |m: u64| Duration::from_secs(m * 60);
    assert_eq!(s.nominal_at(0, Duration::ZERO), Duration::from_secs(100));
    assert_eq!(s.nominal_at(17, min(29)), Duration::from_secs(100));
    assert_eq!(s.nominal_at(18, min(30)), Duration::from_secs(100));
    // 100 s past the switch the next delay is 200 s, 300 s later 400 s.
    assert_eq!(
        s.nominal_at(19, min(30) + Duration::from_secs(100)),
        Duration::from_secs(200)
    );
    assert_eq!(
        s.nominal_at(20, min(30) + Duration::from_secs(300)),
        Duration::from_secs(400)
    );
    assert_eq!(
        s.nominal_at(99, min(60 * 24 * 6)),
        Duration::from_secs(86_400)
    );
    // The policy counts the age from registration.
    let p = RetryPolicy {
        schedule: s,
        give_up_after: Duration::from_secs(7 * 86_400),
        max_attempts: u32::MAX,
    };
    assert_eq!(p.first_poll_at(Timestamp(0)), Timestamp(100_000));
    let after_switch = Timestamp(1_900_000);
    assert_eq!(
        p.next_poll(Timestamp(0), after_switch, 19, 0.0),
        NextPoll::At(Timestamp(1_900_000 + 200_000))
    );
}

/// Every 100 s until 30 min of age, then a tenth of the age (at least
/// 100 s, at most a day): a payment 10 h old is asked again an hour later.
#[test]
fn proportional_follows_a_share_of_the_age() {
    let s: Schedule = toml::from_str(
        "kind = \"proportional\"\nevery = \"100s\"\nuntil = \"30m\"\nfraction = 0.1\ncap = \"1day\"\njitter = 0.0\n",
    )
    .unwrap();
    s.validate().unwrap();
    let min = |m: u64| Duration::from_secs(m * 60);
    assert_eq!(s.nominal_at(0, Duration::ZERO), Duration::from_secs(100));
    assert_eq!(s.nominal_at(17, min(29)), Duration::from_secs(100));
    // At 30 min a tenth is 180 s; never below `every`, never above the cap.
    assert_eq!(s.nominal_at(18, min(30)), Duration::from_secs(180));
    assert_eq!(s.nominal_at(30, min(600)), Duration::from_secs(3600));
    assert_eq!(
        s.nominal_at(60, min(60 * 24 * 20)),
        Duration::from_secs(86_400)
    );
    let slow: Schedule = toml::from_str(
        "kind = \"proportional\"\nevery = \"100s\"\nuntil = \"1m\"\nfraction = 0.01\ncap = \"1h\"\n",
    )
    .unwrap();
    assert_eq!(slow.nominal_at(5, min(5)), Duration::from_secs(100));
    for (text, field) in [
        ("fraction = 0.0\ncap = \"1h\"", "fraction"),
        ("fraction = 0.1\ncap = \"10s\"", "cap"),
    ] {
        let bad: Schedule = toml::from_str(&format!(
            "kind = \"proportional\"\nevery = \"100s\"\nuntil = \"30m\"\n{text}\n"
        ))
        .unwrap();
        let e = bad.validate().unwrap_err();
        assert!(e.0.contains(field), "{e}");
    }
}

#[test]
fn piecewise_is_configurable_and_checked() {
    let s: Schedule = toml::from_str(
        "kind = \"piecewise\"\nevery = \"100s\"\nuntil = \"30m\"\nfactor = 2.0\ncap = \"1day\"\njitter = 0.0\n",
    )
    .unwrap();
    assert_eq!(s, piecewise());
    let bad = Schedule::Piecewise {
        every: Duration::from_secs(100),
        until: Duration::from_secs(1800),
        factor: 0.5,
        cap: Duration::from_secs(86_400),
        jitter: 0.0,
    };
    assert!(bad.validate().unwrap_err().0.contains("factor"));
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn fixed_list_repeats_last() {
    let s = Schedule::Fixed {
        delays: vec![secs(30), secs(60), secs(120)],
    };
    let got: Vec<u64> = (0..5).map(|n| s.delay(n, 0.7).as_secs()).collect();
    assert_eq!(got, vec![30, 60, 120, 120, 120]);
}

#[test]
fn quick_then_backs_off() {
    let s = Schedule::default_quick_then_exponential();
    assert_eq!(s.nominal(0), secs(1));
    assert_eq!(s.nominal(9), secs(1));
    assert_eq!(s.nominal(10), secs(5));
    assert_eq!(s.nominal(11), secs(10));
    assert_eq!(s.nominal(40), secs(3600));
}

#[test]
fn fibonacci_sequence() {
    let s = Schedule::Fibonacci {
        base: secs(1),
        cap: secs(10),
        jitter: 0.0,
    };
    let got: Vec<u64> = (0..7).map(|n| s.nominal(n).as_secs()).collect();
    assert_eq!(got, vec![1, 1, 2, 3, 5, 8, 10]);
}

#[test]
fn policy_gives_up_on_attempts_and_age() {
    let p = RetryPolicy {
        schedule: Schedule::Fixed {
            delays: vec![secs(60)],
        },
        give_up_after: secs(600),
        max_attempts: 5,
    };
    let t0 = Timestamp(0);
    assert_eq!(
        p.next_poll(t0, Timestamp(1_000), 5, 0.0),
        NextPoll::GiveUp(GiveUp::Attempts(5))
    );
    assert_eq!(
        p.next_poll(t0, Timestamp(600_000), 2, 0.0),
        NextPoll::GiveUp(GiveUp::Age(secs(600)))
    );
    // The last poll lands exactly on the deadline.
    assert_eq!(
        p.next_poll(t0, Timestamp(590_000), 2, 0.0),
        NextPoll::At(Timestamp(600_000))
    );
}

#[test]
fn parses_from_toml() {
    let s: Schedule = toml::from_str(
        r#"
        kind = "quick_then"
        count = 3
        interval = "1s"
        then = { kind = "fibonacci", base = "2s", cap = "1m" }
        "#,
    )
    .expect("valid schedule");
    assert_eq!(s.nominal(3), secs(2));
    assert!(s.validate().is_ok());
    let bad: Result<Schedule, _> = toml::from_str("kind = \"fixed\"\ndelays = [\"soon\"]");
    assert!(bad
        .unwrap_err()
        .to_string()
        .contains("invalid duration `soon`"));
}

fn any_schedule() -> impl Strategy<Value = Schedule> {
    let dur = (1u64..120_000).prop_map(Duration::from_millis);
    let exp = (dur.clone(), 1.0f64..4.0, 1u64..100, 0.0f64..0.9).prop_map(|(b, f, m, j)| {
        Schedule::Exponential {
            base: b,
            factor: f,
            cap: b * m as u32,
            jitter: j,
        }
    });
    let fib = (dur.clone(), 1u64..100, 0.0f64..0.9).prop_map(|(b, m, j)| Schedule::Fibonacci {
        base: b,
        cap: b * m as u32,
        jitter: j,
    });
    let fixed =
        prop::collection::vec(dur.clone(), 1..8).prop_map(|d| Schedule::Fixed { delays: d });
    let leaf = prop_oneof![exp, fib, fixed];
    (leaf.clone(), 0u32..12, dur, prop::bool::ANY).prop_map(|(s, count, interval, wrap)| {
        if wrap {
            Schedule::QuickThen {
                count,
                interval,
                then: Box::new(s),
            }
        } else {
            s
        }
    })
}

fn cap_and_jitter(s: &Schedule, n: u32) -> Option<(Duration, f64)> {
    match s {
        Schedule::Exponential { cap, jitter, .. } | Schedule::Fibonacci { cap, jitter, .. } => {
            Some((*cap, *jitter))
        }
        Schedule::QuickThen { count, then, .. } if n >= *count => cap_and_jitter(then, n - count),
        _ => None,
    }
}

proptest! {
    /// The fastest of two schedules is at every step no slower than
    /// either, and is one of them.
    #[test]
    fn fastest_is_never_slower_than_any(a in any_schedule(), b in any_schedule(),
                                        n in 0u32..200, age_s in 0u64..1_000_000,
                                        unit in -1.0f64..=1.0) {
        let f = Schedule::Fastest { of: vec![a.clone(), b.clone()] };
        prop_assert!(f.validate().is_ok());
        let age = Duration::from_secs(age_s);
        let (da, db, df) = (a.delay_at(n, age, unit), b.delay_at(n, age, unit), f.delay_at(n, age, unit));
        prop_assert!(df <= da && df <= db);
        prop_assert!(df == da || df == db);
        prop_assert_eq!(f.nominal_at(n, age), a.nominal_at(n, age).min(b.nominal_at(n, age)));
    }
}

#[test]
fn fastest_of_nothing_is_refused() {
    let e = Schedule::Fastest { of: vec![] }.validate().unwrap_err();
    assert!(e.0.contains("`of` is empty"), "{e}");
}

proptest! {
    #[test]
    fn delays_respect_cap_and_jitter(s in any_schedule(), n in 0u32..200, unit in -1.0f64..=1.0) {
        let d = s.delay(n, unit).as_secs_f64();
        let nominal = s.nominal(n).as_secs_f64();
        if let Some((cap, jitter)) = cap_and_jitter(&s, n) {
            prop_assert!(d <= cap.as_secs_f64() + 1e-9, "{d} > cap {cap:?}");
            prop_assert!(d >= nominal * (1.0 - jitter) - 1e-6, "{d} below jitter band of {nominal}");
            prop_assert!(d <= nominal * (1.0 + jitter) + 1e-6, "{d} above jitter band of {nominal}");
        } else {
            prop_assert_eq!(d, nominal);
        }
    }

    #[test]
    fn backoff_never_shrinks(s in any_schedule(), n in 0u32..200) {
        let is_fixed = |s: &Schedule| matches!(s, Schedule::Fixed { .. });
        let inner_fixed = matches!(&s, Schedule::QuickThen { then, .. } if is_fixed(then));
        let quick_to_slower = matches!(&s, Schedule::QuickThen { count, .. } if n + 1 == *count);
        if !is_fixed(&s) && !inner_fixed && !quick_to_slower {
            prop_assert!(s.nominal(n + 1) >= s.nominal(n));
        }
    }

    #[test]
    fn next_poll_never_goes_back_in_time(
        s in any_schedule(), n in 0u32..100, unit in -1.0f64..=1.0,
        registered in 0i64..1_000_000, elapsed in 0i64..10_000_000,
    ) {
        let p = RetryPolicy { schedule: s, give_up_after: Duration::from_secs(3600), max_attempts: 50 };
        let done = Timestamp(registered + elapsed);
        match p.next_poll(Timestamp(registered), done, n, unit) {
            NextPoll::At(t) => {
                prop_assert!(t >= done);
                prop_assert!(t <= Timestamp(registered).plus(p.give_up_after));
            }
            NextPoll::GiveUp(_) => prop_assert!(n >= 50 || done >= Timestamp(registered).plus(p.give_up_after)),
        }
    }
}

#[test]
fn errors_have_their_own_budget_and_back_off_with_attempts() {
    let p = RetryPolicy {
        schedule: Schedule::Fixed {
            delays: vec![secs(1), secs(2), secs(4), secs(8)],
        },
        give_up_after: secs(3600),
        max_attempts: 3,
    };
    let t0 = Timestamp(0);
    let now = Timestamp(10_000);
    assert_eq!(
        p.next_after_error(t0, now, 1, 1, 0.0),
        NextPoll::At(now.plus(secs(4)))
    );
    assert_eq!(
        p.next_after_error(t0, now, 0, 3, 0.0),
        NextPoll::GiveUp(GiveUp::Errors(3))
    );
    assert_eq!(
        p.next_after_error(t0, Timestamp(3_600_000), 0, 1, 0.0),
        NextPoll::GiveUp(GiveUp::Age(secs(3600)))
    );
}
