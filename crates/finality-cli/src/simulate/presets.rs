//! Named schedules to compare: finality's own profiles and the schedules
//! teams commonly run instead, each as a retry policy.

use finality_core::{RetryPolicy, Schedule};
use std::time::Duration;

/// A named row of the table.
#[derive(Debug, Clone)]
pub struct Preset {
    pub name: &'static str,
    pub what: &'static str,
    pub policy: RetryPolicy,
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);

/// Every preset, in table order.
pub fn all() -> Vec<Preset> {
    let policy = |schedule: Schedule, max_attempts: u32| RetryPolicy {
        schedule,
        give_up_after: WEEK,
        max_attempts,
    };
    vec![
        Preset {
            name: "default",
            what: "finality's default: 10 polls 1 s apart, then 5 s ×2 up to 1 h, 60 polls at most",
            policy: RetryPolicy::default(),
        },
        Preset {
            name: "cron_2m",
            what: "a cron rescan: every open payment every 2 min",
            policy: policy(
                Schedule::Fixed {
                    delays: vec![secs(120)],
                },
                u32::MAX,
            ),
        },
        Preset {
            name: "fixed_list",
            what: "30 s, 1 m, 2 m, 5 m, 15 m, 1 h, then stop",
            policy: policy(
                Schedule::Fixed {
                    delays: [30, 60, 120, 300, 900, 3600].map(secs).to_vec(),
                },
                6,
            ),
        },
        Preset {
            name: "exponential_1m",
            what: "1 min ×2 up to 6 h, ±20 %",
            policy: policy(
                Schedule::Exponential {
                    base: secs(60),
                    factor: 2.0,
                    cap: secs(6 * 3600),
                    jitter: 0.2,
                },
                u32::MAX,
            ),
        },
        Preset {
            name: "quick_fibonacci",
            what: "10 polls 1 s apart, then Fibonacci from 1 s up to 1 h",
            policy: policy(
                Schedule::QuickThen {
                    count: 10,
                    interval: secs(1),
                    then: Box::new(Schedule::Fibonacci {
                        base: secs(1),
                        cap: secs(3600),
                        jitter: 0.2,
                    }),
                },
                u32::MAX,
            ),
        },
        Preset {
            name: "minute_then_5x5m",
            what: "60 s, then 5 × 300 s, then stop",
            policy: policy(
                Schedule::Fixed {
                    delays: [60, 300, 300, 300, 300, 300].map(secs).to_vec(),
                },
                6,
            ),
        },
        Preset {
            name: "hour_then_day",
            what: "1 h, then every day",
            policy: policy(
                Schedule::Fixed {
                    delays: vec![secs(3600), secs(24 * 3600)],
                },
                u32::MAX,
            ),
        },
    ]
}

/// The presets `names` asks for (all when empty), or the unknown name.
pub fn pick(names: &[String]) -> Result<Vec<Preset>, String> {
    let all = all();
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|n| {
            all.iter().find(|p| p.name == n).cloned().ok_or_else(|| {
                let known: Vec<&str> = all.iter().map(|p| p.name).collect();
                format!(
                    "--schedules: unknown schedule `{n}` (one of {})",
                    known.join(", ")
                )
            })
        })
        .collect()
}
