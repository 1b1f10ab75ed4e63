//! Named schedules to compare: finality's own profiles and the schedules
//! teams commonly run instead, each as a retry policy.

use finality_core::{RetryPolicy, Schedule};
use std::time::Duration;

/// A named row of the table.
#[derive(Debug, Clone)]
pub struct Preset {
    pub name: String,
    pub what: String,
    pub policy: RetryPolicy,
    /// Read the provider's event list at least this often (`catch_up`).
    pub catch_up: Option<Duration>,
    /// `webhook_wait_quantile`: the first poll waits for this share of
    /// webhooks, as learned during the run.
    pub webhook_wait: Option<f64>,
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);

/// The `catch_up` row's reading interval: the longest that keeps the
/// lost-webhook p95 under a minute (the list is read at most this late).
pub const CATCH_UP_EVERY: Duration = Duration::from_secs(45);

/// Every preset, in table order.
pub fn all() -> Vec<Preset> {
    let policy = |schedule: Schedule, max_attempts: u32| RetryPolicy {
        schedule,
        give_up_after: WEEK,
        max_attempts,
    };
    vec![
        Preset {
            name: "default".into(),
            what: "finality's default with webhooks: every 103 s until 30 min, then after 40 % of the payment's age, 25 % from 90 min, 10 % from 3 h, daily from 1 day, ±10 %, 60 polls at most".into(),
            policy: RetryPolicy {
                schedule: Schedule::default_webhooks_first(),
                ..RetryPolicy::default()
            },
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "economy".into(),
            what: "every 240 s until 30 min, then ×2 up to 1 day, ±10 %, 60 polls at most".into(),
            policy: RetryPolicy {
                schedule: Schedule::economy(),
                ..RetryPolicy::default()
            },
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "doubling".into(),
            what: "the default before: every 100 s until 30 min, then ×2 up to 1 day, ±10 %, 60 polls at most".into(),
            policy: RetryPolicy {
                schedule: Schedule::doubling(),
                ..RetryPolicy::default()
            },
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "catch_up".into(),
            what: format!(
                "the event list read every {} s (a tenth of the newest payment's age once it is older), one backstop poll at give-up",
                CATCH_UP_EVERY.as_secs()
            ),
            policy: RetryPolicy {
                schedule: Schedule::Fixed { delays: vec![WEEK] },
                give_up_after: WEEK,
                max_attempts: 60,
            },
            catch_up: Some(CATCH_UP_EVERY),
            webhook_wait: None,
        },
        Preset {
            name: "webhook_aware".into(),
            what: "as `default`, but the first poll waits until 90 % of payments would have had their webhook (learned from the last 1,000)".into(),
            policy: RetryPolicy {
                schedule: Schedule::default_webhooks_first(),
                ..RetryPolicy::default()
            },
            catch_up: None,
            webhook_wait: Some(0.9),
        },
        Preset {
            name: "polls_only".into(),
            what: "finality's default without webhooks (and while they are down): 10 polls 1 s apart, then as `default`".into(),
            policy: RetryPolicy {
                schedule: Schedule::default_polls_only(),
                ..RetryPolicy::default()
            },
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "quick_exponential".into(),
            what: "finality's default before these measurements: 10 polls 1 s apart, then 5 s ×2 up to 1 h, 60 polls at most".into(),
            policy: RetryPolicy::default(),
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "cron_2m".into(),
            what: "a cron rescan: every open payment every 2 min".into(),
            policy: policy(
                Schedule::Fixed {
                    delays: vec![secs(120)],
                },
                u32::MAX,
            ),
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "fixed_list".into(),
            what: "30 s, 1 m, 2 m, 5 m, 15 m, 1 h, then stop".into(),
            policy: policy(
                Schedule::Fixed {
                    delays: [30, 60, 120, 300, 900, 3600].map(secs).to_vec(),
                },
                6,
            ),
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "exponential_1m".into(),
            what: "1 min ×2 up to 6 h, ±20 %".into(),
            policy: policy(
                Schedule::Exponential {
                    base: secs(60),
                    factor: 2.0,
                    cap: secs(6 * 3600),
                    jitter: 0.2,
                },
                u32::MAX,
            ),
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "quick_fibonacci".into(),
            what: "10 polls 1 s apart, then Fibonacci from 1 s up to 1 h".into(),
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
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "minute_then_5x5m".into(),
            what: "60 s, then 5 × 300 s, then stop".into(),
            policy: policy(
                Schedule::Fixed {
                    delays: [60, 300, 300, 300, 300, 300].map(secs).to_vec(),
                },
                6,
            ),
            catch_up: None,
            webhook_wait: None,
        },
        Preset {
            name: "hour_then_day".into(),
            what: "1 h, then every day".into(),
            policy: policy(
                Schedule::Fixed {
                    delays: vec![secs(3600), secs(24 * 3600)],
                },
                u32::MAX,
            ),
            catch_up: None,
            webhook_wait: None,
        },
    ]
}

/// A schedule named or written on the command line that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleArgError {
    #[error("--schedules: unknown schedule `{name}` (one of {known})")]
    Unknown { name: String, known: String },
    #[error("expected NAME={{ kind = \"…\", … }}")]
    Shape,
    #[error("{0}")]
    Toml(String),
    #[error(transparent)]
    Invalid(#[from] finality_core::schedule::ScheduleError),
}

/// The presets `names` asks for (all when empty), or the unknown name.
pub fn pick(names: &[String]) -> Result<Vec<Preset>, ScheduleArgError> {
    let all = all();
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|n| {
            all.iter().find(|p| &p.name == n).cloned().ok_or_else(|| {
                let known: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
                ScheduleArgError::Unknown {
                    name: n.clone(),
                    known: known.join(", "),
                }
            })
        })
        .collect()
}

/// `NAME={ kind = "…", … }`: a schedule of one's own, polled until the
/// horizon (no attempt limit).
pub fn custom(spec: &str) -> Result<Preset, ScheduleArgError> {
    let (name, table) = spec.split_once('=').ok_or(ScheduleArgError::Shape)?;
    #[derive(serde::Deserialize)]
    struct One {
        s: Schedule,
    }
    let one: One = toml::from_str(&format!("s = {table}"))
        .map_err(|e| ScheduleArgError::Toml(e.message().to_string()))?;
    one.s.validate()?;
    Ok(Preset {
        name: name.trim().to_string(),
        what: table.trim().to_string(),
        policy: RetryPolicy {
            schedule: one.s,
            give_up_after: WEEK,
            max_attempts: u32::MAX,
        },
        catch_up: None,
        webhook_wait: None,
    })
}
