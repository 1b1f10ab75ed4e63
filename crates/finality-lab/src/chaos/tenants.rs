//! `finality chaos --tenants N`: merchants that collide. N accounts of the
//! simulated provider, each with a webhook endpoint and secret of its own
//! (`/webhooks/sim/{account}`), beside the provider's own payments; every
//! group of payments (one per account) shares one merchant reference; one
//! account (`late`) is not configured when the run starts and is added
//! halfway (its webhooks until then verify with the provider's secret and
//! are parked); one is disabled for the middle third of the run. Forgers
//! meanwhile send, through real accounts' endpoints and secrets, webhooks
//! naming other accounts' payments and test-mode webhooks naming the
//! account's own, each with a status the provider never reported. The
//! checker then proves none of it changed a payment (`check_tenancy`).

use super::db::Pool;
use super::TOKEN;
use anyhow::anyhow;
use finality_sim::Simulator;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The account added halfway through the run.
pub const LATE: &str = "late";
/// The account disabled for the middle third of the run.
pub const DISABLED: &str = "t1";

/// The run's accounts and what is known of them as it goes.
pub struct Tenancy {
    /// Configured accounts `t1..tN`, then [`LATE`].
    pub accounts: Vec<String>,
    /// Whether each account may take registrations now.
    pub open: Mutex<std::collections::HashMap<String, bool>>,
    /// When (ms) [`LATE`] was added, and [`DISABLED`] disabled and enabled
    /// again: the webhooks of those windows were parked.
    late_added_at: AtomicI64,
    disabled_from: AtomicI64,
    disabled_until: AtomicI64,
}

/// An account's webhook secret (`whsec_` and base64, as Standard Webhooks).
fn secret(account: &str) -> String {
    use base64::Engine;
    let raw = format!("chaos-tenant-{account}-webhook-secret-0123456789");
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

fn env_name(account: &str) -> String {
    format!("FINALITY_CHAOS_{}_WHSEC", account.to_uppercase())
}

impl Tenancy {
    pub fn new(n: usize) -> Arc<Self> {
        let mut accounts: Vec<String> = (1..=n).map(|k| format!("t{k}")).collect();
        accounts.push(LATE.into());
        let open = accounts.iter().map(|a| (a.clone(), a != LATE)).collect();
        Arc::new(Tenancy {
            accounts,
            open: Mutex::new(open),
            late_added_at: AtomicI64::new(0),
            disabled_from: AtomicI64::new(0),
            disabled_until: AtomicI64::new(0),
        })
    }

    /// The accounts of the nodes' configuration file, and the secrets it
    /// names (the provider runs in `live` mode: a test-mode body is never
    /// applied). [`LATE`] is not there: it is added through the API.
    pub fn config(&self) -> (String, Vec<(String, String)>) {
        let mut toml = String::from("mode = \"live\"\n");
        let mut env = Vec::new();
        for a in self.accounts.iter().filter(|a| *a != LATE) {
            toml.push_str(&format!(
                "\n[[providers.sim.accounts]]\nid = \"{a}\"\nwebhook_secret_envs = [\"{}\"]\n",
                env_name(a)
            ));
            env.push((env_name(a), secret(a)));
        }
        (toml, env)
    }

    /// Point the simulator's webhooks of each account at its own endpoint,
    /// signed with its own secret ([`LATE`]: the provider's, as a Connect
    /// endpoint's; nothing of its own is configured).
    pub fn route(&self, sim: &Simulator) -> anyhow::Result<()> {
        for a in &self.accounts {
            let key = if a == LATE {
                None
            } else {
                Some(
                    finality_providers::webhook::standard::decode_secret(&secret(a))
                        .map_err(|e| anyhow!(e))?,
                )
            };
            sim.set_standard_account(a, key);
        }
        Ok(())
    }

    /// Payment `i`'s account (`None`: the provider's own) and merchant
    /// reference: consecutive payments, one per account, share it.
    pub fn of(&self, i: usize) -> (Option<&str>, String) {
        let lanes = self.accounts.len() + 1;
        let account = match i % lanes {
            0 => None,
            k => Some(self.accounts[k - 1].as_str()),
        };
        (account, format!("order-{}", i / lanes))
    }

    pub fn is_open(&self, account: Option<&str>) -> bool {
        account.is_none_or(|a| {
            self.open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(a)
                .copied()
                .unwrap_or(false)
        })
    }

    fn set_open(&self, account: &str, open: bool) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(account.to_string(), open);
    }
}

