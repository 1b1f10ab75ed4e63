//! `finality accounts …`: a provider's accounts (Stripe connected accounts,
//! Adyen merchant accounts, Alipay apps), listed, added or changed, and
//! disabled straight on the database, every node picking the change up
//! within seconds. Audited as role `cli`. Only the names of the
//! environment variables (or files) holding secrets are stored; each node
//! reads them from its own environment.

use crate::commands::open;
use crate::config::Config;
use crate::events::audit;
use anyhow::{anyhow, bail};
use clap::Subcommand;
use finality_core::{Clock, SystemClock};
use finality_providers::config::{AccountSpec, RateLimit};
use finality_store::AccountPut;

#[derive(Subcommand)]
pub enum AccountsCommand {
    /// Every account: the file's and the ones added at run time.
    List,
    /// Add an account of a configured provider, or change one (enabling it).
    Add {
        /// The provider's name in finality.toml.
        provider: String,
        /// The provider's id for the account (`acct_…`, a merchant account
        /// code, an app id).
        id: String,
        /// The environment variable (or absolute file path) holding its own
        /// API credentials; unset: the provider's, acting for the account
        /// where the provider documents how (Stripe-Account).
        #[arg(long)]
        api_key_env: Option<String>,
        /// A variable (or file) holding one of its webhook secrets; repeat
        /// for several. Unset: the provider's.
        #[arg(long = "webhook-secret-env")]
        webhook_secret_envs: Vec<String>,
        /// Its own calls per second across every node.
        #[arg(long)]
        rate_limit: Option<f64>,
        /// Calls allowed at once after a quiet spell (with --rate-limit).
        #[arg(long, default_value_t = 1)]
        burst: u32,
        /// Its share of each claim round beside other accounts (1–1000).
        #[arg(long, default_value_t = 1)]
        weight: u32,
        /// Alipay, an integrator acting for a merchant: the variable (or
        /// file) holding the merchant's app_auth_token.
        #[arg(long)]
        app_auth_token_env: Option<String>,
        /// Alipay: the merchant's own Alipay user id (2088…), checked on its
        /// trades; unset: not checked (never the provider's).
        #[arg(long)]
        seller_id: Option<String>,
        /// Your name, for the audit trail.
        #[arg(long)]
        actor: String,
    },
    /// Disable an account: its payments wait and its webhooks are refused.
    Disable {
        provider: String,
        id: String,
        #[arg(long)]
        actor: String,
    },
}

pub async fn accounts(
    config: Config,
    url: Option<String>,
    cmd: AccountsCommand,
) -> anyhow::Result<()> {
    let store = open(&config, url).await?;
    let now = SystemClock.now();
    match cmd {
        AccountsCommand::List => {
            let stored = store.accounts().await?;
            println!(
                "{:<12} {:<28} {:<7} {:<9} {:>6}  secrets",
                "provider", "account", "origin", "state", "weight"
            );
            let mut rows: Vec<(String, String, &str, String, u32, String)> = Vec::new();
            for (name, p) in &config.providers {
                for a in &p.accounts {
                    if stored
                        .iter()
                        .any(|s| &s.provider == name && s.account == a.id)
                    {
                        continue; // the stored one replaces it
                    }
                    rows.push((
                        name.clone(),
                        a.id.clone(),
                        "file",
                        "enabled".into(),
                        a.weight,
                        secrets(a),
                    ));
                }
            }
            for s in &stored {
                let spec = AccountSpec::from_stored(&s.account, &s.spec)
                    .unwrap_or_else(|_| AccountSpec::named(&s.account));
                let state = match s.disabled_at {
                    Some(_) => format!("disabled by {}", s.updated_by),
                    None => "enabled".into(),
                };
                rows.push((
                    s.provider.clone(),
                    s.account.clone(),
                    "stored",
                    state,
                    spec.weight,
                    secrets(&spec),
                ));
            }
            rows.sort();
            for (provider, id, origin, state, weight, secrets) in rows {
                println!("{provider:<12} {id:<28} {origin:<7} {state:<9} {weight:>6}  {secrets}");
            }
            Ok(())
        }
        AccountsCommand::Add {
            provider,
            id,
            api_key_env,
            webhook_secret_envs,
            rate_limit,
            burst,
            weight,
            app_auth_token_env,
            seller_id,
            actor,
        } => {
            let Some(cfg) = config.providers.get(&provider) else {
                let mut known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
                known.sort_unstable();
                bail!(
                    "unknown provider `{provider}` (configured: {})",
                    known.join(", ")
                );
            };
            let spec = AccountSpec {
                id: id.trim().to_string(),
                api_key_env,
                webhook_secret_envs,
                rate_limit: rate_limit.map(|per_second| RateLimit { per_second, burst }),
                weight,
                app_auth_token_env,
                seller_id,
            };
            // Checked as the file's accounts are; the secrets themselves
            // are read by each node from its own environment.
            spec.validate(cfg)
                .map_err(|e| anyhow!("--{}: {}", e.field.replace('_', "-"), e.message))?;
            let stored = spec.to_stored();
            let asked = finality_store::accounts::change_detail(
                &*store,
                &provider,
                &spec.id,
                finality_store::accounts::audit_state(&stored, false),
            )
            .await?;
            let put = store
                .account_put(&provider, &spec.id, &stored, &actor, now)
                .await?;
            let (action, outcome) = match put {
                AccountPut::Created => ("account_add", "added"),
                AccountPut::Updated => ("account_update", "changed (and enabled)"),
            };
            audit(&*store, &actor, action, asked, outcome, now).await?;
            println!(
                "{provider} account {}: {outcome}; every node uses it within seconds",
                spec.id
            );
            Ok(())
        }
        AccountsCommand::Disable {
            provider,
            id,
            actor,
        } => {
            let mut asked = serde_json::json!({"provider": provider, "account": id});
            let before = store
                .accounts()
                .await?
                .into_iter()
                .find(|r| r.provider == provider && r.account == id);
            if let Some(r) = &before {
                asked["before"] =
                    finality_store::accounts::audit_state(&r.spec, r.disabled_at.is_some());
                asked["after"] = finality_store::accounts::audit_state(&r.spec, true);
            }
            let mut done = store.account_disable(&provider, &id, &actor, now).await?;
            if !done {
                // A file's account: stored disabled (the file is not written).
                if let Some(a) = config
                    .providers
                    .get(&provider)
                    .and_then(|p| p.accounts.iter().find(|a| a.id == id))
                {
                    let stored = a.to_stored();
                    store
                        .account_put(&provider, &id, &stored, &actor, now)
                        .await?;
                    done = store.account_disable(&provider, &id, &actor, now).await?;
                }
            }
            let outcome = if done {
                "disabled"
            } else {
                "refused: no such account"
            };
            audit(&*store, &actor, "account_disable", asked, outcome, now).await?;
            if !done {
                bail!("no account `{id}` of provider `{provider}`");
            }
            println!(
                "{provider} account {id}: disabled; its payments wait, its webhooks are refused"
            );
            Ok(())
        }
    }
}

/// Where an account's secrets come from, by name only.
fn secrets(a: &AccountSpec) -> String {
    let key = a.api_key_env.as_deref().unwrap_or("the provider's key");
    let hooks = if a.webhook_secret_envs.is_empty() {
        "the provider's webhook secrets".to_string()
    } else {
        a.webhook_secret_envs.join(",")
    };
    format!("{key}; {hooks}")
}