/// Through any node that answers: `POST path` with `body`.
async fn admin(
    http: &reqwest::Client,
    bases: &[String],
    path: &str,
    body: serde_json::Value,
) -> anyhow::Result<()> {
    for _round in 0..40 {
        for base in bases {
            if let Ok(r) = http
                .post(format!("{base}{path}"))
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
            {
                if r.status().is_success() {
                    return Ok(());
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(anyhow!("{path}: no node took it"))
}

/// The account changes of the run: [`DISABLED`] disabled at a third and
/// enabled again at two thirds, [`LATE`] added halfway.
pub async fn change_accounts(
    t: Arc<Tenancy>,
    bases: Vec<String>,
    over: Duration,
) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let start = Instant::now();
    let at = |share: f64| over.mul_f64(share);
    let wait_until = |d: Duration| {
        let left = d.checked_sub(start.elapsed());
        async move {
            if let Some(w) = left {
                tokio::time::sleep(w).await;
            }
        }
    };
    wait_until(at(1.0 / 3.0)).await;
    t.set_open(DISABLED, false);
    t.disabled_from.store(super::now_ms(), Ordering::SeqCst);
    admin(
        &http,
        &bases,
        &format!("/v1/accounts/sim/{DISABLED}/disable"),
        serde_json::json!({}),
    )
    .await?;
    wait_until(at(0.5)).await;
    admin(
        &http,
        &bases,
        "/v1/accounts",
        serde_json::json!({"provider": "sim", "id": LATE}),
    )
    .await?;
    t.set_open(LATE, true);
    t.late_added_at.store(super::now_ms(), Ordering::SeqCst);
    wait_until(at(2.0 / 3.0)).await;
    admin(
        &http,
        &bases,
        "/v1/accounts",
        serde_json::json!({"provider": "sim", "id": DISABLED,
                           "webhook_secret_envs": [env_name(DISABLED)]}),
    )
    .await?;
    t.disabled_until.store(super::now_ms(), Ordering::SeqCst);
    t.set_open(DISABLED, true);
    Ok(())
}

/// What the forgers sent.
#[derive(Debug, Default, Clone, Copy)]
pub struct Forged {
    /// Through one account's endpoint and secret, naming another's payment.
    pub cross: u32,
    /// Test-mode bodies, through the account's own endpoint.
    pub test_mode: u32,
}

/// Forge webhooks over the fault phase: each names a registered payment
/// (`known`: id, provider ref, account) with the status `failed`, which no
/// provider said, so that applying one is visible; event ids `forge-…`.
pub async fn forge(
    t: Arc<Tenancy>,
    node: String,
    known: Arc<super::Known>,
    provider_secret: String,
    over: Duration,
    seed: u64,
) -> Forged {
    let Ok(http) = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
    else {
        return Forged::default();
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0xf0f0);
    let mut out = Forged::default();
    let start = Instant::now();
    let configured: Vec<&String> = t.accounts.iter().filter(|a| *a != LATE).collect();
    let mut n = 0u64;
    while start.elapsed() < over {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let pick = {
            let k = known.lock().unwrap_or_else(|p| p.into_inner());
            if k.is_empty() {
                continue;
            }
            k[rng.gen_range(0..k.len())].clone()
        };
        let (_, provider_ref, account) = pick;
        n += 1;
        let cross = rng.gen_bool(0.5);
        // Cross: through another configured account than the payment's.
        let (via, livemode) = if cross {
            let others: Vec<&&String> = configured
                .iter()
                .filter(|a| Some(a.as_str()) != account.as_deref())
                .collect();
            if others.is_empty() {
                continue;
            }
            (
                Some(others[rng.gen_range(0..others.len())].to_string()),
                None,
            )
        } else {
            (account.clone(), Some(false))
        };
        let key_text = match via.as_deref() {
            Some(a) if a != LATE => secret(a),
            _ => provider_secret.clone(),
        };
        let Ok(key) = finality_providers::webhook::standard::decode_secret(&key_text) else {
            continue;
        };
        let mut body = serde_json::json!({"type": "payment.updated",
            "data": {"id": provider_ref, "status": "failed"}});
        if let Some(live) = livemode {
            body["livemode"] = serde_json::json!(live);
        }
        let body = body.to_string();
        let id = format!("forge-{seed}-{n}");
        let ts = {
            use finality_core::Clock;
            finality_core::SystemClock.now().millis() / 1000
        };
        let sig = finality_providers::webhook::standard::sign(&key, &id, ts, body.as_bytes());
        let url = match via.as_deref() {
            Some(a) => format!("{node}/webhooks/sim/{a}"),
            None => format!("{node}/webhooks/sim"),
        };
        let sent = http
            .post(url)
            .header("webhook-id", &id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", sig)
            .body(body)
            .send()
            .await;
        if matches!(sent, Ok(r) if r.status().is_success()) {
            if cross {
                out.cross += 1;
            } else {
                out.test_mode += 1;
            }
        }
    }
    out
}

/// What the tenancy checks found, read from the database once every
/// payment settled.
#[derive(Debug, Default, Clone)]
pub struct TenancyCheck {
    pub accounts: usize,
    pub forged: Forged,
    /// Status changes made by a webhook stored as another account's than
    /// the payment's: one merchant's fact on another's payment.
    pub cross_applied: i64,
    /// Forged webhooks that changed a payment (any way).
    pub forged_applied: i64,
    /// Forged test-mode webhooks kept as `other_mode`, never applied.
    pub test_mode_kept: i64,
    /// Forged cross-account webhooks kept as orphans of the account that
    /// sent them.
    pub cross_kept: i64,
    /// Webhooks still parked at the end (their account came: none may be).
    pub parked_left: i64,
    /// Verified webhooks that arrived while their account was not
    /// configured ([`LATE`]) or disabled ([`DISABLED`]): acknowledged and
    /// parked, then applied (or kept as orphans) once it was.
    pub parked_then: i64,
    /// Payments of [`LATE`] made final by a webhook.
    pub late_by_webhook: i64,
    /// Payments per account that share a merchant reference with another
    /// account's.
    pub colliding: i64,
}

impl TenancyCheck {
    pub fn violations(&self) -> usize {
        let missing_test_mode = usize::from(self.forged.test_mode > 0 && self.test_mode_kept == 0);
        (self.cross_applied + self.forged_applied + self.parked_left).max(0) as usize
            + missing_test_mode
    }

    pub fn rows(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "tenants (accounts) / payments sharing a merchant reference",
                format!("{} / {}", self.accounts, self.colliding),
            ),
            (
                "forged webhooks sent: another account's payment / test mode",
                format!("{} / {}", self.forged.cross, self.forged.test_mode),
            ),
            (
                "  kept as the sender's orphans / kept as other_mode",
                format!("{} / {}", self.cross_kept, self.test_mode_kept),
            ),
            (
                "applications across accounts",
                self.cross_applied.to_string(),
            ),
            (
                "forged webhooks applied (either kind)",
                self.forged_applied.to_string(),
            ),
            (
                "webhooks that came while their account was absent or disabled",
                self.parked_then.to_string(),
            ),
            (
                "parked webhooks left unapplied",
                self.parked_left.to_string(),
            ),
            (
                "payments of the account added mid-run final by webhook",
                self.late_by_webhook.to_string(),
            ),
        ]
    }
}

/// Read the tenancy's figures.
pub async fn check(pool: &Pool, t: &Tenancy, forged: Forged) -> anyhow::Result<TenancyCheck> {
    let n = |sql: &'static str| async move {
        Ok::<i64, anyhow::Error>(pool.number(sql).await?.unwrap_or(0))
    };
    Ok(TenancyCheck {
        accounts: t.accounts.len(),
        forged,
        cross_applied: n("SELECT count(*) FROM status_history h \
            JOIN payments p ON p.id = h.payment_id \
            JOIN webhook_inbox w ON w.provider = p.provider AND w.event_id = h.event_id \
            WHERE h.source = 'webhook' AND w.state = 'applied' AND w.account <> p.account")
        .await?,
        forged_applied: n("SELECT count(*) FROM status_history WHERE event_id LIKE 'forge-%'")
            .await?
            + n(
                "SELECT count(*) FROM webhook_inbox WHERE event_id LIKE 'forge-%' \
                 AND state = 'applied'",
            )
            .await?,
        test_mode_kept: n(
            "SELECT count(*) FROM webhook_inbox WHERE event_id LIKE 'forge-%' \
            AND state = 'ignored' AND reason LIKE 'other_mode%'",
        )
        .await?,
        cross_kept: n(
            "SELECT count(*) FROM webhook_inbox WHERE event_id LIKE 'forge-%' \
            AND state = 'orphaned'",
        )
        .await?,
        parked_left: n("SELECT count(*) FROM webhook_inbox WHERE state = 'parked'").await?,
        parked_then: pool
            .number(&format!(
                "SELECT count(*) FROM webhook_inbox WHERE event_id NOT LIKE 'forge-%' \
                 AND ((account = '{LATE}' AND received_at < {}) \
                 OR (account = '{DISABLED}' AND received_at >= {} AND received_at < {}))",
                t.late_added_at.load(Ordering::SeqCst),
                t.disabled_from.load(Ordering::SeqCst),
                t.disabled_until.load(Ordering::SeqCst),
            ))
            .await?
            .unwrap_or(0),
        late_by_webhook: n("SELECT count(*) FROM payments WHERE account = 'late' \
            AND status_source = 'webhook'")
        .await?,
        colliding: n(
            "SELECT count(*) FROM payments p WHERE EXISTS (SELECT 1 FROM payments q \
            WHERE q.provider = p.provider AND q.merchant_ref = p.merchant_ref \
            AND q.account <> p.account)",
        )
        .await?,
    })
}
